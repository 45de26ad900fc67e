// The one sort of the course: a stable LSD radix sort of keys (int32, uint32 or uint64, on bits
// [begin_bit, end_bit)) and optionally values, after Onesweep (Adinets & Merrill 2022), the
// design inside CUB's DeviceRadixSort:
//  1. one pass over the keys histograms every 8-bit digit of every pass at once;
//  2. one tiny kernel turns each pass's 256 counts into the digit's first output position;
//  3. per digit pass, ONE kernel: each tile (Policy: threads x keys per thread, tiles taken in
//     launch order from a counter) ranks its keys stably among the warp's keys of their digit (a
//     warp multi-split: the lanes of one digit find each other, the highest of them bumps the
//     warp's count of the digit), publishes its 256 digit counts, and learns how many keys of each
//     digit all earlier tiles hold through a decoupled look-back over their per-digit status words
//     (thread d walks back over digit d), then writes its keys (and values) digit run by digit run
//     through shared memory. The kernel is an agent (PassAgent) whose methods are these steps.
// Traffic: 4 bytes per key for the histogram, then read + write per pass: 4 + 8 x 4 = 36 bytes
// per 32-bit key (sort_radix, upsweep + scan + downsweep: 48), 68 with int32 values.
// Equal keys keep their input order, so LSD passes compose and grouped runs are deterministic.
//
//   common::Scratch scratch;            // its temporary storage, reused across calls
//   common::Onesweep<Key, Value>::sort(n, keys_in, keys_out, values_in, values_out, begin_bit, end_bit, scratch, stream);
//   (Value = void: keys only, values nullptr)
// Inputs are left unchanged; outputs must not alias inputs; n < 2^32.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "common/block_primitives.cuh"
#include "common/cuda_check.hpp"
#include "common/device_info.hpp"
#include "common/device_buffer.hpp"
#include "common/tile_status.cuh"

