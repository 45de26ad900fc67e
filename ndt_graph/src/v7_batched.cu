// v7_batched — many alignments in one graph launch: the alignment index is blockIdx.y of the
// evaluation kernel and blockIdx.x of the step kernel, each alignment keeps its own solver state,
// and a WHILE node loops until every alignment is done (a one-block control kernel clears the
// condition). Used for the multi-hypothesis initial-pose search (one source, many guesses) and for
// a sequence of scans against one map.
// Predicted: the per-evaluation cost is launch-latency bound at ~6 us whether 1 or 64 alignments
// ride in it, until the blocks no longer fit in one wave: with ~8k points (63 blocks of 128) one
// alignment uses half of an H200's 132 SMs, so up to ~30 alignments per wave; 10,000+
// alignments/s on koide_vg02_both-sized problems (~14 evaluations) from a batch of ~64.
#include <cstring>
#include <map>

#include "gpu_kernels.cuh"
#include "ndt_graph/registry_detail.hpp"

namespace ndt {
namespace gpu {
namespace {

class BatchedRunner : public BatchRunner {
 public:
  void prepare(const VoxelMap& map, const std::vector<BatchItem>& items, const NdtParams& p) override {
    p.validate();
    if (items.empty()) throw InputError("batch has no alignments");
    upload_map(map, map_, stream_.get());
    view_ = map_.view(p.search);
    a_ = static_cast<int>(items.size());
    max_iter_ = p.max_iterations;
    // Sources shared between alignments are uploaded once.
    std::map<const common::PointCloud*, int> offset_of;
    std::vector<float> xyz;
    std::vector<AlignmentSlot> slots;
    std::vector<SolverConfig> cfgs;
    std::vector<double> guesses;
    int max_points = 0;
    for (const auto& it : items) {
      if (!it.source || it.source->size() == 0) throw InputError("batch alignment with an empty source");
      auto [pos, fresh] = offset_of.emplace(it.source, static_cast<int>(xyz.size() / 3));
      if (fresh) {
        const auto inter = interleave(*it.source);
        xyz.insert(xyz.end(), inter.begin(), inter.end());
      }
      slots.push_back({pos->second, static_cast<int>(it.source->size())});
      cfgs.push_back(p.solver_config(it.source->size()));
      cfgs.back().fast_solve = 1;
      guesses.insert(guesses.end(), it.guess, it.guess + 6);
      max_points = std::max(max_points, static_cast<int>(it.source->size()));
    }
    blocks_ = eval_blocks_for(max_points, p.search, a_, EvalShape::throughput);
    xyz_.resize(xyz.size());
    h_xyz_.resize(xyz.size());
    std::memcpy(h_xyz_.get(), xyz.data(), xyz.size() * sizeof(float));
    n_xyz_ = xyz.size();
    slots_.resize(a_);
    cfg_.resize(a_);
    guess_.resize(6 * static_cast<std::size_t>(a_));
    state_.resize(a_);
    trace_.resize(static_cast<std::size_t>(a_) * (max_iter_ + 1));
    partials_.resize(static_cast<std::size_t>(a_) * blocks_ * kSums);
    clock_.resize(a_);
    h_state_.resize(a_);
    h_trace_.resize(static_cast<std::size_t>(a_) * (max_iter_ + 1));
    cudaStream_t s = stream_.get();
    CUDA_CHECK(cudaMemcpyAsync(slots_.get(), slots.data(), a_ * sizeof(AlignmentSlot), cudaMemcpyHostToDevice, s));
    CUDA_CHECK(cudaMemcpyAsync(cfg_.get(), cfgs.data(), a_ * sizeof(SolverConfig), cudaMemcpyHostToDevice, s));
    CUDA_CHECK(cudaMemcpyAsync(guess_.get(), guesses.data(), guesses.size() * sizeof(double), cudaMemcpyHostToDevice, s));
    stream_.sync();
    common::build_device_while_graph(
        graph_, s,
        [&](cudaStream_t st, cudaGraphConditionalHandle) {
          CUDA_CHECK(cudaMemcpyAsync(xyz_.get(), h_xyz_.get(), n_xyz_ * sizeof(float), cudaMemcpyHostToDevice, st));
          launch_init(state_.get(), guess_.get(), clock_.get(), a_, st);
        },
        [&](cudaStream_t st, cudaGraphConditionalHandle h) {
          launch_eval(view_, xyz_.get(), slots_.get(), state_.get(), cfg_.get(), partials_.get(), clock_.get(), blocks_,
                      a_, st, 1, EvalShape::throughput);
          launch_step(partials_.get(), blocks_, state_.get(), cfg_.get(), trace_.get(), max_iter_ + 1, clock_.get(), a_, st);
          launch_loop_control(state_.get(), a_, h, st);
        });
  }
  void run() override {
    cudaStream_t s = stream_.get();
    graph_.launch(s);
    CUDA_CHECK(cudaMemcpyAsync(h_state_.get(), state_.get(), a_ * sizeof(SolverState), cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaMemcpyAsync(h_trace_.get(), trace_.get(), h_trace_.size() * sizeof(TraceRow), cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
  }
  std::vector<AlignResult> results() override {
    std::vector<AlignResult> r;
    for (int a = 0; a < a_; ++a)
      r.push_back(result_from_state(h_state_[a], h_trace_.get() + static_cast<std::size_t>(a) * (max_iter_ + 1)));
    return r;
  }

 private:
  DeviceMap map_;
  MapView view_{};
  int a_ = 0, blocks_ = 0, max_iter_ = 0;
  std::size_t n_xyz_ = 0;
  common::DeviceBuffer<float> xyz_;
  common::DeviceBuffer<AlignmentSlot> slots_;
  common::DeviceBuffer<SolverConfig> cfg_;
  common::DeviceBuffer<double> guess_, partials_;
  common::DeviceBuffer<SolverState> state_;
  common::DeviceBuffer<TraceRow> trace_;
  common::DeviceBuffer<KernelClock> clock_;
  common::PinnedBuffer<float> h_xyz_;
  common::PinnedBuffer<SolverState> h_state_;
  common::PinnedBuffer<TraceRow> h_trace_;
  common::Stream stream_;
  common::GraphExec graph_;
};

}  // namespace
}  // namespace gpu

std::unique_ptr<BatchRunner> make_batch_runner() { return std::make_unique<gpu::BatchedRunner>(); }

}  // namespace ndt
