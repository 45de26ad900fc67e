// v8 (going further) several bodies per thread: each thread keeps K = 4 bodies in registers (256
// threads per block: the best of the shapes `nbody --mode tune` measures), so
// one shared-memory load (LDS.128, broadcast) feeds 4 interactions instead of 1, and the 4
// independent FMA chains give the scheduler instruction-level parallelism. To keep the GPU full
// when N / 4 threads are too few, the j-range is split over C blocks (grid.y) whose partial sums
// are added in a fixed order by a second small kernel (deterministic, unlike atomics).
// Prediction: 13 + 1/4 issue slots per interaction instead of 14: at best ~2.5e12 interactions/s
// on an H100/H200, ~1.1-1.2x v4.
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "common/device_info.hpp"
#include "common/cuda_check.hpp"
#include "common/device_buffer.hpp"
#include "interaction.cuh"
#include "nbody/gpu.hpp"

namespace nbody {
namespace {
// EXERCISE BEGIN

// One pass over a tile held in shared memory: every tile entry against the kBodies bodies of this
// thread. kUnitMass: the entry's mass is left out (s = 1 / r^3, two FMUL instead of three) and
// multiplied in once at the end; only for a tile whose entries all have the same mass.
template <int kBlock, int kBodies, bool kUnitMass>
__device__ __forceinline__ void tile_pass(const float4* tile, const float (&xi)[kBodies], const float (&yi)[kBodies],
                                          const float (&zi)[kBodies], float eps2, float (&ax)[kBodies],
                                          float (&ay)[kBodies], float (&az)[kBodies]) {
#pragma unroll 8
  for (int q = 0; q < kBlock; ++q) {
    const float4 pj = tile[q];
#pragma unroll
    for (int k = 0; k < kBodies; ++k) interact<!kUnitMass>(pj, xi[k], yi[k], zi[k], eps2, ax[k], ay[k], az[k]);
  }
}

// kBlock threads x kBodies bodies per thread; kMinBlocks caps registers so that many blocks fit
// on an SM (0: let the compiler choose). kFoldMass (v9): when *mixed_mass is 0, every body has
// either body 0's mass m0 or none (multi-GPU padding); the tile then holds weights 1 (mass m0) and
// 0, a tile of weights 1 only leaves the mass out of the inner loop, other tiles keep the mass
// term with the weights (1 * inv is exact: both give the same bits), and the sums are multiplied
// by m0 once at the end. Otherwise the kernel is v8's.
template <int kBlock, int kBodies, int kMinBlocks, bool kFoldMass>
__global__ void __launch_bounds__(kBlock, kMinBlocks > 0 ? kMinBlocks : 1)
    multi_body_kernel(const float4* __restrict__ pos, int n, float4* __restrict__ out, int i_begin, int count,
                      int chunk, float eps2, float G, bool final_sum, const unsigned* __restrict__ mixed_mass) {
  constexpr int kBodiesPerBlock = kBlock * kBodies;
  __shared__ float4 tile[kBlock];
  const int first = blockIdx.x * kBodiesPerBlock + threadIdx.x;
  float xi[kBodies], yi[kBodies], zi[kBodies], ax[kBodies], ay[kBodies], az[kBodies];
#pragma unroll
  for (int k = 0; k < kBodies; ++k) {
    const int t = first + k * kBlock;
    const float4 p = t < count ? pos[i_begin + t] : make_float4(0.f, 0.f, 0.f, 0.f);
    xi[k] = p.x;
    yi[k] = p.y;
    zi[k] = p.z;
    ax[k] = ay[k] = az[k] = 0.f;
  }
  bool fold = false;
  float mass = 1.f;
  if constexpr (kFoldMass) {
    fold = n > 0 && *mixed_mass == 0u;
    if (fold) mass = pos[0].w;
  }
  const int j_begin = blockIdx.y * chunk;
  const int j_end = min(n, j_begin + chunk);
  for (int base = j_begin; base < j_end; base += kBlock) {
    const int j = base + threadIdx.x;
    float4 p = j < j_end ? pos[j] : make_float4(0.f, 0.f, 0.f, 0.f);
    if (kFoldMass && fold) p.w = p.w != 0.f ? 1.f : 0.f;
    tile[threadIdx.x] = p;
    bool unit_tile = false;
    if (kFoldMass && fold)
      unit_tile = __syncthreads_and(p.w == 1.f);
    else
      __syncthreads();
    if (unit_tile)
      tile_pass<kBlock, kBodies, true>(tile, xi, yi, zi, eps2, ax, ay, az);
    else
      tile_pass<kBlock, kBodies, false>(tile, xi, yi, zi, eps2, ax, ay, az);
    __syncthreads();
  }
  const float g = (final_sum ? G : 1.f) * mass;
  float4* dst = out + static_cast<std::size_t>(blockIdx.y) * count;
#pragma unroll
  for (int k = 0; k < kBodies; ++k) {
    const int t = first + k * kBlock;
    if (t < count) dst[t] = make_float4(g * ax[k], g * ay[k], g * az[k], 0.f);
  }
}

// *mixed_mass (zeroed before) becomes nonzero if body 0 is massless or some body's mass is neither
// body 0's nor zero (a NaN is neither: it keeps the mass term).
__global__ void mixed_mass_kernel(const float4* __restrict__ pos, int n, unsigned* __restrict__ mixed_mass) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  const float m0 = pos[0].w;
  const bool differs = j < n && (!(m0 != 0.f) || !(pos[j].w == m0 || pos[j].w == 0.f));
  if (__syncthreads_or(differs) && threadIdx.x == 0) atomicOr(mixed_mass, 1u);
}

__global__ void sum_chunks_kernel(const float4* __restrict__ partial, int chunks, int count, float4* __restrict__ acc,
                                  float G) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= count) return;
  float x = 0.f, y = 0.f, z = 0.f;
  for (int c = 0; c < chunks; ++c) {  // fixed order: bitwise reproducible
    const float4 p = partial[static_cast<std::size_t>(c) * count + t];
    x += p.x;
    y += p.y;
    z += p.z;
  }
  acc[t] = make_float4(G * x, G * y, G * z, 0.f);
}

