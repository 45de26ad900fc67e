// v6 warp primitives: at small N there are too few bodies to fill the GPU with one thread each
// (N = 4096 is 128 warps for 132 SMs that each hold 64). So each body gets a group of S lanes
// (S = 1..32, chosen from N); lane g of the group takes tile entries g, g + S, ... and the S
// partial sums are combined with __shfl_xor_sync, in a fixed order (deterministic). Prediction: up
// to S x faster than v4 while N x S < ~270k threads; identical to v4 (S = 1) beyond, so the
// crossover sits near N ~ 64k on a 132-SM GPU.
#include "common/block_primitives.cuh"
#include "common/device_info.hpp"
#include "common/cuda_check.hpp"
#include "interaction.cuh"
#include "nbody/gpu.hpp"

namespace nbody {
namespace {
// EXERCISE BEGIN

constexpr int kBlock = 256;

template <int S>
__global__ void __launch_bounds__(kBlock)
    warp_split_kernel(const float4* __restrict__ pos, int n, float4* __restrict__ acc, int i_begin, int count,
                      float eps2, float G) {
  __shared__ float4 tile[kBlock];
  const int group_lane = threadIdx.x % S;
  const int t = (blockIdx.x * kBlock + threadIdx.x) / S;  // the body of this group
  const float4 pi = t < count ? pos[i_begin + t] : make_float4(0.f, 0.f, 0.f, 0.f);
  float ax = 0.f, ay = 0.f, az = 0.f;
  for (int base = 0; base < n; base += kBlock) {
    const int j = base + threadIdx.x;
    tile[threadIdx.x] = j < n ? pos[j] : make_float4(0.f, 0.f, 0.f, 0.f);
    __syncthreads();
#pragma unroll 8
    for (int k = group_lane; k < kBlock; k += S) interact(tile[k], pi.x, pi.y, pi.z, eps2, ax, ay, az);
    __syncthreads();
  }
  float a[3] = {ax, ay, az};
  common::warp_reduce_n<S>(a, common::Sum{});  // groups are aligned, so the butterfly stays inside
  ax = a[0];
  ay = a[1];
  az = a[2];
  if (group_lane == 0 && t < count) acc[t] = make_float4(G * ax, G * ay, G * az, 0.f);
}

template <int S>
void launch(const float4* pos, int n, float4* acc, int i_begin, int count, float eps2, float G, cudaStream_t s) {
  const long long threads = static_cast<long long>(count) * S;
  warp_split_kernel<S>
      <<<static_cast<unsigned>((threads + kBlock - 1) / kBlock), kBlock, 0, s>>>(pos, n, acc, i_begin, count, eps2, G);
  CUDA_CHECK_LAST();
}

int resident_threads() {
  int dev = 0, per_sm = 0;
  const int sms = common::current_sm_count();
  CUDA_CHECK(cudaGetDevice(&dev));
  CUDA_CHECK(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, dev));
  return sms * per_sm;
}

// EXERCISE END
}  // namespace

int warp_split_group(int n) {
  // EXERCISE BEGIN body
  static const int resident = resident_threads();
  int s = 1;
  while (s < 32 && static_cast<long long>(n) * s * 2 <= resident) s *= 2;
  return s;
  // EXERCISE END
}

void accel_warp_split(const float4* pos, int n, float4* acc, int i_begin, int count, float eps2, float G,
                      cudaStream_t s) {
  if (count <= 0) return;
  // EXERCISE BEGIN body
  switch (warp_split_group(count)) {
    case 1: return launch<1>(pos, n, acc, i_begin, count, eps2, G, s);
    case 2: return launch<2>(pos, n, acc, i_begin, count, eps2, G, s);
    case 4: return launch<4>(pos, n, acc, i_begin, count, eps2, G, s);
    case 8: return launch<8>(pos, n, acc, i_begin, count, eps2, G, s);
    case 16: return launch<16>(pos, n, acc, i_begin, count, eps2, G, s);
    default: return launch<32>(pos, n, acc, i_begin, count, eps2, G, s);
  }
  // EXERCISE END
}

}  // namespace nbody
