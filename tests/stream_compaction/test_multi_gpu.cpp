// The multi-GPU sort's host side (no GPU, no NCCL): who a process is from each launcher's
// environment, the unique-id text, the splitter choice and the bucket of a key. The GPU runs are
// the ctest cases multi_gpu_sort_* (tests/CMakeLists.txt): 2 processes on 2 GPUs, skipped with
// fewer.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <stdexcept>

#include "stream_compaction/multi_gpu_sort.hpp"

namespace mg = StreamCompaction::MultiGpu;

namespace {

mg::LaunchEnv env_of(const std::map<std::string, std::string>& vars) {
  return mg::launch_env([&](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

}  // namespace

TEST(MultiGpuLaunch, EachLaunchersVariablesNameTheRank) {
  EXPECT_EQ(env_of({}).world, 1);
  EXPECT_EQ(env_of({}).rank, 0);
  auto e = env_of({{"RANK", "3"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}});
  EXPECT_EQ(e.rank, 3);
  EXPECT_EQ(e.world, 8);
  EXPECT_EQ(e.local_rank, 1);
  e = env_of({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "0"}});
  EXPECT_EQ(e.rank, 1);
  EXPECT_EQ(e.local_rank, 0);
  EXPECT_NE(e.source.find("OMPI"), std::string::npos);
  e = env_of({{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "16"}, {"SLURM_LOCALID", "1"}});
  EXPECT_EQ(e.rank, 5);
  EXPECT_EQ(e.world, 16);
  EXPECT_EQ(e.local_rank, 1);
  e = env_of({{"PMI_RANK", "2"}, {"PMI_SIZE", "4"}});  // no local rank: one machine
  EXPECT_EQ(e.local_rank, 2);
}

TEST(MultiGpuLaunch, BadVariablesAreNamed) {
  auto message = [](const std::map<std::string, std::string>& vars) {
    try {
      env_of(vars);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({{"RANK", "2"}, {"WORLD_SIZE", "2"}}).find("RANK=2 is not below WORLD_SIZE=2"), std::string::npos);
  EXPECT_NE(message({{"RANK", "x"}, {"WORLD_SIZE", "2"}}).find("RANK='x' is not a whole number"), std::string::npos);
  EXPECT_NE(message({{"RANK", "-1"}, {"WORLD_SIZE", "2"}}).find("RANK='-1'"), std::string::npos);
  EXPECT_NE(message({{"RANK", "0"}, {"WORLD_SIZE", "0"}}).find("at least one rank"), std::string::npos);
  EXPECT_NE(message({{"RANK", "0"}}).find("WORLD_SIZE is not set"), std::string::npos);
}

TEST(MultiGpuLaunch, UniqueIdTextRoundTripsAndRejectsJunk) {
  unsigned char id[128], back[128];
  for (int i = 0; i < 128; ++i) id[i] = static_cast<unsigned char>(i * 37 + 11);
  const std::string hex = mg::to_hex(id, sizeof(id));
  EXPECT_EQ(hex.size(), 256u);
  mg::from_hex(hex, back, sizeof(back));
  EXPECT_TRUE(std::equal(id, id + 128, back));
  EXPECT_THROW(mg::from_hex(hex.substr(1), back, sizeof(back)), std::invalid_argument);
  std::string bad = hex;
  bad[7] = 'g';
  EXPECT_THROW(mg::from_hex(bad, back, sizeof(back)), std::invalid_argument);
}

// Splitters at the sample quantiles; the bucket of every key is monotone in the key, and equal
// keys at different positions spread over the buckets instead of all landing in one.
TEST(MultiGpuSplit, BucketsFollowKeyOrderAndSplitEqualKeys) {
  std::mt19937_64 rng(7);
  for (int parts : {1, 2, 3, 8}) {
    std::vector<std::uint64_t> samples;
    for (int i = 0; i < 4096; ++i) samples.push_back(mg::composite(static_cast<std::uint32_t>(rng()), i));
    const auto split = mg::choose_splitters(samples, parts);
    ASSERT_EQ(static_cast<int>(split.size()), parts - 1);
    EXPECT_TRUE(std::is_sorted(split.begin(), split.end()));
    std::vector<int> count(parts);
    int last = 0;
    std::vector<std::uint32_t> keys(20000);
    for (auto& k : keys) k = static_cast<std::uint32_t>(rng());
    std::sort(keys.begin(), keys.end());
    for (std::size_t i = 0; i < keys.size(); ++i) {
      const int b = mg::bucket_of(mg::composite(keys[i], rng()), split.data(), parts);
      ASSERT_GE(b, last);  // sorted keys never go to an earlier bucket
      ASSERT_LT(b, parts);
      last = b;
      ++count[b];
    }
    for (int c : count) EXPECT_NEAR(c, 20000.0 / parts, 20000.0 / parts * 0.1) << parts << " parts";
  }
  // all keys equal: the position decides
  std::vector<std::uint64_t> same;
  for (int i = 0; i < 1000; ++i) same.push_back(mg::composite(42, i));
  const auto split = mg::choose_splitters(same, 4);
  std::vector<int> count(4);
  for (int i = 0; i < 1000; ++i) ++count[mg::bucket_of(mg::composite(42, i), split.data(), 4)];
  for (int c : count) EXPECT_EQ(c, 250);
  EXPECT_EQ(mg::choose_splitters({}, 3), std::vector<std::uint64_t>(2, 0));  // no samples at all
  EXPECT_THROW(mg::choose_splitters({}, 0), std::invalid_argument);
}

TEST(MultiGpuSplit, OwnedRangesTileTheInput) {
  for (std::int64_t n : {0, 1, 2, 7, 1000003})
    for (int world : {1, 2, 3, 8}) {
      std::int64_t next = 0;
      for (int r = 0; r < world; ++r) {
        std::int64_t b = 0, e = 0;
        mg::owned_range(n, world, r, b, e);
        EXPECT_EQ(b, next);
        EXPECT_LE(e - b, n / world + 1);
        next = e;
      }
      EXPECT_EQ(next, n);
    }
}

TEST(MultiGpuSplit, Distributions) {
  EXPECT_EQ(mg::parse_dist("few"), mg::Dist::few);
  EXPECT_THROW(mg::parse_dist("gaussian"), std::invalid_argument);
  const std::uint64_t n = 1000;
  for (std::uint64_t g = 1; g < n; ++g) {
    EXPECT_LE(mg::make_key(mg::Dist::sorted, 1, g - 1, n), mg::make_key(mg::Dist::sorted, 1, g, n));
    EXPECT_GE(mg::make_key(mg::Dist::reversed, 1, g - 1, n), mg::make_key(mg::Dist::reversed, 1, g, n));
    EXPECT_LT(mg::make_key(mg::Dist::few, 1, g, n), 4u);
  }
  EXPECT_EQ(mg::make_key(mg::Dist::sorted, 1, n - 1, n), 0xFFFFFFFFu);
}
