// v2 work-efficient: Blelloch up-sweep / down-sweep in global memory, O(n) adds instead of
// O(n log n), launching only the threads active at each level (N/2, N/4, ... at stride 2, 4, ...).
// Prediction: half the adds of v1 but 2 log2(N) launches, and from level 3 on each active thread
// touches its own 32-byte sectors, so the bytes moved shrink only by half per level; at 2^28 we
// expect it to beat v1 by ~2x at best, and lose to it at small n where launches dominate.
#include "common/cuda_check.hpp"
#include "launch.hpp"
#include "stream_compaction/device.hpp"

namespace StreamCompaction {
namespace Device {
namespace {
// EXERCISE BEGIN

__global__ void upsweep_kernel(std::int64_t active, std::int64_t stride, int* data) {
  const std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x;
  if (i >= active) return;
  const std::int64_t right = (i + 1) * stride - 1;
  data[right] += data[right - stride / 2];
}

__global__ void downsweep_kernel(std::int64_t active, std::int64_t stride, int* data) {
  const std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x;
  if (i >= active) return;
  const std::int64_t right = (i + 1) * stride - 1;
  const std::int64_t left = right - stride / 2;
  const int t = data[left];
  data[left] = data[right];
  data[right] += t;
}

// EXERCISE END
}  // namespace

void scan_work_efficient(std::int64_t n, int* out, const int* in, ScratchTree& scratch, cudaStream_t stream,
                         int block) {
  check_n(n, "scan_work_efficient");
  check_block(block, "scan_work_efficient", false);
  // EXERCISE BEGIN body
  if (n == 0) return;
  std::int64_t padded = 1;
  while (padded < n) padded <<= 1;
  // Power-of-two sizes scan in place in `out`; others in a zero-padded power-of-two buffer.
  int* data = padded == n ? out : scratch.here().as<int>(padded);
  CUDA_CHECK(cudaMemcpyAsync(data, in, n * sizeof(int), cudaMemcpyDeviceToDevice, stream));
  if (padded != n) CUDA_CHECK(cudaMemsetAsync(data + n, 0, (padded - n) * sizeof(int), stream));
  for (std::int64_t stride = 2; stride <= padded; stride <<= 1) {
    const std::int64_t active = padded / stride;
    upsweep_kernel<<<grid_for(active, block), block, 0, stream>>>(active, stride, data);
    CUDA_CHECK_LAST();
  }
  CUDA_CHECK(cudaMemsetAsync(data + padded - 1, 0, sizeof(int), stream));
  for (std::int64_t stride = padded; stride >= 2; stride >>= 1) {
    const std::int64_t active = padded / stride;
    downsweep_kernel<<<grid_for(active, block), block, 0, stream>>>(active, stride, data);
    CUDA_CHECK_LAST();
  }
  if (data != out) CUDA_CHECK(cudaMemcpyAsync(out, data, n * sizeof(int), cudaMemcpyDeviceToDevice, stream));
  // EXERCISE END
}

}  // namespace Device
}  // namespace StreamCompaction
