// Warp- and block-level building blocks (CUB-style layers: warp -> block), shared by every
// sub-project so there is exactly one reduction and one scan of each kind. The scans and the
// reductions are exercises (the markers name whose: stream_compaction's v4 teaches both, nbody's
// v6 the warp reduction where stream_compaction is not handed out); the multi-value sums below are
// the NDT harness's.
#pragma once
#include <cuda_runtime.h>

namespace common {

constexpr unsigned kFullMask = 0xffffffffu;

__device__ __forceinline__ unsigned lane_id() { return threadIdx.x & 31u; }
__device__ __forceinline__ unsigned warp_id() { return threadIdx.x >> 5; }
__device__ __forceinline__ unsigned lanemask_lt() { return (1u << lane_id()) - 1u; }
// v, as a value the compiler cannot see through (an empty asm that "changes" it): what is computed
// from it again is computed again, not kept live from an earlier computation from v.
__device__ __forceinline__ int opaque(int v) {
  asm volatile("" : "+r"(v));
  return v;
}

// Kogge-Stone inclusive scan over the 32 lanes of a full warp: 5 shuffles.
template <typename T>
__device__ __forceinline__ T warp_inclusive_scan(T v) {
  // EXERCISE BEGIN body device(v) exercise=stream_compaction/v4_warp_shuffle,ground_seg/-
#pragma unroll
  for (int offset = 1; offset < 32; offset <<= 1) {
    const T up = __shfl_up_sync(kFullMask, v, offset);
    if (static_cast<int>(lane_id()) >= offset) v += up;
  }
  return v;
  // EXERCISE END
}

// Reduction operators for the reductions below (any associative, commutative operation works).
struct Sum {
  template <typename T>
  __device__ __forceinline__ T operator()(T a, T b) const {
    return a + b;
  }
};
struct Min {
  template <typename T>
  __device__ __forceinline__ T operator()(T a, T b) const {
    return b < a ? b : a;
  }
};
struct Max {
  template <typename T>
  __device__ __forceinline__ T operator()(T a, T b) const {
    return a < b ? b : a;
  }
};

// Butterfly reduction over aligned groups of WIDTH lanes (a power of two, at most 32): every lane
// ends with its group's result. The order of operations is fixed (offsets WIDTH/2, ..., 1), so
// the result is deterministic. All 32 lanes must take part.
template <int WIDTH = 32, typename T, typename Op>
__device__ __forceinline__ T warp_reduce(T v, Op op) {
  static_assert(WIDTH >= 1 && WIDTH <= 32 && (WIDTH & (WIDTH - 1)) == 0, "WIDTH must be a power of two <= 32");
  // EXERCISE BEGIN body device(v) unused(op) exercise=stream_compaction/v4_warp_shuffle,nbody/v6_warp_split,ground_seg/-,ndt_graph/-
#pragma unroll
  for (int offset = WIDTH / 2; offset > 0; offset >>= 1) v = op(v, __shfl_xor_sync(kFullMask, v, offset, WIDTH));
  return v;
  // EXERCISE END
}

// N values at once (e.g. the three components of an acceleration), each reduced as above.
template <int WIDTH = 32, int N, typename T, typename Op>
__device__ __forceinline__ void warp_reduce_n(T (&v)[N], Op op) {
#pragma unroll
  for (int k = 0; k < N; ++k) v[k] = warp_reduce<WIDTH>(v[k], op);
}

template <typename T>
__device__ __forceinline__ T warp_reduce_sum(T v) {
  return warp_reduce(v, Sum{});
}

// Block reduction; every thread gets the result. `identity` is the operator's neutral value (0 for
// Sum, +inf for Min, ...). `smem` holds BLOCK/32 values. Ends with a barrier, so smem may be
// reused right after.
template <int BLOCK, typename T, typename Op>
__device__ __forceinline__ T block_reduce(T v, Op op, T identity, T* smem) {
  static_assert(BLOCK % 32 == 0 && BLOCK <= 1024, "BLOCK must be a multiple of 32, at most 1024");
  // EXERCISE BEGIN body device(v) unused(op, identity, smem) exercise=stream_compaction/v4_warp_shuffle,nbody/v6_warp_split,ground_seg/-,ndt_graph/-
  constexpr int kWarps = BLOCK / 32;
  v = warp_reduce(v, op);
  if (lane_id() == 0) smem[warp_id()] = v;
  __syncthreads();
  T total = lane_id() < kWarps ? smem[lane_id()] : identity;
  total = warp_reduce(total, op);
  __syncthreads();
  return total;
  // EXERCISE END
}

template <int BLOCK, typename T>
__device__ __forceinline__ T block_reduce_sum(T v, T* smem) {
  return block_reduce<BLOCK>(v, Sum{}, T(0), smem);
}

// Block-wide exclusive scan of one value per thread, reduce-then-scan across warps: a warp scan,
// one scan of the warp totals, one add. `smem` holds BLOCK/32 + 1 values. Ends with a barrier.
template <int BLOCK, typename T>
__device__ __forceinline__ T block_exclusive_scan(T v, T& block_total, T* smem) {
  static_assert(BLOCK % 32 == 0 && BLOCK <= 1024, "BLOCK must be a multiple of 32, at most 1024");
  // EXERCISE BEGIN body device(block_total = T{}) unused(v, smem) exercise=stream_compaction/v4_warp_shuffle,ground_seg/-
  constexpr int kWarps = BLOCK / 32;
  const T inclusive = warp_inclusive_scan(v);
  if (lane_id() == 31) smem[warp_id()] = inclusive;
  __syncthreads();
  if (warp_id() == 0) {
    const T w = lane_id() < kWarps ? smem[lane_id()] : T(0);
    const T w_inclusive = warp_inclusive_scan(w);
    __syncwarp();  // every lane's read above happens before any lane's write below
    if (lane_id() < kWarps) smem[lane_id()] = w_inclusive - w;
    if (lane_id() == 31) smem[kWarps] = w_inclusive;
  }
  __syncthreads();
  const T result = smem[warp_id()] + inclusive - v;
  block_total = smem[kWarps];
  __syncthreads();
  return result;
  // EXERCISE END
}

// Block sum of N values per thread at once (e.g. a score, a gradient and a Hessian), through shared
// memory: each thread keeps its N values in its own slots of the scratch (block_reduce_smem_slot;
// it may accumulate there directly, so they hold no registers), then for each value one thread
// per warp's worth of threads adds those 32 values in lane order, and thread k adds value k's
// BLOCK/32 warp totals in order (deterministic). Shuffles would move 32 lanes of 4 bytes per cycle
// per SM: with N = 30 doubles, 300 shuffles per warp; here the stores and loads cost a few hundred
// cycles. `smem` holds block_reduce_smem_values<BLOCK, N>() values of T.
template <int BLOCK, int N>
constexpr int block_reduce_smem_values() {
  return N * (BLOCK / 32) * 33;  // a row of 33 per (value, warp): conflict-free stores, 2-way loads
}
// Where the calling thread's value k sits in that scratch.
template <int BLOCK>
__device__ __forceinline__ int block_reduce_smem_slot(int k) {
  return (k * (BLOCK / 32) + warp_id()) * 33 + lane_id();
}
// The sum, once every thread's N values are in their slots: on return thread k < N holds total k
// in v[k]. Starts and ends with a barrier.
template <int BLOCK, int N, typename T>
__device__ __forceinline__ void block_reduce_smem_finish(T (&v)[N], T* smem) {
  static_assert(BLOCK % 32 == 0 && BLOCK <= 1024, "BLOCK must be a multiple of 32, at most 1024");
  constexpr int kWarps = BLOCK / 32;
  static_assert(N * kWarps <= BLOCK, "one thread per (value, warp) row");
  const int tid = threadIdx.x;
  __syncthreads();
  T row = T(0);
  if (tid < N * kWarps) {
    const T* r = smem + tid * 33;
#pragma unroll
    for (int i = 0; i < 32; ++i) row += r[i];
  }
  __syncthreads();
  if (tid < N * kWarps) smem[tid] = row;  // the row totals, value-major: smem[k * kWarps + w]
  __syncthreads();
  if (tid < N) {
    T total = T(0);
    for (int w = 0; w < kWarps; ++w) total += smem[tid * kWarps + w];
#pragma unroll
    for (int k = 0; k < N; ++k)
      if (k == tid) v[k] = total;
  }
  __syncthreads();
}

}  // namespace common
