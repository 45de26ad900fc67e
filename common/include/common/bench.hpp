// Timing: CUDA events for device work, steady_clock for host work. Warm-up first, then samples
// until the median is known to the noise target or a sample/time cap is hit. Allocation and
// host<->device copies never sit inside a kernel timing; end-to-end figures are timed separately
// and labelled as such by the caller.
#pragma once
#include <cuda_runtime.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/device_buffer.hpp"

namespace common {

struct BenchOptions {
  int warmup = 2;
  int min_samples = 5;
  int max_samples = 200;
  double noise_target = 0.005;  // stop when stdev/mean/sqrt(samples) falls under this
  double max_seconds = 0.5;     // wall-clock budget for the samples of one configuration
  bool flush_l2 = false;        // cold-cache samples: overwrite L2 before each sample
};

struct BenchStats {
  double median_ms = 0, min_ms = 0, max_ms = 0;
  double noise = 0;  // relative standard deviation of the samples
  int samples = 0;
};

// Pure statistics over samples (ms); empty input gives zeros.
BenchStats summarize(std::vector<double> samples_ms);
// The stopping rule used by both timers.
bool should_stop(const std::vector<double>& samples_ms, double elapsed_s, const BenchOptions& o);

// Evicts L2 by writing a buffer twice its size.
class L2Flusher {
 public:
  explicit L2Flusher(std::size_t l2_bytes) : buffer_(2 * l2_bytes + 1) {}
  void flush(cudaStream_t s);

 private:
  DeviceBuffer<unsigned char> buffer_;
};

// Fresh inputs for every run of a bench (`--fresh-inputs`, what the grader passes). A version that
// remembers its last input and replays the output it computed then would otherwise be checked once
// and timed doing a copy. refresh() puts an input the version has not seen where the version reads
// it, and returns when it is there; verify() says what is wrong with that run's output for that
// input ("" when it is right). Both run around every run, warm-ups included, outside the timed
// region, and only the harness's code runs in them: a hook of the version's own (its prepare or
// staging) would let it see the input before the timed run. Their time is left out of the bench's
// time budget, so a row gets the samples it gets without them.
struct FreshInputs {
  std::function<void()> refresh;
  std::function<std::string()> verify;
};

// A run whose output was wrong for its fresh input; the message names the run ("timed sample 3 of
// 10: ...") and the driver's row fails with it.
class FreshInputMismatch : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The loop both benches below use, for work that times itself (a host-driven pipeline, a run
// whose stages are timed separately): `sample(recording)` does one run and returns its ms;
// the first o.warmup calls get recording = false and their times are dropped, then samples are
// taken until should_stop. With `fresh`, every call is between its refresh and its verify.
BenchStats bench_loop(const std::function<double(bool recording)>& sample, const BenchOptions& o,
                      const FreshInputs* fresh = nullptr);

// With `fresh`, the stream is idle when a timed run starts, as it is without (a refresh still
// running there would hide the run's launch latency).
BenchStats bench_gpu(const std::function<void(cudaStream_t)>& work, cudaStream_t stream, const BenchOptions& options,
                     L2Flusher* flusher = nullptr, const FreshInputs* fresh = nullptr);
BenchStats bench_cpu(const std::function<void()>& work, const BenchOptions& options,
                     const FreshInputs* fresh = nullptr);

// Host wall clock since construction or the last restart().
class WallTimer {
 public:
  WallTimer() : t0_(std::chrono::steady_clock::now()) {}
  void restart() { t0_ = std::chrono::steady_clock::now(); }
  double elapsed_ms() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0_).count();
  }

 private:
  std::chrono::steady_clock::time_point t0_;
};

// Samples per named stage (a pipeline's phases, a kernel sequence's steps), in first-seen order;
// summary() gives each stage's statistics (median of its samples).
class StageTimes {
 public:
  void add(const std::string& stage, double ms);
  std::vector<std::pair<std::string, BenchStats>> summary() const;
  bool empty() const { return stages_.empty(); }

 private:
  std::vector<std::pair<std::string, std::vector<double>>> stages_;
};

// Records `event` on `stream` as a node of the graph being captured there (an external event
// record, readable after the graph's launch completes), so a graph can time its own sections.
void record_timing_node(cudaEvent_t event, cudaStream_t stream);

// Events around a region on one stream, for one-off figures (per-stage sub-timings).
class EventTimer {
 public:
  EventTimer();
  ~EventTimer();
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  void start(cudaStream_t s);
  float stop_ms(cudaStream_t s);  // synchronizes

 private:
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

}  // namespace common
