#include "stream_compaction/check.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "stream_compaction/host.hpp"

namespace StreamCompaction {

std::int64_t reference_output(Op op, std::int64_t n, int* out, const int* in) {
  if (op == Op::Scan) {
    Host::scan(n, out, in);
    return 0;
  }
  if (op == Op::Compact) return Host::compact_without_scan(n, out, in);
  Host::reference_radix_sort(n, out, in);
  return 0;
}

namespace {

// What a wrong output looks like, where it has the shape of a common mistake ("" otherwise).
std::string diagnosis(Op op, std::int64_t n, const int* reference, std::int64_t expected_count, const int* got,
                      std::int64_t got_count, const int* in) {
  if (op == Op::Scan && (n >= 2 || (in != nullptr && n == 1))) {
    // got[i] == exclusive[i] + in[i] (wrapping, as the scan's sums do) where the input is known,
    // which holds a one-element scan too; else got[i] == exclusive[i + 1] up to the last element
    bool inclusive = true;
    if (in != nullptr) {
      for (std::int64_t i = 0; i < n && inclusive; ++i)
        inclusive = got[i] == static_cast<int>(static_cast<unsigned>(reference[i]) + static_cast<unsigned>(in[i]));
    } else {
      for (std::int64_t i = 0; i + 1 < n && inclusive; ++i) inclusive = got[i] == reference[i + 1];
    }
    if (inclusive) return "the scan is inclusive (each sum includes its own element); an exclusive scan starts at 0";
  }
  if (op == Op::Compact && got_count >= 0 && got_count < expected_count) {
    bool prefix = true;
    for (std::int64_t i = 0; i < got_count && prefix; ++i) prefix = got[i] == reference[i];
    if (prefix)
      return "the first " + std::to_string(got_count) + " kept values are right; " +
             (got_count + 1 == expected_count ? "the last kept element is missing (the count leaves out the last flag)"
                                              : "the rest are missing");
  }
  if (op == Op::Sort || op == Op::SortPairs) {
    std::vector<int> g(got, got + n), r(reference, reference + n);
    std::sort(g.begin(), g.end());
    if (g != r) return "the output is not the input's keys reordered: keys are lost or duplicated";
    bool as_unsigned = true;
    for (std::int64_t i = 0; i + 1 < n && as_unsigned; ++i)
      as_unsigned = static_cast<unsigned>(got[i]) <= static_cast<unsigned>(got[i + 1]);
    if (as_unsigned && n > 0 && got[0] >= 0 && reference[0] < 0)
      return "the keys are ordered as unsigned: the negative keys come after the positive ones (the sign bit)";
    for (std::int64_t i = 0; i + 1 < n; ++i)
      if (got[i] > got[i + 1])
        return "not ordered: element " + std::to_string(i) + " (" + std::to_string(got[i]) + ") > element " +
               std::to_string(i + 1) + " (" + std::to_string(got[i + 1]) + ")";
  }
  return "";
}

}  // namespace

common::CompareResult check_output(Op op, std::int64_t n, const int* reference, std::int64_t expected_count,
                                   const int* got, std::int64_t got_count, const int* in) {
  common::CompareResult r;
  if (op == Op::Compact && got_count != expected_count) {
    r.ok = false;
    r.message = "kept count " + std::to_string(got_count) + ", expected " + std::to_string(expected_count);
  } else {
    r = common::compare_exact(got, reference, op == Op::Compact ? expected_count : n);
    if (r.ok) return r;
    if (in != nullptr && op == Op::Scan && r.first_bad >= 0)
      r.message += " (input element " + std::to_string(r.first_bad) + ": " + std::to_string(in[r.first_bad]) + ")";
  }
  const std::string why = diagnosis(op, n, reference, expected_count, got, got_count, in);
  if (!why.empty()) r.message += ": " + why;
  return r;
}

}  // namespace StreamCompaction
