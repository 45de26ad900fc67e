// v7 one block (the worked example of docs/adding_a_version.md): one block of 1024 threads scans
// the whole array. Each thread sums its own contiguous chunk, the block scans the 1024 chunk sums
// in shared memory (Hillis-Steele), and each thread writes its chunk's exclusive prefix sums.
// Prediction: one launch and 8 bytes per element, but one SM does all the work and a thread's
// consecutive accesses are a chunk apart (uncoalesced): far below the copy bandwidth, on the order
// of one SM's share of it at best. Copy to stream_compaction/src/v7_one_block.cu.
#include "common/cuda_check.hpp"
#include "launch.hpp"
#include "stream_compaction/device.hpp"

namespace StreamCompaction {
namespace Device {
namespace {

constexpr int kThreads = 1024;

__global__ void __launch_bounds__(kThreads)
    one_block_scan_kernel(std::int64_t n, int* __restrict__ out, const int* __restrict__ in) {
  __shared__ unsigned sums[kThreads];
  const std::int64_t chunk = (n + kThreads - 1) / kThreads;
  const std::int64_t begin = min(n, threadIdx.x * chunk), end = min(n, begin + chunk);
  unsigned total = 0;  // unsigned: the sums wrap around like the CPU's
  for (std::int64_t i = begin; i < end; ++i) total += static_cast<unsigned>(in[i]);
  sums[threadIdx.x] = total;
  __syncthreads();
  for (int offset = 1; offset < kThreads; offset <<= 1) {  // inclusive scan of the chunk sums
    const unsigned add = threadIdx.x >= offset ? sums[threadIdx.x - offset] : 0u;
    __syncthreads();
    sums[threadIdx.x] += add;
    __syncthreads();
  }
  unsigned running = threadIdx.x == 0 ? 0u : sums[threadIdx.x - 1];
  for (std::int64_t i = begin; i < end; ++i) {
    const unsigned value = static_cast<unsigned>(in[i]);
    out[i] = static_cast<int>(running);
    running += value;
  }
}

}  // namespace

void scan_one_block(std::int64_t n, int* out, const int* in, ScratchTree&, cudaStream_t stream, int) {
  check_n(n, "scan_one_block");
  if (n == 0) return;
  one_block_scan_kernel<<<1, kThreads, 0, stream>>>(n, out, in);
  CUDA_CHECK_LAST();
}

}  // namespace Device
}  // namespace StreamCompaction
