// v1 naive port: one thread per body, the CPU loop as it is, every position read from global
// memory (through L1), 1.0f / sqrtf as written. Prediction: the N^2 loads mostly hit L1/L2, so it
// runs at a fraction of the FP32 rate: the precise sqrt and divide alone cost ~20 instructions
// per interaction against ~13 for the whole tuned interaction. Expect ~0.3-0.5e12 interactions/s.
#include "common/cuda_check.hpp"
#include "nbody/gpu.hpp"

namespace nbody {
namespace {
// EXERCISE BEGIN

__global__ void naive_kernel(const float4* pos, int n, float4* acc, int i_begin, int count, float eps2, float G) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= count) return;
  const float4 pi = pos[i_begin + t];
  float ax = 0.f, ay = 0.f, az = 0.f;
  for (int j = 0; j < n; ++j) {
    const float4 pj = pos[j];
    const float dx = pj.x - pi.x, dy = pj.y - pi.y, dz = pj.z - pi.z;
    const float r2 = dx * dx + dy * dy + dz * dz + eps2;
    const float inv = 1.0f / sqrtf(r2);
    const float s = pj.w * inv * inv * inv;
    ax += dx * s;
    ay += dy * s;
    az += dz * s;
  }
  acc[t] = make_float4(G * ax, G * ay, G * az, 0.f);
}

// EXERCISE END
}  // namespace

void accel_naive(const float4* pos, int n, float4* acc, int i_begin, int count, float eps2, float G, cudaStream_t s) {
  if (count <= 0) return;
  // EXERCISE BEGIN body
  naive_kernel<<<(count + 255) / 256, 256, 0, s>>>(pos, n, acc, i_begin, count, eps2, G);
  CUDA_CHECK_LAST();
  // EXERCISE END
}

}  // namespace nbody
