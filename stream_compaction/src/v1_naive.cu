// v1 naive: Hillis-Steele scan in global memory. Idea over the CPU: use every GPU thread at once.
// ceil(log2 n) launches, each reading 2n and writing n ints: O(n log n) work, so it moves about
// 8n * log2(n) bytes. Prediction at n = 2^28 on an H100 (~3 TB/s copy): 28 passes of 2 GB
// ~ 20 ms, i.e. ~20x slower than one copy of the array; it only beats the CPU by bandwidth.
#include "common/cuda_check.hpp"
#include "launch.hpp"
#include "stream_compaction/device.hpp"

namespace StreamCompaction {
namespace Device {
namespace {
// EXERCISE BEGIN

__global__ void shift_right_kernel(std::int64_t n, int* __restrict__ out, const int* __restrict__ in) {
  const std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x;
  if (i < n) out[i] = i == 0 ? 0 : in[i - 1];
}

__global__ void hillis_steele_step_kernel(std::int64_t n, std::int64_t offset, int* __restrict__ out,
                                          const int* __restrict__ in) {
  const std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x;
  if (i < n) out[i] = i >= offset ? in[i] + in[i - offset] : in[i];
}

// EXERCISE END
}  // namespace

void scan_naive(std::int64_t n, int* out, const int* in, ScratchTree& scratch, cudaStream_t stream, int block) {
  check_n(n, "scan_naive");
  check_block(block, "scan_naive", false);
  // EXERCISE BEGIN body
  if (n == 0) return;
  int* tmp = scratch.here().as<int>(n);
  int levels = 0;
  while ((std::int64_t{1} << levels) < n) ++levels;
  // Ping-pong so that the last level lands in `out`.
  int* src = levels % 2 == 0 ? out : tmp;
  int* dst = levels % 2 == 0 ? tmp : out;
  const unsigned grid = grid_for(n, block);
  shift_right_kernel<<<grid, block, 0, stream>>>(n, src, in);
  CUDA_CHECK_LAST();
  for (std::int64_t offset = 1; offset < n; offset <<= 1) {
    hillis_steele_step_kernel<<<grid, block, 0, stream>>>(n, offset, dst, src);
    CUDA_CHECK_LAST();
    std::swap(src, dst);
  }
  // EXERCISE END
}

}  // namespace Device
}  // namespace StreamCompaction
