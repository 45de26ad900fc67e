// The tuned body-body interaction, shared by v4, v6 and v8: softening is the start of the FMA
// chain for r^2, one MUFU.RSQ, three multiplies for m / r^3, three FMAs to accumulate:
// 3 FADD + 3 FFMA + 1 MUFU + 3 FMUL + 3 FFMA = 13 instructions (read in the SASS, see README).
#pragma once
#include <cuda_runtime.h>

namespace nbody {

// kWithMass = false leaves the mass out (s = 1 / r^3, 12 instructions): for tiles of equal masses,
// whose sum is multiplied by the mass once at the end (v8's fold variants).
template <bool kWithMass = true>
__device__ __forceinline__ void interact(float4 pj, float xi, float yi, float zi, float eps2, float& ax, float& ay,
                                         float& az) {
  const float dx = pj.x - xi, dy = pj.y - yi, dz = pj.z - zi;
  const float r2 = fmaf(dz, dz, fmaf(dy, dy, fmaf(dx, dx, eps2)));
  const float inv = rsqrtf(r2);
  const float s = kWithMass ? pj.w * inv * inv * inv : inv * inv * inv;
  ax = fmaf(dx, s, ax);
  ay = fmaf(dy, s, ay);
  az = fmaf(dz, s, az);
}

}  // namespace nbody
