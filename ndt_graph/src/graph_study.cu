// The GPU side of --graph-study: this GPU's limits and the evaluation kernel's resources, the
// layout of an evaluation, two latency micro-benchmarks (a dependent L2 load, one thread's Newton
// step arithmetic), and v4's graph built and changed every way the study times.
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

// The live graph and the staged one are owned here as raw handles (the node API and the updates
// need them): the staged graph until it is instantiated or replaced, the live graph for as long
// as its executable lives (its node handles are what cudaGraphExec*SetParams name).
struct GraphBuilds::Impl {
  int unrolled;
  // One device state per problem, kept: every scan has its own buffers, so a graph left pointing
  // at the other scan's would align that one, and the check would see it.
  std::map<const common::PointCloud*, std::unique_ptr<gpu::DeviceAlignment>> states;
  gpu::DeviceAlignment* current = nullptr;
  common::PinnedBuffer<int> flag;
  cudaGraph_t staged = nullptr, live = nullptr;
  std::vector<cudaGraphNode_t> staged_nodes, live_nodes;  // build_explicit's, in order: kernels, then the copy
  cudaGraphExec_t exec = nullptr;

  explicit Impl(int k) : unrolled(k) { flag.resize(1); }
  ~Impl() {
    if (exec) cudaGraphExecDestroy(exec);
    if (live) cudaGraphDestroy(live);
    if (staged) cudaGraphDestroy(staged);
  }
  gpu::DeviceAlignment& a() const {
    if (!current) throw std::logic_error("GraphBuilds: no problem loaded");
    return *current;
  }
  const int* phase() const {
    return reinterpret_cast<const int*>(reinterpret_cast<const char*>(a().state.get()) + offsetof(SolverState, phase));
  }
  // v4's graph for the loaded problem: `unrolled` x (evaluation, step), the done-flag copy after them
  std::vector<gpu::KernelNode> kernels() const {
    const gpu::DeviceAlignment& d = a();
    std::vector<gpu::KernelNode> out;
    for (int k = 0; k < unrolled; ++k) {
      out.push_back(gpu::eval_node(d.view, d.xyz.get(), d.slot.get(), d.state.get(), d.d_cfg.get(), d.partials.get(),
                                   d.clock.get(), d.blocks, 1));
      out.push_back(
          gpu::step_node(d.partials.get(), d.blocks, d.state.get(), d.d_cfg.get(), d.trace.get(), 0, d.clock.get(), 1));
    }
    return out;
  }
  void drop_staged() {
    if (staged) cudaGraphDestroy(staged);
    staged = nullptr;
    staged_nodes.clear();
  }
};

GraphBuilds::GraphBuilds(int unrolled) : impl_(std::make_unique<Impl>(unrolled)) {
  if (unrolled < 1) throw std::invalid_argument("a graph of " + std::to_string(unrolled) + " evaluations");
}
GraphBuilds::~GraphBuilds() = default;

void GraphBuilds::load(const Problem& p) {
  auto& states = impl_->states;
  auto at = states.find(p.source);
  if (at == states.end()) {
    auto fresh = std::make_unique<gpu::DeviceAlignment>();
    fresh->prepare(p);
    at = states.emplace(p.source, std::move(fresh)).first;
  }
  impl_->current = at->second.get();
}

double GraphBuilds::capture() {
  Impl& m = *impl_;
  m.drop_staged();
  cudaStream_t s = m.a().stream.get();
  const common::WallTimer t;
  cudaGraph_t g = nullptr;
  CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  try {
    for (const gpu::KernelNode& k : m.kernels()) {
      const cudaKernelNodeParams p = k.params();
      CUDA_CHECK(cudaLaunchKernel(p.func, p.gridDim, p.blockDim, p.kernelParams, 0, s));
    }
    CUDA_CHECK(cudaMemcpyAsync(m.flag.get(), m.phase(), sizeof(int), cudaMemcpyDeviceToHost, s));
  } catch (...) {
    cudaStreamEndCapture(s, &g);
    if (g) cudaGraphDestroy(g);
    throw;
  }
  CUDA_CHECK(cudaStreamEndCapture(s, &g));
  const double ms = t.elapsed_ms();
  m.staged = g;
  return ms;
}

