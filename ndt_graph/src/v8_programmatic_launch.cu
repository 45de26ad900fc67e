// v8_programmatic_launch — v4's graph (8 evaluations unrolled, the host checks the flag between
// graphs) with each kernel a programmatic dependent of the one before it (Hopper's programmatic
// dependent launch): every kernel signals at its start that its successor may be scheduled, so
// the successor's launch and block placement overlap the running kernel, and the successor's
// blocks wait in hardware (griddepcontrol.wait) until that kernel has finished and its writes are
// visible. Nothing else changes: same kernels, same results.
// Predicted (H200, room_tutorial): v4 spends ~6.5 us per iteration outside its kernels, ~2 us of
// it the two kernel-to-kernel gaps of each evaluation (the launch micro-benchmark: ~1.2 us per
// dependent kernel in a graph); hiding most of those, ~1.5-2 us per evaluation, ~35 us per
// alignment below v4. Needs sm_90; below it the launch attribute is not set and v8 is v4.
#include "gpu_kernels.cuh"
#include "ndt_graph/registry_detail.hpp"

namespace ndt {

std::unique_ptr<Runner> make_v8_programmatic_launch() {
  return make_v8_programmatic_launch_unrolled(kGraphBatchUnrolled);
}
std::unique_ptr<Runner> make_v8_programmatic_launch_unrolled(int unrolled) {
  return gpu::make_graph_batch_runner(unrolled, true);
}

}  // namespace ndt
