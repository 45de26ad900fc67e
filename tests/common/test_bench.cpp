#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "common/bench.hpp"

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
