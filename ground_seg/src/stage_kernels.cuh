// The stages of the report's GPU design, shared by v3 (host work between them) and v4 (all on the
// device, one CUDA graph):
//  1. assign + histogram: each point finds its cell and takes a row in it with one atomicAdd
//     (the returned old count is its row index);
//  2. offsets: exclusive scan of the counts (v3 on the host, v4 on the device);
//  3. grouping: cells by count — single points, 2..32 points padded to 2/4/8/16/32 lanes, and
//     more than 32 (v3 on the host, v4 by atomic appends on the device);
//  4. scatter: z values into cell order (offset + row);
//  5. statistics: single cells directly; small cells with warp shuffles inside their padded lane
//     group; large cells with one block each, a shared-memory reduction finishing in one warp;
//     two-pass variance everywhere, sums in float64;
//  6. classification: 16 x 16 cells per block with a one-cell halo in shared memory;
//  7. point labels (gpu_common.cuh).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "common/block_primitives.cuh"
#include "gpu_common.cuh"

namespace ground_seg {
namespace gpu {
namespace {  // internal linkage: v3 and v4 each instantiate their own copies of these kernels
// EXERCISE BEGIN exercise=v3_grouped_stats

constexpr int kGroups = 7;  // 0: single, 1..5: 2,4,8,16,32 lanes, 6: large (> 32)
__host__ __device__ inline int group_of(unsigned count) {
  if (count <= 1) return 0;
  if (count > 32) return 6;
  int g = 1;
  while ((2u << (g - 1)) < count) ++g;  // smallest power of two >= count
  return g;
}

__global__ void assign_kernel(Grid g, const float* __restrict__ x, const float* __restrict__ y, int n,
                              int* __restrict__ cell_of, unsigned* __restrict__ row_of, unsigned* __restrict__ count,
                              unsigned* __restrict__ outside) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const int k = cell_index(g, x[i], y[i]);
    cell_of[i] = k;
    if (k < 0) {
      atomicAdd(outside, 1u);
      continue;
    }
    row_of[i] = atomicAdd(&count[k], 1u);
  }
}

__global__ void scatter_kernel(const float* __restrict__ z, int n, const int* __restrict__ cell_of,
                               const unsigned* __restrict__ row_of, const unsigned* __restrict__ offset,
                               float* __restrict__ z_sorted) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    if (cell_of[i] >= 0) z_sorted[offset[cell_of[i]] + row_of[i]] = z[i];
}

// Cells of one group: list[0 .. *len).
__global__ void single_stats_kernel(const int* __restrict__ list, const unsigned* __restrict__ len,
                                    const unsigned* __restrict__ offset, const float* __restrict__ zs, DeviceCells c) {
  for (unsigned e = blockIdx.x * blockDim.x + threadIdx.x; e < *len; e += gridDim.x * blockDim.x) {
    const int k = list[e];
    const float z = zs[offset[k]];
    c.mean[k] = z;
    c.var[k] = 0.f;
    c.min[k] = c.max[k] = z;
  }
}

template <int P>  // lanes per cell
__global__ void small_stats_kernel(const int* __restrict__ list, const unsigned* __restrict__ len,
                                   const unsigned* __restrict__ offset, const float* __restrict__ zs, DeviceCells c) {
  const int lane = threadIdx.x % P;
  const unsigned total = *len;
  const unsigned per_pass = gridDim.x * blockDim.x / P;
  for (unsigned e0 = (blockIdx.x * blockDim.x + threadIdx.x) / P;; e0 += per_pass) {
    // whole warps iterate together so the shuffles see every lane
    const unsigned warp_first = __shfl_sync(0xffffffffu, e0, 0);
    if (warp_first >= total) break;
    const bool live = e0 < total;
    const int k = live ? list[e0] : 0;
    const unsigned cnt = live ? c.count[k] : 0;
    const bool has = live && static_cast<unsigned>(lane) < cnt;
    const float z = has ? zs[offset[k] + lane] : 0.f;
    double s = has ? static_cast<double>(z) : 0.0;
    float lo = has ? z : INFINITY, hi = has ? z : -INFINITY;
    s = common::warp_reduce<P>(s, common::Sum{});
    lo = common::warp_reduce<P>(lo, common::Min{});
    hi = common::warp_reduce<P>(hi, common::Max{});
    const float mean = live && cnt ? static_cast<float>(s / cnt) : 0.f;
    const double d = has ? static_cast<double>(z) - mean : 0.0;
    const double q = common::warp_reduce<P>(d * d, common::Sum{});
    if (live && lane == 0) {
      c.mean[k] = mean;
      c.var[k] = static_cast<float>(q / cnt);
      c.min[k] = lo;
      c.max[k] = hi;
    }
  }
}

