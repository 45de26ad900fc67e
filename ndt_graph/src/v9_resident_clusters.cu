// v9_resident_clusters — v3's persistent kernel with one barrier per evaluation instead of two,
// and no block that the others wait for. The grid is made of thread-block clusters (Hopper: 8
// blocks, or 4 or 2, scheduled together on one GPC, each able to read the others' shared memory). After its
// share of an evaluation, every block leaves its 30 sums in its own shared memory; the cluster
// syncs (a hardware barrier), its first block adds its blocks' sums through distributed shared
// memory and writes one partial per cluster, and then arrives at the grid-wide barrier (one
// atomic per cluster, not per block). Past the barrier every block adds the clusters' partials in
// the same fixed order and advances its own copy of the solver in shared memory: the same sums
// and the same code give the same next request in every block, so no block broadcasts the state
// and there is no second barrier. The state lives in shared memory for the whole alignment;
// block 0 writes the trace and, at the end, the state.
// Predicted (H100, room_tutorial, against v8's cost model of 18.3 us per evaluation): the time
// outside the kernels (4.9 us) and the state copies (0.4 us) go; the reduction reads ~50 cluster
// partials instead of ~400 block partials (2.2 -> ~0.8 us); the cluster sync and the one barrier
// add ~1.5 us; the evaluation and the solve stay (7.5 and 3.4 us): ~13 us per evaluation, about
// 0.28 ms per alignment.
// Measured (H100, room_tutorial, 21 evaluations): 0.363 ms against v8's 0.392, 17.3 us per
// evaluation. Thread 0 of block 0, global timer, per evaluation: evaluation 5.7, cluster sync 0.8,
// cluster sum and arrival 1.0, barrier 2.5, reduction 3.0, solve 3.3 us. The miss: one block per
// chunk of points needs 389 blocks there, clusters of 8 or 4 fit only 360 or 384 at once, so the
// grid takes clusters of 2; then 195 clusters arrive on one counter (the atomics serialise: the
// barrier) and 390 blocks read the same partials at once (the same L2 lines: the reduction).
// Clusters of 8 (H200, before the two-level sum): the evaluation 8.6 us (29 blocks with two
// chunks), the barrier 1.0, the reduction 1.7. 4 blocks per SM (128 registers, so 8-clusters
// give every chunk a block): 0.410 ms, the solver spilled. Next: a tree of arrival counters, and
// the clusters' partials summed once and broadcast instead of read by every block.
#include <cooperative_groups.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "common/device_info.hpp"
#include "gpu_kernels.cuh"
#include "ndt_graph/registry_detail.hpp"

namespace ndt {
namespace gpu {
namespace {

// Cluster sizes tried, largest first (portable ones: every sm_90 GPU schedules them): the grid
// takes the largest whose resident clusters give every chunk of points a block of its own (or,
// when none does, the most blocks). Measured (room_tutorial, 389 chunks): clusters of 8 fit 45 at
// once (360 blocks: 29 blocks evaluate two chunks, 8.6 against 6.2 us per evaluation on the H200).
constexpr int kClusterSizes[] = {8, 4, 2};

// EXERCISE BEGIN
// The solver, one thread's call: not inlined into the kernel, so its registers are not the
// evaluation's (inlined, the kernel spilled 8.9 KB at 4 blocks per SM).
__device__ __noinline__ void advance(SolverState& st, const SolverConfig* cfg, const double* sums, TraceRow* trace) {
  const SolverConfig c = *cfg;
  solver_advance(st, c, sums, true, trace);
}

// Block b's 30 sums are added into its cluster's partial (blockIdx / cluster size); the partials of
// evaluation k sit in half k % 2 of `cluster_sums` (a block still reading evaluation k's cannot
// meet a block writing evaluation k + 1's: that one has passed barrier k + 1, which needs this
// block's cluster to have arrived after its reads). `arrived` counts the clusters that arrived,
// over the whole run (zeroed before the launch): barrier k waits for (k + 1) x clusters.
__global__ void __launch_bounds__(kBlock, 4)
    resident_kernel(MapView m, const float* xyz, const AlignmentSlot* slot, SolverState* state,
                    const SolverConfig* cfg, double* cluster_sums, unsigned* arrived, TraceRow* trace) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900  // below sm_90 the registry never runs it (needs sm_90)
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  __shared__ EvalShared sh;
  __shared__ StepShared step;
  __shared__ double mine[kSums], share[kSums];  // read by the cluster's other blocks
  const int tid = threadIdx.x;
  const unsigned size = cluster.num_blocks(), clusters = gridDim.x / size, id = blockIdx.x / size;
  block_copy(step.st, *state);
  __syncthreads();
  unsigned target = 0;
  for (int k = 0; !solver_done(step.st); ++k) {
    double* sums = cluster_sums + static_cast<std::size_t>(k & 1) * clusters * kSums;
    eval_block<4>(m, xyz, *slot, step.st.req, *cfg, blockIdx.x, gridDim.x, mine, sh);
    cluster.sync();  // every block's sums are in its shared memory
    if (cluster.block_rank() == 0) {
      if (tid < kSums) {
        double t = 0;
        for (unsigned r = 0; r < size; ++r) t += cluster.map_shared_rank(mine, r)[tid];
        sums[id * kSums + tid] = t;
      }
      __syncthreads();
      if (tid == 0) {
        __threadfence();  // the partial before the arrival, for every block that sees the count
        atomicAdd(arrived, 1u);
      }
    }
    target += clusters;
    if (tid == 0) {
      while (*const_cast<volatile unsigned*>(arrived) < target) {
      }
      __threadfence();
    }
    __syncthreads();
    // The clusters' partials, added in two levels, in the same order in every cluster: block
    // rank r adds clusters r, r + size, ... (a size-th of the loads), the cluster syncs, and every
    // block adds the ranks' sums in rank order through distributed shared memory.
    const unsigned rank = cluster.block_rank();
    reduce_partials(sums + rank * kSums, static_cast<int>((clusters + size - 1 - rank) / size), step,
                    static_cast<int>(size) * kSums);
    if (tid < kSums) share[tid] = step.sums[tid];
    cluster.sync();
    if (tid < kSums) {
      double t = 0;
      for (unsigned r = 0; r < size; ++r) t += cluster.map_shared_rank(share, r)[tid];
      step.sums[tid] = t;
    }
    __syncthreads();
    if (tid == 0) advance(step.st, cfg, step.sums, blockIdx.x == 0 ? trace : nullptr);
    __syncthreads();
  }
  if (blockIdx.x == 0) block_copy(*state, step.st);
  cluster.sync();  // no block leaves while its cluster might still read its shared memory
#endif
}
// EXERCISE END

// The launch: `clusters` clusters of `size` blocks, cooperative (all resident at once, or it fails).
cudaError_t launch_resident(int clusters, int size, cudaStream_t s, MapView m, const float* xyz, const AlignmentSlot* slot,
                            SolverState* state, const SolverConfig* cfg, double* cluster_sums, unsigned* arrived,
                            TraceRow* trace) {
  // EXERCISE BEGIN body unused(clusters, size, s, m, xyz, slot, state, cfg, cluster_sums, arrived, trace)
  cudaLaunchConfig_t c = {};
  c.gridDim = dim3(static_cast<unsigned>(clusters * size));
  c.blockDim = dim3(kBlock);
  c.stream = s;
  cudaLaunchAttribute attr[2];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = static_cast<unsigned>(size);
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  attr[1].id = cudaLaunchAttributeCooperative;
  attr[1].val.cooperative = 1;
  c.attrs = attr;
  c.numAttrs = 2;
  return cudaLaunchKernelEx(&c, resident_kernel, m, xyz, slot, state, cfg, cluster_sums, arrived, trace);
  // EXERCISE END
}

// The most clusters of `size` blocks of resident_kernel that fit on this GPU at once.
int max_resident_clusters(int size) {
  // EXERCISE BEGIN body unused(size)
  cudaLaunchConfig_t c = {};
  c.gridDim = dim3(static_cast<unsigned>(size));
  c.blockDim = dim3(kBlock);
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = static_cast<unsigned>(size);
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  c.attrs = attr;
  c.numAttrs = 1;
  int clusters = 0;
  CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, resident_kernel, &c));
  return clusters;
  // EXERCISE END
}

