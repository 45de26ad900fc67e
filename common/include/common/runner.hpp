// The two-phase version interface every sub-project uses for versions that own resources (device
// buffers sized for a problem, pinned staging, streams, captured graphs):
//   prepare(problem)  once per problem: allocate, size scratch, capture graphs (slow, never timed);
//   enqueue()         one run on the runner's own stream (asynchronous where the version can be;
//                     a version driven from the host does its work here and returns when done);
//   wait()            returns when the last enqueued run is finished;
//   result()          the output of the last run, read on the host.
// A version that is a plain function of its input is wrapped by CallRunner, so a driver treats
// every version alike: prepare, check one run, then time runs with bench_runner.
#pragma once
#include <functional>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "common/bench.hpp"

namespace common {

template <class Problem, class Output>
class Runner {
 public:
  using problem_type = Problem;
  using output_type = Output;
  virtual ~Runner() = default;
  virtual void prepare(const Problem& problem) = 0;
  virtual void enqueue() = 0;
  virtual void wait() {}
  virtual Output result() = 0;
  // Copies the problem's host input into the runner's own staging memory again (a runner that
  // stages into pinned memory; the default stages nothing). Lets a driver time "from the
  // caller's buffer" (restage + enqueue + wait) next to "from staged input" (enqueue + wait).
  virtual bool stages_input() const { return false; }
  virtual void restage() {}
  // Device time (ms) of the last run's kernels, from events the run recorded itself; NaN where
  // the version does not measure it.
  virtual double kernel_ms() const { return std::numeric_limits<double>::quiet_NaN(); }
  void run() {
    enqueue();
    wait();
  }
};

// A version that is a function of its problem, as a Runner: nothing to prepare beyond keeping the
// problem, and each enqueue() computes the output before it returns.
template <class Problem, class Output>
class CallRunner final : public Runner<Problem, Output> {
 public:
  explicit CallRunner(std::function<Output(const Problem&)> fn) : fn_(std::move(fn)) {}
  void prepare(const Problem& problem) override { problem_ = problem; }
  void enqueue() override { output_ = fn_(problem_); }
  Output result() override { return output_; }

 private:
  std::function<Output(const Problem&)> fn_;
  Problem problem_{};
  Output output_{};
};

template <class Problem, class Output>
std::unique_ptr<Runner<Problem, Output>> make_call_runner(std::function<Output(const Problem&)> fn) {
  return std::make_unique<CallRunner<Problem, Output>>(std::move(fn));
}

// Whole runs (enqueue + wait, host clock: what a caller waits for) under the common stopping
// rule; `kernel_ms`, when given, receives the runner's own kernel time of every timed run (NaN
// ones are skipped). `restage` also times the copy into the runner's staging memory. `fresh`
// (bench.hpp) changes the input between runs where the runner reads it (the problem's host data):
// a runner that stages its input then has its restage timed with every run, since its staging is
// its own code and would otherwise see each input before the timed run.
template <class Problem, class Output>
BenchStats bench_runner(Runner<Problem, Output>& r, const BenchOptions& o, std::vector<double>* kernel_ms = nullptr,
                        bool restage = false, const FreshInputs* fresh = nullptr) {
  const bool timed_restage = restage || (fresh && r.stages_input());
  return bench_loop(
      [&](bool recording) {
        WallTimer t;
        if (timed_restage) r.restage();
        r.run();
        const double ms = t.elapsed_ms();
        if (recording && kernel_ms) {
          const double k = r.kernel_ms();
          if (k == k) kernel_ms->push_back(k);
        }
        return ms;
      },
      o, fresh);
}

}  // namespace common
