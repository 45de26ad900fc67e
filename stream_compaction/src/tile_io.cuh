// Tile-level building blocks of the tuned single-pass kernels (v4 scan, v5 scan, fused compaction):
//  - a tile of BLOCK*ITEMS ints moves between global and shared memory in 16-byte coalesced
//    accesses, and each thread then owns ITEMS consecutive values ("blocked" arrangement);
//    ITEMS is odd so the strided shared-memory reads are free of bank conflicts;
//  - the decoupled look-back (Merrill & Garland 2016): each tile publishes its aggregate, then
//    its inclusive prefix, in one 64-bit status word; a tile's first warp reads 32 predecessors
//    at a time and stops at the nearest one whose inclusive prefix is known.
#pragma once

#include <cstdint>
#include <vector>

#include "common/block_primitives.cuh"
#include "common/cuda_check.hpp"
#include "common/tile_status.cuh"
#include "stream_compaction/device.hpp"

namespace StreamCompaction {
namespace Device {

// T: a 4-byte element type (int, unsigned).
template <int BLOCK, int ITEMS, typename T = int>
struct TileIO {
  static constexpr int kTile = BLOCK * ITEMS;
  static_assert(kTile % 4 == 0, "tile must be a whole number of int4");
  static_assert(sizeof(T) == 4, "tiles move 4-byte elements in 16-byte vectors");

  // Reads in[base, base + kTile) (zeros past n) into v; smem holds kTile values.
  __device__ static void load(const T* __restrict__ in, std::int64_t base, std::int64_t n, T* smem, T (&v)[ITEMS]) {
    const std::int64_t remaining = n - base;
    if (remaining >= kTile && (reinterpret_cast<std::uintptr_t>(in) & 15) == 0) {
      const int4* src = reinterpret_cast<const int4*>(in + base);
      int4* dst = reinterpret_cast<int4*>(smem);
#pragma unroll
      for (int i = threadIdx.x; i < kTile / 4; i += BLOCK) dst[i] = src[i];
    } else {
      for (int i = threadIdx.x; i < kTile; i += BLOCK) smem[i] = i < remaining ? in[base + i] : T(0);
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) v[k] = smem[threadIdx.x * ITEMS + k];
    __syncthreads();
  }

