// v9 (going further) the mass folded out of the inner loop: star clusters and Plummer spheres give
// every body the same mass m, so sum_j m (r_j - r_i) / r^3 = m * sum_j (r_j - r_i) / r^3 and the
// interaction loses its multiply by m_j: 3 FADD + 3 FFMA + MUFU + 2 FMUL + 3 FFMA = 12 instructions
// instead of 13. A small kernel first checks the masses on the GPU (no host round trip): if every
// body has body 0's mass or none (multi-GPU padding), v8's kernel runs its tiles with weights
// 1 / 0 and multiplies by m once at the end; otherwise it runs v8's loop unchanged.
// Prediction: 13.38 -> 12.38 issue slots per interaction, ~1.08x v8 at the same issue efficiency:
// 2.17e12 interactions/s at 2^16, 2.19e12 at 2^18. Accuracy: the same operations minus a
// multiply, within v8's bounds against float64 (nbody_fold_error also measures the two folds
// that would serve any masses: both lose accuracy to cancellation, see the README).
// The kernel is v8's template with kFoldMass (v8_multi_body.cu); this file picks its shape.
#include "nbody/gpu.hpp"

namespace nbody {

void accel_mass_fold(const float4* pos, int n, float4* acc, int i_begin, int count, float eps2, float G,
                     cudaStream_t s) {
  // EXERCISE BEGIN body
  launch_multi_body_fold(pos, n, acc, i_begin, count, eps2, G, s);
  // EXERCISE END
}

}  // namespace nbody
