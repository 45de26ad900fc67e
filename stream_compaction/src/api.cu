// The CIS 565 host-pointer API on top of the device entry points. Each call allocates, copies in,
// runs the algorithm once untimed (module load, scratch sizing), then times a second run with the
// namespace's GPU timer, and copies out: the reported time is the algorithm alone, and a scan
// nested in a compaction never touches the timer.
#include <stdexcept>
#include <string>

#include "common/cuda_check.hpp"
#include "common/device_buffer.hpp"
#include "stream_compaction/device.hpp"
#include "stream_compaction/efficient.h"
#include "stream_compaction/naive.h"
#include "stream_compaction/radix.h"
#include "stream_compaction/thrust.h"

namespace StreamCompaction {
namespace {

void check_args(int n, int* odata, const int* idata, const char* who) {
  if (n < 0) throw std::invalid_argument(std::string(who) + ": negative n " + std::to_string(n));
  if (n > 0 && (!odata || !idata)) throw std::invalid_argument(std::string(who) + ": null pointer");
}

// Copies in, runs `algorithm(d_out, d_in, scratch)` once untimed and once timed, copies out.
template <class Algorithm>
void timed_run(Common::PerformanceTimer& timer, int n, int* odata, const int* idata, const char* who,
               Algorithm algorithm) {
  check_args(n, odata, idata, who);
  if (n == 0) return;
  common::DeviceBuffer<int> d_in(n), d_out(n);
  Device::ScratchTree scratch;
  CUDA_CHECK(cudaMemcpy(d_in.get(), idata, n * sizeof(int), cudaMemcpyHostToDevice));
  algorithm(d_out.get(), d_in.get(), scratch);
  timer.startGpuTimer();
  algorithm(d_out.get(), d_in.get(), scratch);
  timer.endGpuTimer();
  CUDA_CHECK(cudaMemcpy(odata, d_out.get(), n * sizeof(int), cudaMemcpyDeviceToHost));
}

void timed_scan(Common::PerformanceTimer& timer, Device::ScanFn scan, int n, int* odata, const int* idata,
                const char* who) {
  timed_run(timer, n, odata, idata, who,
            [&](int* out, const int* in, Device::ScratchTree& scratch) { scan(n, out, in, scratch, nullptr, 256); });
}

}  // namespace

namespace Naive {
Common::PerformanceTimer& timer() {
  static Common::PerformanceTimer t;
  return t;
}
void scan(int n, int* odata, const int* idata) {
  timed_scan(timer(), Device::scan_naive, n, odata, idata, "Naive::scan");
}
}  // namespace Naive

namespace Efficient {
Common::PerformanceTimer& timer() {
  static Common::PerformanceTimer t;
  return t;
}
void scan(int n, int* odata, const int* idata) {
  timed_scan(timer(), Device::scan_work_efficient, n, odata, idata, "Efficient::scan");
}
int compact(int n, int* odata, const int* idata) {
  check_args(n, odata, idata, "Efficient::compact");
  if (n == 0) return 0;
  common::DeviceBuffer<int> d_in(n), d_out(n);
  common::DeviceBuffer<std::int64_t> d_count(1);
  Device::ScratchTree scratch;
  CUDA_CHECK(cudaMemcpy(d_in.get(), idata, n * sizeof(int), cudaMemcpyHostToDevice));
  auto run = [&] {
    Device::compact_map_scan_scatter(Device::scan_work_efficient, n, d_out.get(), d_count.get(), d_in.get(), scratch,
                                     nullptr);
  };
  run();
  timer().startGpuTimer();
  run();
  timer().endGpuTimer();
  std::int64_t count = 0;
  CUDA_CHECK(cudaMemcpy(&count, d_count.get(), sizeof(count), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(odata, d_out.get(), count * sizeof(int), cudaMemcpyDeviceToHost));
  return static_cast<int>(count);
}
}  // namespace Efficient

namespace Radix {
Common::PerformanceTimer& timer() {
  static Common::PerformanceTimer t;
  return t;
}
void sort(int n, int* odata, const int* idata) {
  timed_run(timer(), n, odata, idata, "Radix::sort", [&](int* out, const int* in, Device::ScratchTree& scratch) {
    Device::sort_split(n, out, in, scratch, nullptr);
  });
}
}  // namespace Radix

namespace Thrust {
Common::PerformanceTimer& timer() {
  static Common::PerformanceTimer t;
  return t;
}
void scan(int n, int* odata, const int* idata) {
  timed_scan(timer(), Device::scan_thrust, n, odata, idata, "Thrust::scan");
}
}  // namespace Thrust

}  // namespace StreamCompaction
