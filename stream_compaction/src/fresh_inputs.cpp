// Fresh inputs on the host (fresh_inputs.hpp): the keys, the CPU versions' inputs and the checks'
// words. A harness file: no exercise reaches it.
#include "stream_compaction/fresh_inputs.hpp"

#include <random>

namespace StreamCompaction {
namespace Fresh {

std::uint64_t new_key() {
  static std::random_device device;
  return (static_cast<std::uint64_t>(device()) << 32) ^ device();
}

void fill(Op op, std::uint64_t key, std::int64_t n, int* in) {
  for (std::int64_t i = 0; i < n; ++i) in[i] = value(op, key, i);
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

std::string check(Op op, std::int64_t n, const int* in, const int* out, std::int64_t count) {
  if (op == Op::Scan) {
    std::uint32_t sum = 0;  // wrap-around, as the reference's
    for (std::int64_t i = 0; i < n; ++i) {
      if (static_cast<std::uint32_t>(out[i]) != sum) return scan_differs(i, out[i], static_cast<int>(sum));
      sum += static_cast<std::uint32_t>(in[i]);
    }
    return "";
  }
  if (op == Op::Compact) {
    std::int64_t kept = 0;
    for (std::int64_t i = 0; i < n; ++i) kept += in[i] != 0;
    if (count != kept) return kept_count_differs(count, kept);
    for (std::int64_t i = 0, j = 0; i < n; ++i)
      if (in[i] != 0) {
        if (out[j] != in[i]) return compaction_differs(j, out[j], in[i]);
        ++j;
      }
    return "";
  }
  for (std::int64_t i = 1; i < n; ++i)
    if (out[i] < out[i - 1]) return not_sorted(i, out[i - 1], out[i]);
  const std::uint64_t salt = new_key();  // drawn after the run
  std::uint64_t in_sum = 0, out_sum = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    in_sum += mix(static_cast<std::uint32_t>(in[i]) ^ salt);
    out_sum += mix(static_cast<std::uint32_t>(out[i]) ^ salt);
  }
  return in_sum == out_sum ? "" : not_a_permutation();
}

common::FreshInputs host_hooks(Op op, std::int64_t n, int* in, const int* out, const std::int64_t* count) {
  return {[=] { fill(op, new_key(), n, in); }, [=] { return check(op, n, in, out, count ? *count : 0); }};
}

}  // namespace Fresh
}  // namespace StreamCompaction
