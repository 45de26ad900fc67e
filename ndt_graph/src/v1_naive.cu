// v1_naive — the straight port: one kernel per phase (transform the source, per-point
// derivatives into an n x 30 array, an atomic reduction of that array), then the 30 sums copied
// back and the Newton solve + More-Thuente logic run on the host, which uploads the next trial
// transform: a host round trip (H2D, 3 launches, D2H, sync) for every evaluation.
// Predicted: launch + sync bound, about 4 launches/copies x ~5 us + the sync round trip, so
// 30-40 us per evaluation; the arithmetic (~40k pairs x ~400 FLOP) is under 1 us of an H200.
#include <cstring>

#include "gpu_kernels.cuh"
#include "ndt_graph/registry_detail.hpp"

namespace ndt {
namespace gpu {
namespace {

// EXERCISE BEGIN
__global__ void transform_kernel(const float* xyz, int n, const EvalRequest* req, float* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float T[12];
  for (int k = 0; k < 12; ++k) T[k] = req->T[k];
  transform_point(T, xyz[3 * i], xyz[3 * i + 1], xyz[3 * i + 2], out[3 * i], out[3 * i + 1], out[3 * i + 2]);
}

__global__ void derivatives_kernel(MapView m, const float* xyz, const float* moved, int n, const EvalRequest* req,
                                   GaussConstants g, double* per_point) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  AngleDerivatives ad;  // every thread recomputes the angular terms: the naive way
  double pose[6];
  for (int k = 0; k < 6; ++k) pose[k] = req->pose[k];
  angle_derivatives(pose, ad);
  double sums[kSums] = {};
  accumulate_transformed(m, ad, g, true, xyz[3 * i], xyz[3 * i + 1], xyz[3 * i + 2], moved[3 * i], moved[3 * i + 1],
                         moved[3 * i + 2], sums);
  for (int k = 0; k < kSums; ++k) per_point[static_cast<std::size_t>(k) * n + i] = sums[k];
}

__global__ void atomic_reduce_kernel(const double* per_point, int n, double* sums) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  for (int k = 0; k < kSums; ++k) atomicAdd(&sums[k], per_point[static_cast<std::size_t>(k) * n + i]);
}
// EXERCISE END

class NaiveRunner : public Runner {
 public:
  void prepare(const Problem& p) override {
    p.params.validate();
    if (!p.source || p.source->size() == 0) throw InputError("source cloud is empty");
    // EXERCISE BEGIN body
    upload_map(*p.map, map_, stream_.get());
    view_ = map_.view(p.params.search);
    n_ = static_cast<int>(p.source->size());
    cfg_ = p.params.solver_config(p.source->size());
    std::memcpy(guess_, p.guess, sizeof guess_);
    trace_.resize(p.params.max_iterations + 1);
    xyz_host_ = interleave(*p.source);
    xyz_.resize(xyz_host_.size());
    moved_.resize(xyz_host_.size());
    per_point_.resize(static_cast<std::size_t>(n_) * kSums);
    sums_.resize(kSums);
    req_.resize(1);
    // EXERCISE END
  }
  void enqueue() override {  // driven from the host: done when it returns
    // EXERCISE BEGIN body
    cudaStream_t s = stream_.get();
    CUDA_CHECK(
        cudaMemcpyAsync(xyz_.get(), xyz_host_.data(), xyz_host_.size() * sizeof(float), cudaMemcpyHostToDevice, s));
    solver_init(state_, guess_);
    const int grid = (n_ + 255) / 256;
    double sums[kSums];
    while (!solver_done(state_)) {
      CUDA_CHECK(cudaMemcpyAsync(req_.get(), &state_.req, sizeof(EvalRequest), cudaMemcpyHostToDevice, s));
      CUDA_CHECK(cudaMemsetAsync(sums_.get(), 0, kSums * sizeof(double), s));
      transform_kernel<<<grid, 256, 0, s>>>(xyz_.get(), n_, req_.get(), moved_.get());
      CUDA_CHECK_LAST();
      derivatives_kernel<<<grid, 256, 0, s>>>(view_, xyz_.get(), moved_.get(), n_, req_.get(), cfg_.gauss,
                                              per_point_.get());
      CUDA_CHECK_LAST();
      atomic_reduce_kernel<<<grid, 256, 0, s>>>(per_point_.get(), n_, sums_.get());
      CUDA_CHECK_LAST();
      CUDA_CHECK(cudaMemcpyAsync(sums, sums_.get(), sizeof sums, cudaMemcpyDeviceToHost, s));
      CUDA_CHECK(cudaStreamSynchronize(s));
      solver_advance(state_, cfg_, sums, true, trace_.data());
    }
    // EXERCISE END
  }
  AlignResult result() override { return result_from_state(state_, trace_.data()); }
  // --fresh-inputs: the harness rewrites what enqueue reads (the device map, the interleaved
  // source, the guess); the version's own prepare does not see the new input.
  void reload(const Problem& p) override {
    if (3 * p.source->size() != xyz_host_.size())
      throw std::invalid_argument("reload: a source of " + std::to_string(p.source->size()) +
                                  " points replaces one of " + std::to_string(xyz_host_.size() / 3));
    upload_map(*p.map, map_, stream_.get());
    const MapView now = map_.view(p.params.search);
    if (now.voxels != view_.voxels || now.table != view_.table || now.mask != view_.mask)
      throw std::invalid_argument("reload: a map of another shape");
    xyz_host_ = interleave(*p.source);
    std::copy(p.guess, p.guess + 6, guess_);
  }

 private:
  DeviceMap map_;
  MapView view_{};
  SolverConfig cfg_{};
  SolverState state_{};
  double guess_[6] = {};
  int n_ = 0;
  std::vector<TraceRow> trace_;
  std::vector<float> xyz_host_;
  common::DeviceBuffer<float> xyz_, moved_;
  common::DeviceBuffer<double> per_point_, sums_;
  common::DeviceBuffer<EvalRequest> req_;
  common::Stream stream_;
};

}  // namespace
}  // namespace gpu

std::unique_ptr<Runner> make_v1_naive() { return std::make_unique<gpu::NaiveRunner>(); }

}  // namespace ndt