  // Writes v (blocked) to out[base, min(n, base + kTile)).
  __device__ static void store(T* __restrict__ out, std::int64_t base, std::int64_t n, T* smem, const T (&v)[ITEMS]) {
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) smem[threadIdx.x * ITEMS + k] = v[k];
    __syncthreads();
    const std::int64_t remaining = n - base;
    if (remaining >= kTile && (reinterpret_cast<std::uintptr_t>(out) & 15) == 0) {
      int4* dst = reinterpret_cast<int4*>(out + base);
      const int4* src = reinterpret_cast<const int4*>(smem);
#pragma unroll
      for (int i = threadIdx.x; i < kTile / 4; i += BLOCK) dst[i] = src[i];
    } else {
      for (int i = threadIdx.x; i < kTile && i < remaining; i += BLOCK) out[base + i] = smem[i];
    }
  }
};

// The scans' look-back status word: common::TileStatus over 64 bits, the 32-bit value in the low half.
using LookbackStatus = common::TileStatus<unsigned long long>;

// Status words (one per tile) and the tile counter of a look-back launch, from scratch, cleared.
struct LookbackState {
  unsigned long long* status;
  unsigned* tile_counter;
};
inline LookbackState prepare_lookback(ScratchTree& scratch, unsigned tiles, cudaStream_t stream) {
  const std::size_t bytes = (tiles + std::size_t{1}) * sizeof(unsigned long long);
  auto* status = static_cast<unsigned long long*>(scratch.here().get(bytes));
  CUDA_CHECK(cudaMemsetAsync(status, 0, bytes, stream));
  return {status, reinterpret_cast<unsigned*>(status + tiles)};
}

// The tile shapes and look-back delays stream_compaction_tune compares: {block, items, delay
// before the first poll, delay between polls} (ns). Each single-pass kernel instantiates its
// launcher for every one with for_each_tuning_shape.
template <int B, int I, int FIRST, int POLL>
struct TuningShape {
  static constexpr int block = B, items = I, first_delay = FIRST, poll_delay = POLL;
};
template <typename F>
void for_each_tuning_shape(F&& f) {
  f(TuningShape<128, 23, 0, 0>{}), f(TuningShape<128, 31, 0, 0>{}), f(TuningShape<128, 47, 0, 0>{});
  f(TuningShape<256, 15, 0, 0>{}), f(TuningShape<256, 31, 0, 0>{});
  f(TuningShape<128, 23, 1245, 648>{}), f(TuningShape<128, 31, 1245, 648>{}), f(TuningShape<128, 47, 1245, 648>{});
  f(TuningShape<256, 15, 1245, 648>{}), f(TuningShape<256, 31, 1245, 648>{});
  f(TuningShape<128, 31, 600, 300>{}), f(TuningShape<128, 47, 600, 300>{}), f(TuningShape<128, 31, 2000, 1000>{});
}

// Called by all 32 lanes of one warp with the tile's aggregate: publishes it, walks back over
// the predecessors' status words and returns the sum of all earlier tiles to every lane (and
// publishes this tile's inclusive prefix). FIRST_DELAY_NS: sleep after publishing the aggregate
// before the first poll, so that predecessors have likely published their prefixes (then one
// window read suffices); POLL_DELAY_NS: sleep between polls of a window that is not ready.
// Zero means spin. (CUB's sm90 tuning for int32 scan uses 1245 and 648 ns.) `sleepy`: whether
// to sleep at all (grids under 500 tiles never do: there the wait is latency, not contention).
// EXERCISE BEGIN exercise=v5_lookback
template <int FIRST_DELAY_NS = 0, int POLL_DELAY_NS = 0, typename T>
__device__ __forceinline__ T lookback_warp_prefix(unsigned long long* status, std::int64_t tile, T aggregate,
                                                  bool sleepy) {
  const unsigned lane = common::lane_id();
  T prefix = 0;
  using LB = LookbackStatus;
  if (tile == 0) {
    if (lane == 0) LB::publish(status, 0, LB::kPrefix, LB::bits_of(aggregate));
    return prefix;
  }
  if (lane == 0) LB::publish(status, tile, LB::kAggregate, LB::bits_of(aggregate));
  std::int64_t window = tile - 1;  // lane l inspects tile window - l
  if (FIRST_DELAY_NS > 0 && sleepy) __nanosleep(FIRST_DELAY_NS);
  for (;;) {
    const std::int64_t idx = window - lane;
    const unsigned long long w = idx >= 0 ? LB::read(status, idx) : LB::kPrefix;  // "before tile 0": prefix 0
    const unsigned empty = __ballot_sync(common::kFullMask, LB::is_empty(w));
    const unsigned done = __ballot_sync(common::kFullMask, LB::is_prefix(w));
    // lanes up to and including the nearest predecessor with a known prefix
    const unsigned needed = done ? ((done & (0u - done)) - 1u) | (done & (0u - done)) : common::kFullMask;
    if (empty & needed) {  // a predecessor has not published yet: read again
      if (POLL_DELAY_NS > 0 && sleepy) __nanosleep(POLL_DELAY_NS);
      continue;
    }
    const T contribution = ((needed >> lane) & 1u) ? LB::as<T>(w) : T(0);
    prefix += common::warp_reduce_sum(contribution);
    if (done) break;
    window -= 32;
  }
  if (lane == 0) LB::publish(status, tile, LB::kPrefix, LB::bits_of(prefix + aggregate));
  return prefix;
}

// Called by every thread of the block with the tile's aggregate; the block's first warp does the
// look-back and every thread gets the sum of all earlier tiles. `s_prefix` is one shared T.
template <int FIRST_DELAY_NS = 0, int POLL_DELAY_NS = 0, typename T>
__device__ __forceinline__ T lookback_exclusive_prefix(unsigned long long* status, std::int64_t tile, T aggregate,
                                                       T* s_prefix) {
  if (threadIdx.x < 32) {
    const T prefix = lookback_warp_prefix<FIRST_DELAY_NS, POLL_DELAY_NS>(status, tile, aggregate, gridDim.x >= 500);
    if (threadIdx.x == 0) *s_prefix = prefix;
  }
  __syncthreads();
  return *s_prefix;
}
// EXERCISE END

}  // namespace Device
}  // namespace StreamCompaction