namespace common {
namespace onesweep {

constexpr int kBits = 8;
constexpr int kBins = 1 << kBits;

// How the lanes of a warp holding one digit find each other (the warp multi-split), for the
// ranking of every key:
//  - ballot: 8 ballots, one per digit bit, ANDed (or their complements) into the peer mask;
//  - match_any: one __match_any_sync(digit) (one instruction on sm_70+, several issue slots);
//  - atomic_or: each lane ORs its bit into a per-(warp, digit) shared word and reads it back; the
//    leader clears the word, and a warp barrier orders the clear before the next key's ORs.
// Measured slower or no faster (H200, 2^28 uint32 keys, 384 x 22 x 3, same runs as the kept one):
//  - two keys at a time in two sets of words, their ORs and read-backs overlapped: 5.40 ms against
//    4.79 (the leaders' adds must stay in key order, a warp barrier apart, and the second key's
//    registers spill at 3 blocks per SM);
//  - two sets of words used by alternate keys, so that the next key's barrier orders the leader's
//    clear and one warp barrier per key goes: 4.79 ms against 4.76 (the barrier is not what the
//    chain waits on);
//  - every lane reading its warp's entry of its digit itself (before the barrier; the leader
//    writing it back after), so that neither the leader's atomic add nor the shuffle is needed:
//    5.15 ms against 4.76. The 32 lanes' reads and the leaders' writes are two shared-memory
//    operations in place of one atomic with its result, and shared memory's pipe is where the
//    pass waits (ncu: its top stall is the short scoreboard; stream_compaction/README.md).
enum class Rank { ballot, match_any, atomic_or };

// The tile shape, passed whole: kThreads threads x kItems keys per tile, kMinBlocks resident
// blocks per SM asked of the compiler (bounds the registers), the ranking, and when the tile's digit
// counts are taken:
//  - kEarly: first, each warp counting its own keys' digits (one shared atomic per key into the
//    warp's histogram); the tile publishes its counts at once (later tiles need not wait for this
//    one's ranking), scans them, and turns every warp's count of every digit into where the warp's
//    first key of that digit goes in the tile, so the ranking yields each key's place in the tile
//    directly; the look-back comes after the ranking, when the earlier tiles are likely done;
//  - otherwise: the ranking counts from zero, and its per-warp counts become the offsets after it.
// Threads d < 256 own digit d in the per-tile bookkeeping, so a tile has at least 256 threads.
template <int kThreads_, int kItems_, int kMinBlocks_, Rank kRank_ = Rank::ballot, bool kEarly_ = false>
struct Policy {
  static constexpr int kThreads = kThreads_, kItems = kItems_, kMinBlocks = kMinBlocks_;
  static constexpr int kWarps = kThreads / 32, kTile = kThreads * kItems;
  static constexpr Rank kRank = kRank_;
  static constexpr bool kEarly = kEarly_;
  static_assert(kThreads % 32 == 0 && kThreads >= kBins && kThreads <= 1024, "256 to 1024 threads, whole warps");
};

// The shapes measured fastest on an H200 at 2^28 keys (common/app/onesweep_tune.cu sweeps them,
// results/nvidia-h200/onesweep_tune.txt), all with the atomic-OR match and counts taken first: the
// largest tiles that keep 3 blocks per SM (keys alone; uint32 384 x 22, 56 registers) or 2 (with
// values: 384 x 30, 80 registers and 47 KB of shared memory; 8-byte values take a smaller tile).
template <typename Value>
constexpr int value_bytes() {
  if constexpr (std::is_same<Value, void>::value)
    return 0;
  else
    return static_cast<int>(sizeof(Value));
}
template <typename Key, typename Value = void>
struct DefaultPolicyOf {
  static constexpr int kValue = value_bytes<Value>();
  using type = typename std::conditional<
      (kValue > 4), Policy<384, 12, 2, Rank::atomic_or, true>,  // 8-byte values: 384 x 30 would not fit
      typename std::conditional<sizeof(Key) == 8,
                                typename std::conditional<kValue == 0, Policy<256, 22, 3, Rank::atomic_or, true>,
                                                          Policy<256, 22, 2, Rank::atomic_or, true>>::type,
                                typename std::conditional<kValue == 0, Policy<384, 22, 3, Rank::atomic_or, true>,
                                                          Policy<384, 30, 2, Rank::atomic_or, true>>::type>::type>::
      type;
};
template <typename Key, typename Value = void>
using DefaultPolicy = typename DefaultPolicyOf<Key, Value>::type;

// An unsigned image of a key whose unsigned order is the key's order, and the key whose image is
// all ones (it pads a last, partial tile: its digit is the largest of every pass, so padding ranks
// after every real key of the tile and is never written).
__device__ __forceinline__ unsigned ordered_bits(int k) { return static_cast<unsigned>(k) ^ 0x80000000u; }
__device__ __forceinline__ unsigned ordered_bits(unsigned k) { return k; }
__device__ __forceinline__ std::uint64_t ordered_bits(std::uint64_t k) { return k; }
template <typename Key>
__device__ __forceinline__ Key padding_key() {
  if constexpr (std::is_same<Key, int>::value)
    return 0x7fffffff;
  else
    return ~Key{0};
}

template <typename Key>
__device__ __forceinline__ unsigned digit_of(Key k, int shift, unsigned mask) {
  return static_cast<unsigned>(ordered_bits(k) >> shift) & mask;
}

// EXERCISE BEGIN exercise=stream_compaction/sort_onesweep,ground_seg/-
// The upfront histogram: every digit of every pass in one read of the keys. Each thread keeps
// kHistogramLoads 16-byte loads in flight (8 uint32 or 4 uint64 keys) and adds every key's digits
// to the shared histograms with one atomic per digit. Two measured steps (H200, 2^28 uint32 keys,
// results/nvidia-h200/onesweep_histogram.txt; CUB's histogram kernel: 0.59 ms):
//  - loads in flight: the read needs ~4.8 TB/s x ~1 us = ~36 KB in flight per SM; one 4-byte key
//    per thread (the first version) kept 8 KB in flight and was latency-bound: 0.91 ms; two 16-byte
//    loads per thread: 0.51 ms;
//  - bank conflicts: 32 lanes adding to random digits of one histogram meet ~3.5 to a bank; with
//    kHistogramCopies copies interleaved digit by digit ([pass][digit][copy], lane l adding to copy
//    l % copies) lanes of different copies never share a bank on one digit: 0.44 ms with 8 copies
//    of the four uint32 histograms (32 KB) in blocks of 512 threads, 3 per SM (more blocks: more
//    global atomics at the end, measured slower). uint64 (8 histograms, 4 copies): 0.49 ms at 2^27.
// More copies no longer help (16 copies in 64 KB: 0.44-0.45 ms; 32, where no two lanes ever share
// a bank, in 128 KB at 1024 x 1 per SM: 0.42): the kernel runs at the shared atomics' rate, ~9 lane
// additions per SM and clock (2^30 of them in 0.44 ms on 132 SMs at 1.98 GHz).
// Keys not on a 16-byte boundary are histogrammed one at a time up to the first aligned one.
constexpr int kHistogramThreads = 512;
constexpr int kHistogramLoads = 2;
constexpr int kHistogramBlocksPerSm = 3;
template <typename Key>
__global__ void __launch_bounds__(kHistogramThreads)
    histogram_kernel(std::int64_t n, const Key* __restrict__ keys, int begin_bit, int end_bit, int passes,
                     unsigned* __restrict__ hist) {
  constexpr int kPasses = sizeof(Key);       // at most one pass per key byte
  constexpr int kCopies = 32 / sizeof(Key);  // 32 KB of histograms either way
  __shared__ unsigned s_hist[kPasses][kBins][kCopies];
  for (int i = threadIdx.x; i < kPasses * kBins * kCopies; i += kHistogramThreads) (&s_hist[0][0][0])[i] = 0;
  __syncthreads();
  const int copy = threadIdx.x % kCopies;
  auto add = [&](Key k) {
#pragma unroll
    for (int p = 0; p < kPasses; ++p) {
      if (p < passes) {
        const int shift = begin_bit + p * kBits;
        const int bits = min(kBits, end_bit - shift);
        atomicAdd(&s_hist[p][digit_of(k, shift, (1u << bits) - 1u)][copy], 1u);
      }
    }
  };
  constexpr int kPerVec = 16 / sizeof(Key);
  const std::int64_t stride = std::int64_t{gridDim.x} * kHistogramThreads;
  const std::int64_t tid = std::int64_t{blockIdx.x} * kHistogramThreads + threadIdx.x;
  // the keys before the first 16-byte boundary, then whole vectors, then the rest
  const auto misaligned = static_cast<std::int64_t>((reinterpret_cast<std::uintptr_t>(keys) & 15) / sizeof(Key));
  std::int64_t head = misaligned ? kPerVec - misaligned : 0;
  if (head > n) head = n;
  if (tid < head) add(keys[tid]);
  const std::int64_t nvec = (n - head) / kPerVec;
  const uint4* vec = reinterpret_cast<const uint4*>(keys + head);
  for (std::int64_t i = tid; i < nvec; i += stride * kHistogramLoads) {
    uint4 q[kHistogramLoads];
#pragma unroll
    for (int j = 0; j < kHistogramLoads; ++j)
      if (i + j * stride < nvec) q[j] = __ldg(vec + i + j * stride);
#pragma unroll
    for (int j = 0; j < kHistogramLoads; ++j) {
      if (i + j * stride < nvec) {
        Key k[kPerVec];
        memcpy(k, &q[j], 16);
#pragma unroll
        for (int e = 0; e < kPerVec; ++e) add(k[e]);
      }
    }
  }
  for (std::int64_t i = head + nvec * kPerVec + tid; i < n; i += stride) add(keys[i]);
  __syncthreads();
  for (int i = threadIdx.x; i < passes * kBins; i += kHistogramThreads) {
    unsigned c = 0;
#pragma unroll
    for (int j = 0; j < kCopies; ++j) c += (&s_hist[0][0][0])[i * kCopies + j];
    if (c) atomicAdd(&hist[i], c);
  }
}

// hist[p][d] -> first output position of digit d in pass p (one block, one pass after another).
// A template only so that every file including this header may instantiate it (one definition).
template <int kOneDefinition = 0>
__global__ void __launch_bounds__(kBins)
    bin_offsets_kernel(int passes, const unsigned* __restrict__ hist, unsigned* __restrict__ offsets) {
  __shared__ unsigned tmp[kBins / 32 + 1];
  for (int p = 0; p < passes; ++p) {
    unsigned total;
    offsets[p * kBins + threadIdx.x] = common::block_exclusive_scan<kBins>(hist[p * kBins + threadIdx.x], total, tmp);
  }
}

// One digit pass over one tile, as the steps of the algorithm (Onesweep, Adinets & Merrill 2022):
// take a tile, load it, rank every key among the tile's keys of its digit, publish the tile's digit
// counts, stage the keys in sorted order in shared memory, look back over the earlier tiles' counts,
// write the digit runs out. Keys are warp-striped: warp w holds keys [w * 32 * kItems, ...), key k
// of lane l is w * 32 * kItems + k * 32 + l, so ranking in (k, lane) order per warp keeps equal keys
// in input order.
template <typename Key, typename Value, typename P, typename Word>
struct PassAgent {
  static constexpr bool kPairs = !std::is_same<Value, void>::value;
  using V = typename std::conditional<kPairs, Value, int>::type;
  using S = common::TileStatus<Word>;  // the look-back word of (tile, digit): a 2-bit flag over the count

