// Every GPU version from the registry (the same run functions the driver times), against the
// CPU reference at every test size, on poisoned outputs. Skipped without a GPU.
#include <gtest/gtest.h>
#include "../common/exercise_support.hpp"

#include <climits>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "common/cuda_check.hpp"
#include "common/device_buffer.hpp"
#include "common/device_info.hpp"
#include "sizes.hpp"
#include "stream_compaction/check.hpp"
#include "stream_compaction/device.hpp"
#include "stream_compaction/registry.hpp"
#include "stream_compaction/tuning.hpp"

namespace sc = StreamCompaction;

namespace {

std::vector<int> reference_for(sc::Op op, const std::vector<int>& in, std::int64_t& kept) {
  const std::int64_t n = static_cast<std::int64_t>(in.size());
  std::vector<int> ref(std::max<std::int64_t>(n, 1));
  kept = sc::reference_output(op, n, ref.data(), in.data());
  return ref;
}

// Runs `v` on `in` (poisoned output) and returns the checker's verdict.
common::CompareResult run_and_check(const sc::Version& v, const std::vector<int>& in, int block = 256) {
  const std::int64_t n = static_cast<std::int64_t>(in.size());
  std::int64_t kept;
  const auto ref = reference_for(v.op, in, kept);
  common::DeviceBuffer<int> d_in(std::max<std::int64_t>(n, 1)), d_out(std::max<std::int64_t>(n, 1));
  common::DeviceBuffer<std::int64_t> d_count(1);
  sc::Device::ScratchTree scratch;
  CUDA_CHECK(cudaMemcpy(d_in.get(), in.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemset(d_out.get(), 0xAB, d_out.bytes()));
  CUDA_CHECK(cudaMemset(d_count.get(), 0xff, sizeof(std::int64_t)));
  sc::RunArgs a;
  a.n = n;
  a.out = d_out.get();
  a.in = d_in.get();
  a.count = d_count.get();
  a.scratch = &scratch;
  a.block = block;
  if (!course_test::implemented(v.name, [&] { v.run(a); })) return {};  // a stub: the test ends skipped
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<int> got(std::max<std::int64_t>(n, 1));
  std::int64_t count = -1;
  CUDA_CHECK(cudaMemcpy(got.data(), d_out.get(), n * sizeof(int), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(&count, d_count.get(), sizeof(count), cudaMemcpyDeviceToHost));
  return sc::check_output(v.op, n, ref.data(), kept, got.data(), count);
}

std::vector<int> input_for(sc::Op op, std::int64_t n, std::uint64_t seed) {
  if (op == sc::Op::Scan) return random_ints(n, seed, 0, 50);
  if (op == sc::Op::Compact) return random_ints(n, seed, 0, 4);
  return random_ints(n, seed, INT_MIN / 2, INT_MAX / 2);
}

// The names of the GPU versions that `keep` selects, for one test per version.
template <class Keep>
std::vector<std::string> gpu_versions(Keep keep) {
  std::vector<std::string> out;
  for (const auto& v : sc::versions())
    if (v.needs_gpu && keep(v)) out.push_back(v.name);
  return out;
}

std::string param_name(const ::testing::TestParamInfo<std::string>& p) { return p.param; }

}  // namespace

// One registry version per test (REQUIRE_VERSION_RUNNABLE: a version this GPU cannot run, or an
// unwritten handout exercise, is that version's skip, never the others').
class GpuVersion : public ::testing::TestWithParam<std::string> {
 protected:
  const sc::Version& v() const { return *sc::find_version(GetParam()); }
};

using GpuEveryVersion = GpuVersion;
TEST_P(GpuEveryVersion, MatchesTheCpuAtEverySize) {
  REQUIRE_VERSION_RUNNABLE(v().name, v().needs);
  for (std::int64_t n : test_sizes()) {
    const std::uint64_t seed = 1000 + n;
    const auto r = run_and_check(v(), input_for(v().op, n, seed));
    EXPECT_TRUE(r.ok) << v().name << " n=" << n << " seed=" << seed << ": " << r.message;
  }
  COURSE_SKIP_NOTED();
}
INSTANTIATE_TEST_SUITE_P(Sc, GpuEveryVersion,
                         ::testing::ValuesIn(gpu_versions([](const sc::Version&) { return true; })), param_name);

using GpuBlockTunable = GpuVersion;
TEST_P(GpuBlockTunable, WorksFrom16To1024Threads) {
  REQUIRE_VERSION_RUNNABLE(v().name, v().needs);
  for (int block : {16, 32, 64, 128, 512, 1024})
    for (std::int64_t n : {std::int64_t{1}, std::int64_t{2049}, std::int64_t{(1 << 18) + 3}}) {
      const auto r = run_and_check(v(), input_for(v().op, n, 77), block);
      EXPECT_TRUE(r.ok) << v().name << " block=" << block << " n=" << n << ": " << r.message;
    }
  COURSE_SKIP_NOTED();
}
INSTANTIATE_TEST_SUITE_P(Sc, GpuBlockTunable,
                         ::testing::ValuesIn(gpu_versions([](const sc::Version& v) { return v.block_tunable; })),
                         param_name);

using GpuScanVersion = GpuVersion;
TEST_P(GpuScanVersion, SumsPastInt32WrapLikeTheCpu) {
  REQUIRE_VERSION_RUNNABLE(v().name, v().needs);
  std::vector<int> in((1 << 20) + 3, INT_MAX / 1000);
  EXPECT_TRUE(run_and_check(v(), in).ok) << v().name;
  COURSE_SKIP_NOTED();
}
INSTANTIATE_TEST_SUITE_P(Sc, GpuScanVersion,
                         ::testing::ValuesIn(gpu_versions([](const sc::Version& v) { return v.op == sc::Op::Scan; })),
                         param_name);

using GpuCompactVersion = GpuVersion;
TEST_P(GpuCompactVersion, AllKeptNoneKeptAlternating) {
  REQUIRE_VERSION_RUNNABLE(v().name, v().needs);
  const std::int64_t n = (1 << 16) + 5;
  std::vector<int> all(n, 3), none(n, 0), alt(n);
  for (std::int64_t i = 0; i < n; ++i) alt[i] = i % 2 ? static_cast<int>(i) : 0;
  EXPECT_TRUE(run_and_check(v(), all).ok) << v().name << " all kept";
  EXPECT_TRUE(run_and_check(v(), none).ok) << v().name << " none kept";
  EXPECT_TRUE(run_and_check(v(), alt).ok) << v().name << " alternating";
  COURSE_SKIP_NOTED();
}
INSTANTIATE_TEST_SUITE_P(Sc, GpuCompactVersion, ::testing::ValuesIn(gpu_versions([](const sc::Version& v) {
                           return v.op == sc::Op::Compact;
                         })),
                         param_name);

using GpuSortVersion = GpuVersion;
TEST_P(GpuSortVersion, NegativeEqualAndPresortedKeys) {
  REQUIRE_VERSION_RUNNABLE(v().name, v().needs);
  const std::int64_t n = 100003;
  std::vector<int> neg = random_ints(n, 5, INT_MIN, -1), same(n, -42), sorted(n), extremes(n);
  for (std::int64_t i = 0; i < n; ++i) {
    sorted[i] = static_cast<int>(i) - 50000;
    extremes[i] = i % 3 == 0 ? INT_MIN : i % 3 == 1 ? INT_MAX : 0;
  }
  for (const auto* in : {&neg, &same, &sorted, &extremes}) EXPECT_TRUE(run_and_check(v(), *in).ok) << v().name;
  COURSE_SKIP_NOTED();
}
// Keys over the whole int32 range (negatives about half), at the edge sizes and around a power of
// two: a sort that mishandles the sign bit puts the negatives last.
TEST_P(GpuSortVersion, FullRangeKeysWithNegativesAtEdgeAndOddSizes) {
  REQUIRE_VERSION_RUNNABLE(v().name, v().needs);
  for (std::int64_t n : {0, 1, 2, 3, 33, 1000, (1 << 12) - 1, (1 << 12) + 1, (1 << 16) + 5, (1 << 20) + 3}) {
    const auto r = run_and_check(v(), random_full_range_ints(n, 3000 + n));
    EXPECT_TRUE(r.ok) << v().name << " n=" << n << ": " << r.message;
  }
  COURSE_SKIP_NOTED();
}
INSTANTIATE_TEST_SUITE_P(Sc, GpuSortVersion, ::testing::ValuesIn(gpu_versions([](const sc::Version& v) {
                           return v.op == sc::Op::Sort || v.op == sc::Op::SortPairs;
                         })),
                         param_name);

// The unsigned overload (ground_seg's cell offsets) is the same kernel on another type: values
// past INT_MAX must come out as the unsigned wrap-around sums, at every tile boundary.
COURSE_TEST(GpuScan, UnsignedLookbackScanMatchesTheHost) {
  REQUIRE_GPU();
  const std::int64_t t = sc::Device::tiles::kLookback;
  for (std::int64_t n : {std::int64_t{1}, t - 1, t, t + 1, 3 * t + 17, std::int64_t{1} << 20}) {
    std::vector<unsigned> h(n);
    for (std::int64_t i = 0; i < n; ++i)
      h[i] = (i % 7 == 0) ? 0x7fffffffu + static_cast<unsigned>(i) : static_cast<unsigned>(i % 1000);
    common::DeviceBuffer<unsigned> d_in(n), d_out(n);
    CUDA_CHECK(cudaMemcpy(d_in.get(), h.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(d_out.get(), 0xab, n * sizeof(unsigned)));
    sc::Device::ScratchTree scratch;
    sc::Device::scan_lookback(n, d_out.get(), d_in.get(), scratch, nullptr);
    std::vector<unsigned> out(n);
    CUDA_CHECK(cudaMemcpy(out.data(), d_out.get(), n * sizeof(unsigned), cudaMemcpyDeviceToHost));
    unsigned run = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(out[i], run) << "n " << n << " index " << i;
      run += h[i];
    }
  }
}

// 2^28 + 1 elements: the GPU check sets SC_LARGE_TESTS=1 (too slow under the sanitizer).
COURSE_TEST(GpuLarge, FastestVersionsAt2To28PlusOdd) {
  REQUIRE_GPU();
  const char* env = std::getenv("SC_LARGE_TESTS");
  if (!env || std::string(env) != "1") GTEST_SKIP() << "large GPU data test: set SC_LARGE_TESTS=1 (the GPU check does)";
  const std::int64_t n = (std::int64_t{1} << 28) + 1;
  std::string note;  // the driver's memory model: 24 B per element on the host and on the GPU
  const auto fitted = common::fit_default_sizes({n}, 24.0, 24.0, note);
  if (fitted.size() != 1 || fitted[0] != n) GTEST_SKIP() << "2^28+1 elements do not fit this GPU: " << note;
  for (const char* name : {"scan_lookback", "scan_tma", "scan_warp_shuffle", "compact_fused", "compact_tma",
                           "compact_lookback", "sort_radix", "sort_onesweep", "sort_pairs_onesweep"}) {
    const auto* v = sc::find_version(name);
    ASSERT_NE(v, nullptr);
    if (const std::string why = common::unmet(v->needs); !why.empty()) {  // this version only: the others still run
      ::testing::Test::RecordProperty(std::string(name) + "_skipped", why);
      std::cout << "[   INFO   ] " << name << " skipped: " << why << "\n";
      continue;
    }
    const auto r = run_and_check(*v, input_for(v->op, n, 2028));
    EXPECT_TRUE(r.ok) << name << ": " << r.message;
  }
}

COURSE_TEST(GpuErrors, BadArgumentsThrowClearErrors) {
  REQUIRE_GPU();
  sc::Device::ScratchTree s;
  common::DeviceBuffer<int> d(4);
  EXPECT_THROW(sc::Device::scan_shared_mem(4, d.get(), d.get() + 0, s, nullptr, 100), std::invalid_argument);
  EXPECT_THROW(sc::Device::scan_naive(-1, d.get(), d.get(), s, nullptr, 256), std::invalid_argument);
  EXPECT_THROW(sc::Device::scan_naive(4, d.get(), d.get(), s, nullptr, 2048), std::invalid_argument);
}