template <int kBlock, int kBodies, int kMinBlocks, bool kFoldMass>
int resident_blocks() {
  int per_sm = 0;
  const int sms = common::current_sm_count();
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &per_sm, multi_body_kernel<kBlock, kBodies, kMinBlocks, kFoldMass>, kBlock, 0));
  return sms * per_sm;
}

// Scratch (partial sums, the mixed-mass flag) per (device, stream): two streams (the batch
// pipeline) or host threads (one snapshot per GPU) must never share one. Grown once, outside timed
// runs after the first call.
template <typename T>
common::DeviceBuffer<T>& stream_buffer(cudaStream_t stream) {
  static std::mutex mutex;
  static std::map<std::pair<int, cudaStream_t>, common::DeviceBuffer<T>> buffers;
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  std::lock_guard<std::mutex> lock(mutex);
  return buffers[{dev, stream}];
}

template <int kBlock, int kBodies, int kMinBlocks, bool kFoldMass = false>
void launch_multi_body(const float4* pos, int n, float4* acc, int i_begin, int count, float eps2, float G,
                       cudaStream_t s) {
  if (count <= 0) return;
  constexpr int kBodiesPerBlock = kBlock * kBodies;
  static const int target_blocks = resident_blocks<kBlock, kBodies, kMinBlocks, kFoldMass>();
  const int blocks_i = (count + kBodiesPerBlock - 1) / kBodiesPerBlock;
  // The split depends on n only, so a GPU that computes a slice of the bodies (multi-GPU) adds
  // the same partial sums in the same order as one GPU computing all of them.
  // Enough chunks for ~8 waves of resident blocks: with one wave of 256 blocks on 132 SMs some
  // SMs get one block and some two (ncu: 3.2 active warps per scheduler, 17% of cycles with
  // nothing to issue). The partial sums cost 16 bytes per body per chunk, negligible.
  const int blocks_all = (n + kBodiesPerBlock - 1) / kBodiesPerBlock;
  int chunks = std::max(1, std::min(32, (8 * target_blocks + blocks_all - 1) / blocks_all));
  const int tiles = (n + kBlock - 1) / kBlock;
  chunks = std::min(chunks, std::max(1, tiles / 8));  // keep at least 8 tiles per chunk
  const int chunk = (tiles + chunks - 1) / chunks * kBlock;
  chunks = (n + chunk - 1) / chunk;
  unsigned* mixed_mass = nullptr;
  if constexpr (kFoldMass) {
    auto& flag = stream_buffer<unsigned>(s);
    flag.resize(1);
    CUDA_CHECK(cudaMemsetAsync(flag.get(), 0, sizeof(unsigned), s));
    if (n > 0) mixed_mass_kernel<<<(n + 255) / 256, 256, 0, s>>>(pos, n, flag.get());
    CUDA_CHECK_LAST();
    mixed_mass = flag.get();
  }
  auto kernel = multi_body_kernel<kBlock, kBodies, kMinBlocks, kFoldMass>;
  if (chunks <= 1) {
    kernel<<<dim3(blocks_i, 1), kBlock, 0, s>>>(pos, n, acc, i_begin, count, n > 0 ? n : 1, eps2, G, true, mixed_mass);
    CUDA_CHECK_LAST();
    return;
  }
  auto& partial = stream_buffer<float4>(s);
  partial.resize(static_cast<std::size_t>(chunks) * count);
  kernel<<<dim3(blocks_i, chunks), kBlock, 0, s>>>(pos, n, partial.get(), i_begin, count, chunk, eps2, G, false,
                                                   mixed_mass);
  CUDA_CHECK_LAST();
  sum_chunks_kernel<<<(count + 255) / 256, 256, 0, s>>>(partial.get(), chunks, count, acc, G);
  CUDA_CHECK_LAST();
}

