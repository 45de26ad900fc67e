// The GPU side of --graph-study: this GPU's limits and the evaluation kernel's resources, the
// layout of an evaluation, two latency micro-benchmarks (a dependent L2 load, one thread's Newton
// step arithmetic). v4's graph built and changed every way the study times is in graph_builds.cu.
#include <cstddef>
#include <map>
#include <numeric>
#include <random>
#include <stdexcept>

#include "common/bench.hpp"
#include "gpu_kernels.cuh"
#include "ndt_graph/graph_study.hpp"

namespace ndt {
namespace {

__global__ void chase_kernel(const unsigned* next, int steps, unsigned long long* ns, unsigned* end) {
  unsigned j = 0;
  for (int s = 0; s < steps; ++s) j = __ldcg(next + j);  // the lines into L2, untimed
  const unsigned long long t0 = gpu::global_ns();
  for (int s = 0; s < steps; ++s) j = __ldcg(next + j);
  const unsigned long long t1 = gpu::global_ns();
  *ns = t1 - t0;
  *end = j;
}

// One block of the step's threads reading `n` doubles from L2 `reps` times (after one pass that
// puts them there), 64 independent loads in flight per thread (128 KB for the block, above the
// bandwidth-latency product of one SM): the time of the timed passes is their bytes over the
// bandwidth from L2 into one SM.
__global__ void one_block_read_kernel(const double* data, int n, int reps, unsigned long long* ns, double* sink) {
  constexpr int kInFlight = 64;
  const int stride = static_cast<int>(blockDim.x);
  double acc = 0;
  unsigned long long t0 = 0;
  for (int r = 0; r <= reps; ++r) {
    __syncthreads();
    if (r == 1) t0 = gpu::global_ns();
    for (int base = threadIdx.x; base < n; base += kInFlight * stride) {
      double v[kInFlight];
#pragma unroll
      for (int u = 0; u < kInFlight; ++u) v[u] = base + u * stride < n ? __ldcg(data + base + u * stride) : 0.0;
#pragma unroll
      for (int u = 0; u < kInFlight; ++u) acc += v[u];
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) *ns = gpu::global_ns() - t0;
  sink[threadIdx.x] = acc;
}

struct NewtonInputs {
  double h[6][6], g[6], p[6];
};

// `reps` Newton-step computations, each from the last one's result: the next b and H take a term
// of the last transform, far below their rounding but unknown to the compiler, so neither the
// elimination of H nor the transform can be hoisted or overlapped.
__global__ void newton_chain_kernel(NewtonInputs in, int warmup, int reps, unsigned long long* ns, float* sink) {
  double H[6][6], b[6];
  for (int i = 0; i < 6; ++i) {
    b[i] = -in.g[i];
    for (int j = 0; j < 6; ++j) H[i][j] = in.h[i][j];
  }
  float last = 0;
  unsigned long long t0 = 0;
  for (int r = 0; r < warmup + reps; ++r) {
    if (r == warmup) t0 = gpu::global_ns();
    double x[6], pose[6];
    common::la::solve_pivoted<6>(H, b, x, 1e-10);
    for (int k = 0; k < 6; ++k) pose[k] = in.p[k] + x[k];
    float T[12];
    float_transform(pose, T);
    last = T[0] + T[5];
    b[0] += 1e-300 * last;
    H[0][0] += 1e-300 * last;
  }
  *ns = gpu::global_ns() - t0;
  *sink = last;
}

}  // namespace

GpuLimits current_gpu_limits() {
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  cudaDeviceProp p{};
  CUDA_CHECK(cudaGetDeviceProperties(&p, dev));
  return {std::string(p.name) + " (sm_" + std::to_string(p.major) + std::to_string(p.minor) + ")",
          p.major,
          p.minor,
          p.multiProcessorCount,
          p.maxThreadsPerMultiProcessor,
          p.maxThreadsPerBlock,
          p.regsPerMultiprocessor,
          p.regsPerBlock,
          p.warpSize,
          p.sharedMemPerMultiprocessor,
          p.sharedMemPerBlock,
          p.sharedMemPerBlockOptin,
          p.reservedSharedMemPerBlock};
}

KernelResources eval_kernel_resources() {
  const cudaFuncAttributes a = gpu::eval_kernel_attributes(gpu::EvalShape::latency);
  return {a.numRegs, a.sharedSizeBytes};
}
int eval_kernel_block_threads() { return gpu::kBlock; }
int eval_kernel_blocks_per_sm_runtime() { return gpu::eval_blocks_per_sm(gpu::EvalShape::latency); }

EvalLayout eval_layout(int points, Search search) {
  if (points < 1) throw std::invalid_argument("an evaluation of " + std::to_string(points) + " points");
  EvalLayout l;
  l.cells_per_point = cells_per_point(search);
  l.points_per_chunk = gpu::points_per_chunk(l.cells_per_point);
  l.chunks = (points + l.points_per_chunk - 1) / l.points_per_chunk;
  l.blocks = gpu::eval_blocks_for(points, search);
  l.probe_rounds_per_chunk = (l.points_per_chunk * l.cells_per_point + gpu::kBlock - 1) / gpu::kBlock;
  const int groups = gpu::partial_groups(kSums, gpu::kStepThreads);
  const int per_thread = (l.blocks + groups - 1) / groups;
  l.partial_load_batches = (per_thread + gpu::kPartialBatch - 1) / gpu::kPartialBatch;
  return l;
}

double dependent_load_ns(std::size_t bytes) {
  constexpr std::size_t kLine = 128 / sizeof(unsigned);  // one load per 128-byte line
  const std::size_t lines = bytes / (kLine * sizeof(unsigned));
  if (lines < 2 || lines * kLine >= (std::size_t{1} << 32))
    throw std::invalid_argument("dependent_load_ns: " + std::to_string(bytes) + " bytes");
  // Sattolo's shuffle: one cycle through every line, in an order no prefetcher follows
  std::vector<unsigned> order(lines);
  std::iota(order.begin(), order.end(), 0u);
  std::mt19937_64 rng(20261121);
  for (std::size_t i = lines - 1; i > 0; --i) std::swap(order[i], order[rng() % i]);
  std::vector<unsigned> next(lines * kLine, 0);
  for (std::size_t i = 0; i < lines; ++i)
    next[order[i] * kLine] = static_cast<unsigned>(order[(i + 1) % lines] * kLine);
  common::DeviceBuffer<unsigned> d_next(next.size()), d_end(1);
  common::DeviceBuffer<unsigned long long> d_ns(1);
  CUDA_CHECK(cudaMemcpy(d_next.get(), next.data(), next.size() * sizeof(unsigned), cudaMemcpyHostToDevice));
  const int steps = static_cast<int>(lines);
  chase_kernel<<<1, 1>>>(d_next.get(), steps, d_ns.get(), d_end.get());
  CUDA_CHECK_LAST();
  unsigned long long ns = 0;
  CUDA_CHECK(cudaMemcpy(&ns, d_ns.get(), sizeof ns, cudaMemcpyDeviceToHost));
  return static_cast<double>(ns) / steps;
}

double one_block_read_gbs(std::size_t bytes) {
  const std::size_t n = bytes / sizeof(double);
  if (n < 1 || n > (std::size_t{1} << 28))
    throw std::invalid_argument("one_block_read_gbs: " + std::to_string(bytes) + " bytes");
  std::vector<double> host(n, 1.0);
  common::DeviceBuffer<double> data(n), sink(gpu::kStepThreads);
  common::DeviceBuffer<unsigned long long> d_ns(1);
  CUDA_CHECK(cudaMemcpy(data.get(), host.data(), n * sizeof(double), cudaMemcpyHostToDevice));
  constexpr int kReps = 20;
  one_block_read_kernel<<<1, gpu::kStepThreads>>>(data.get(), static_cast<int>(n), kReps, d_ns.get(), sink.get());
  CUDA_CHECK_LAST();
  unsigned long long ns = 0;
  CUDA_CHECK(cudaMemcpy(&ns, d_ns.get(), sizeof ns, cudaMemcpyDeviceToHost));
  if (ns == 0) throw std::runtime_error("one_block_read_gbs: the timer did not move");
  return static_cast<double>(kReps) * static_cast<double>(n * sizeof(double)) / static_cast<double>(ns);
}

double one_thread_solve_us(const double (&hessian)[6][6], const double (&gradient)[6], const double (&pose)[6]) {
  NewtonInputs in{};
  for (int i = 0; i < 6; ++i) {
    in.g[i] = gradient[i];
    in.p[i] = pose[i];
    for (int j = 0; j < 6; ++j) in.h[i][j] = hessian[i][j];
  }
  constexpr int kWarmup = 16, kReps = 2000;
  common::DeviceBuffer<unsigned long long> d_ns(1);
  common::DeviceBuffer<float> d_sink(1);
  newton_chain_kernel<<<1, 1>>>(in, kWarmup, kReps, d_ns.get(), d_sink.get());
  CUDA_CHECK_LAST();
  unsigned long long ns = 0;
  CUDA_CHECK(cudaMemcpy(&ns, d_ns.get(), sizeof ns, cudaMemcpyDeviceToHost));
  return static_cast<double>(ns) / kReps / 1e3;
}

}  // namespace ndt
