// The one sort of the course: a stable LSD radix sort of keys (int32, uint32 or uint64, on bits
// [begin_bit, end_bit)) and optionally values, after Onesweep (Adinets & Merrill 2022), the
// design inside CUB's DeviceRadixSort:
//  1. one pass over the keys histograms every 8-bit digit of every pass at once;
//  2. one tiny kernel turns each pass's 256 counts into the digit's first output position;
//  3. per digit pass, ONE kernel: each tile (256 threads x ITEMS keys, tiles taken in launch
//     order from a counter) ranks its keys stably in shared memory (lanes with equal digits are
//     found with 8 ballots; the leader of each group bumps its warp's counter), publishes its
//     256 digit counts, and learns how many keys of each digit all earlier tiles hold through a
//     decoupled look-back over their per-digit status words (thread d walks back over digit d),
//     then writes its keys (and values) digit run by digit run.
// Traffic: 4 bytes per key for the histogram, then read + write per pass: 4 + 8 x 4 = 36 bytes
// per 32-bit key (sort_radix, upsweep + scan + downsweep: 48), 68 with int32 values.
// Equal keys keep their input order, so LSD passes compose and grouped runs are deterministic.
//
//   common::Scratch scratch;            // its temporary storage, reused across calls
//   common::Onesweep<Key, Value>::sort(n, keys_in, keys_out, values_in, values_out, begin_bit, end_bit, scratch, stream);
//   (Value = void: keys only, values nullptr)
// Inputs are left unchanged; outputs must not alias inputs; n < 2^32.
#pragma once
#include <cuda/atomic>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "common/block_primitives.cuh"
#include "common/cuda_check.hpp"
#include "common/device_info.hpp"
#include "common/device_buffer.hpp"

