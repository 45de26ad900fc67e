#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>

#include "common/bench.hpp"
#include "common/runner.hpp"

TEST(Bench, SummarizeOddCountGivesMiddleSample) {
  const auto s = common::summarize({5, 1, 3});
  EXPECT_DOUBLE_EQ(s.median_ms, 3);
  EXPECT_DOUBLE_EQ(s.min_ms, 1);
  EXPECT_DOUBLE_EQ(s.max_ms, 5);
  EXPECT_EQ(s.samples, 3);
  EXPECT_NEAR(s.noise, 2.0 / 3.0, 1e-12);  // stdev 2 over mean 3
}

TEST(Bench, SummarizeEvenCountAveragesTheMiddlePair) {
  EXPECT_DOUBLE_EQ(common::summarize({4, 1, 2, 3}).median_ms, 2.5);
}

TEST(Bench, SummarizeEmptyIsZero) { EXPECT_EQ(common::summarize({}).samples, 0); }

TEST(Bench, StopsOnceNoiseTargetIsMet) {
  common::BenchOptions o;
  o.min_samples = 5;
  o.noise_target = 0.01;
  EXPECT_FALSE(common::should_stop({1, 1, 1, 1}, 0.0, o));  // below min_samples
  EXPECT_TRUE(common::should_stop({1, 1, 1, 1, 1}, 0.0, o));
  EXPECT_FALSE(common::should_stop({1, 2, 1, 2, 1}, 0.0, o));  // noisy
}

TEST(Bench, StopsAtSampleCapAndTimeBudget) {
  common::BenchOptions o;
  o.min_samples = 2;
  o.max_samples = 3;
  o.max_seconds = 1;
  EXPECT_TRUE(common::should_stop({1, 9, 1}, 0.0, o));
  EXPECT_TRUE(common::should_stop({1, 9}, 1.5, o));
  EXPECT_FALSE(common::should_stop({1, 9}, 0.5, o));
}

TEST(Bench, CpuTimerMeasuresASleep) {
  common::BenchOptions o;
  o.warmup = 0;
  o.min_samples = o.max_samples = 3;
  const auto s = common::bench_cpu([] { std::this_thread::sleep_for(std::chrono::milliseconds(5)); }, o);
  EXPECT_EQ(s.samples, 3);
  EXPECT_GE(s.min_ms, 4.9);
  EXPECT_LT(s.median_ms, 100.0);
}

namespace {
// A runner that counts its calls and reports a kernel time on every other run.
class CountingRunner final : public common::Runner<int, int> {
 public:
  void prepare(const int& p) override { problem = p; }
  void enqueue() override { ++enqueued; }
  void wait() override { ++waited; }
  int result() override { return problem * enqueued; }
  bool stages_input() const override { return true; }
  void restage() override { ++restaged; }
  double kernel_ms() const override { return enqueued % 2 ? 1.5 : std::numeric_limits<double>::quiet_NaN(); }
  int problem = 0, enqueued = 0, waited = 0, restaged = 0;
};
}  // namespace

TEST(Runner, CallRunnerComputesOnEnqueueFromThePreparedProblem) {
  auto r = common::make_call_runner<int, int>([](const int& x) { return 3 * x; });
  r->prepare(7);
  EXPECT_EQ(r->result(), 0);  // nothing ran yet
  r->run();
  EXPECT_EQ(r->result(), 21);
  EXPECT_FALSE(r->stages_input());
  EXPECT_TRUE(std::isnan(r->kernel_ms()));
}

TEST(Runner, BenchRunnerTimesWholeRunsAndCollectsKernelTimes) {
  CountingRunner r;
  r.prepare(2);
  common::BenchOptions o;
  o.warmup = 3;
  o.min_samples = o.max_samples = 10;
  std::vector<double> kernels;
  const auto st = common::bench_runner(r, o, &kernels);
  EXPECT_EQ(st.samples, 10);
  EXPECT_EQ(r.enqueued, 13);
  EXPECT_EQ(r.waited, 13);  // every run waited for
  EXPECT_EQ(r.restaged, 0);
  EXPECT_EQ(kernels.size(), 5u);  // the timed runs that measured themselves (NaN skipped)
  common::bench_runner(r, o, nullptr, true);
  EXPECT_EQ(r.restaged, 13);  // restage is part of every run, warm-up included
}

