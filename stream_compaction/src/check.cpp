#include "stream_compaction/check.hpp"

#include <string>

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

common::CompareResult check_output(Op op, std::int64_t n, const int* reference, std::int64_t expected_count,
                                   const int* got, std::int64_t got_count) {
  if (op == Op::Compact && got_count != expected_count) {
    common::CompareResult r;
    r.ok = false;
    r.message = "kept count " + std::to_string(got_count) + ", expected " + std::to_string(expected_count);
    return r;
  }
  return common::compare_exact(got, reference, op == Op::Compact ? expected_count : n);
}

}  // namespace StreamCompaction
