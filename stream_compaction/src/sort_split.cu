// The classic radix sort (GPU Gems 3 ch. 39, the CIS 565 Project 2 extra credit): LSD, one bit per
// pass, each pass a split built from the work-efficient scan. For bit b of every key:
//  1. map: e[i] = 1 where the bit is 0 (a "false"), else 0;
//  2. scan: f = exclusive scan of e, with this project's v2 work-efficient scan (not a new one);
//  3. scatter: totalFalses = e[n-1] + f[n-1]; key i goes to f[i] if its bit is 0, else to
//     t = i - f[i] + totalFalses. The falses keep their order, then the trues keep theirs: the
//     split is stable, which is what makes 32 of them a sort.
// Negative keys: two's complement puts them above the positives in unsigned bit order, so the last
// pass reads bit 31 inverted (the sign bit flipped): negatives go first.
// Prediction at 2^28 on an H200: 32 passes of map (8 bytes per key), scan (~84: the v2 model) and
// scatter (12) move ~3,300 bytes per key against sort_radix's 48 (~70x) in ~1,900 launches; from the
// reference run's parts (v2 scan 8.5 ms, map 0.8 ms, scatter 1.3 ms) ~10.6 ms a pass, ~340 ms in
// all: ~38x slower than sort_radix (8.9 ms), and launch-bound below ~2^22 (~60 launches a pass).
#include "common/cuda_check.hpp"
#include "launch.hpp"
#include "stream_compaction/device.hpp"

namespace StreamCompaction {
namespace Device {
namespace {
// EXERCISE BEGIN

constexpr int kBlock = 256;
constexpr int kKeyBits = 32;

// The bit a pass sorts on, with the sign bit inverted so that negative keys come first.
__device__ __forceinline__ int sort_bit(int key, int bit) {
  const int b = static_cast<int>((static_cast<unsigned>(key) >> bit) & 1u);
  return bit == kKeyBits - 1 ? b ^ 1 : b;
}

__global__ void map_false_kernel(std::int64_t n, int* __restrict__ falses, const int* __restrict__ keys, int bit) {
  const std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x;
  if (i < n) falses[i] = !sort_bit(keys[i], bit);
}

__global__ void split_scatter_kernel(std::int64_t n, int* __restrict__ out, const int* __restrict__ keys,
                                     const int* __restrict__ false_before, int bit) {
  const std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x;
  if (i >= n) return;
  const std::int64_t total_falses = false_before[n - 1] + !sort_bit(keys[n - 1], bit);
  const int key = keys[i];
  const std::int64_t f = false_before[i];
  out[sort_bit(key, bit) ? i - f + total_falses : f] = key;
}

// EXERCISE END
}  // namespace

void sort_split(std::int64_t n, int* out, const int* in, ScratchTree& scratch, cudaStream_t stream) {
  check_n(n, "sort_split");
  if (n >= (std::int64_t{1} << 31)) throw std::invalid_argument("sort_split: n must be < 2^31");
  // EXERCISE BEGIN body
  if (n == 0) return;
  common::ScratchCarver carve;
  const std::size_t at_alt = carve.take(n * sizeof(int));
  const std::size_t at_falses = carve.take(n * sizeof(int));
  const std::size_t at_before = carve.take(n * sizeof(int));
  auto* base = static_cast<unsigned char*>(scratch.here().get(carve.total()));
  int* alt = reinterpret_cast<int*>(base + at_alt);
  int* falses = reinterpret_cast<int*>(base + at_falses);
  int* false_before = reinterpret_cast<int*>(base + at_before);
  const unsigned grid = grid_for(n, kBlock);
  // in -> alt -> out -> alt -> ... -> out: 32 passes, an even number, end in out
  const int* src = in;
  int* dst = alt;
  for (int bit = 0; bit < kKeyBits; ++bit) {
    map_false_kernel<<<grid, kBlock, 0, stream>>>(n, falses, src, bit);
    CUDA_CHECK_LAST();
    scan_work_efficient(n, false_before, falses, scratch.nested(), stream, kBlock);
    split_scatter_kernel<<<grid, kBlock, 0, stream>>>(n, dst, src, false_before, bit);
    CUDA_CHECK_LAST();
    src = dst;
    dst = dst == alt ? out : alt;
  }
  // EXERCISE END
}

}  // namespace Device
}  // namespace StreamCompaction
