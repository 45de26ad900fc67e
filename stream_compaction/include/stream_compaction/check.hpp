// The checker every timed configuration goes through: compares a version's output with the
// CPU reference computed once per input (exact, integers).
#pragma once
#include <cstdint>

#include "common/compare.hpp"
#include "stream_compaction/registry.hpp"

namespace StreamCompaction {

// The CPU reference of `op` for n inputs into out (n elements, at least 1): the exclusive scan,
// the kept values (compaction, without a scan), or the sorted keys (sort and sort-pairs, whose
// values are copies of the keys). Returns the number kept for a compaction, 0 otherwise.
std::int64_t reference_output(Op op, std::int64_t n, int* out, const int* in);

// reference: the reference output (for compaction its first `expected_count` elements);
// got / got_count: the version's output and, for compaction, the count it reported; in (optional):
// the input, named in the message at the first difference. A failure's message names the first
// difference and, where the output has the shape of a common mistake, that mistake: an inclusive
// scan, a compaction that drops the last kept element (a count one short), a sort that orders
// the keys as unsigned (the negative keys after the positive ones), a sort that loses keys.
common::CompareResult check_output(Op op, std::int64_t n, const int* reference, std::int64_t expected_count,
                                   const int* got, std::int64_t got_count, const int* in = nullptr);

}  // namespace StreamCompaction
