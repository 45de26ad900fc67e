// The host side of --graph-study: the unroll arithmetic and the cooperative-grid residency on any
// GPU, from its limits, by CUDA's own occupancy calculator (a header of host code: it runs without
// a GPU, so the table for GPUs nobody here has is computed, and tested, on the CI machine).
#include <cuda_occupancy.h>
#include <cuda_runtime_api.h>  // CUDART_VERSION

#include <algorithm>
#include <stdexcept>
#include <utility>
#include <vector>

#include "common/bench.hpp"
#include "ndt_graph/graph_study.hpp"

namespace ndt {

void reject_flags_outside_graph_study(const common::CliOptions& o) {
  for (const char* f : {"launch-bench", "images", "trace-csv", "pose-out", "no-batch"})
    if (o.was_given(f)) throw common::UsageError(std::string("--") + f + " is not read by --graph-study");
  if (!o.versions.empty())
    throw common::UsageError("--version is not read by --graph-study (each part takes its versions from the registry)");
  if (o.fresh_inputs) throw common::UsageError("--fresh-inputs is not read by --graph-study (it times no graded run)");
}

UnrollCount unroll_count(int evaluations, int unrolled) {
  if (unrolled < 1) throw std::invalid_argument("a graph of " + std::to_string(unrolled) + " evaluations");
  if (evaluations < 0) throw std::invalid_argument(std::to_string(evaluations) + " evaluations");
  UnrollCount c;
  c.graphs = (evaluations + unrolled - 1) / unrolled;
  c.launched = c.graphs * unrolled;
  c.noop = c.launched - evaluations;
  return c;
}

double host_solve_us(const VoxelMap& map, const common::PointCloud& source, const NdtParams& params,
                     const double (&guess)[6], int replays) {
  const std::vector<float> xyz = interleave(source);
  std::vector<double> per_evaluation;
  for (int r = 0; r < replays; ++r) {
    double solve_ms = 0;
    const AlignResult res = align_interleaved(map, xyz, params, guess, true, &solve_ms);
    per_evaluation.push_back(1e3 * solve_ms / std::max(1, res.evaluations));
  }
  return common::summarize(per_evaluation).median_ms;
}

const std::vector<GpuLimits>& published_gpu_limits() {
  // {name, cc, SMs, threads/SM, threads/block, registers/SM, registers/block, warp, shared memory
  //  per SM, per block (default, opt-in), reserved per block}. Per compute capability (CUDA C++
  //  Programming Guide, "Technical Specifications per Compute Capability"): 8.7 and 8.9 keep
  //  1,536 threads per SM, 9.0 2,048; shared memory per SM 164 KB (8.7), 100 KB (8.9), 228 KB
  //  (9.0), a block at most 1 KB less, and 1 KB reserved per block from 8.0 on.
  static const std::vector<GpuLimits> limits = {
      {"Jetson AGX Orin (sm_87)", 8, 7, 16, 1536, 1024, 65536, 65536, 32, 164 * 1024, 48 * 1024, 163 * 1024, 1024},
      {"GeForce RTX 4090 (sm_89)", 8, 9, 128, 1536, 1024, 65536, 65536, 32, 100 * 1024, 48 * 1024, 99 * 1024, 1024},
      {"H100 SXM (sm_90)", 9, 0, 132, 2048, 1024, 65536, 65536, 32, 228 * 1024, 48 * 1024, 227 * 1024, 1024},
  };
  return limits;
}

Residency resident_blocks(const GpuLimits& gpu, const KernelResources& kernel, int threads) {
  const cudaOccDeviceProp prop(gpu);
  cudaOccFuncAttributes attr;  // as cudaFuncGetAttributes fills it for a kernel without dynamic shared memory
  attr.maxThreadsPerBlock = gpu.maxThreadsPerBlock;
  attr.numRegs = kernel.regs_per_thread;
  attr.sharedSizeBytes = kernel.static_smem;
  attr.numBlockBarriers = 1;
  const cudaOccDeviceState state;
  cudaOccResult result{};
  const cudaOccError e = cudaOccMaxActiveBlocksPerMultiprocessor(&result, &prop, &attr, &state, threads, 0);
  if (e != CUDA_OCC_SUCCESS)
    throw std::invalid_argument(gpu.name + ": the occupancy calculator refuses " + std::to_string(threads) +
                                " threads of " + std::to_string(kernel.regs_per_thread) + " registers and " +
                                std::to_string(kernel.static_smem) + " B of shared memory (error " +
                                std::to_string(static_cast<int>(e)) + ")");
  Residency r;
  r.blocks_per_sm = result.activeBlocksPerMultiprocessor;
  std::vector<std::pair<unsigned, const char*>> factors = {{OCC_LIMIT_REGISTERS, "registers"},
                                                           {OCC_LIMIT_SHARED_MEMORY, "shared memory"},
                                                           {OCC_LIMIT_WARPS, "warps"},
                                                           {OCC_LIMIT_BLOCKS, "blocks"},
                                                           {OCC_LIMIT_BARRIERS, "barriers"}};
#if CUDART_VERSION >= 13000  // CUDA 13's calculator also names this limit; CUDA 12.4's has no such bit
  factors.push_back({OCC_LIMIT_VIRTUAL_RESOURCES, "virtual resources"});
#endif
  for (const auto& [bit, name] : factors)
    if (result.limitingFactors & bit) r.limited_by += (r.limited_by.empty() ? "" : ", ") + std::string(name);
  return r;
}

}  // namespace ndt
