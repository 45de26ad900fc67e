// GPU LSD radix sort, 8-bit digits, 4 passes. Each pass:
//  1. upsweep: each block counts the digits of its contiguous range of tiles in a shared-memory
//     histogram and writes 256 counts (digit-major, so one exclusive scan gives every block's
//     starting offset for every digit);
//  2. scan of the 256 x blocks counts with our own look-back scan (v5);
//  3. downsweep: each block walks its tiles in order; a tile is ranked stably in shared memory
//     (per-warp digit histograms: lanes with equal digits are found with 8 ballots, and each
//     distinct digit in a warp has a leader that bumps its counter), then written out digit run by digit run, so consecutive
//     threads store to consecutive addresses.
// Negative keys: the top digit has its sign bit flipped, so two's-complement order is kept.
// Traffic: 12 bytes per key per pass (read twice, write once), 48 in all; CUB's one-sweep design
// moves ~36. Prediction at 2^28 on an H100: 13 GB at ~2.5 TB/s ~ 5-6 ms, ~0.6-0.7x CUB.
#include "common/device_info.hpp"
#include "common/block_primitives.cuh"
#include "common/cuda_check.hpp"
#include "launch.hpp"
#include "stream_compaction/device.hpp"
#include "stream_compaction/tuning.hpp"

namespace StreamCompaction {
namespace Device {
namespace {
// EXERCISE BEGIN

constexpr int kBits = 8;
constexpr int kBuckets = 1 << kBits;
constexpr int kBlock = 256;
constexpr int kWarps = kBlock / 32;
constexpr int kItems = 16;
constexpr int kTile = kBlock * kItems;
static_assert(kTile == StreamCompaction::Device::tiles::kRadix, "the tests' tile sizes (tuning.hpp) follow this shape");
static_assert(kBlock == kBuckets, "one thread per digit in the per-tile digit bookkeeping");

__device__ __forceinline__ unsigned digit_of(int key, int shift) {
  const unsigned d = (static_cast<unsigned>(key) >> shift) & (kBuckets - 1);
  return shift == 32 - kBits ? d ^ (kBuckets >> 1) : d;
}

__global__ void __launch_bounds__(kBlock) upsweep_kernel(std::int64_t n, const int* __restrict__ keys, int shift,
                                                         std::int64_t keys_per_block, int* __restrict__ counts) {
  __shared__ int hist[kBuckets];
  hist[threadIdx.x] = 0;
  __syncthreads();
  const std::int64_t begin = blockIdx.x * keys_per_block;
  const std::int64_t end = min(n, begin + keys_per_block);
  const std::int64_t vec_end = begin + (end - begin) / 4 * 4;
  if ((reinterpret_cast<std::uintptr_t>(keys) & 15) == 0) {
    const int4* v = reinterpret_cast<const int4*>(keys + begin);
    for (std::int64_t i = threadIdx.x; i < (vec_end - begin) / 4; i += kBlock) {
      const int4 k = v[i];
      atomicAdd(&hist[digit_of(k.x, shift)], 1);
      atomicAdd(&hist[digit_of(k.y, shift)], 1);
      atomicAdd(&hist[digit_of(k.z, shift)], 1);
      atomicAdd(&hist[digit_of(k.w, shift)], 1);
    }
  } else {
    for (std::int64_t i = begin + threadIdx.x; i < vec_end; i += kBlock) atomicAdd(&hist[digit_of(keys[i], shift)], 1);
  }
  for (std::int64_t i = vec_end + threadIdx.x; i < end; i += kBlock) atomicAdd(&hist[digit_of(keys[i], shift)], 1);
  __syncthreads();
  counts[threadIdx.x * std::int64_t{gridDim.x} + blockIdx.x] = hist[threadIdx.x];
}

__global__ void __launch_bounds__(kBlock)
    downsweep_kernel(std::int64_t n, int* __restrict__ out, const int* __restrict__ in, int shift,
                     std::int64_t keys_per_block, const int* __restrict__ offsets) {
  __shared__ int s_keys[kTile];
  __shared__ int s_warp_hist[kWarps][kBuckets];
  __shared__ int s_run[kBuckets];         // where this block's next key of each digit goes
  __shared__ int s_tile_start[kBuckets];  // first slot of each digit inside the current tile
  __shared__ int s_tile_count[kBuckets];
  __shared__ int s_scan_tmp[kWarps + 1];
  const unsigned lane = common::lane_id(), warp = common::warp_id();
  const int d_self = threadIdx.x;
  s_run[d_self] = offsets[d_self * std::int64_t{gridDim.x} + blockIdx.x];
  const std::int64_t begin = blockIdx.x * keys_per_block;
  const std::int64_t end = min(n, begin + keys_per_block);
  for (std::int64_t base = begin; base < end; base += kTile) {
    const int valid = end - base < kTile ? static_cast<int>(end - base) : kTile;
    for (int i = threadIdx.x; i < kWarps * kBuckets; i += kBlock) (&s_warp_hist[0][0])[i] = 0;
    __syncthreads();
    int key[kItems];
    unsigned digit[kItems];
    int rank[kItems];
#pragma unroll
    for (int k = 0; k < kItems; ++k) {  // warp-striped: coalesced loads, order = (warp, k, lane)
      const int idx = warp * 32 * kItems + k * 32 + lane;
      key[k] = idx < valid ? in[base + idx] : 0;
      digit[k] = idx < valid ? digit_of(key[k], shift) : kBuckets;  // kBuckets: no key
    }
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      // Lanes holding the same digit: AND of one ballot per digit bit (8 cheap ballots instead
      // of one __match_any_sync, which is several times slower on sm_70+).
      unsigned peers = __ballot_sync(common::kFullMask, digit[k] < kBuckets);
#pragma unroll
      for (int b = 0; b < kBits; ++b) {
        const unsigned ones = __ballot_sync(common::kFullMask, (digit[k] >> b) & 1u);
        peers &= ((digit[k] >> b) & 1u) ? ones : ~ones;
      }
      const int leader = peers ? __ffs(peers) - 1 : 0;
      int before = 0;
      if (lane == static_cast<unsigned>(leader) && digit[k] < kBuckets) {
        before = s_warp_hist[warp][digit[k]];
        s_warp_hist[warp][digit[k]] = before + __popc(peers);
      }
      rank[k] = __shfl_sync(common::kFullMask, before, leader) + __popc(peers & common::lanemask_lt());
      __syncwarp();
    }
    __syncthreads();
    int tile_count = 0;  // this thread's digit: its warps' counts become warp offsets
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      const int c = s_warp_hist[w][d_self];
      s_warp_hist[w][d_self] = tile_count;
      tile_count += c;
    }
    int tile_total;
    const int start = common::block_exclusive_scan<kBlock>(tile_count, tile_total, s_scan_tmp);
    s_tile_start[d_self] = start;
    s_tile_count[d_self] = tile_count;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kItems; ++k)
      if (digit[k] < kBuckets) s_keys[s_tile_start[digit[k]] + s_warp_hist[warp][digit[k]] + rank[k]] = key[k];
    __syncthreads();
    for (int j = threadIdx.x; j < valid; j += kBlock) {
      const int k = s_keys[j];
      const unsigned d = digit_of(k, shift);
      out[static_cast<std::int64_t>(s_run[d]) + (j - s_tile_start[d])] = k;
    }
    __syncthreads();
    s_run[d_self] += s_tile_count[d_self];
    __syncthreads();
  }
}

