// v7_batched — many alignments in one graph launch: the alignment index is blockIdx.y of the
// evaluation kernel and blockIdx.x of the step kernel, each alignment keeps its own solver state,
// and a WHILE node loops until every alignment is done (a one-block control kernel clears the
// condition). Used for the multi-hypothesis initial-pose search (one source, many guesses) and for
// a sequence of scans against one map.
// Predicted: the per-evaluation cost is launch-latency bound at ~6 us whether 1 or 64 alignments
// ride in it, until the blocks no longer fit in one wave: with ~8k points (63 blocks of 128) one
// alignment uses half of an H200's 132 SMs, so up to ~30 alignments per wave; 10,000+
// alignments/s on koide_vg02_both-sized problems (~14 evaluations) from a batch of ~64.
#include "gpu_kernels.cuh"
#include "ndt_graph/registry_detail.hpp"

namespace ndt {
namespace gpu {
namespace {

class BatchedRunner : public BatchRunner {
 public:
  void prepare(const BatchProblem& problem) override {
    const VoxelMap& map = *problem.map;
    const std::vector<BatchItem>& items = problem.items;
    const NdtParams& p = problem.params;
    a_.prepare(map, items, p, 1, EvalShape::throughput);
    // EXERCISE BEGIN body
    const int n = a_.alignments;
    common::build_device_while_graph(
        graph_, a_.stream.get(), [&](cudaStream_t st, cudaGraphConditionalHandle) { a_.upload_source_and_init(st); },
        [&, n](cudaStream_t st, cudaGraphConditionalHandle h) {
          launch_eval(a_.view, a_.xyz.get(), a_.slot.get(), a_.state.get(), a_.d_cfg.get(), a_.partials.get(),
                      a_.clock.get(), a_.blocks, n, st, 1, EvalShape::throughput);
          launch_step(a_.partials.get(), a_.blocks, a_.state.get(), a_.d_cfg.get(), a_.trace.get(), a_.max_iter + 1,
                      a_.clock.get(), n, st);
          launch_loop_control(a_.state.get(), n, h, st);
        });
    // EXERCISE END
  }
  void enqueue() override {
    // EXERCISE BEGIN body
    cudaStream_t s = a_.stream.get();
    graph_.launch(s);
    a_.download(s, false);  // a batch reports no kernel split
    // EXERCISE END
  }
  void wait() override { CUDA_CHECK(cudaStreamSynchronize(a_.stream.get())); }
  void reload(const BatchProblem& p) override { a_.reload(*p.map, p.items); }  // the harness's staging
  std::vector<AlignResult> result() override {
    std::vector<AlignResult> r;
    for (int a = 0; a < a_.alignments; ++a) r.push_back(a_.result(a));
    return r;
  }

 private:
  DeviceAlignment a_;
  common::GraphExec graph_;
};

}  // namespace
}  // namespace gpu

std::unique_ptr<BatchRunner> make_batch_runner() { return std::make_unique<gpu::BatchedRunner>(); }

}  // namespace ndt
