// Library baselines from CUB: DeviceScan::ExclusiveSum, DeviceSelect::If, DeviceRadixSort.
// Their temporary storage comes from the caller's scratch (queried once, then reused).
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_select.cuh>

#include "common/cuda_check.hpp"
#include "launch.hpp"
#include "stream_compaction/device.hpp"

namespace StreamCompaction {
namespace Device {
namespace {

struct IsNonZero {
  __host__ __device__ bool operator()(int x) const { return x != 0; }
};

}  // namespace

void scan_cub(std::int64_t n, int* out, const int* in, ScratchTree& scratch, cudaStream_t stream, int) {
  check_n(n, "scan_cub");
  if (n == 0) return;
  std::size_t bytes = 0;
  CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, bytes, in, out, n, stream));
  CUDA_CHECK(cub::DeviceScan::ExclusiveSum(scratch.here().get(bytes), bytes, in, out, n, stream));
}

void compact_cub(std::int64_t n, int* out, std::int64_t* count, const int* in, ScratchTree& scratch,
                 cudaStream_t stream) {
  check_n(n, "compact_cub");
  if (n == 0) {
    CUDA_CHECK(cudaMemsetAsync(count, 0, sizeof(std::int64_t), stream));
    return;
  }
  std::size_t bytes = 0;
  CUDA_CHECK(cub::DeviceSelect::If(nullptr, bytes, in, out, count, n, IsNonZero{}, stream));
  CUDA_CHECK(cub::DeviceSelect::If(scratch.here().get(bytes), bytes, in, out, count, n, IsNonZero{}, stream));
}

void sort_cub(std::int64_t n, int* out, const int* in, ScratchTree& scratch, cudaStream_t stream) {
  check_n(n, "sort_cub");
  if (n == 0) return;
  std::size_t bytes = 0;
  CUDA_CHECK(cub::DeviceRadixSort::SortKeys(nullptr, bytes, in, out, n, 0, 32, stream));
  CUDA_CHECK(cub::DeviceRadixSort::SortKeys(scratch.here().get(bytes), bytes, in, out, n, 0, 32, stream));
}

}  // namespace Device
}  // namespace StreamCompaction