class ResidentRunner : public DeviceRunner {
 public:
  void prepare(const Problem& p) override {
    a_.prepare(p);
    // EXERCISE BEGIN body
    const int per_chunk = points_per_chunk(cells_per_point(p.params.search));
    const long long chunks = (static_cast<long long>(p.source->size()) + per_chunk - 1) / per_chunk;
    clusters_ = 0;
    for (int size : kClusterSizes) {
      const int fit = max_resident_clusters(size);
      // no more clusters than the evaluation has chunks of points for
      const int use = static_cast<int>(std::min<long long>(fit, (chunks + size - 1) / size));
      if (use * size > clusters_ * size_) clusters_ = use, size_ = size;
      if (static_cast<long long>(use) * size >= chunks) break;
    }
    if (clusters_ < 1)
      throw std::runtime_error("v9_resident_clusters: no thread-block cluster fits on this GPU "
                               "(cudaOccupancyMaxActiveClusters)");
    cluster_sums_.resize(2 * static_cast<std::size_t>(clusters_) * kSums);
    arrived_.resize(1);
    // EXERCISE END
  }
  void enqueue() override {
    // EXERCISE BEGIN body
    cudaStream_t s = a_.stream.get();
    a_.upload_source_and_init(s);
    CUDA_CHECK(cudaMemsetAsync(arrived_.get(), 0, sizeof(unsigned), s));
    start_.record(s);
    const cudaError_t e = launch_resident(clusters_, size_, s, a_.view, a_.xyz.get(), a_.slot.get(), a_.state.get(),
                                          a_.d_cfg.get(), cluster_sums_.get(), arrived_.get(), a_.trace.get());
    if (e == cudaErrorCooperativeLaunchTooLarge) {
      (void)cudaGetLastError();
      throw std::runtime_error("v9_resident_clusters: " + std::to_string(clusters_) + " clusters of " +
                               std::to_string(size_) + " blocks cannot be resident at once on this GPU (at most " +
                               std::to_string(max_resident_clusters(size_)) + "): cudaErrorCooperativeLaunchTooLarge");
    }
    CUDA_CHECK(e);
    stop_.record(s);
    a_.download(s);
    // EXERCISE END
  }
  double kernel_ms() const override { return stop_.since(start_); }
  // One kernel: its evaluation, reduction and solve have no clock of their own.
  KernelSplit kernel_split() const override { return {}; }

 private:
  int clusters_ = 0, size_ = 0;  // clusters of size_ blocks
  common::DeviceBuffer<double> cluster_sums_;
  common::DeviceBuffer<unsigned> arrived_;
  common::Event start_, stop_;
};

}  // namespace
}  // namespace gpu

std::unique_ptr<Runner> make_v9_resident_clusters() { return std::make_unique<gpu::ResidentRunner>(); }

}  // namespace ndt
