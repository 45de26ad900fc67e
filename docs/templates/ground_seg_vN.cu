// vN <name> (template): <the one idea this step adds>. Prediction: <the frame time and why>.
// Copy to ground_seg/src/vN_<name>.cu; declare segment_gpu_template in
// ground_seg/include/ground_seg/gpu.hpp; add its registry line to
// ground_seg/include/ground_seg/registry.hpp (docs/adding_a_version.md). gpu_common.cuh has the
// pieces every GPU version shares (the grid, cell_index, the cell classification, download).
#include "common/cuda_check.hpp"
#include "common/exercise.hpp"
#include "gpu_common.cuh"
#include "ground_seg/gpu.hpp"

namespace ground_seg {

Result segment_gpu_template(const common::PointCloud& pc, const Params& p, Outputs out) {
  (void)pc, (void)p, (void)out;
  COURSE_NOT_IMPLEMENTED();  // per-cell statistics, classification, point labels: see the CPU reference
}

}  // namespace ground_seg