// EXERCISE END
}  // namespace

void sort_radix(std::int64_t n, int* out, const int* in, ScratchTree& scratch, cudaStream_t stream) {
  check_n(n, "sort_radix");
  if (n >= (std::int64_t{1} << 31)) throw std::invalid_argument("sort_radix: n must be < 2^31");
  // EXERCISE BEGIN body
  if (n == 0) return;
  const int sms = common::current_sm_count();
  const std::int64_t tiles = (n + kTile - 1) / kTile;
  const std::int64_t target_blocks = std::int64_t{sms} * 8;  // 8 resident blocks per SM
  const std::int64_t tiles_per_block = (tiles + target_blocks - 1) / target_blocks;
  const std::int64_t keys_per_block = tiles_per_block * kTile;
  const unsigned blocks = grid_for(n, keys_per_block);
  const std::size_t count_len = std::size_t{kBuckets} * blocks;
  common::ScratchCarver carve;
  const std::size_t at_alt = carve.take(n * sizeof(int));
  const std::size_t at_counts = carve.take(count_len * sizeof(int));
  const std::size_t at_offsets = carve.take(count_len * sizeof(int));
  auto* base = static_cast<unsigned char*>(scratch.here().get(carve.total()));
  int* alt = reinterpret_cast<int*>(base + at_alt);
  int* counts = reinterpret_cast<int*>(base + at_counts);
  int* offsets = reinterpret_cast<int*>(base + at_offsets);
  // in -> alt -> out -> alt -> out
  const int* src = in;
  int* dst = alt;
  for (int shift = 0; shift < 32; shift += kBits) {
    upsweep_kernel<<<blocks, kBlock, 0, stream>>>(n, src, shift, keys_per_block, counts);
    CUDA_CHECK_LAST();
    scan_lookback(static_cast<std::int64_t>(count_len), offsets, counts, scratch.nested(), stream, 0);
    downsweep_kernel<<<blocks, kBlock, 0, stream>>>(n, dst, src, shift, keys_per_block, offsets);
    CUDA_CHECK_LAST();
    src = dst;
    dst = dst == alt ? out : alt;
  }
  // EXERCISE END
}

}  // namespace Device
}  // namespace StreamCompaction
