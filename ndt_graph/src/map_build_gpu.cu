// The target map and the VoxelGrid filter on the GPU: cell key per point, a stable radix sort by
// key (common::GroupByKey: for these 64-bit keys CUB's sort, measured faster than the course's
// one-sweep sort at every size), run-length encoding into leaves, then one thread per leaf adds
// its points in file order — the same order and the same float64 (map) / float (filter)
// arithmetic as the CPU code, so the results are identical, not merely close — and for the map a
// per-voxel 3x3 eigen-solve and an atomicCAS insert into the cell hash. No host
// round trip inside the build; the counts come back at the end with the result.
#include <cub/cub.cuh>

#include <algorithm>
#include <cmath>

#include "common/device_info.hpp"
#include "common/group_by_key.cuh"
#include "gpu_kernels.cuh"

namespace ndt {
namespace gpu {
namespace {

__global__ void map_keys_kernel(const float* x, const float* y, const float* z, int n, float inv, std::uint64_t* keys,
                                int* values, int* out_of_range) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float fx = floorf(x[i] * inv), fy = floorf(y[i] * inv), fz = floorf(z[i] * inv);
  if (!(fabsf(fx) < 2e6f && fabsf(fy) < 2e6f && fabsf(fz) < 2e6f) || !cell_in_range(static_cast<long long>(fx)) ||
      !cell_in_range(static_cast<long long>(fy)) || !cell_in_range(static_cast<long long>(fz))) {
    atomicMin(out_of_range, i);
    keys[i] = 0;
  } else {  // ordered by (z, y, x) like PCL's leaf index, so voxels come out in PCL's order
    keys[i] = cell_key(static_cast<int>(fz), static_cast<int>(fy), static_cast<int>(fx));
  }
  values[i] = i;
}

// Per-voxel statistics, one block per voxel (grid-stride over the voxels). The sums must be the
// CPU's to the bit (file order, one float64 or float add after another), so each of the 12 sums
// is a serial chain; what the block parallelises is everything around them. A one-thread-per-
// voxel kernel took 0.6 ms here: the largest voxel of room_scan1 holds 7,390 points, each two
// dependent global loads (order, then the point) before the adds. Now warps 2-3 stage the next
// kStatStage points (as double and as float) in shared memory while lanes 0..8 of warp 0 run the
// 9 float64 chains and lanes 0..2 of warp 1 the 3 float chains over the current stage. Each
// chain loads and multiplies 8 points ahead of its adds, so its time is the adds' latency.
constexpr int kStatThreads = 128, kStatStage = 512, kStatLoaders = 64;
template <typename T, typename Term>
__device__ __forceinline__ T serial_sum(T acc, int m, Term term) {
  int k = 0;
  for (; k + 8 <= m; k += 8) {
    T t[8];
#pragma unroll
    for (int u = 0; u < 8; ++u) t[u] = term(k + u);
#pragma unroll
    for (int u = 0; u < 8; ++u) acc = acc + t[u];
  }
  for (; k < m; ++k) acc = acc + term(k);
  return acc;
}

__global__ void __launch_bounds__(kStatThreads)
    voxel_stats_kernel(const float* x, const float* y, const float* z, const int* order, const int* counts,
                       const int* offsets, const int* num_runs, Voxel* out, int* flags) {
  __shared__ double dp[2][4][kStatStage];  // row 3: ones, so a coordinate sum is a product too
  __shared__ float fp[2][3][kStatStage];
  __shared__ double dsum[9];
  __shared__ float fsum[3];
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, runs = *num_runs;
  for (int k = tid; k < 2 * kStatStage; k += kStatThreads) dp[k / kStatStage][3][k % kStatStage] = 1.0;
  // Warp 0 lane l < 9: chain l of (sum x, y, z, then x*x, x*y, x*z, y*y, y*z, z*z).
  const int qa[9] = {0, 1, 2, 0, 0, 0, 1, 1, 2}, qb[9] = {3, 3, 3, 0, 1, 2, 1, 2, 2};
  const bool dchain = warp == 0 && lane < 9, fchain = warp == 1 && lane < 3;
  const int ca = dchain ? qa[lane] : lane % 3, cb = dchain ? qb[lane] : 3;
  for (int r = blockIdx.x; r < runs; r += gridDim.x) {
    const int c = counts[r], first = offsets[r];
    if (c < kMinPointsPerVoxel) {
      if (tid == 0) flags[r] = 0;
      continue;
    }
    const int stages = (c + kStatStage - 1) / kStatStage;
    auto stage = [&](int st, int t) {  // thread t of the nt loaders
      const int buf = st & 1, base = st * kStatStage, m = min(kStatStage, c - base);
      for (int k = t; k < m; k += kStatLoaders) {
        const int i = order[first + base + k];
        const float v[3] = {x[i], y[i], z[i]};
        for (int a = 0; a < 3; ++a) {
          dp[buf][a][k] = v[a];
          fp[buf][a][k] = v[a];
        }
      }
    };
    if (tid < kStatLoaders) stage(0, tid);
    __syncthreads();
    double acc = 0;
    float facc = 0;
    for (int st = 0; st < stages; ++st) {
      const int buf = st & 1, m = min(kStatStage, c - st * kStatStage);
      if (warp >= 2) {
        if (st + 1 < stages) stage(st + 1, tid - 2 * 32);
      } else if (dchain) {
        const double *pa = dp[buf][ca], *pb = dp[buf][cb];
        acc = serial_sum(acc, m, [&](int k) { return __dmul_rn(pa[k], pb[k]); });
      } else if (fchain) {
        const float* pa = fp[buf][ca];
        facc = serial_sum(facc, m, [&](int k) { return pa[k]; });
      }
      __syncthreads();
    }
    if (dchain) dsum[lane] = acc;
    if (fchain) fsum[lane] = facc;
    __syncthreads();
    if (tid == 0) {
      const double sum[3] = {dsum[0], dsum[1], dsum[2]};
      const double sq[6] = {dsum[3], dsum[4], dsum[5], dsum[6], dsum[7], dsum[8]};
      const float cs[3] = {fsum[0], fsum[1], fsum[2]};
      voxel_from_sums(sum, sq, cs, c, out[r]);
      flags[r] = 1;
    }
    __syncthreads();  // dsum/fsum and the stage buffers are reused by the next voxel
  }
}

__global__ void hash_insert_kernel(const std::uint64_t* sort_keys, const int* num_voxels, const Voxel* voxels,
                                   CellSlot* table, std::uint64_t mask) {
  const int v = blockIdx.x * blockDim.x + threadIdx.x;
  if (v >= *num_voxels) return;
  const std::uint64_t sk = sort_keys[v];  // (z, y, x) -> the hash's (x, y, z) key
  const int iz = static_cast<int>((sk >> 42) & 0x1FFFFF) - kCellBias,
            iy = static_cast<int>((sk >> 21) & 0x1FFFFF) - kCellBias, ix = static_cast<int>(sk & 0x1FFFFF) - kCellBias;
  const std::uint64_t key = cell_key(ix, iy, iz);
  for (std::uint32_t s = hash_slot(key, mask);; s = (s + 1) & static_cast<std::uint32_t>(mask)) {
    const unsigned long long prev = atomicCAS(reinterpret_cast<unsigned long long*>(&table[s].key), kEmptyKey, key);
    if (prev == kEmptyKey) {
      fill_slot(table[s], key, v, voxels[v]);
      return;
    }
  }
}

__global__ void filter_keys_kernel(const float* x, const float* y, const float* z, int n, float inv, long long mb0,
                                   long long mb1, long long mb2, long long d0, long long d01, std::uint64_t* keys,
                                   int* values) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const long long i0 = static_cast<long long>(__fsub_rn(floorf(__fmul_rn(x[i], inv)), static_cast<float>(mb0)));
  const long long i1 = static_cast<long long>(__fsub_rn(floorf(__fmul_rn(y[i], inv)), static_cast<float>(mb1)));
  const long long i2 = static_cast<long long>(__fsub_rn(floorf(__fmul_rn(z[i], inv)), static_cast<float>(mb2)));
  keys[i] = static_cast<std::uint64_t>(i0 + i1 * d0 + i2 * d01);
  values[i] = i;
}

__global__ void centroid_kernel(const float* x, const float* y, const float* z, const int* order, const int* counts,
                                const int* offsets, const int* num_runs, float* out) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= *num_runs) return;
  float s[3] = {0, 0, 0};
  for (int k = offsets[r]; k < offsets[r] + counts[r]; ++k) {
    s[0] = __fadd_rn(s[0], x[order[k]]);
    s[1] = __fadd_rn(s[1], y[order[k]]);
    s[2] = __fadd_rn(s[2], z[order[k]]);
  }
  const float c = static_cast<float>(counts[r]);
  for (int a = 0; a < 3; ++a) out[3 * r + a] = __fdiv_rn(s[a], c);
}