// EXERCISE END
}  // namespace

const std::vector<KernelVariant>& multi_body_variants() {
  // EXERCISE BEGIN body
  static const std::vector<KernelVariant> v = {
      {"128x2", launch_multi_body<128, 2, 0>},
      {"128x4", launch_multi_body<128, 4, 0>},
      {"128x4_min8", launch_multi_body<128, 4, 8>},
      {"256x2", launch_multi_body<256, 2, 0>},
      {"256x4", launch_multi_body<256, 4, 0>},
      {"256x4_min4", launch_multi_body<256, 4, 4>},
      {"128x8", launch_multi_body<128, 8, 0>},
      {"64x4", launch_multi_body<64, 4, 0>},
      // equal masses folded out of the inner loop (12 instructions per interaction, not 13)
      {"256x4_fold", launch_multi_body<256, 4, 0, true>},
      {"128x4_fold", launch_multi_body<128, 4, 0, true>},
  };
  return v;
  // EXERCISE END
}

void accel_multi_body(const float4* pos, int n, float4* acc, int i_begin, int count, float eps2, float G,
                      cudaStream_t s) {
  // EXERCISE BEGIN body
  launch_multi_body<256, 4, 0>(pos, n, acc, i_begin, count, eps2, G, s);  // measured best, README
  // EXERCISE END
}

void launch_multi_body_fold(const float4* pos, int n, float4* acc, int i_begin, int count, float eps2, float G,
                            cudaStream_t s) {
  // EXERCISE BEGIN body
  launch_multi_body<256, 4, 0, true>(pos, n, acc, i_begin, count, eps2, G, s);
  // EXERCISE END
}

}  // namespace nbody
