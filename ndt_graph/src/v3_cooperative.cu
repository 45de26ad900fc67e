// v3_cooperative — one persistent cooperative kernel runs the whole alignment: every block
// evaluates its share of the points, grid.sync(), block 0 reduces and advances the solver,
// grid.sync(), repeat until done. One launch, no host involvement; the grid is sized with the
// occupancy API because a cooperative launch fails (cudaErrorCooperativeLaunchTooLarge) when its
// blocks cannot all be resident at once — e.g. the same grid on a 16-SM Jetson Orin.
// Predicted: a grid-wide barrier costs ~1-3 us growing with the block count; 2 per evaluation,
// so ~4-6 us per evaluation with ~100 blocks — close to the graph versions, and it holds the
// whole GPU while it spins.
#include <cooperative_groups.h>

#include "common/device_info.hpp"
#include "gpu_kernels.cuh"
#include "ndt_graph/registry_detail.hpp"

namespace ndt {
namespace gpu {
namespace {

// EXERCISE BEGIN
__global__ void __launch_bounds__(kBlock)
    cooperative_kernel(MapView m, const float* xyz, const AlignmentSlot* slot, SolverState* state,
                       const SolverConfig* cfg, double* partials, TraceRow* trace) {
  namespace cg = cooperative_groups;
  cg::grid_group grid = cg::this_grid();
  __shared__ EvalShared sh;
  __shared__ StepShared step;
  while (!solver_done(*state)) {
    eval_block(m, xyz, *slot, state->req, *cfg, blockIdx.x, gridDim.x, partials + blockIdx.x * kSums, sh);
    grid.sync();
    if (blockIdx.x == 0) step_block(partials, gridDim.x, *state, *cfg, trace, step);
    grid.sync();
  }
}
// EXERCISE END

int max_cooperative_blocks() {
  // EXERCISE BEGIN body
  int per_sm = 0;
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, cooperative_kernel, kBlock, 0));
  return per_sm * common::current_sm_count();
  // EXERCISE END
}

class CooperativeRunner : public DeviceRunner {
 public:
  explicit CooperativeRunner(int forced_blocks) : forced_blocks_(forced_blocks) {}
  void prepare(const Problem& p) override {
    a_.prepare(p);
    // EXERCISE BEGIN body
    int coop = 0, dev = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
    if (!coop) throw std::runtime_error("v3_cooperative: this GPU does not support cooperative launches");
    blocks_ = forced_blocks_ > 0 ? forced_blocks_ : std::min(a_.blocks, max_cooperative_blocks());
    a_.partials.resize(static_cast<std::size_t>(blocks_) * kSums);
    // EXERCISE END
  }
  void enqueue() override {
    // EXERCISE BEGIN body
    cudaStream_t s = a_.stream.get();
    a_.upload_source_and_init(s);
    start_.record(s);
    MapView m = a_.view;
    const float* xyz = a_.xyz.get();
    const AlignmentSlot* slot = a_.slot.get();
    SolverState* state = a_.state.get();
    const SolverConfig* cfg = a_.d_cfg.get();
    double* partials = a_.partials.get();
    TraceRow* trace = a_.trace.get();
    void* args[] = {&m, &xyz, &slot, &state, &cfg, &partials, &trace};
    const cudaError_t e =
        cudaLaunchCooperativeKernel(reinterpret_cast<void*>(cooperative_kernel), blocks_, kBlock, args, 0, s);
    if (e == cudaErrorCooperativeLaunchTooLarge) {
      (void)cudaGetLastError();
      throw std::runtime_error("v3_cooperative: a cooperative grid of " + std::to_string(blocks_) + " blocks of " +
                               std::to_string(kBlock) + " threads cannot be resident at once on this GPU (at most " +
                               std::to_string(max_cooperative_blocks()) +
                               "): cudaErrorCooperativeLaunchTooLarge. The graph versions have no such limit.");
    }
    CUDA_CHECK(e);
    stop_.record(s);
    a_.download(s);
    // EXERCISE END
  }
  double kernel_ms() const override { return stop_.since(start_); }
  // One kernel: its evaluation and step parts have no clock of their own (kernel_ms is the whole).
  KernelSplit kernel_split() const override { return {}; }

 private:
  int forced_blocks_ = 0, blocks_ = 0;
  common::Event start_, stop_;
};

}  // namespace
}  // namespace gpu

std::unique_ptr<Runner> make_v3_cooperative() { return std::make_unique<gpu::CooperativeRunner>(0); }
std::unique_ptr<Runner> make_v3_cooperative_oversized() {
  return std::make_unique<gpu::CooperativeRunner>(gpu::max_cooperative_blocks() + 1);
}
int v3_cooperative_resident_blocks() { return gpu::max_cooperative_blocks(); }

}  // namespace ndt