double GraphBuilds::build_explicit() {
  Impl& m = *impl_;
  m.drop_staged();
  const common::WallTimer t;
  cudaGraph_t g = nullptr;
  CUDA_CHECK(cudaGraphCreate(&g, 0));
  std::vector<cudaGraphNode_t> nodes;
  try {
    for (const gpu::KernelNode& k : m.kernels()) {
      const cudaKernelNodeParams p = k.params();
      cudaGraphNode_t n = nullptr;
      CUDA_CHECK(cudaGraphAddKernelNode(&n, g, nodes.empty() ? nullptr : &nodes.back(), nodes.empty() ? 0 : 1, &p));
      nodes.push_back(n);
    }
    cudaGraphNode_t copy = nullptr;
    CUDA_CHECK(cudaGraphAddMemcpyNode1D(&copy, g, &nodes.back(), 1, m.flag.get(), m.phase(), sizeof(int),
                                        cudaMemcpyDeviceToHost));
    nodes.push_back(copy);
  } catch (...) {
    cudaGraphDestroy(g);
    throw;
  }
  const double ms = t.elapsed_ms();
  m.staged = g;
  m.staged_nodes = std::move(nodes);
  return ms;
}

double GraphBuilds::instantiate() {
  Impl& m = *impl_;
  if (!m.staged) throw std::logic_error("GraphBuilds::instantiate: no graph staged");
  if (m.exec) CUDA_CHECK(cudaGraphExecDestroy(m.exec));
  m.exec = nullptr;
  const common::WallTimer t;
  CUDA_CHECK(cudaGraphInstantiate(&m.exec, m.staged, 0));
  const double ms = t.elapsed_ms();
  if (m.live) cudaGraphDestroy(m.live);
  m.live = m.staged;
  m.live_nodes = std::move(m.staged_nodes);
  m.staged = nullptr;
  m.staged_nodes.clear();
  return ms;
}

double GraphBuilds::update_from_staged() {
  Impl& m = *impl_;
  if (!m.staged || !m.exec) throw std::logic_error("GraphBuilds::update_from_staged: needs a live and a staged graph");
  cudaGraphExecUpdateResultInfo info{};
  const common::WallTimer t;
  const cudaError_t e = cudaGraphExecUpdate(m.exec, m.staged, &info);
  const double ms = t.elapsed_ms();
  m.drop_staged();
  if (e == cudaErrorGraphExecUpdateFailure) {
    (void)cudaGetLastError();
    throw std::runtime_error("cudaGraphExecUpdate refused the update (cudaGraphExecUpdateResult " +
                             std::to_string(static_cast<int>(info.result)) + ")");
  }
  CUDA_CHECK(e);
  return ms;
}

double GraphBuilds::set_node_params() {
  Impl& m = *impl_;
  const std::size_t kernels = 2 * static_cast<std::size_t>(m.unrolled);
  if (!m.exec || m.live_nodes.size() != kernels + 1)
    throw std::logic_error("GraphBuilds::set_node_params: the live graph is not an explicitly built one");
  const common::WallTimer t;
  const std::vector<gpu::KernelNode> now = m.kernels();
  for (std::size_t k = 0; k < kernels; ++k) {
    const cudaKernelNodeParams p = now[k].params();
    CUDA_CHECK(cudaGraphExecKernelNodeSetParams(m.exec, m.live_nodes[k], &p));
  }
  CUDA_CHECK(cudaGraphExecMemcpyNodeSetParams1D(m.exec, m.live_nodes[kernels], m.flag.get(), m.phase(), sizeof(int),
                                                cudaMemcpyDeviceToHost));
  return t.elapsed_ms();
}

AlignResult GraphBuilds::run() {
  Impl& m = *impl_;
  if (!m.exec) throw std::logic_error("GraphBuilds::run: no live graph");
  gpu::DeviceAlignment& d = m.a();
  cudaStream_t s = d.stream.get();
  // A graph that never says done (a stale flag copy) must not hang the study: no alignment takes
  // more evaluations than the first and, per iteration, a full line search and its Hessian pass.
  const int most_evaluations = 1 + d.max_iter * (2 + detail::kMaxStepIterations);
  const int most_graphs = most_evaluations / m.unrolled + 2;
  d.upload_source_and_init(s);
  m.flag[0] = -1;
  int graphs = 0;
  do {
    if (++graphs > most_graphs)
      throw std::runtime_error("the graph did not finish the alignment in " + std::to_string(most_graphs) +
                               " launches of " + std::to_string(m.unrolled) + " evaluations");
    CUDA_CHECK(cudaGraphLaunch(m.exec, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
  } while (m.flag[0] != static_cast<int>(Phase::done));
  d.download(s);
  CUDA_CHECK(cudaStreamSynchronize(s));
  return d.result();
}

int GraphBuilds::nodes() const {
  Impl& m = *impl_;
  std::size_t n = 0;
  if (m.live) CUDA_CHECK(cudaGraphGetNodes(m.live, nullptr, &n));
  return static_cast<int>(n);
}

int GraphBuilds::blocks() const { return impl_->a().blocks; }

}  // namespace ndt