namespace common {
namespace onesweep {

constexpr int kBits = 8;
constexpr int kBins = 1 << kBits;
constexpr int kBlock = 256;  // one thread per digit in the per-tile bookkeeping
constexpr int kWarps = kBlock / 32;
static_assert(kBlock == kBins, "thread d owns digit d");

// An unsigned image of a key whose unsigned order is the key's order.
__device__ __forceinline__ unsigned ordered_bits(int k) { return static_cast<unsigned>(k) ^ 0x80000000u; }
__device__ __forceinline__ unsigned ordered_bits(unsigned k) { return k; }
__device__ __forceinline__ std::uint64_t ordered_bits(std::uint64_t k) { return k; }

template <typename Key>
__device__ __forceinline__ unsigned digit_of(Key k, int shift, unsigned mask) {
  return static_cast<unsigned>(ordered_bits(k) >> shift) & mask;
}

// EXERCISE BEGIN exercise=stream_compaction/sort_onesweep,ground_seg/-
// The look-back status word of (tile, digit): a 2-bit flag over the count, one atomic word.
template <typename Word>
struct Status {
  static constexpr int kShift = 8 * sizeof(Word) - 2;
  static constexpr Word kAggregate = Word{1} << kShift, kPrefix = Word{2} << kShift;
  static constexpr Word kValueMask = (Word{1} << kShift) - 1;
};

template <typename Key>
__global__ void __launch_bounds__(kBlock) histogram_kernel(std::int64_t n, const Key* __restrict__ keys, int begin_bit,
                                                           int end_bit, int passes, unsigned* __restrict__ hist) {
  // two private copies (even / odd warps) halve the shared-atomic collisions of repeated keys
  __shared__ unsigned s_hist[2][8][kBins];
  for (int i = threadIdx.x; i < 2 * 8 * kBins; i += kBlock) (&s_hist[0][0][0])[i] = 0;
  __syncthreads();
  unsigned (*mine)[kBins] = s_hist[common::warp_id() & 1];
  const std::int64_t stride = std::int64_t{gridDim.x} * kBlock;
  for (std::int64_t i = blockIdx.x * std::int64_t{kBlock} + threadIdx.x; i < n; i += stride) {
    const Key k = keys[i];
    for (int p = 0; p < passes; ++p) {
      const int shift = begin_bit + p * kBits;
      const int bits = min(kBits, end_bit - shift);
      atomicAdd(&mine[p][digit_of(k, shift, (1u << bits) - 1u)], 1u);
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < passes * kBins; i += kBlock) {
    const unsigned c = (&s_hist[0][0][0])[i] + (&s_hist[1][0][0])[i];
    if (c) atomicAdd(&hist[i], c);
  }
}

// hist[p][d] -> first output position of digit d in pass p (one block, one pass after another).
// A template only so that every file including this header may instantiate it (one definition).
template <int kOneDefinition = 0>
__global__ void __launch_bounds__(kBlock) bin_offsets_kernel(int passes, const unsigned* __restrict__ hist,
                                                             unsigned* __restrict__ offsets) {
  __shared__ unsigned tmp[kWarps + 1];
  for (int p = 0; p < passes; ++p) {
    unsigned total;
    offsets[p * kBins + threadIdx.x] = common::block_exclusive_scan<kBlock>(hist[p * kBins + threadIdx.x], total, tmp);
  }
}

template <typename Key, typename Value, int kItems, typename Word>
__global__ void __launch_bounds__(kBlock) pass_kernel(std::int64_t n, const Key* __restrict__ keys_in,
                                                      Key* __restrict__ keys_out, const Value* __restrict__ values_in,
                                                      Value* __restrict__ values_out, int shift, unsigned mask,
                                                      const unsigned* __restrict__ bin_offsets, Word* status,
                                                      unsigned* tile_counter) {
  constexpr bool kPairs = !std::is_same<Value, void>::value;
  using V = typename std::conditional<kPairs, Value, int>::type;
  constexpr int kTile = kBlock * kItems;
  constexpr std::size_t kStage = sizeof(Key) > sizeof(V) ? sizeof(Key) * kTile : sizeof(V) * kTile;
  using S = Status<Word>;
  __shared__ __align__(16) unsigned char s_stage[kStage];  // the tile's keys, then its values, in sorted order
  __shared__ int s_warp_hist[kWarps][kBins];
  __shared__ unsigned s_match[kWarps][kBins];  // per warp and digit: the lanes holding it (0 between keys)
  __shared__ int s_tile_start[kBins];
  // output index of digit d's run minus its start inside the tile (never negative; n < 2^32)
  __shared__ unsigned s_global[kBins];
  __shared__ int s_scan_tmp[kWarps + 1];
  __shared__ unsigned s_tile;
  Key* s_keys = reinterpret_cast<Key*>(s_stage);
  V* s_values = reinterpret_cast<V*>(s_stage);
  const unsigned lane = common::lane_id(), warp = common::warp_id();
  const int d_self = threadIdx.x;
  if (threadIdx.x == 0) s_tile = atomicAdd(tile_counter, 1u);
  for (int i = threadIdx.x; i < kWarps * kBins; i += kBlock) (&s_warp_hist[0][0])[i] = 0, (&s_match[0][0])[i] = 0;
  __syncthreads();
  const std::int64_t tile = s_tile;
  const std::int64_t base = tile * kTile;
  const int valid = n - base < kTile ? static_cast<int>(n - base) : kTile;
  Key key[kItems];
  int rank[kItems];
#pragma unroll
  for (int k = 0; k < kItems; ++k) {  // warp-striped: coalesced loads, order = (warp, k, lane)
    const int idx = warp * 32 * kItems + k * 32 + lane;
    key[k] = idx < valid ? keys_in[base + idx] : Key{};
  }
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    // lanes holding the same digit: each sets its bit in the warp's mask of that digit (one
    // shared atomic, instead of one ballot per digit bit); the highest of them is the leader,
    // which bumps the warp's count of the digit and clears the mask for the next key
    const bool has = warp * 32 * kItems + k * 32 + static_cast<int>(lane) < valid;
    const unsigned digit = has ? digit_of(key[k], shift, mask) : 0u;
    if (has) atomicOr(&s_match[warp][digit], 1u << lane);
    __syncwarp();
    const unsigned peers = has ? s_match[warp][digit] : 0u;
    __syncwarp();
    const int leader = has ? 31 - __clz(peers) : 0;
    int before = 0;
    if (has && static_cast<int>(lane) == leader) {
      before = s_warp_hist[warp][digit];
      s_warp_hist[warp][digit] = before + __popc(peers);
      s_match[warp][digit] = 0;
    }
    rank[k] = __shfl_sync(common::kFullMask, before, leader) + __popc(peers & common::lanemask_lt());
    __syncwarp();
  }
  __syncthreads();
  int tile_count = 0;  // digit d_self: per-warp counts become per-warp offsets
#pragma unroll
  for (int w = 0; w < kWarps; ++w) {
    const int c = s_warp_hist[w][d_self];
    s_warp_hist[w][d_self] = tile_count;
    tile_count += c;
  }
  using Ref = cuda::atomic_ref<Word, cuda::thread_scope_device>;
  Word* mine = status + tile * kBins + d_self;
  Ref(*mine).store((tile == 0 ? S::kPrefix : S::kAggregate) | Word(tile_count), cuda::memory_order_relaxed);
  // decoupled look-back over digit d_self: how many keys with this digit all earlier tiles hold
  std::int64_t before_tile = 0;
  if (tile > 0) {
    for (std::int64_t p = tile - 1;;) {
      const Word w = Ref(status[p * kBins + d_self]).load(cuda::memory_order_relaxed);
      if ((w & ~S::kValueMask) == 0) continue;  // not published yet: read again
      before_tile += static_cast<std::int64_t>(w & S::kValueMask);
      if (w & S::kPrefix) break;
      --p;
    }
    Ref(*mine).store(S::kPrefix | Word(before_tile + tile_count), cuda::memory_order_relaxed);
  }
  int tile_total;
  const int start = common::block_exclusive_scan<kBlock>(tile_count, tile_total, s_scan_tmp);
  s_tile_start[d_self] = start;
  s_global[d_self] = bin_offsets[d_self] + static_cast<unsigned>(before_tile) - static_cast<unsigned>(start);
  __syncthreads();
  int slot[kItems];
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const int idx = warp * 32 * kItems + k * 32 + lane;
    slot[k] = -1;
    if (idx < valid) {
      const unsigned digit = digit_of(key[k], shift, mask);
      slot[k] = s_tile_start[digit] + s_warp_hist[warp][digit] + rank[k];
      s_keys[slot[k]] = key[k];
    }
  }
  __syncthreads();
  unsigned dst[kItems];
#pragma unroll
  for (int k = 0; k < kItems; ++k) {  // consecutive threads write consecutive slots of a digit run
    const int j = k * kBlock + threadIdx.x;
    if (j < valid) {
      const Key x = s_keys[j];
      dst[k] = s_global[digit_of(x, shift, mask)] + static_cast<unsigned>(j);
      keys_out[dst[k]] = x;
    }
  }
  if constexpr (kPairs) {  // the values are read only now, so they hold no registers during the ranking
    V value[kItems];
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      const int idx = warp * 32 * kItems + k * 32 + lane;
      if (idx < valid) value[k] = values_in[base + idx];
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kItems; ++k)
      if (slot[k] >= 0) s_values[slot[k]] = value[k];
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      const int j = k * kBlock + threadIdx.x;
      if (j < valid) values_out[dst[k]] = s_values[j];
    }
  }
}

