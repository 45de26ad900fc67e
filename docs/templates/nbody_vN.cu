// vN <name> (template): <the one idea this step adds over the best version so far>.
// Prediction: <instructions or bytes per interaction, the expected interactions/s and why>.
// Copy to nbody/src/vN_<name>.cu; declare accel_<name> in nbody/include/nbody/gpu.hpp next to the
// other launchers; add its registry line to nbody/src/registry.cpp (docs/adding_a_version.md).
#include "common/cuda_check.hpp"
#include "common/exercise.hpp"
#include "nbody/gpu.hpp"

namespace nbody {
namespace {

// your kernel: the accelerations of bodies [i_begin, i_begin + count) from all n positions
// (pos[j].w is the mass); acc[t] = G * sum_j m_j (p_j - p_i) / (|p_j - p_i|^2 + eps2)^(3/2)

}  // namespace

void accel_template(const float4* pos, int n, float4* acc, int i_begin, int count, float eps2, float G,
                    cudaStream_t s) {
  if (count <= 0) return;
  (void)pos, (void)n, (void)acc, (void)i_begin, (void)eps2, (void)G, (void)s;
  COURSE_NOT_IMPLEMENTED();  // launch your kernel on stream s, then CUDA_CHECK_LAST()
}

}  // namespace nbody
