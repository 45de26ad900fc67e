// Device info, ceilings and the shared warp/block primitives on a GPU; skipped without one.
#include <gtest/gtest.h>
#include "../common/exercise_support.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "common/block_primitives.cuh"
#include "common/ceilings.hpp"
#include "common/cuda_check.hpp"
#include "common/device_buffer.hpp"
#include "common/device_info.hpp"
#include "common/group_by_key.cuh"

namespace {

template <int BLOCK>
__global__ void block_primitives_kernel(const int* in, int* scan_out, int* totals, int* reduce_out) {
  __shared__ int smem[BLOCK / 32 + 1];
  const int v = in[blockIdx.x * BLOCK + threadIdx.x];
  int total;
  scan_out[blockIdx.x * BLOCK + threadIdx.x] = common::block_exclusive_scan<BLOCK>(v, total, smem);
  const int sum = common::block_reduce_sum<BLOCK>(v, smem);
  if (threadIdx.x == 0) {
    totals[blockIdx.x] = total;
    reduce_out[blockIdx.x] = sum;
  }
}

template <int BLOCK>
void check_block_primitives() {
  const int blocks = 3;
  std::vector<int> h(blocks * BLOCK);
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = static_cast<int>((i * 7919) % 13) - 3;
  common::DeviceBuffer<int> in(h.size()), scan(h.size()), totals(blocks), sums(blocks);
  CUDA_CHECK(cudaMemcpy(in.get(), h.data(), h.size() * 4, cudaMemcpyHostToDevice));
  block_primitives_kernel<BLOCK><<<blocks, BLOCK>>>(in.get(), scan.get(), totals.get(), sums.get());
  CUDA_CHECK_LAST();
  common::check_device_stubs();  // a handout whose primitives are not written yet: not implemented
  std::vector<int> s(h.size()), t(blocks), r(blocks);
  CUDA_CHECK(cudaMemcpy(s.data(), scan.get(), s.size() * 4, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(t.data(), totals.get(), blocks * 4, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(r.data(), sums.get(), blocks * 4, cudaMemcpyDeviceToHost));
  for (int b = 0; b < blocks; ++b) {
    int run = 0;
    for (int i = 0; i < BLOCK; ++i) {
      ASSERT_EQ(s[b * BLOCK + i], run) << "block " << b << " thread " << i;
      run += h[b * BLOCK + i];
    }
    EXPECT_EQ(t[b], run);
    EXPECT_EQ(r[b], run);
  }
}

// Min and max over groups of WIDTH lanes (warp_reduce) and over the block (block_reduce), and the
// three sums of warp_reduce_n, for one block of BLOCK threads.
template <int BLOCK, int WIDTH>
__global__ void reduce_ops_kernel(const float* in, float* group_min, float* group_max, float* block_minmax,
                                  float* group_sums) {
  __shared__ float smem[BLOCK / 32];
  const float v = in[threadIdx.x];
  const float lo = common::warp_reduce<WIDTH>(v, common::Min{});
  const float hi = common::warp_reduce<WIDTH>(v, common::Max{});
  float three[3] = {v, 2 * v, 1.0f};
  common::warp_reduce_n<WIDTH>(three, common::Sum{});
  if (threadIdx.x % WIDTH == 0) {
    group_min[threadIdx.x / WIDTH] = lo;
    group_max[threadIdx.x / WIDTH] = hi;
    for (int k = 0; k < 3; ++k) group_sums[3 * (threadIdx.x / WIDTH) + k] = three[k];
  }
  const float bmin = common::block_reduce<BLOCK>(v, common::Min{}, INFINITY, smem);
  const float bmax = common::block_reduce<BLOCK>(v, common::Max{}, -INFINITY, smem);
  if (threadIdx.x == 0) {
    block_minmax[0] = bmin;
    block_minmax[1] = bmax;
  }
}

template <int BLOCK, int WIDTH>
void check_reduce_ops() {
  std::vector<float> h(BLOCK);
  for (int i = 0; i < BLOCK; ++i) h[i] = static_cast<float>((i * 7919) % 101) - 50.f;  // small integers: exact sums
  constexpr int groups = BLOCK / WIDTH;
  common::DeviceBuffer<float> in(BLOCK), gmin(groups), gmax(groups), bmm(2), gsum(3 * groups);
  CUDA_CHECK(cudaMemcpy(in.get(), h.data(), BLOCK * sizeof(float), cudaMemcpyHostToDevice));
  reduce_ops_kernel<BLOCK, WIDTH><<<1, BLOCK>>>(in.get(), gmin.get(), gmax.get(), bmm.get(), gsum.get());
  CUDA_CHECK_LAST();
  common::check_device_stubs();
  std::vector<float> lo(groups), hi(groups), mm(2), sums(3 * groups);
  CUDA_CHECK(cudaMemcpy(lo.data(), gmin.get(), groups * sizeof(float), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(hi.data(), gmax.get(), groups * sizeof(float), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(mm.data(), bmm.get(), 2 * sizeof(float), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(sums.data(), gsum.get(), 3 * groups * sizeof(float), cudaMemcpyDeviceToHost));
  for (int g = 0; g < groups; ++g) {
    const auto first = h.begin() + g * WIDTH, last = first + WIDTH;
    EXPECT_EQ(lo[g], *std::min_element(first, last)) << "group " << g;
    EXPECT_EQ(hi[g], *std::max_element(first, last)) << "group " << g;
    const float s = std::accumulate(first, last, 0.f);
    EXPECT_EQ(sums[3 * g], s);
    EXPECT_EQ(sums[3 * g + 1], 2 * s);
    EXPECT_EQ(sums[3 * g + 2], static_cast<float>(WIDTH));
  }
  EXPECT_EQ(mm[0], *std::min_element(h.begin(), h.end()));
  EXPECT_EQ(mm[1], *std::max_element(h.begin(), h.end()));
}

}  // namespace

TEST(DeviceInfo, NoDeviceIsAPlainNo) {
  // Must not throw whether or not a GPU is present.
  EXPECT_NO_THROW(common::has_cuda_device());
}

TEST(DeviceInfo, QueriesTheGpu) {
  REQUIRE_GPU();
  const auto d = common::query_device();
  EXPECT_FALSE(d.name.empty());
  EXPECT_GT(d.sm_count, 0);
  EXPECT_GT(d.sm_clock_khz, 0);
  EXPECT_GT(d.global_mem_bytes, 0u);
  EXPECT_GT(d.theoretical_fp32_gflops(), 0);
}

TEST(Ceilings, MeasuredCeilingsAreBelowTheDatasheetAndPlausible) {
  REQUIRE_GPU();
  const auto d = common::query_device();
  const auto c = common::measure_ceilings(d);
  EXPECT_GT(c.copy_gbs, 50.0);
  EXPECT_GT(c.fma_gflops, 0.3 * d.theoretical_fp32_gflops());
  EXPECT_LT(c.fma_gflops, 1.05 * d.theoretical_fp32_gflops());
  EXPECT_GT(c.launch_us, 0.1);
  EXPECT_LT(c.launch_us, 100.0);
}

COURSE_TEST(BlockPrimitives, ScanAndReduceMatchTheHostFor32To1024Threads) {
  REQUIRE_GPU();
  check_block_primitives<32>();
  check_block_primitives<96>();
  check_block_primitives<256>();
  check_block_primitives<1024>();
}

COURSE_TEST(BlockPrimitives, MinMaxAndMultiValueReductionsOverLaneGroupsAndBlocks) {
  REQUIRE_GPU();
  check_reduce_ops<32, 32>();
  check_reduce_ops<128, 8>();
  check_reduce_ops<256, 4>();
  check_reduce_ops<1024, 1>();
  check_reduce_ops<1024, 16>();
}

// GroupByKey against a host stable sort and run count, on awkward sizes (0, 1, one run, every
// key distinct, many duplicates over a partial bit range), reusing one grouping for all of them,
// with each of its sorts (CUB's, then the one-sweep sort: a handout's stub of it ends the test as
// not implemented after CUB's cases ran).
COURSE_TEST(GroupByKey, RunsCountsOffsetsAndStableOrderMatchTheHost) {
  REQUIRE_GPU();
  for (common::GroupSort sort : {common::GroupSort::cub, common::GroupSort::onesweep, common::GroupSort::automatic}) {
    SCOPED_TRACE(common::group_sort_name(sort));
    common::GroupByKey<std::uint32_t, int> g(sort);
    std::uint32_t state = 12345;
    auto next = [&] { return state = state * 1664525u + 1013904223u; };
    struct Case {
      int n;
      std::uint32_t key_range;  // keys in [0, key_range)
    };
    // the last two: a grouping of half a million pairs, the first with long runs
    for (const Case c : {Case{0, 1}, Case{1, 1}, Case{1000, 1}, Case{4097, 1u << 30}, Case{100003, 977}, Case{7, 3},
                         Case{(1 << 19) - 1, 977}, Case{1 << 19, 1u << 20}}) {
      std::vector<std::uint32_t> keys(c.n);
      std::vector<int> values(c.n);
      for (int i = 0; i < c.n; ++i) {
        keys[i] = next() % c.key_range;
        values[i] = i;
      }
      g.resize(c.n);
      if (c.n) {
        CUDA_CHECK(cudaMemcpy(g.keys(), keys.data(), c.n * sizeof(std::uint32_t), cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(g.values(), values.data(), c.n * sizeof(int), cudaMemcpyHostToDevice));
      }
      int end_bit = 1;
      while (end_bit < 32 && (1u << end_bit) < c.key_range) ++end_bit;
      g.group(c.n, nullptr, end_bit);
      int runs = -1;
      CUDA_CHECK(cudaMemcpy(&runs, g.num_runs(), sizeof(int), cudaMemcpyDeviceToHost));
      std::vector<int> order(c.n), counts(c.n + 1), offsets(c.n + 1);
      std::vector<std::uint32_t> unique(std::max(runs, 0));
      if (c.n) CUDA_CHECK(cudaMemcpy(order.data(), g.sorted_values(), c.n * sizeof(int), cudaMemcpyDeviceToHost));
      CUDA_CHECK(cudaMemcpy(counts.data(), g.counts(), (c.n + 1) * sizeof(int), cudaMemcpyDeviceToHost));
      CUDA_CHECK(cudaMemcpy(offsets.data(), g.offsets(), (c.n + 1) * sizeof(int), cudaMemcpyDeviceToHost));
      if (runs > 0)
        CUDA_CHECK(cudaMemcpy(unique.data(), g.unique(), runs * sizeof(std::uint32_t), cudaMemcpyDeviceToHost));
      std::vector<int> want(c.n);
      std::iota(want.begin(), want.end(), 0);
      std::stable_sort(want.begin(), want.end(), [&](int a, int b) { return keys[a] < keys[b]; });
      EXPECT_EQ(order, want) << "n = " << c.n;  // stable: equal keys keep their input order
      std::vector<std::uint32_t> want_unique;
      std::vector<int> want_counts;
      for (int i = 0; i < c.n; ++i) {
        if (i == 0 || keys[want[i]] != keys[want[i - 1]]) {
          want_unique.push_back(keys[want[i]]);
          want_counts.push_back(0);
        }
        ++want_counts.back();
      }
      ASSERT_EQ(runs, static_cast<int>(want_unique.size())) << "n = " << c.n;
      EXPECT_EQ(unique, want_unique) << "n = " << c.n;
      int at = 0;
      for (int r = 0; r <= c.n; ++r) {
        const int want_count = r < runs ? want_counts[r] : 0;
        EXPECT_EQ(counts[r], want_count) << "n = " << c.n << ", run " << r;
        if (r <= runs) EXPECT_EQ(offsets[r], at) << "n = " << c.n << ", run " << r;
        at += want_count;
      }
    }
    EXPECT_THROW(g.group(static_cast<int>(g.capacity()) + 1, nullptr), std::invalid_argument);
  }
}

TEST(GroupByKey, TheSortComesFromTheEnvironmentAndBadValuesAreNamed) {
  unsetenv("COURSE_GROUP_SORT");
  EXPECT_EQ(common::default_group_sort(), common::GroupSort::automatic);
  setenv("COURSE_GROUP_SORT", "auto", 1);
  EXPECT_EQ(common::default_group_sort(), common::GroupSort::automatic);
  setenv("COURSE_GROUP_SORT", "onesweep", 1);
  EXPECT_EQ(common::default_group_sort(), common::GroupSort::onesweep);
  setenv("COURSE_GROUP_SORT", "cub", 1);
  EXPECT_EQ(common::default_group_sort(), common::GroupSort::cub);
  setenv("COURSE_GROUP_SORT", "thrust", 1);
  try {
    common::default_group_sort();
    ADD_FAILURE() << "no error for COURSE_GROUP_SORT=thrust";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("COURSE_GROUP_SORT='thrust'"), std::string::npos);
  }
  unsetenv("COURSE_GROUP_SORT");
}

// The automatic choice follows the measurement (one-sweep for 4-byte keys, CUB's for 8-byte
// keys); a forced sort is kept for either.
TEST(GroupByKey, AutomaticPicksTheSortMeasuredFasterForTheKey) {
  using common::GroupSort;
  EXPECT_EQ(common::sort_for(GroupSort::automatic, 4), GroupSort::onesweep);
  EXPECT_EQ(common::sort_for(GroupSort::automatic, 8), GroupSort::cub);
  EXPECT_EQ((common::GroupByKey<int, float>(GroupSort::automatic).sort_for()), GroupSort::onesweep);     // ground_seg
  EXPECT_EQ((common::GroupByKey<std::uint64_t, int>(GroupSort::automatic).sort_for()), GroupSort::cub);  // ndt_graph
  for (GroupSort forced : {GroupSort::onesweep, GroupSort::cub})
    for (int bytes : {4, 8}) EXPECT_EQ(common::sort_for(forced, bytes), forced);
  EXPECT_STREQ(common::group_sort_name(GroupSort::automatic), "auto");
}

// ---- requirements (common/requirements.hpp): what the registry's needs decide -------------------

namespace {
__global__ void smem_hungry_kernel(int* out) {
  extern __shared__ int buf[];
  buf[threadIdx.x] = static_cast<int>(threadIdx.x);
  __syncthreads();
  out[threadIdx.x] = buf[(threadIdx.x + 1) % blockDim.x];
}
}  // namespace

TEST(Requirements, DescribeNamesEachNeed) {
  EXPECT_EQ(common::describe(common::Needs{}), "-");
  EXPECT_EQ(common::describe(common::needs_sm(90, "TMA bulk copy")), "sm_90+ (TMA bulk copy)");
  EXPECT_EQ(common::describe(common::needs_cooperative()), "cooperative launch");
}

TEST(Requirements, AFutureArchitectureIsSkippedWithTheGpuNamed) {
  REQUIRE_GPU();
  const std::string why = common::unmet(common::needs_sm(990, "a feature of sm_990"));
  EXPECT_NE(why.find("needs sm_990 (a feature of sm_990); this GPU is sm_" + std::to_string(common::device_sm())),
            std::string::npos)
      << why;
  EXPECT_THROW(common::require(common::needs_sm(990, "x")), common::Unsupported);
  EXPECT_EQ(common::unmet(common::Needs{}), "");
  // this GPU's own architecture: met when the build holds code compiled for it; a build for an
  // older GPU (sm_80 run on an H100, its PTX JIT-compiled) says so and how to rebuild
  const std::string own = common::unmet(common::needs_sm(common::device_sm(), "this GPU's own"));
  if (common::code_arch().ptx >= common::device_sm()) {
    EXPECT_EQ(own, "") << "CMAKE_CUDA_ARCHITECTURES=" << common::built_architectures();
  } else {
    EXPECT_NE(own.find("was compiled for compute_" + std::to_string(common::code_arch().ptx)), std::string::npos)
        << own;
  }
  // the build's own architecture is always met
  EXPECT_EQ(common::unmet(common::needs_sm(common::code_arch().ptx, "the build's own")), "");
}

TEST(Requirements, TheLoadedCodeIsReadFromTheKernel) {
  REQUIRE_GPU();
  const common::CodeArch a = common::code_arch();
  const common::CodeArch k = common::code_arch(reinterpret_cast<const void*>(smem_hungry_kernel));
  EXPECT_GT(a.ptx, 0);
  EXPECT_LE(a.ptx, common::device_sm());  // PTX of a newer architecture cannot run here
  EXPECT_LE(a.binary, common::device_sm());
  EXPECT_EQ(a.ptx, k.ptx);  // one CMAKE_CUDA_ARCHITECTURES for the whole project
}

TEST(Requirements, SharedMemoryOverTheLimitIsASkipWithSizeAndLimit) {
  REQUIRE_GPU();
  int optin = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
  const void* k = reinterpret_cast<const void*>(smem_hungry_kernel);
  try {
    common::require_smem(k, static_cast<std::size_t>(optin) + 16, "hungry");
    ADD_FAILURE() << "no Unsupported for " << optin + 16 << " B";
  } catch (const common::Unsupported& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("hungry: needs " + std::to_string(optin + 16) + " B of shared memory per block"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("allows at most " + std::to_string(optin) + " B"), std::string::npos) << what;
  }
  // what fits is raised and launches
  const std::size_t bytes = static_cast<std::size_t>(optin) / 2;
  common::require_smem(k, bytes, "half");
  common::DeviceBuffer<int> out(256);
  smem_hungry_kernel<<<1, 256, bytes>>>(out.get());
  CUDA_CHECK_LAST();
  CUDA_CHECK(cudaDeviceSynchronize());
}

TEST(FitDefaultSizes, KeepsWhatFitsAndSaysWhatItLeftOut) {
  std::string note;
  // nothing is left out of sizes that fit anywhere
  EXPECT_EQ(common::fit_default_sizes({8, 1 << 10}, 4.0, 4.0, note), (std::vector<std::int64_t>{8, 1 << 10}));
  EXPECT_EQ(note, "");
  // 2^50 elements of 1 KiB fit no host: left out, the largest power of two that fits replaces it
  const auto got = common::fit_default_sizes({1 << 20, std::int64_t{1} << 50}, 1024.0, 0.0, note);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], 1 << 20);
  EXPECT_GT(got[1], 1 << 20);
  EXPECT_EQ(got[1] & (got[1] - 1), 0) << got[1] << " is not a power of two";
  EXPECT_NE(note.find("left out n = " + std::to_string(std::int64_t{1} << 50)), std::string::npos) << note;
  EXPECT_NE(note.find("runs n = " + std::to_string(got[1]) + " instead"), std::string::npos) << note;
}