// EXERCISE END
}  // namespace onesweep

// The sort's entry point. `scratch` holds its temporary storage (it grows, never shrinks, so
// repeated sorts of one size allocate once). Value = void sorts keys only (pass nullptr values).
template <typename Key, typename Value = void>
struct Onesweep {
  static constexpr bool kPairs = !std::is_same<Value, void>::value;
  using V = typename std::conditional<kPairs, Value, int>::type;
  static constexpr int kItems = sizeof(Key) == 8 ? 10 : 16;
  static constexpr int kTile = onesweep::kBlock * kItems;

  static void sort(std::int64_t n, const Key* keys_in, Key* keys_out, const V* values_in, V* values_out, int begin_bit,
                   int end_bit, Scratch& scratch, cudaStream_t stream,
                   std::int64_t narrow_status_below = std::int64_t{1} << 30) {
    const int key_bits = static_cast<int>(8 * sizeof(Key));
    if (n < 0 || n >= (std::int64_t{1} << 32))
      throw std::invalid_argument("onesweep sort: " + std::to_string(n) + " keys (must be in [0, 2^32))");
    if (begin_bit < 0 || end_bit > key_bits || begin_bit > end_bit)
      throw std::invalid_argument("onesweep sort: bits [" + std::to_string(begin_bit) + ", " + std::to_string(end_bit) +
                                  ") outside the " + std::to_string(key_bits) + "-bit key");
    if (n > 0 && (static_cast<const void*>(keys_in) == keys_out ||
                  (kPairs && static_cast<const void*>(values_in) == values_out)))
      throw std::invalid_argument("onesweep sort: the output must not alias the input");
    if (n == 0) return;
    const int passes = (end_bit - begin_bit + onesweep::kBits - 1) / onesweep::kBits;
    if (passes == 0) {
      CUDA_CHECK(cudaMemcpyAsync(keys_out, keys_in, n * sizeof(Key), cudaMemcpyDeviceToDevice, stream));
      if (kPairs) CUDA_CHECK(cudaMemcpyAsync(values_out, values_in, n * sizeof(V), cudaMemcpyDeviceToDevice, stream));
      return;
    }
    // n < 2^30 fits the 30-bit counts of 32-bit status words (half the look-back traffic); the
    // tests lower `narrow_status_below` to run the 64-bit words at small n
    if (n < std::min(narrow_status_below, std::int64_t{1} << 30)) run<std::uint32_t>(n, keys_in, keys_out, values_in, values_out, begin_bit, end_bit, passes, scratch, stream);
    else run<unsigned long long>(n, keys_in, keys_out, values_in, values_out, begin_bit, end_bit, passes, scratch, stream);
  }

