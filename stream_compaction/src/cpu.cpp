// The CPU exercise: compaction written the GPU's way (map, scan, scatter), one thread. Its scan is
// the sequential one (Host::scan, src/reference.cpp). This file holds the exercise and nothing
// else: the references the checker compares against live in src/reference.cpp, the course's CPU
// API in src/cpu_api.cpp (harness files a student's block cannot reach).
#include <cstdint>
#include <vector>

#include "stream_compaction/host.hpp"

namespace StreamCompaction {
namespace Host {

std::int64_t compact_with_scan(std::int64_t n, int* out, const int* in, CompactStageClock* stages) {
  // EXERCISE BEGIN body unused(n, out, in, stages) exercise=cpu_compact_with_scan
  if (n == 0) return 0;
  std::vector<int> flags(n), index(n);
  for (std::int64_t i = 0; i < n; ++i) flags[i] = in[i] != 0;
  if (stages) stages->after_map = CompactStageClock::Clock::now();
  scan(n, index.data(), flags.data());
  if (stages) stages->after_scan = CompactStageClock::Clock::now();
  for (std::int64_t i = 0; i < n; ++i)
    if (flags[i]) out[index[i]] = in[i];
  if (stages) stages->after_scatter = CompactStageClock::Clock::now();
  return static_cast<std::int64_t>(index[n - 1]) + flags[n - 1];
  // EXERCISE END
}

}  // namespace Host
}  // namespace StreamCompaction
