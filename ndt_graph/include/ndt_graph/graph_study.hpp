// What the CUDA-graph plan is about, measured (`ndt_graph --graph-study`, the README's "The
// CUDA-graph plan, measured"): the evaluations one graph launch unrolls, swept; v4's graph built
// by stream capture and by the explicit node API, and changed for a scan of another size; the
// limits each part of an evaluation is measured against; and how many points one cooperative grid
// covers on this GPU and, from their published limits, on others.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "ndt_graph/versions.hpp"

namespace ndt {

// The flags of a default run that --graph-study does not read: common::UsageError naming the first
// one given (--version: each part takes its versions from the registry).
void reject_flags_outside_graph_study(const common::CliOptions& o);

// What a graph of `unrolled` evaluations costs in launches. The host launches the graph, waits and
// reads the done flag until it says done, so an alignment of `evaluations` evaluations takes
// ceil(evaluations / unrolled) graph launches, each one host sync, and launches unrolled x that
// many evaluations: those after convergence find the state done and return at once (no-ops).
// std::invalid_argument for unrolled < 1 or evaluations < 0.
struct UnrollCount {
  int graphs = 0, launched = 0, noop = 0;
};
UnrollCount unroll_count(int evaluations, int unrolled);

// The limits of a GPU that decide how many blocks of a kernel are resident per SM, under
// cudaDeviceProp's names: CUDA's occupancy calculator takes a GpuLimits as it takes a cudaDeviceProp.
struct GpuLimits {
  std::string name;
  int major = 0, minor = 0, multiProcessorCount = 0;
  int maxThreadsPerMultiProcessor = 0, maxThreadsPerBlock = 1024;
  int regsPerMultiprocessor = 65536, regsPerBlock = 65536, warpSize = 32;
  std::size_t sharedMemPerMultiprocessor = 0, sharedMemPerBlock = 48 * 1024, sharedMemPerBlockOptin = 0;
  std::size_t reservedSharedMemPerBlock = 0;
};
// Orin (sm_87, 16 SMs), RTX 4090 (sm_89, 128 SMs) and H100 SXM (sm_90, 132 SMs), from the CUDA
// programming guide's limits per compute capability and each product's SM count: the GPUs the
// plan tabulated, computed here, never measured.
const std::vector<GpuLimits>& published_gpu_limits();

// What one block of a kernel holds: registers per thread, static shared memory.
struct KernelResources {
  int regs_per_thread = 0;
  std::size_t static_smem = 0;
};
struct Residency {
  int blocks_per_sm = 0;
  std::string limited_by;  // "registers", "shared memory", "warps", "blocks" (what the calculator names)
};
// Blocks of `threads` threads resident per SM, by CUDA's own occupancy calculator
// (cuda_occupancy.h, the runtime's arithmetic) fed with `gpu`'s limits: a cooperative grid may
// have blocks_per_sm x sms blocks. std::invalid_argument when the calculator refuses the input.
Residency resident_blocks(const GpuLimits& gpu, const KernelResources& kernel, int threads);

// Microseconds per evaluation of the solve where v1 runs it, on the host: solver_advance alone,
// timed in `replays` replays of the alignment (the evaluations in between computed on every core,
// untimed); the median.
double host_solve_us(const VoxelMap& map, const common::PointCloud& source, const NdtParams& params,
                     const double (&guess)[6], int replays);

// On the GPU (graph_study.cu).
GpuLimits current_gpu_limits();
// The evaluation kernel of one alignment (the latency register budget): its resources, and its
// resident blocks per SM at its own block size by the runtime's occupancy query.
KernelResources eval_kernel_resources();
int eval_kernel_block_threads();
int eval_kernel_blocks_per_sm_runtime();

// How an evaluation of `points` points is laid out (gpu_kernels: eval_blocks_for): blocks in the
// wave, chunks of points_per_chunk points each, and the probe rounds of one chunk (its (point,
// cell) probes, one per thread per round, every round's load in flight at once).
struct EvalLayout {
  int blocks = 0, chunks = 0, points_per_chunk = 0, probe_rounds_per_chunk = 0, cells_per_point = 0;
  int partial_load_batches = 0;  // rounds of loads in which the step reads the blocks' partials
};
EvalLayout eval_layout(int points, Search search);

// Nanoseconds per load of one thread chasing pointers through `bytes` of device memory in a
// random cycle of 128-byte lines, loads cached in L2 only: the latency of one dependent L2 access
// when `bytes` fits in L2.
double dependent_load_ns(std::size_t bytes);
// GB/s at which one block of the step's threads reads a buffer of `bytes` from L2 (resident there:
// the bandwidth from L2 into one SM).
double one_block_read_gbs(std::size_t bytes);
// Microseconds of one thread's Newton-step arithmetic from registers: the pivoted 6x6 solve of
// `hessian` and `gradient` and the float transform of the pose it leads to, the chain repeated
// so each repetition waits for the last.
double one_thread_solve_us(const double (&hessian)[6][6], const double (&gradient)[6], const double (&pose)[6]);

// v4's graph (`unrolled` x the evaluation and step kernels, then the 4-byte done-flag copy) for
// the problem loaded last, built and changed every way the study times. Each call returns its own
// host time in ms; build_* leave a graph staged, instantiate() turns the staged graph into the live
// one, the update_* calls change the live one to the problem loaded since.
// Whether this build holds v4's graph for the study (src/graph_builds.cu): a handout does not (it
// restates an exercise), and there the study's graph-build rows are skipped, saying why.
bool graph_builds_available();
constexpr const char* kGraphBuildsMissing =
    "v4's graph, built and changed by the study, restates the v4_graph_batch exercise: not in the handout";

class GraphBuilds {
 public:
  explicit GraphBuilds(int unrolled);
  ~GraphBuilds();
  GraphBuilds(const GraphBuilds&) = delete;
  GraphBuilds& operator=(const GraphBuilds&) = delete;
  // Uploads the problem into device buffers sized for it (untimed). A problem of another size
  // moves buffers and changes the evaluation's grid: the live graph must then be changed too.
  void load(const Problem& p);
  double capture();         // stream capture of the launches, as v4's prepare does
  double build_explicit();  // cudaGraphAddKernelNode / cudaGraphAddMemcpyNode1D, node by node
  double instantiate();     // the staged graph becomes the live one (the old one destroyed)
  // cudaGraphExecUpdate of the live graph from the staged one (same topology, new parameters).
  // Throws std::runtime_error naming the update result when the driver refuses it.
  double update_from_staged();
  // cudaGraphExecKernelNodeSetParams / cudaGraphExecMemcpyNodeSetParams1D on every node of the
  // live graph; needs the live graph to come from build_explicit (its node handles).
  double set_node_params();
  AlignResult run();  // one alignment with the live graph: upload, init, graphs until done, download
  int nodes() const;
  int blocks() const;  // evaluation blocks of the loaded problem

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ndt