  static constexpr int kMatchSets = P::kRank == Rank::atomic_or ? 1 : 0;
  struct Shared {
    union {
      struct alignas(16) {
        int warp_hist[P::kWarps][kBins];  // per-warp digit counts, offsets or (kEarly) places in the tile
        unsigned match[kMatchSets ? P::kWarps : 1][kBins];  // atomic_or: the lanes of each digit
      } rank;
      Key keys[P::kTile];  // then the tile's keys in sorted order
      V values[P::kTile];  // then its values
    } stage;
    int tile_start[kBins];   // where digit d's run starts in the tile
    unsigned global[kBins];  // output index of digit d's run minus its start in the tile (n < 2^32)
    int scan_tmp[P::kWarps + 1];
    unsigned tile;
  };
  static_assert(sizeof(Shared) <= 48 * 1024,
                "the tile takes more than 48 KB of static shared memory: fewer threads or keys");

  Shared& s;
  const std::int64_t n;
  const int shift;
  const unsigned mask;
  const unsigned lane = common::lane_id(), warp = common::warp_id();
  std::int64_t tile = 0, base = 0;
  int valid = 0;
  Key key[P::kItems];
  // Key k's rank within its warp's keys of its digit, then its place in the tile: 16 bits each, two
  // to a register (a tile holds fewer than 2^16 keys), so that large tiles keep 3 blocks per SM.
  unsigned slots[(P::kItems + 1) / 2];
  static_assert(P::kTile <= 65536, "a key's place in the tile takes 16 bits");

