// Fresh inputs on the host (fresh_inputs.hpp): the keys, the CPU versions' inputs and the checks'
// words. A harness file: no exercise reaches it.
#include "stream_compaction/fresh_inputs.hpp"

#include <algorithm>
#include <random>
#include <vector>

#include "host_chunks.hpp"

namespace StreamCompaction {
namespace Fresh {

std::uint64_t new_key() {
  static std::random_device device;
  return (static_cast<std::uint64_t>(device()) << 32) ^ device();
}

void fill(Op op, std::uint64_t key, std::int64_t n, int* in, Fill f) {
#pragma omp parallel for schedule(static) if (n >= (std::int64_t{1} << 18))
  for (std::int64_t i = 0; i < n; ++i) in[i] = value(op, key, i, f);
}

std::string scan_differs(std::int64_t i, int got, int expected) {
  return "output differs from the input's exclusive scan at index " + std::to_string(i) + ": " + std::to_string(got) +
         ", expected " + std::to_string(expected);
}

std::string kept_count_differs(std::int64_t got, std::int64_t expected) {
  return "kept count " + std::to_string(got) + ", the input has " + std::to_string(expected) + " nonzeros";
}

std::string compaction_differs(std::int64_t j, int got, int expected) {
  return "output differs from the input's compaction at index " + std::to_string(j) + ": " + std::to_string(got) +
         ", expected " + std::to_string(expected);
}

std::string not_sorted(std::int64_t i, int before, int at) {
  return "output is not sorted at index " + std::to_string(i) + ": " + std::to_string(at) + " after " +
         std::to_string(before);
}

std::string not_a_permutation() { return "output is sorted but not a permutation of the input (its multiset differs)"; }

// Each chunk finds its own first difference; the first chunk's that has one is the output's first.
std::string check(Op op, std::int64_t n, const int* in, const int* out, std::int64_t count) {
  const int T = HostChunks::count(n);
  std::vector<std::string> bad(T);
  if (op == Op::Scan) {  // wrap-around sums, as the reference's
    const auto base =
        HostChunks::bases<std::uint32_t>(n, T, [in](std::int64_t i) { return static_cast<std::uint32_t>(in[i]); });
#pragma omp parallel for num_threads(T) schedule(static, 1)
    for (int t = 0; t < T; ++t) {
      std::uint32_t sum = base[t];
      for (std::int64_t i = HostChunks::begin(n, t, T); i < HostChunks::begin(n, t + 1, T); ++i) {
        if (static_cast<std::uint32_t>(out[i]) != sum) {
          bad[t] = scan_differs(i, out[i], static_cast<int>(sum));
          break;
        }
        sum += static_cast<std::uint32_t>(in[i]);
      }
    }
  } else if (op == Op::Compact) {
    const auto base = HostChunks::bases<std::int64_t>(n, T, [in](std::int64_t i) { return std::int64_t{in[i] != 0}; });
    if (count != base[T]) return kept_count_differs(count, base[T]);
#pragma omp parallel for num_threads(T) schedule(static, 1)
    for (int t = 0; t < T; ++t) {
      std::int64_t j = base[t];
      for (std::int64_t i = HostChunks::begin(n, t, T); i < HostChunks::begin(n, t + 1, T); ++i)
        if (in[i] != 0) {
          if (out[j] != in[i]) {
            bad[t] = compaction_differs(j, out[j], in[i]);
            break;
          }
          ++j;
        }
    }
  } else {
    const std::uint64_t salt = new_key();  // drawn after the run
    std::vector<std::uint64_t> in_sum(T, 0), out_sum(T, 0);
#pragma omp parallel for num_threads(T) schedule(static, 1)
    for (int t = 0; t < T; ++t) {
      const std::int64_t b = HostChunks::begin(n, t, T), e = HostChunks::begin(n, t + 1, T);
      for (std::int64_t i = std::max<std::int64_t>(b, 1); i < e; ++i)
        if (out[i] < out[i - 1]) {
          bad[t] = not_sorted(i, out[i - 1], out[i]);
          break;
        }
      for (std::int64_t i = b; i < e; ++i) {
        in_sum[t] += mix(static_cast<std::uint32_t>(in[i]) ^ salt);
        out_sum[t] += mix(static_cast<std::uint32_t>(out[i]) ^ salt);
      }
    }
    for (const auto& b : bad)
      if (!b.empty()) return b;
    std::uint64_t in_total = 0, out_total = 0;
    for (int t = 0; t < T; ++t) in_total += in_sum[t], out_total += out_sum[t];
    return in_total == out_total ? "" : not_a_permutation();
  }
  for (const auto& b : bad)
    if (!b.empty()) return b;
  return "";
}

common::FreshInputs host_hooks(Op op, std::int64_t n, int* in, const int* out, const std::int64_t* count, Fill f) {
  return {[=] { fill(op, new_key(), n, in, f); }, [=] { return check(op, n, in, out, count ? *count : 0); }};
}

}  // namespace Fresh
}  // namespace StreamCompaction
