// v5_graph_while — the loop ends on the device: the whole alignment is one graph (source
// upload, state init, then a conditional WHILE node whose body is the evaluation + step kernels;
// the step kernel clears the loop condition when the solver is done). One launch and one host
// sync per alignment, no wasted evaluations.
// Predicted: per evaluation only the device-side gaps between two kernel nodes (~2 x 1.5 us) plus
// the conditional node's re-launch of its body (~2 us): ~5-6 us, about v4's without its no-op tail.
#include "gpu_kernels.cuh"
#include "ndt_graph/registry_detail.hpp"

namespace ndt {
namespace gpu {
namespace {

class GraphWhileRunner : public DeviceRunner {
 public:
  // One pass carries p.params.line_search_candidates evaluations (1 here; v6's registry entry
  // asks for its parallel line search through the same runner).
  void prepare(const Problem& p) override {
    const int k = p.params.line_search_candidates;
    a_.prepare(p, k);
    // EXERCISE BEGIN body
    common::build_device_while_graph(
        graph_, a_.stream.get(), [&](cudaStream_t s, cudaGraphConditionalHandle) { a_.upload_source_and_init(s); },
        [&, k](cudaStream_t s, cudaGraphConditionalHandle h) {
          launch_eval(a_.view, a_.xyz.get(), a_.slot.get(), a_.state.get(), a_.d_cfg.get(), a_.partials.get(),
                      a_.clock.get(), a_.blocks, 1, s, k);
          launch_step_conditional(a_.partials.get(), a_.blocks, a_.state.get(), a_.d_cfg.get(), a_.trace.get(),
                                  a_.clock.get(), h, s, k);
        });
    // EXERCISE END
  }
  void enqueue() override {
    // EXERCISE BEGIN body
    cudaStream_t s = a_.stream.get();
    graph_.launch(s);
    a_.download(s);
    // EXERCISE END
  }

 private:
  common::GraphExec graph_;
};

}  // namespace
}  // namespace gpu

std::unique_ptr<Runner> make_v5_graph_while() { return std::make_unique<gpu::GraphWhileRunner>(); }

}  // namespace ndt
