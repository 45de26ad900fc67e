// Sizes that hit the code paths: empty, single element, below/at/above a warp, a v3 tile (2*256),
// v4/v5 tiles (3840) and radix tiles (4096), 2^k +- 1 and a large odd size.
#pragma once
#include <cstdint>
#include <cstdlib>
#include <vector>

// SC_TEST_MAX_N caps them (the GPU check sets it for the slow sanitizer runs).
inline const std::vector<std::int64_t>& test_sizes() {
  static const std::vector<std::int64_t> all = {0,    1,    2,    3,    31,   32,        33,        255,       256,
                                              257,  1023, 1024, 1025, 3839, 3840,      3841,      4097,      (1 << 16) - 1,
                                              (1 << 16) + 1,  (1 << 20) + 7};
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
