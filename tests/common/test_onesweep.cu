// The shared one-sweep radix sort (common/onesweep_sort.cuh) against std::stable_sort: keys only
// and (key, value) pairs with value = input index (so stability is visible), int32 / uint32 /
// uint64 keys, partial bit ranges, repeated keys, both status-word widths, every tile boundary.
#include <gtest/gtest.h>
#include "../common/exercise_support.hpp"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "common/cuda_check.hpp"
#include "common/device_buffer.hpp"
#include "common/device_info.hpp"
#include "common/onesweep_sort.cuh"

namespace {

template <typename Key>
std::vector<Key> random_keys(std::int64_t n, std::uint64_t seed, int distinct_bits) {
  std::mt19937_64 g(seed);
  std::vector<Key> v(n);
  for (auto& k : v) {
    std::uint64_t r = g();
    if (distinct_bits < 64) r &= (std::uint64_t{1} << distinct_bits) - 1;
    k = static_cast<Key>(r);
  }
  return v;
}

// std::stable_sort on the key's bits [begin, end) (ordered as the sort orders them).
template <typename Key>
std::uint64_t sort_bits(Key k, int begin, int end) {
  std::uint64_t u;
  if constexpr (std::is_same<Key, int>::value)
    u = static_cast<std::uint32_t>(k) ^ 0x80000000u;
  else
    u = static_cast<std::uint64_t>(k);
  u >>= begin;
  const int width = end - begin;
  return width >= 64 ? u : u & ((std::uint64_t{1} << width) - 1);
}

template <typename Key, typename PairsPolicy = common::onesweep::DefaultPolicy<Key, int>,
          typename KeysPolicy = common::onesweep::DefaultPolicy<Key>>
void check_pairs(const std::vector<Key>& keys, int begin, int end, std::int64_t narrow_below = std::int64_t{1} << 30) {
  const std::int64_t n = static_cast<std::int64_t>(keys.size());
  std::vector<int> idx(n);
  std::iota(idx.begin(), idx.end(), 0);
  std::vector<int> order = idx;
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return sort_bits(keys[a], begin, end) < sort_bits(keys[b], begin, end); });
  const std::size_t m = std::max<std::int64_t>(n, 1);
  common::DeviceBuffer<Key> k_in(m), k_out(m);
  common::DeviceBuffer<int> v_in(m), v_out(m);
  CUDA_CHECK(cudaMemcpy(k_in.get(), keys.data(), n * sizeof(Key), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(v_in.get(), idx.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemset(k_out.get(), 0xab, m * sizeof(Key)));
  CUDA_CHECK(cudaMemset(v_out.get(), 0xab, m * sizeof(int)));
  common::Scratch scratch;
  common::Onesweep<Key, int, PairsPolicy>::sort(n, k_in.get(), k_out.get(), v_in.get(), v_out.get(), begin, end,
                                                scratch, nullptr, narrow_below);
  std::vector<Key> got_k(m);
  std::vector<int> got_v(m);
  CUDA_CHECK(cudaMemcpy(got_k.data(), k_out.get(), n * sizeof(Key), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(got_v.data(), v_out.get(), n * sizeof(int), cudaMemcpyDeviceToHost));
  for (std::int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(got_v[i], order[i]) << "n " << n << " bits [" << begin << "," << end << ") position " << i;
    ASSERT_EQ(got_k[i], keys[order[i]]) << "n " << n << " position " << i;
  }
  // keys only: the same order of keys
  CUDA_CHECK(cudaMemset(k_out.get(), 0xab, m * sizeof(Key)));
  common::Onesweep<Key, void, KeysPolicy>::sort(n, k_in.get(), k_out.get(), nullptr, nullptr, begin, end, scratch,
                                                nullptr, narrow_below);
  CUDA_CHECK(cudaMemcpy(got_k.data(), k_out.get(), n * sizeof(Key), cudaMemcpyDeviceToHost));
  for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(got_k[i], keys[order[i]]) << "keys only, n " << n << " position " << i;
}

std::vector<std::int64_t> sizes_around(std::int64_t tile) {
  return {0, 1, 2, 31, 33, 255, 257, tile - 1, tile, tile + 1, 2 * tile + 1, 5 * tile + 17, (1 << 18) + 3};
}

}  // namespace

COURSE_TEST(Onesweep, Int32PairsAreStableAtEveryTileBoundary) {
  REQUIRE_GPU();
  for (const std::int64_t tile : {common::Onesweep<int, int>::kTile, common::Onesweep<int>::kTile})
    for (std::int64_t n : sizes_around(tile)) {
      check_pairs(random_keys<int>(n, 7 + n, 64), 0, 32);
      check_pairs(random_keys<int>(n, 9 + n, 5), 0, 32);  // 32 distinct keys: long equal runs
    }
}

// Every ranking (ballot, match_any, atomic_or), counts published before or after the ranking, and
// tile shapes of 256 to 512 threads, as onesweep_tune times them: the same stable order.
COURSE_TEST(Onesweep, EveryRankingAndTileShapeSortsTheSame) {
  REQUIRE_GPU();
  using common::onesweep::Policy;
  using common::onesweep::Rank;
  using A = Policy<256, 16, 2, Rank::atomic_or>;
  using B = Policy<512, 15, 2, Rank::ballot, true>;
  using C = Policy<384, 22, 3, Rank::atomic_or, true>;
  using D = Policy<256, 10, 2, Rank::match_any>;
  using E = Policy<384, 21, 2, Rank::atomic_or, true>;  // odd counts of keys per thread
  using F = Policy<256, 11, 2, Rank::atomic_or>;        // counts after the ranking
  for (std::int64_t n : {std::int64_t{1}, std::int64_t{3071}, std::int64_t{4096}, std::int64_t{7681},
                         std::int64_t{8449}, std::int64_t{100003}}) {
    check_pairs<unsigned, A, B>(random_keys<unsigned>(n, 29 + n, 64), 0, 32);
    check_pairs<unsigned, C, D>(random_keys<unsigned>(n, 31 + n, 7), 0, 32);
    check_pairs<std::uint64_t, D, A>(random_keys<std::uint64_t>(n, 37 + n, 64), 5, 60);
    check_pairs<int, B, A>(random_keys<int>(n, 41 + n, 64), 0, 32, /*narrow_below=*/0);
    check_pairs<unsigned, E, C>(random_keys<unsigned>(n, 43 + n, 3), 0, 32);  // 8 distinct keys
    check_pairs<std::uint64_t, D, F>(random_keys<std::uint64_t>(n, 47 + n, 64), 0, 64);
  }
}

COURSE_TEST(Onesweep, Uint64KeysOnAPartialBitRange) {
  REQUIRE_GPU();
  const std::int64_t t = common::Onesweep<std::uint64_t, int>::kTile;
  for (std::int64_t n : sizes_around(t)) {
    check_pairs(random_keys<std::uint64_t>(n, 11 + n, 64), 0, 64);
    check_pairs(random_keys<std::uint64_t>(n, 13 + n, 64), 3, 41);  // the bits outside are ignored
    check_pairs(random_keys<std::uint64_t>(n, 17 + n, 12), 0, 12);  // a last digit of 4 bits
  }
}

COURSE_TEST(Onesweep, Uint32KeysAndTheWideStatusWords) {
  REQUIRE_GPU();
  for (std::int64_t n : {std::int64_t{1}, std::int64_t{4097}, std::int64_t{(1 << 20) + 5}}) {
    check_pairs(random_keys<unsigned>(n, 19 + n, 64), 0, 32, /*narrow_below=*/0);
    check_pairs(random_keys<int>(n, 23 + n, 64), 0, 32, /*narrow_below=*/0);
  }
}

COURSE_TEST(Onesweep, AllEqualPresortedAndReversedKeys) {
  REQUIRE_GPU();
  const std::int64_t n = 100003;
  std::vector<int> same(n, -42), up(n), down(n), extremes(n);
  for (std::int64_t i = 0; i < n; ++i) {
    up[i] = static_cast<int>(i) - 50000;
    down[i] = 50000 - static_cast<int>(i);
    extremes[i] = i % 3 == 0 ? INT32_MIN : i % 3 == 1 ? INT32_MAX : 0;
  }
  for (const auto* v : {&same, &up, &down, &extremes}) check_pairs(*v, 0, 32);
  check_pairs(same, 0, 0);  // no bits: a copy
}

// Keys that do not start on 16 bytes (a sub-range of a buffer): the histogram reads the keys
// before the first 16-byte boundary one by one, then 16-byte vectors, then the rest.
template <typename Key>
void check_offset_input(std::int64_t n, int offset) {
  const std::vector<Key> keys = random_keys<Key>(n, 43 + n + offset, 64);
  std::vector<Key> want = keys;
  std::sort(want.begin(), want.end());
  const std::size_t m = static_cast<std::size_t>(n + offset + 1);
  common::DeviceBuffer<Key> in(m), out(m);
  if (n) CUDA_CHECK(cudaMemcpy(in.get() + offset, keys.data(), n * sizeof(Key), cudaMemcpyHostToDevice));
  common::Scratch scratch;
  common::Onesweep<Key>::sort(n, in.get() + offset, out.get(), nullptr, nullptr, 0, 8 * sizeof(Key), scratch, nullptr);
  std::vector<Key> got(n);
  if (n) CUDA_CHECK(cudaMemcpy(got.data(), out.get(), n * sizeof(Key), cudaMemcpyDeviceToHost));
  ASSERT_EQ(got, want) << "n " << n << ", input offset " << offset << " keys";
}

COURSE_TEST(Onesweep, KeysNotOnA16ByteBoundary) {
  REQUIRE_GPU();
  for (std::int64_t n :
       {std::int64_t{1}, std::int64_t{2}, std::int64_t{3}, std::int64_t{5}, std::int64_t{4097}, std::int64_t{100003}}) {
    for (int offset : {1, 2, 3}) check_offset_input<unsigned>(n, offset);
    check_offset_input<std::uint64_t>(n, 1);
  }
}

// 8-byte values take their own, smaller default tile (the staging of 384 x 30 of them would not fit).
COURSE_TEST(Onesweep, EightByteValuesKeepTheirKeysOrder) {
  REQUIRE_GPU();
  using Sort = common::Onesweep<unsigned, std::uint64_t>;
  const std::int64_t tile = Sort::kTile;
  for (std::int64_t n : {std::int64_t{1}, tile - 1, tile + 1, std::int64_t{100003}}) {
    const std::vector<unsigned> keys = random_keys<unsigned>(n, 47 + n, 9);
    std::vector<std::uint64_t> values(n);
    for (std::int64_t i = 0; i < n; ++i) values[i] = (std::uint64_t{1} << 40) + static_cast<std::uint64_t>(i);
    std::vector<std::int64_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) { return keys[a] < keys[b]; });
    common::DeviceBuffer<unsigned> k_in(n), k_out(n);
    common::DeviceBuffer<std::uint64_t> v_in(n), v_out(n);
    CUDA_CHECK(cudaMemcpy(k_in.get(), keys.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(v_in.get(), values.data(), n * sizeof(std::uint64_t), cudaMemcpyHostToDevice));
    common::Scratch scratch;
    Sort::sort(n, k_in.get(), k_out.get(), v_in.get(), v_out.get(), 0, 32, scratch, nullptr);
    std::vector<std::uint64_t> got(n);
    CUDA_CHECK(cudaMemcpy(got.data(), v_out.get(), n * sizeof(std::uint64_t), cudaMemcpyDeviceToHost));
    for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], values[order[i]]) << "n " << n << " position " << i;
  }
}

TEST(Onesweep, BadArgumentsThrowClearErrors) {
  REQUIRE_GPU();
  common::DeviceBuffer<int> a(8), b(8);
  common::Scratch s;
  EXPECT_THROW(common::Onesweep<int>::sort(-1, a.get(), b.get(), nullptr, nullptr, 0, 32, s, nullptr),
               std::invalid_argument);
  EXPECT_THROW(common::Onesweep<int>::sort(8, a.get(), b.get(), nullptr, nullptr, 0, 33, s, nullptr),
               std::invalid_argument);
  EXPECT_THROW(common::Onesweep<int>::sort(8, a.get(), b.get(), nullptr, nullptr, 9, 8, s, nullptr),
               std::invalid_argument);
  EXPECT_THROW(common::Onesweep<int>::sort(8, a.get(), a.get(), nullptr, nullptr, 0, 32, s, nullptr),
               std::invalid_argument);
}