// Keys -> sorted keys + order (the input index of each sorted point) -> runs.
using Grouping = common::GroupByKey<std::uint64_t, int>;

struct DeviceCloud {
  common::DeviceBuffer<float> x, y, z;
  explicit DeviceCloud(const common::PointCloud& c, cudaStream_t s)
      : x(std::max<std::size_t>(c.size(), 1)),
        y(std::max<std::size_t>(c.size(), 1)),
        z(std::max<std::size_t>(c.size(), 1)) {
    CUDA_CHECK(cudaMemcpyAsync(x.get(), c.x.data(), c.size() * sizeof(float), cudaMemcpyHostToDevice, s));
    CUDA_CHECK(cudaMemcpyAsync(y.get(), c.y.data(), c.size() * sizeof(float), cudaMemcpyHostToDevice, s));
    CUDA_CHECK(cudaMemcpyAsync(z.get(), c.z.data(), c.size() * sizeof(float), cudaMemcpyHostToDevice, s));
  }
};

int grid_for(int n) { return std::max(1, (n + 255) / 256); }

}  // namespace
}  // namespace gpu

VoxelMap build_voxel_map_gpu(const common::PointCloud& target, float resolution, float* device_ms) {
  using namespace gpu;
  if (!(resolution > 0) || !std::isfinite(resolution)) throw InputError("resolution must be positive and finite");
  if (target.size() == 0) throw InputError("target cloud is empty");
  if (target.size() > (1u << 30)) throw InputError("target cloud has more than 2^30 points");
  const int n = static_cast<int>(target.size());
  common::Stream stream;
  cudaStream_t s = stream.get();
  DeviceCloud cloud(target, s);
  Grouping g;
  g.resize(n);
  std::size_t cap = 16;
  while (cap < 2 * (static_cast<std::size_t>(n) / kMinPointsPerVoxel + 1)) cap *= 2;
  common::DeviceBuffer<Voxel> tmp_vox(n), voxels(n);
  common::DeviceBuffer<std::uint64_t> vox_keys(n);
  common::DeviceBuffer<CellSlot> table(cap);
  common::DeviceBuffer<int> flags(n), num_voxels(1), bad(1);
  common::Scratch select_scratch;
  const int big = 0x7fffffff;
  CUDA_CHECK(cudaMemcpyAsync(bad.get(), &big, sizeof big, cudaMemcpyHostToDevice, s));
  common::Event start, stop;
  // A wave of voxel blocks: the voxel count is only known on the device.
  const int stat_blocks = std::min(n, 8 * common::current_sm_count());
  auto build = [&] {
    map_keys_kernel<<<grid_for(n), 256, 0, s>>>(cloud.x.get(), cloud.y.get(), cloud.z.get(), n, 1.0f / resolution,
                                                g.keys(), g.values(), bad.get());
    CUDA_CHECK_LAST();
    g.group(n, s);
    CUDA_CHECK(cudaMemsetAsync(flags.get(), 0, n * sizeof(int), s));
    voxel_stats_kernel<<<stat_blocks, kStatThreads, 0, s>>>(cloud.x.get(), cloud.y.get(), cloud.z.get(),
                                                            g.sorted_values(), g.counts(), g.offsets(), g.num_runs(),
                                                            tmp_vox.get(), flags.get());
    CUDA_CHECK_LAST();
    std::size_t b1 = 0, b2 = 0;
    CUDA_CHECK(
        cub::DeviceSelect::Flagged(nullptr, b1, tmp_vox.get(), flags.get(), voxels.get(), num_voxels.get(), n, s));
    CUDA_CHECK(
        cub::DeviceSelect::Flagged(nullptr, b2, g.unique(), flags.get(), vox_keys.get(), num_voxels.get(), n, s));
    void* tmp = select_scratch.get(std::max(b1, b2));
    CUDA_CHECK(cub::DeviceSelect::Flagged(tmp, b1, tmp_vox.get(), flags.get(), voxels.get(), num_voxels.get(), n, s));
    CUDA_CHECK(cub::DeviceSelect::Flagged(tmp, b2, g.unique(), flags.get(), vox_keys.get(), num_voxels.get(), n, s));
    // all ones: key kEmptyKey, voxel -1 (the rest of a free slot is never read)
    CUDA_CHECK(cudaMemsetAsync(table.get(), 0xff, cap * sizeof(CellSlot), s));
    hash_insert_kernel<<<grid_for(n), 256, 0, s>>>(vox_keys.get(), num_voxels.get(), voxels.get(), table.get(),
                                                   cap - 1);
    CUDA_CHECK_LAST();
  };
  build();  // sizes the scratch; the timed build below allocates nothing
  start.record(s);
  build();
  stop.record(s);
  int h_bad = 0, h_runs = 0, h_vox = 0;
  CUDA_CHECK(cudaMemcpyAsync(&h_bad, bad.get(), sizeof(int), cudaMemcpyDeviceToHost, s));
  CUDA_CHECK(cudaMemcpyAsync(&h_runs, g.num_runs(), sizeof(int), cudaMemcpyDeviceToHost, s));
  CUDA_CHECK(cudaMemcpyAsync(&h_vox, num_voxels.get(), sizeof(int), cudaMemcpyDeviceToHost, s));
  stream.sync();
  if (device_ms) *device_ms = stop.since(start);
  if (h_bad != big)
    throw InputError("target point " + std::to_string(h_bad) + " lies more than 2^20 voxels from the origin");
  VoxelMap map;
  map.resolution = resolution;
  map.occupied = static_cast<std::size_t>(h_runs);
  map.voxels.resize(h_vox);
  map.table.resize(cap);
  CUDA_CHECK(cudaMemcpyAsync(map.voxels.data(), voxels.get(), h_vox * sizeof(Voxel), cudaMemcpyDeviceToHost, s));
  CUDA_CHECK(cudaMemcpyAsync(map.table.data(), table.get(), cap * sizeof(CellSlot), cudaMemcpyDeviceToHost, s));
  stream.sync();
  for (const Voxel& v : map.voxels) map.valid += v.valid;
  if (map.voxels.empty())
    throw InputError("no voxel of the target has " + std::to_string(kMinPointsPerVoxel) + " points");
  if (map.valid == 0) throw InputError("no valid voxel in the target: every voxel has a degenerate covariance");
  return map;
}