  __device__ int slot(int k) const { return static_cast<int>((slots[k / 2] >> (16 * (k % 2))) & 0xffffu); }
  __device__ void set_slot(int k, int v) {
    if (k % 2 == 0)
      slots[k / 2] = static_cast<unsigned>(v);
    else
      slots[k / 2] |= static_cast<unsigned>(v) << 16;
  }

  __device__ PassAgent(Shared& shared, std::int64_t n_, int shift_, unsigned mask_)
      : s(shared), n(n_), shift(shift_), mask(mask_) {}

  __device__ int index(int k) const {
    return static_cast<int>(warp) * 32 * P::kItems + k * 32 + static_cast<int>(lane);
  }

  // Tiles are taken in the order blocks start (a counter, not blockIdx), so a tile only ever waits
  // for tiles that are already running.
  __device__ void take_tile(unsigned* counter) {
    if (threadIdx.x == 0) s.tile = atomicAdd(counter, 1u);
    // the counts and the match words, 16 bytes a store (one 4-byte store a word: 4.79-4.83 ms at
    // 2^28 uint32 keys on the H200; 16 bytes: 4.76)
    constexpr int kWords = static_cast<int>(sizeof(s.stage.rank) / sizeof(uint4));
    static_assert(sizeof(s.stage.rank) % sizeof(uint4) == 0, "the ranking's words in whole 16-byte stores");
    for (int i = threadIdx.x; i < kWords; i += P::kThreads) reinterpret_cast<uint4*>(&s.stage.rank)[i] = uint4{};
    __syncthreads();
    tile = s.tile;
    base = tile * P::kTile;
    valid = n - base < P::kTile ? static_cast<int>(n - base) : P::kTile;
  }

