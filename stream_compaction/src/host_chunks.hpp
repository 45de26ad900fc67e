// The host's share of the checker's work over its cores (check.cpp's references, fresh_inputs.cpp's
// checks of a CPU version): chunk t of T is [n t / T, n (t + 1) / T), one a thread, from 2^18
// elements (below, one chunk). A harness header: no exercise includes it.
#pragma once
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace StreamCompaction {
namespace HostChunks {

inline int count(std::int64_t n) { return n < (std::int64_t{1} << 18) ? 1 : std::max(1, omp_get_max_threads()); }
inline std::int64_t begin(std::int64_t n, int t, int chunks) { return n * t / chunks; }

// Where each chunk's running total starts: base[t] = the sum of value(i) over the chunks before t
// (base[T] the whole), each chunk summed by its own thread; Sum wraps as its type does.
template <class Sum, class Value>
std::vector<Sum> bases(std::int64_t n, int T, Value value) {
  std::vector<Sum> base(T + 1, Sum{0});
#pragma omp parallel for num_threads(T) schedule(static, 1)
  for (int t = 0; t < T; ++t) {
    Sum s{0};
    for (std::int64_t i = begin(n, t, T); i < begin(n, t + 1, T); ++i) s += value(i);
    base[t + 1] = s;
  }
  for (int t = 0; t < T; ++t) base[t + 1] += base[t];
  return base;
}

}  // namespace HostChunks
}  // namespace StreamCompaction
