// v4_graph_batch — the published design: the evaluation and step kernels of 8 evaluations
// unrolled into one CUDA graph (plus the 4-byte done-flag copy), launched until the flag says
// done; evaluations after convergence find the state done and return at once.
// Predicted: a graph launch amortises the CPU launch cost and the host sync over 8 evaluations;
// inside a graph consecutive kernels start ~1-2 us apart, so ~3-4 us per evaluation plus
// ~10 us per graph (launch + sync) / 8, and at most 7 no-op evaluations at the end.
#include <cstddef>

#include "gpu_kernels.cuh"
#include "ndt_graph/registry_detail.hpp"

namespace ndt {
namespace gpu {
namespace {

constexpr int kUnrolled = 8;

class GraphBatchRunner : public DeviceRunner {
 public:
  void prepare(const Problem& p) override {
    a_.prepare(p);
    flag_.resize(1);
    graph_.capture(a_.stream.get(), [&](cudaStream_t s) {
      for (int k = 0; k < kUnrolled; ++k) {
        launch_eval(a_.view, a_.xyz.get(), a_.slot.get(), a_.state.get(), a_.d_cfg.get(), a_.partials.get(),
                    a_.clock.get(), a_.blocks, 1, s);
        launch_step(a_.partials.get(), a_.blocks, a_.state.get(), a_.d_cfg.get(), a_.trace.get(), 0, a_.clock.get(), 1, s);
      }
      CUDA_CHECK(cudaMemcpyAsync(flag_.get(), reinterpret_cast<const char*>(a_.state.get()) + offsetof(SolverState, phase),
                                 sizeof(int), cudaMemcpyDeviceToHost, s));
    });
  }
  void run() override {
    cudaStream_t s = a_.stream.get();
    a_.upload_source_and_init(s);
    do {
      graph_.launch(s);
      CUDA_CHECK(cudaStreamSynchronize(s));
    } while (flag_[0] != static_cast<int>(Phase::done));
    a_.download(s);
    CUDA_CHECK(cudaStreamSynchronize(s));
  }

 private:
  common::PinnedBuffer<int> flag_;
  common::GraphExec graph_;
};

}  // namespace
}  // namespace gpu

std::unique_ptr<Runner> make_v4_graph_batch() { return std::make_unique<gpu::GraphBatchRunner>(); }

}  // namespace ndt
