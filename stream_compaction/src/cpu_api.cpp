// The course's CPU API (stream_compaction/cpu.h, the original project's names): timed wrappers of
// the sequential versions. Harness code: it calls the references, so it lives apart from the
// exercise's file.
#include <cstdint>

#include "stream_compaction/cpu.h"
#include "stream_compaction/host.hpp"

namespace StreamCompaction {
namespace CPU {

Common::PerformanceTimer& timer() {
  static Common::PerformanceTimer t;
  return t;
}

void scan(int n, int* odata, const int* idata) {
  timer().startCpuTimer();
  Host::scan(n, odata, idata);
  timer().endCpuTimer();
}

int compactWithoutScan(int n, int* odata, const int* idata) {
  timer().startCpuTimer();
  const auto k = Host::compact_without_scan(n, odata, idata);
  timer().endCpuTimer();
  return static_cast<int>(k);
}

int compactWithScan(int n, int* odata, const int* idata) {
  timer().startCpuTimer();
  const auto k = Host::compact_with_scan(n, odata, idata);  // its scan is untimed: no nesting
  timer().endCpuTimer();
  return static_cast<int>(k);
}

}  // namespace CPU
}  // namespace StreamCompaction
