// v6_parallel_line_search — the published design's K4: the line search evaluates several step
// lengths in one pass instead of one More-Thuente trial per pass. Every Newton iteration asks for
// kMaxCandidates steps along the Newton direction (PCL's first trial, its halvings, and a longer
// step where the first is below the maximum); one evaluation launch covers them all (gridDim.y =
// candidates), and the step kernel takes PCL's first trial whenever PCL's own test (sufficient
// decrease + curvature) accepts it, else the longest accepted step, else the best score. Each
// iteration is then exactly one pass: no extra trials, no separate Hessian pass. Driven like v5
// (a conditional WHILE graph).
// Predicted: where PCL accepts its first trial (most iterations near convergence) the path is
// PCL's; where it needed extra trials (k passes) this needs one, at the price of a pass whose
// pair work is 4x larger. The pass is latency-bound (a few us of arithmetic in ~15-20 us), so it
// should cost ~1.3x a single-candidate pass, and win only where extra trials are common; on
// room_tutorial (18 iterations in ~22 passes) the saving is ~4 passes against ~30% more per pass:
// about even. Iterations may differ from PCL's by a few where a different step is taken.
#include "gpu_kernels.cuh"
#include "ndt_graph/registry_detail.hpp"

namespace ndt {
namespace gpu {
namespace {

class ParallelLineSearchRunner : public DeviceRunner {
 public:
  // The candidates per pass come from the problem (the registry entry's line_search_candidates).
  void prepare(const Problem& p) override {
    const int k = p.params.line_search_candidates;
    a_.prepare(p, k);
    common::build_device_while_graph(
        graph_, a_.stream.get(), [&](cudaStream_t s, cudaGraphConditionalHandle) { a_.upload_source_and_init(s); },
        [&, k](cudaStream_t s, cudaGraphConditionalHandle h) {
          launch_eval(a_.view, a_.xyz.get(), a_.slot.get(), a_.state.get(), a_.d_cfg.get(), a_.partials.get(),
                      a_.clock.get(), a_.blocks, 1, s, k);
          launch_step_conditional(a_.partials.get(), a_.blocks, a_.state.get(), a_.d_cfg.get(), a_.trace.get(),
                                  a_.clock.get(), h, s, k);
        });
  }
  void run() override {
    cudaStream_t s = a_.stream.get();
    graph_.launch(s);
    a_.download(s);
    CUDA_CHECK(cudaStreamSynchronize(s));
  }

 private:
  common::GraphExec graph_;
};

}  // namespace
}  // namespace gpu

std::unique_ptr<Runner> make_v6_parallel_line_search() { return std::make_unique<gpu::ParallelLineSearchRunner>(); }

}  // namespace ndt
