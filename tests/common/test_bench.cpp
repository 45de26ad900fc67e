#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>
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