  // The temporary storage sort() takes for n keys on bits [begin_bit, end_bit), so that a caller
  // can size one Scratch for this sort and what follows it (GroupByKey: one allocation).
  static std::size_t scratch_bytes(std::int64_t n, int begin_bit, int end_bit,
                                   std::int64_t narrow_status_below = std::int64_t{1} << 30) {
    const int passes = (end_bit - begin_bit + onesweep::kBits - 1) / onesweep::kBits;
    if (n <= 0 || passes <= 0) return 0;
    const std::size_t word = n < std::min(narrow_status_below, std::int64_t{1} << 30) ? 4 : 8;
    return layout(n, passes, word).total;
  }

 private:
  // The carving of the scratch: histograms, tile counters, status words (cleared together), then
  // the digit offsets and the ping-pong keys / values.
  struct Layout {
    std::size_t hist, counter, status, cleared, offsets, keys, values, total;
  };
  static Layout layout(std::int64_t n, int passes, std::size_t word) {
    const std::int64_t tiles = (n + kTile - 1) / kTile;
    ScratchCarver carve;
    Layout l;
    l.hist = carve.take(std::size_t(passes) * onesweep::kBins * sizeof(unsigned));
    l.counter = carve.take(std::size_t(passes) * sizeof(unsigned));
    l.status = carve.take(std::size_t(passes) * tiles * onesweep::kBins * word);
    l.cleared = carve.total();
    l.offsets = carve.take(std::size_t(passes) * onesweep::kBins * sizeof(unsigned));
    l.keys = carve.take(passes > 1 ? n * sizeof(Key) : 0);
    l.values = carve.take(kPairs && passes > 1 ? n * sizeof(V) : 0);
    l.total = carve.total();
    return l;
  }

  template <typename Word>
  static void run(std::int64_t n, const Key* keys_in, Key* keys_out, const V* values_in, V* values_out, int begin_bit,
                  int end_bit, int passes, Scratch& scratch, cudaStream_t stream) {
    // EXERCISE BEGIN body unused(n, keys_in, keys_out, values_in, values_out, begin_bit, end_bit, passes, scratch, stream) exercise=stream_compaction/sort_onesweep,ground_seg/-
    const std::int64_t tiles = (n + kTile - 1) / kTile;
    const Layout l = layout(n, passes, sizeof(Word));
    auto* b = static_cast<unsigned char*>(scratch.get(l.total));
    auto* hist = reinterpret_cast<unsigned*>(b + l.hist);
    auto* counters = reinterpret_cast<unsigned*>(b + l.counter);
    auto* status = reinterpret_cast<Word*>(b + l.status);
    auto* offsets = reinterpret_cast<unsigned*>(b + l.offsets);
    Key* alt_keys = reinterpret_cast<Key*>(b + l.keys);
    V* alt_values = reinterpret_cast<V*>(b + l.values);
    CUDA_CHECK(cudaMemsetAsync(b, 0, l.cleared, stream));
    const std::int64_t hist_blocks =
        std::min<std::int64_t>((n + onesweep::kBlock - 1) / onesweep::kBlock, 4 * common::current_sm_count());
    onesweep::histogram_kernel<Key><<<static_cast<unsigned>(hist_blocks), onesweep::kBlock, 0, stream>>>(
        n, keys_in, begin_bit, end_bit, passes, hist);
    CUDA_CHECK_LAST();
    onesweep::bin_offsets_kernel<><<<1, onesweep::kBlock, 0, stream>>>(passes, hist, offsets);
    CUDA_CHECK_LAST();
    const Key* src = keys_in;
    const V* src_v = values_in;
    using PassValue = typename std::conditional<kPairs, V, void>::type;
    for (int p = 0; p < passes; ++p) {
      const bool to_out = (passes - 1 - p) % 2 == 0;  // the last pass lands in the output
      Key* dst = to_out ? keys_out : alt_keys;
      V* dst_v = to_out ? values_out : alt_values;
      const int shift = begin_bit + p * onesweep::kBits;
      const int bits = std::min(onesweep::kBits, end_bit - shift);
      onesweep::pass_kernel<Key, PassValue, kItems, Word><<<static_cast<unsigned>(tiles), onesweep::kBlock, 0, stream>>>(
          n, src, dst, src_v, dst_v, shift, (1u << bits) - 1u, offsets + p * onesweep::kBins,
          status + std::size_t(p) * tiles * onesweep::kBins, counters + p);
      CUDA_CHECK_LAST();
      src = dst;
      src_v = dst_v;
    }
    // EXERCISE END
  }
};

}  // namespace common