  template <typename T>
  __device__ void load(const T* __restrict__ in, T (&out)[P::kItems], T pad) const {
    if (valid == P::kTile) {
#pragma unroll
      for (int k = 0; k < P::kItems; ++k) out[k] = in[base + index(k)];
    } else {
#pragma unroll
      for (int k = 0; k < P::kItems; ++k) out[k] = index(k) < valid ? in[base + index(k)] : pad;
    }
  }

  __device__ unsigned peers_of(unsigned digit) {
    if constexpr (P::kRank == Rank::match_any) {
      return __match_any_sync(common::kFullMask, digit);
    } else if constexpr (P::kRank == Rank::ballot) {
      unsigned peers = common::kFullMask;
#pragma unroll
      for (int b = 0; b < kBits; ++b) {
        const bool set = (digit >> b) & 1u;
        const unsigned vote = __ballot_sync(common::kFullMask, set);
        peers &= set ? vote : ~vote;
      }
      return peers;
    } else {
      atomicOr(&s.stage.rank.match[warp][digit], 1u << lane);
      __syncwarp();
      return s.stage.rank.match[warp][digit];  // the leader clears it once every lane has read it
    }
  }

  // Warp multi-split: the lanes of one digit count each other (popc of the lower peers); the
  // highest of them adds the group to the warp's entry of the digit (one shared atomic that returns
  // the entry before), and tells the others (shfl) what it was. The entry counts from zero, or
  // (kEarly) from the place of the warp's first key of the digit in the tile.
  __device__ void rank_keys() {
    // The digits again, from a shift the compiler cannot see through: otherwise it keeps the
    // counting's kItems shared-memory addresses live until here (spilled at 3 blocks of 384 x 22+).
    const int shift_again = common::opaque(shift);
#pragma unroll
    for (int k = 0; k < P::kItems; ++k) rank_one(k, shift_again);
    __syncthreads();
  }

  // One key: peers, the leader's add, the shuffle.
  __device__ void rank_one(int k, int shift_again) {
    const unsigned digit = digit_of(key[k], shift_again, mask);
    const unsigned peers = peers_of(digit);
    const int leader = 31 - __clz(peers);
    const bool leads = static_cast<int>(lane) == leader;
    int before = 0;
    if (leads) before = atomicAdd(&s.stage.rank.warp_hist[warp][digit], __popc(peers));
    // every lane has read the match word before it takes part in the shuffle (the leader's lane
    // depends on it), so the leader may clear the word after it
    set_slot(k, __shfl_sync(common::kFullMask, before, leader) + __popc(peers & common::lanemask_lt()));
    if constexpr (P::kRank == Rank::atomic_or) {
      if (leads) s.stage.rank.match[warp][digit] = 0;
      __syncwarp();  // cleared before the next key's atomicOr
    }
  }

  // The warps' counts of digit d become the warps' offsets (in place); returns the tile's count of d.
  __device__ int warp_counts_to_offsets(int d) {
    int sum = 0;
#pragma unroll
    for (int w = 0; w < P::kWarps; ++w) {
      const int c = s.stage.rank.warp_hist[w][d];
      s.stage.rank.warp_hist[w][d] = sum;
      sum += c;
    }
    return sum;
  }

  // Thread d (< 256): the warps' counts of digit d become the warps' offsets, the tile's count of d
  // is published for the later tiles' look-back (the padding of a partial tile is not counted:
  // it is all in the largest digit, after every real key), and the digits' starts in the tile are
  // scanned. Returns the tile's count of digit d.
  __device__ int publish_counts(Word* status) {
    const int d = threadIdx.x;
    int count = 0;
    if (d < kBins) {
      count = warp_counts_to_offsets(d);
      if (d == static_cast<int>(mask)) count -= P::kTile - valid;
      S::publish(status, tile * kBins + d, tile == 0 ? S::kPrefix : S::kAggregate, Word(count));
    }
    int total;
    const int start = common::block_exclusive_scan<P::kThreads>(count, total, s.scan_tmp);
    if (d < kBins) s.tile_start[d] = start;
    __syncthreads();
    return count;
  }

  // kEarly: each warp counts its keys' digits in its own histogram (the padding of a partial tile
  // too: it is the tile's last keys, in the largest digit, so it is placed after every real key).
  __device__ void count_digits() {
#pragma unroll
    for (int k = 0; k < P::kItems; ++k) atomicAdd(&s.stage.rank.warp_hist[warp][digit_of(key[k], shift, mask)], 1);
    __syncthreads();
  }

