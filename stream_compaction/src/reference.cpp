// CPU baseline and references: one pass, sequential, exactly what a careful C++ programmer writes
// first. They are the references every GPU version is checked against (src/check.cpp) and the
// denominator of "speedup vs CPU". A harness file: no exercise lives here, so no student's block
// is compiled with them (grading/rubric.toml's checker_files).
#include <algorithm>
#include <cstdint>
#include <vector>

#include "stream_compaction/host.hpp"

namespace StreamCompaction {
namespace Host {

void scan(std::int64_t n, int* out, const int* in) {
  std::uint32_t sum = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint32_t v = static_cast<std::uint32_t>(in[i]);  // read first: out may alias in
    out[i] = static_cast<int>(sum);
    sum += v;
  }
}

std::int64_t compact_without_scan(std::int64_t n, int* out, const int* in) {
  std::int64_t k = 0;
  for (std::int64_t i = 0; i < n; ++i)
    if (in[i] != 0) out[k++] = in[i];
  return k;
}

void sort(std::int64_t n, int* out, const int* in) {
  std::copy(in, in + n, out);
  std::sort(out, out + n);
}

void reference_radix_sort(std::int64_t n, int* out, const int* in) {
  std::vector<std::uint32_t> a(n), b(n);
  for (std::int64_t i = 0; i < n; ++i) a[i] = static_cast<std::uint32_t>(in[i]) ^ 0x80000000u;
  for (int shift = 0; shift < 32; shift += 8) {
    std::int64_t count[257] = {};
    for (std::int64_t i = 0; i < n; ++i) ++count[((a[i] >> shift) & 0xff) + 1];
    for (int d = 0; d < 256; ++d) count[d + 1] += count[d];
    for (std::int64_t i = 0; i < n; ++i) b[count[(a[i] >> shift) & 0xff]++] = a[i];
    a.swap(b);
  }
  for (std::int64_t i = 0; i < n; ++i) out[i] = static_cast<int>(a[i] ^ 0x80000000u);
}

}  // namespace Host
}  // namespace StreamCompaction
