// Sizes that hit the code paths: empty, single element, below/at/above a warp, 2^k +- 1, a large
// odd size, and around every tile the kernels use (v3 2 x 256, v4 3840, v5 and the fused
// compaction 6016, v6 8192, radix 4096: t - 1, t, t + 1, 2t + 1), taken from the library's own constants.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "stream_compaction/tuning.hpp"

// SC_TEST_MAX_N caps them (the GPU check sets it for the slow sanitizer runs).
inline const std::vector<std::int64_t>& test_sizes() {
  static const std::vector<std::int64_t> all = [] {
    namespace t = StreamCompaction::Device::tiles;
    std::vector<std::int64_t> v = {
        0, 1, 2, 3, 31, 32, 33, 255, 256, 257, 1023, 1024, 1025, (1 << 16) - 1, (1 << 16) + 1, (1 << 20) + 7};
    for (std::int64_t tile : {t::kSharedMem, t::kWarpShuffle, t::kLookback, t::kTma, t::kRadix})
      for (std::int64_t n : {tile - 1, tile, tile + 1, 2 * tile + 1}) v.push_back(n);
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    return v;
  }();
  static const std::vector<std::int64_t> s = [] {
    const char* cap = std::getenv("SC_TEST_MAX_N");
    const std::int64_t max_n = cap ? std::atoll(cap) : INT64_MAX;
    std::vector<std::int64_t> v;
    for (std::int64_t n : all)
      if (n <= max_n) v.push_back(n);
    return v;
  }();
  return s;
}

inline std::vector<int> random_ints(std::int64_t n, std::uint64_t seed, int lo, int hi) {
  std::vector<int> v(n);
  std::uint64_t s = seed;
  for (auto& x : v) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    x = lo + static_cast<int>((s >> 33) % static_cast<std::uint64_t>(hi - lo));
  }
  return v;
}

// Every int32 equally likely, INT_MIN to INT_MAX (random_ints' hi - lo cannot span the whole range):
// about half the keys negative, and every bit of a radix sort's passes, the sign bit's too, random.
inline std::vector<int> random_full_range_ints(std::int64_t n, std::uint64_t seed) {
  std::vector<int> v(n);
  std::uint64_t s = seed;
  for (auto& x : v) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    x = static_cast<int>(static_cast<std::uint32_t>(s >> 32));
  }
  return v;
}