  // kEarly, thread d (< 256): publishes the tile's count of digit d (padding excluded) before the
  // ranking, scans the digits' starts in the tile (warps 0-7 scan their 32 digits, then add the
  // totals of the warps before: one barrier), and turns each warp's count of d into the place of
  // the warp's first key of d in the tile. Returns the tile's count of d.
  __device__ int place_warps(Word* status) {
    const int d = threadIdx.x;
    int count = 0, inclusive = 0;
    if (d < kBins) {
#pragma unroll
      for (int w = 0; w < P::kWarps; ++w) count += s.stage.rank.warp_hist[w][d];
      const int real = d == static_cast<int>(mask) ? count - (P::kTile - valid) : count;
      S::publish(status, tile * kBins + d, tile == 0 ? S::kPrefix : S::kAggregate, Word(real));
      inclusive = common::warp_inclusive_scan(count);
      if (lane == 31) s.scan_tmp[warp] = inclusive;
    }
    __syncthreads();
    if (d < kBins) {
      int place = inclusive - count;
      for (unsigned w = 0; w < warp; ++w) place += s.scan_tmp[w];
      s.tile_start[d] = place;
#pragma unroll
      for (int w = 0; w < P::kWarps; ++w) {
        const int c = s.stage.rank.warp_hist[w][d];
        s.stage.rank.warp_hist[w][d] = place;
        place += c;
      }
      if (d == static_cast<int>(mask)) count -= P::kTile - valid;
    }
    __syncthreads();
    return count;
  }

  // kEarly: the ranking gave every key its place in the tile.
  __device__ void stage_placed_keys() {
#pragma unroll
    for (int k = 0; k < P::kItems; ++k)
      if (slot(k) < valid) s.stage.keys[slot(k)] = key[k];
  }

  // Each key's place in the tile: its digit's start + its warp's offset in the digit + its rank.
  // The per-warp counts share their shared memory with the staging, so all places are read first.
  __device__ void stage_keys() {
    int places[P::kItems];
#pragma unroll
    for (int k = 0; k < P::kItems; ++k) {
      const unsigned digit = digit_of(key[k], shift, mask);
      places[k] = slot(k) + s.tile_start[digit] + s.stage.rank.warp_hist[warp][digit];
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < P::kItems; ++k)
      if (places[k] < valid) s.stage.keys[places[k]] = key[k];
#pragma unroll
    for (int k = 0; k < P::kItems; ++k) set_slot(k, places[k]);
  }

  // Thread d: how many keys of digit d all earlier tiles hold (a decoupled look-back over their
  // status words: add aggregates until a prefix), published as this tile's prefix.
  __device__ std::int64_t look_back_counts(Word* status, int count) const {
    const int d = threadIdx.x;
    std::int64_t before = 0;
    if (tile > 0) {
      for (std::int64_t p = tile - 1;;) {
        const Word w = S::read(status, p * kBins + d);
        if (S::is_empty(w)) continue;  // not published yet: read again
        before += static_cast<std::int64_t>(S::value(w));
        if (S::is_prefix(w)) break;
        --p;
      }
      S::publish(status, tile * kBins + d, S::kPrefix, Word(before + count));
    }
    return before;
  }

  // Thread d: the look-back, then the output index of the tile's run of d.
  __device__ void look_back(Word* status, int count, const unsigned* __restrict__ bin_offsets) {
    const int d = threadIdx.x;
    if (d >= kBins) return;
    const std::int64_t before = look_back_counts(status, count);
    s.global[d] = bin_offsets[d] + static_cast<unsigned>(before) - static_cast<unsigned>(s.tile_start[d]);
  }

  // The digits of this thread's places, 4 to a register (what the values need of the keys: a
  // place's output index is its digit's s.global + the place; 5 registers at 20 keys, not 20).
  using Digits = unsigned[(P::kItems + 3) / 4];

