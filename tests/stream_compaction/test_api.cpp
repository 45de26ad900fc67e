// The CIS 565 API: what the course's own main.cpp calls, including the timers.
#include <gtest/gtest.h>
#include "../common/exercise_support.hpp"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "common/device_info.hpp"
#include "sizes.hpp"
#include "stream_compaction/cpu.h"
#include "stream_compaction/efficient.h"
#include "stream_compaction/naive.h"
#include "stream_compaction/radix.h"
#include "stream_compaction/thrust.h"

namespace SC = StreamCompaction;

COURSE_TEST(Cis565Api, CpuFunctionsAndTimerWork) {
  const int n = (1 << 16) - 3;
  const auto in = random_ints(n, 21, 0, 50);
  std::vector<int> out(n);
  SC::CPU::scan(n, out.data(), in.data());
  EXPECT_EQ(out[1], in[0]);
  EXPECT_GE(SC::CPU::timer().getCpuElapsedTimeForPreviousOperation(), 0.f);
  const auto flags = random_ints(n, 22, 0, 4);
  std::vector<int> a(n), b(n);
  const int k1 = SC::CPU::compactWithoutScan(n, a.data(), flags.data());
  const int k2 = SC::CPU::compactWithScan(n, b.data(), flags.data());  // its scan must not trip the timer
  EXPECT_EQ(k1, k2);
  EXPECT_EQ(a, b);
}

COURSE_TEST(Cis565Api, TimerRejectsNestedOrUnbalancedUse) {
  SC::Common::PerformanceTimer t;
  t.startCpuTimer();
  EXPECT_THROW(t.startCpuTimer(), std::runtime_error);
  t.endCpuTimer();
  EXPECT_THROW(t.endCpuTimer(), std::runtime_error);
  EXPECT_THROW(t.endGpuTimer(), std::runtime_error);
}

COURSE_TEST(Cis565Api, IlogHelpers) {
  EXPECT_EQ(ilog2(1), 0);
  EXPECT_EQ(ilog2(1024), 10);
  EXPECT_EQ(ilog2ceil(1025), 11);
  EXPECT_EQ(ilog2ceil(1024), 10);
}

COURSE_TEST(Cis565Api, GpuScansAndCompactionMatchTheCpu) {
  REQUIRE_GPU();
  for (int n : {0, 1, 257, (1 << 20) - 3, 1 << 20}) {
    const auto in = random_ints(n, 23, 0, 50);
    std::vector<int> ref(n), got(n);
    SC::CPU::scan(n, ref.data(), in.data());
    for (auto scan : {&SC::Naive::scan, &SC::Efficient::scan, &SC::Thrust::scan}) {
      std::fill(got.begin(), got.end(), -1);
      scan(n, got.data(), in.data());
      EXPECT_EQ(got, ref) << "n=" << n;
    }
    const auto flags = random_ints(n, 24, 0, 4);
    std::vector<int> cref(n), cgot(n);
    const int k = SC::CPU::compactWithoutScan(n, cref.data(), flags.data());
    EXPECT_EQ(SC::Efficient::compact(n, cgot.data(), flags.data()), k);  // scan inside: no timer trip
    EXPECT_TRUE(std::equal(cref.begin(), cref.begin() + k, cgot.begin()));
    EXPECT_GE(SC::Efficient::timer().getGpuElapsedTimeForPreviousOperation(), 0.f);
  }
}

// The extra credit's call: full-range int32 keys (negatives included) at the edge sizes, odd sizes
// and a power of two, against std::sort.
COURSE_TEST(Cis565Api, RadixSortMatchesStdSortWithNegativeKeys) {
  REQUIRE_GPU();
  for (int n : {0, 1, 2, 257, (1 << 16) + 5, 1 << 18}) {
    const auto in = random_full_range_ints(n, 25 + n);
    std::vector<int> ref(in), got(n, -1);
    std::sort(ref.begin(), ref.end());
    SC::Radix::sort(n, got.data(), in.data());
    EXPECT_EQ(got, ref) << "n=" << n;
    if (n > 0) EXPECT_GE(SC::Radix::timer().getGpuElapsedTimeForPreviousOperation(), 0.f);
  }
}

COURSE_TEST(Cis565Api, NegativeSizeIsAnError) {
  std::vector<int> v(4);
  EXPECT_THROW(SC::Naive::scan(-1, v.data(), v.data()), std::invalid_argument);
  EXPECT_THROW(SC::Radix::sort(-1, v.data(), v.data()), std::invalid_argument);
}
