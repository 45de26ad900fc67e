// The CPU exercise: compaction written the GPU's way (map, scan, scatter), one thread. Its scan is
// the sequential one (Host::scan, src/reference.cpp). This file holds the exercise and nothing
// else: the references the checker compares against live in src/reference.cpp, the course's CPU
// API in src/cpu_api.cpp (harness files a student's block cannot reach).
#include <cstdint>
#include <vector>

#include "stream_compaction/host.hpp"

namespace StreamCompaction {
namespace Host {

std::int64_t compact_with_scan(std::int64_t n, int* out, const int* in) {
  // EXERCISE BEGIN body unused(n, out, in) exercise=cpu_compact_with_scan
  if (n == 0) return 0;
  std::vector<int> flags(n), index(n);
  for (std::int64_t i = 0; i < n; ++i) flags[i] = in[i] != 0;
  scan(n, index.data(), flags.data());
  for (std::int64_t i = 0; i < n; ++i)
    if (flags[i]) out[index[i]] = in[i];
  return static_cast<std::int64_t>(index[n - 1]) + flags[n - 1];
  // EXERCISE END
}

}  // namespace Host
}  // namespace StreamCompaction