template <int BLOCK>
__global__ void large_stats_kernel(const int* __restrict__ list, const unsigned* __restrict__ len,
                                   const unsigned* __restrict__ offset, const float* __restrict__ zs, DeviceCells c) {
  __shared__ double red[BLOCK / 32];
  __shared__ float fred[BLOCK / 32];
  for (unsigned e = blockIdx.x; e < *len; e += gridDim.x) {
    const int k = list[e];
    const unsigned cnt = c.count[k], base = offset[k];
    double s = 0;
    float lo = INFINITY, hi = -INFINITY;
    for (unsigned j = threadIdx.x; j < cnt; j += BLOCK) {
      const float z = zs[base + j];
      s += z;
      lo = fminf(lo, z);
      hi = fmaxf(hi, z);
    }
    s = common::block_reduce_sum<BLOCK>(s, red);
    lo = common::block_reduce<BLOCK>(lo, common::Min{}, INFINITY, fred);
    hi = common::block_reduce<BLOCK>(hi, common::Max{}, -INFINITY, fred);
    const float mean = static_cast<float>(s / cnt);
    double q = 0;
    for (unsigned j = threadIdx.x; j < cnt; j += BLOCK) {
      const double d = static_cast<double>(zs[base + j]) - mean;
      q += d * d;
    }
    q = common::block_reduce_sum<BLOCK>(q, red);
    if (threadIdx.x == 0) {
      c.mean[k] = mean;
      c.var[k] = static_cast<float>(q / cnt);
      c.min[k] = lo;
      c.max[k] = hi;
    }
    __syncthreads();
  }
}

// Variance-rule classification, 16 x 16 cells per block, counts and variances of the tile and a
// one-cell halo staged in shared memory.
__global__ void tile_classify_kernel(Grid g, DeviceCells c) {
  __shared__ unsigned s_count[18][18];
  __shared__ float s_var[18][18];
  const int x0 = blockIdx.x * 16, y0 = blockIdx.y * 16;
  for (int t = threadIdx.y * 16 + threadIdx.x; t < 18 * 18; t += 256) {
    const int xx = x0 + t % 18 - 1, yy = y0 + t / 18 - 1;
    const bool in = xx >= 0 && yy >= 0 && xx < g.nx && yy < g.ny;
    s_count[t / 18][t % 18] = in ? c.count[yy * g.nx + xx] : 0u;
    s_var[t / 18][t % 18] = in ? c.var[yy * g.nx + xx] : 0.f;
  }
  __syncthreads();
  const int x = x0 + threadIdx.x, y = y0 + threadIdx.y;
  if (x >= g.nx || y >= g.ny) return;
  const int lx = threadIdx.x + 1, ly = threadIdx.y + 1, k = y * g.nx + x;
  const unsigned cnt = s_count[ly][lx];
  std::uint8_t ground = 0;
  if (cnt >= g.point_threshold) {
    ground = s_var[ly][lx] < g.var_threshold;
  } else if (cnt > 0) {
    double s = 0;
    int m = 0;
    for (int dy = -1; dy <= 1; ++dy)
      for (int dx = -1; dx <= 1; ++dx)
        if (s_count[ly + dy][lx + dx] >= g.point_threshold) {
          s += s_var[ly + dy][lx + dx];
          ++m;
        }
    ground = m == 0 || s / m < g.var_threshold;
  }
  c.variance_ground[k] = ground;
  c.ground[k] = ground;
}

// v4's on-device grouping: each non-empty cell appends itself to its group's list.
__global__ void group_kernel(const unsigned* __restrict__ count, int cells, int* __restrict__ lists,
                             unsigned* __restrict__ lens) {
  for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < cells; k += gridDim.x * blockDim.x) {
    if (count[k] == 0) continue;
    const int grp = group_of(count[k]);
    lists[grp * cells + atomicAdd(&lens[grp], 1u)] = k;
  }
}

// EXERCISE END
}  // namespace
}  // namespace gpu
}  // namespace ground_seg