common::PointCloud voxel_grid_filter_gpu(const common::PointCloud& in, float leaf, float* device_ms) {
  using namespace gpu;
  if (!(leaf > 0) || !std::isfinite(leaf) || !std::isfinite(1.0f / leaf))
    throw InputError("voxel filter: leaf size must be positive and finite");
  common::PointCloud out;
  if (in.size() == 0) return out;
  if (in.size() > (1u << 30)) throw InputError("voxel filter: more than 2^30 points");
  const int n = static_cast<int>(in.size());
  common::Stream stream;
  cudaStream_t s = stream.get();
  DeviceCloud cloud(in, s);
  common::DeviceBuffer<float> bounds(6), centroids(3 * static_cast<std::size_t>(n));
  common::Scratch red_scratch;
  Grouping g;
  g.resize(n);
  common::Event start, stop;
  start.record(s);
  const float* axes[3] = {cloud.x.get(), cloud.y.get(), cloud.z.get()};
  std::size_t bytes = 0;
  CUDA_CHECK(cub::DeviceReduce::Min(nullptr, bytes, axes[0], bounds.get(), n, s));
  void* tmp = red_scratch.get(bytes);
  for (int a = 0; a < 3; ++a) {
    CUDA_CHECK(cub::DeviceReduce::Min(tmp, bytes, axes[a], bounds.get() + a, n, s));
    CUDA_CHECK(cub::DeviceReduce::Max(tmp, bytes, axes[a], bounds.get() + 3 + a, n, s));
  }
  float b[6];
  CUDA_CHECK(cudaMemcpyAsync(b, bounds.get(), sizeof b, cudaMemcpyDeviceToHost, s));
  stream.sync();  // the leaf grid's origin and extent decide the keys (as PCL computes them first)
  const float inv = 1.0f / leaf;
  long long min_b[3], div[3];
  for (int a = 0; a < 3; ++a) {
    min_b[a] = static_cast<long long>(std::floor(b[a] * inv));
    div[a] = static_cast<long long>(std::floor(b[3 + a] * inv)) - min_b[a] + 1;
  }
  filter_keys_kernel<<<grid_for(n), 256, 0, s>>>(cloud.x.get(), cloud.y.get(), cloud.z.get(), n, inv, min_b[0],
                                                 min_b[1], min_b[2], div[0], div[0] * div[1], g.keys(), g.values());
  CUDA_CHECK_LAST();
  g.group(n, s);
  centroid_kernel<<<grid_for(n), 256, 0, s>>>(cloud.x.get(), cloud.y.get(), cloud.z.get(), g.sorted_values(),
                                              g.counts(), g.offsets(), g.num_runs(), centroids.get());
  CUDA_CHECK_LAST();
  stop.record(s);
  int runs = 0;
  CUDA_CHECK(cudaMemcpyAsync(&runs, g.num_runs(), sizeof runs, cudaMemcpyDeviceToHost, s));
  stream.sync();
  if (device_ms) *device_ms = stop.since(start);
  std::vector<float> c(3 * static_cast<std::size_t>(runs));
  CUDA_CHECK(cudaMemcpy(c.data(), centroids.get(), c.size() * sizeof(float), cudaMemcpyDeviceToHost));
  for (int r = 0; r < runs; ++r) {
    out.x.push_back(c[3 * r]);
    out.y.push_back(c[3 * r + 1]);
    out.z.push_back(c[3 * r + 2]);
  }
  return out;
}

}  // namespace ndt