  // Consecutive threads write consecutive places of a digit run; keeps (for the values) the digit
  // of each of this thread's places.
  __device__ void write_keys(Key* __restrict__ out, Digits& digits) {
    __syncthreads();
#pragma unroll
    for (int i = 0; i < (P::kItems + 3) / 4; ++i) digits[i] = 0;
#pragma unroll
    for (int k = 0; k < P::kItems; ++k) {
      const int j = k * P::kThreads + threadIdx.x;
      if (j < valid) {
        const Key x = s.stage.keys[j];
        const unsigned digit = digit_of(x, shift, mask);
        if constexpr (kPairs) digits[k / 4] |= digit << (8 * (k % 4));
        out[s.global[digit] + static_cast<unsigned>(j)] = x;
      }
    }
  }

  // The values, read only now (they hold no registers during the ranking), take their keys' places.
  __device__ void move_values(const V* __restrict__ in, V* __restrict__ out, const Digits& digits) {
    V value[P::kItems];
    load(in, value, V{});
    __syncthreads();
#pragma unroll
    for (int k = 0; k < P::kItems; ++k)
      if (slot(k) < valid) s.stage.values[slot(k)] = value[k];
    __syncthreads();
#pragma unroll
    for (int k = 0; k < P::kItems; ++k) {
      const int j = k * P::kThreads + threadIdx.x;
      if (j < valid)
        out[s.global[(digits[k / 4] >> (8 * (k % 4))) & 0xffu] + static_cast<unsigned>(j)] = s.stage.values[j];
    }
  }
};

template <typename Key, typename Value, typename P, typename Word>
__global__ void __launch_bounds__(P::kThreads, P::kMinBlocks)
    pass_kernel(std::int64_t n, const Key* __restrict__ keys_in, Key* __restrict__ keys_out,
                const Value* __restrict__ values_in, Value* __restrict__ values_out, int shift, unsigned mask,
                const unsigned* __restrict__ bin_offsets, Word* status, unsigned* tile_counter) {
  using Agent = PassAgent<Key, Value, P, Word>;
  __shared__ typename Agent::Shared shared;
  Agent a(shared, n, shift, mask);
  a.take_tile(tile_counter);
  a.load(keys_in, a.key, padding_key<Key>());
  if constexpr (P::kEarly) {
    a.count_digits();
    const int count = a.place_warps(status);
    a.rank_keys();
    a.stage_placed_keys();
    a.look_back(status, count, bin_offsets);
  } else {
    a.rank_keys();
    const int count = a.publish_counts(status);
    a.stage_keys();
    a.look_back(status, count, bin_offsets);
  }
  typename Agent::Digits digits;
  a.write_keys(keys_out, digits);
  if constexpr (Agent::kPairs) a.move_values(values_in, values_out, digits);
}

// EXERCISE END
}  // namespace onesweep

// The sort's entry point. `scratch` holds its temporary storage (it grows, never shrinks, so
// repeated sorts of one size allocate once). Value = void sorts keys only (pass nullptr values).
template <typename Key, typename Value = void, typename Policy = onesweep::DefaultPolicy<Key, Value>>
struct Onesweep {
  static constexpr bool kPairs = !std::is_same<Value, void>::value;
  using V = typename std::conditional<kPairs, Value, int>::type;
  static constexpr int kTile = Policy::kTile;

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
    if (n < std::min(narrow_status_below, std::int64_t{1} << 30))
      run<std::uint32_t>(n, keys_in, keys_out, values_in, values_out, begin_bit, end_bit, passes, scratch, stream);
    else
      run<unsigned long long>(n, keys_in, keys_out, values_in, values_out, begin_bit, end_bit, passes, scratch, stream);
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
    constexpr int kHist = onesweep::kHistogramThreads;
    const std::int64_t hist_blocks =
        std::min<std::int64_t>((n + kHist - 1) / kHist, onesweep::kHistogramBlocksPerSm * common::current_sm_count());
    onesweep::histogram_kernel<Key>
        <<<static_cast<unsigned>(hist_blocks), kHist, 0, stream>>>(n, keys_in, begin_bit, end_bit, passes, hist);
    CUDA_CHECK_LAST();
    onesweep::bin_offsets_kernel<><<<1, onesweep::kBins, 0, stream>>>(passes, hist, offsets);
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
      onesweep::pass_kernel<Key, PassValue, Policy, Word>
          <<<static_cast<unsigned>(tiles), Policy::kThreads, 0, stream>>>(
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
