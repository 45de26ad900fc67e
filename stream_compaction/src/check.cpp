#include "stream_compaction/check.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "common/host_array.hpp"
#include "host_chunks.hpp"
#include "stream_compaction/host.hpp"

namespace StreamCompaction {

namespace {

// The checker's references, split over the host's cores: the same outputs as the sequential ones
// of reference.cpp (the timed CPU versions, which stay sequential), in a fraction of the time. At
// 2^26 elements the sequential radix sort took about 1 s and the scan 0.1 s of every graded
// process that checks that size (H200 host, 2026-11-26); each chunk below is one thread's.
void threaded_scan(std::int64_t n, int* out, const int* in) {
  const int T = HostChunks::count(n);
  // wrap-around sums, as Host::scan's
  const auto base =
      HostChunks::bases<std::uint32_t>(n, T, [in](std::int64_t i) { return static_cast<std::uint32_t>(in[i]); });
#pragma omp parallel for num_threads(T) schedule(static, 1)
  for (int t = 0; t < T; ++t) {
    std::uint32_t s = base[t];
    for (std::int64_t i = HostChunks::begin(n, t, T); i < HostChunks::begin(n, t + 1, T); ++i) {
      const std::uint32_t v = static_cast<std::uint32_t>(in[i]);
      out[i] = static_cast<int>(s);
      s += v;
    }
  }
}

std::int64_t threaded_compact(std::int64_t n, int* out, const int* in) {
  const int T = HostChunks::count(n);
  const auto base = HostChunks::bases<std::int64_t>(n, T, [in](std::int64_t i) { return std::int64_t{in[i] != 0}; });
#pragma omp parallel for num_threads(T) schedule(static, 1)
  for (int t = 0; t < T; ++t) {
    std::int64_t k = base[t];
    for (std::int64_t i = HostChunks::begin(n, t, T); i < HostChunks::begin(n, t + 1, T); ++i)
      if (in[i] != 0) out[k++] = in[i];
  }
  return base[T];
}

// An LSD radix sort of the keys with their sign bit flipped, 8 bits a pass; each pass counts the
// digits of every chunk, then each chunk scatters its keys in order after the keys of lower digits
// and of the chunks before it with its digit (stable, so the passes compose).
void threaded_radix_sort(std::int64_t n, int* out, const int* in) {
  const int T = HostChunks::count(n);
  common::HostArray<std::uint32_t> a(n), b(n);  // first touched by the loops below, in parallel
  std::vector<std::int64_t> count(static_cast<std::size_t>(T) * 256);
#pragma omp parallel for num_threads(T) schedule(static, 1)
  for (int t = 0; t < T; ++t)
    for (std::int64_t i = HostChunks::begin(n, t, T); i < HostChunks::begin(n, t + 1, T); ++i)
      a[i] = static_cast<std::uint32_t>(in[i]) ^ 0x80000000u;
  for (int shift = 0; shift < 32; shift += 8) {
#pragma omp parallel for num_threads(T) schedule(static, 1)
    for (int t = 0; t < T; ++t) {
      std::int64_t* c = &count[static_cast<std::size_t>(t) * 256];
      std::fill(c, c + 256, 0);
      for (std::int64_t i = HostChunks::begin(n, t, T); i < HostChunks::begin(n, t + 1, T); ++i)
        ++c[(a[i] >> shift) & 0xff];
    }
    std::int64_t at = 0;  // digit-major, chunk-minor: where chunk t's keys of digit d start
    for (int d = 0; d < 256; ++d)
      for (int t = 0; t < T; ++t) {
        const std::int64_t k = count[static_cast<std::size_t>(t) * 256 + d];
        count[static_cast<std::size_t>(t) * 256 + d] = at;
        at += k;
      }
#pragma omp parallel for num_threads(T) schedule(static, 1)
    for (int t = 0; t < T; ++t) {
      std::int64_t* c = &count[static_cast<std::size_t>(t) * 256];
      for (std::int64_t i = HostChunks::begin(n, t, T); i < HostChunks::begin(n, t + 1, T); ++i)
        b[c[(a[i] >> shift) & 0xff]++] = a[i];
    }
    a.swap(b);
  }
#pragma omp parallel for num_threads(T) schedule(static, 1)
  for (int t = 0; t < T; ++t)
    for (std::int64_t i = HostChunks::begin(n, t, T); i < HostChunks::begin(n, t + 1, T); ++i)
      out[i] = static_cast<int>(a[i] ^ 0x80000000u);
}

}  // namespace

std::int64_t reference_output(Op op, std::int64_t n, int* out, const int* in) {
  if (op == Op::Scan) {
    threaded_scan(n, out, in);
    return 0;
  }
  if (op == Op::Compact) return threaded_compact(n, out, in);
  threaded_radix_sort(n, out, in);
  return 0;
}

namespace {

// got[0, n) == reference[0, n), a chunk a thread (a 2^26 output compared on one core: ~40 ms of
// every check of a version at that size)
bool threaded_equal(const int* got, const int* reference, std::int64_t n) {
  const int T = HostChunks::count(n);
  int differs = 0;
#pragma omp parallel for num_threads(T) schedule(static, 1) reduction(| : differs)
  for (int t = 0; t < T; ++t) {
    const std::int64_t b = HostChunks::begin(n, t, T), e = HostChunks::begin(n, t + 1, T);
    differs |= e > b && std::memcmp(got + b, reference + b, static_cast<std::size_t>(e - b) * sizeof(int)) != 0;
  }
  return differs == 0;
}

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
    const std::int64_t m = op == Op::Compact ? expected_count : n;
    if (threaded_equal(got, reference, m)) return r;  // the common case, over the host's cores
    r = common::compare_exact(got, reference, m);     // the first difference and the count, in one pass
    if (r.ok) return r;
    if (in != nullptr && op == Op::Scan && r.first_bad >= 0)
      r.message += " (input element " + std::to_string(r.first_bad) + ": " + std::to_string(in[r.first_bad]) + ")";
  }
  const std::string why = diagnosis(op, n, reference, expected_count, got, got_count, in);
  if (!why.empty()) r.message += ": " + why;
  return r;
}

}  // namespace StreamCompaction