// --fresh-inputs: the refresh before every run and the verify after it, warm-ups included, in that
// order around the work; never inside the timing.
TEST(FreshInputs, RefreshBeforeAndVerifyAfterEveryRun) {
  common::BenchOptions o;
  o.warmup = 2;
  o.min_samples = o.max_samples = 5;
  std::string order;
  common::FreshInputs fresh{[&] { order += 'r'; },
                            [&] {
                              order += 'v';
                              return std::string();
                            }};
  const auto st = common::bench_cpu([&] { order += 'w'; }, o, &fresh);
  EXPECT_EQ(st.samples, 5);
  EXPECT_EQ(order, "rwvrwvrwvrwvrwvrwvrwv");  // 2 warm-ups + 5 samples
}

// A wrong output of one run fails the whole bench, naming the run as the driver's row will.
TEST(FreshInputs, AWrongOutputNamesItsRun) {
  common::BenchOptions o;
  o.warmup = 2;
  o.min_samples = o.max_samples = 10;
  int runs = 0;
  common::FreshInputs fresh{[&] { ++runs; },
                            [&] { return runs == 5 ? std::string("output differs at index 17") : std::string(); }};
  try {
    common::bench_cpu([] {}, o, &fresh);
    FAIL() << "the wrong run was not reported";
  } catch (const common::FreshInputMismatch& e) {
    EXPECT_STREQ(e.what(),
                 "timed sample 3 of 10: output differs at index 17 (the version may replay an earlier result)");
  }
  EXPECT_EQ(runs, 5);  // it stopped at the wrong run
  auto message = [](const common::BenchOptions& opt) -> std::string {
    common::FreshInputs always_wrong{[] {}, [] { return std::string("wrong"); }};
    try {
      common::bench_cpu([] {}, opt, &always_wrong);
    } catch (const common::FreshInputMismatch& e) {
      return e.what();
    }
    return "nothing reported";
  };
  o.min_samples = 3;  // not a fixed count: no "of N" for the samples
  EXPECT_EQ(message(o).rfind("warm-up run 1 of 2: wrong", 0), 0u) << message(o);
  o.warmup = 0;
  EXPECT_EQ(message(o).rfind("timed sample 1: wrong", 0), 0u) << message(o);
}

// The hooks' time is not the work's: a slow refresh does not eat the time budget, so a row gets
// the samples it gets without --fresh-inputs.
TEST(FreshInputs, HookTimeIsLeftOutOfTheTimeBudget) {
  common::BenchOptions o;
  o.warmup = 0;
  o.min_samples = 1;
  o.max_samples = 4;
  o.noise_target = -1;  // only the budget or the cap stop it
  o.max_seconds = 0.03;
  common::FreshInputs slow{[] { std::this_thread::sleep_for(std::chrono::milliseconds(20)); }, {}};
  const auto st = common::bench_cpu([] { std::this_thread::sleep_for(std::chrono::milliseconds(1)); }, o, &slow);
  EXPECT_EQ(st.samples, 4);    // 4 x 1 ms of work in a 30 ms budget, though 80 ms of refreshes ran
  EXPECT_LT(st.max_ms, 15.0);  // and no refresh was timed
}

// A runner that stages its input (its own code) has its restage timed with each run under fresh
// inputs: staged untimed, it would see every input before its timed run.
TEST(FreshInputs, AStagingRunnerIsTimedFromTheCallersInput) {
  CountingRunner r;
  r.prepare(2);
  common::BenchOptions o;
  o.warmup = 1;
  o.min_samples = o.max_samples = 4;
  int refreshed = 0;
  common::FreshInputs fresh{[&] { ++refreshed; }, [] { return std::string(); }};
  common::bench_runner(r, o, nullptr, false, &fresh);
  EXPECT_EQ(refreshed, 5);
  EXPECT_EQ(r.restaged, 5);
  auto plain = common::make_call_runner<int, int>([](const int& x) { return x; });
  plain->prepare(1);
  EXPECT_EQ(common::bench_runner(*plain, o, nullptr, false, &fresh).samples, 4);
}
