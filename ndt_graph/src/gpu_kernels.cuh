// The device pieces every GPU version is assembled from: the device copy of the map, the
// evaluation of one block's share of the points (the shared per-point math + the 30-value block
// reduction), the step (reduce the per-block partials in a fixed order, advance the solver state
// machine in one thread), their launchers, and a device clock that measures the kernels' own time.
#pragma once
#include <cuda_runtime.h>

#include "common/block_primitives.cuh"
#include "common/device_buffer.hpp"
#include "common/gpu_resources.hpp"
#include "ndt_graph/versions.hpp"

namespace ndt {
namespace gpu {

constexpr int kBlock = 128;

struct DeviceMap {
  common::DeviceBuffer<Voxel> voxels;
  common::DeviceBuffer<std::uint64_t> keys;
  common::DeviceBuffer<int> slot_voxel;
  std::size_t table_size = 0;
  float resolution = 1.f;
  MapView view(Search s) const;
};
void upload_map(const VoxelMap& map, DeviceMap& d, cudaStream_t s);

// Kernel time, read from %globaltimer: the evaluation's first block start to its last block end,
// plus the step kernel's own span, summed over a run. The gaps between kernels (launch latency,
// host round trips) are what this leaves out.
struct KernelClock {
  unsigned long long eval_start, eval_end;
  double total_ns;
};

// Per-alignment inputs of the device loop (one entry per alignment; a single alignment is a batch
// of one).
struct AlignmentSlot {
  int offset, count;  // its source points in the concatenated xyz array
};

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// One block's share of an evaluation of alignment `s`: grid-stride over its points, the 30 sums
// reduced over the block, written by threads 0..29 to `partial` (30 doubles).
__device__ __forceinline__ void eval_block(const MapView& m, const float* xyz, const AlignmentSlot& slot,
                                           const SolverState& s, const SolverConfig& c, int block, int nblocks,
                                           double* partial, double* red_smem, AngleDerivatives* ad, float* T) {
  if (threadIdx.x == 0) angle_derivatives(s.req.pose, *ad);
  if (threadIdx.x < 12) T[threadIdx.x] = s.req.T[threadIdx.x];
  __syncthreads();
  double sums[kSums];
#pragma unroll
  for (int k = 0; k < kSums; ++k) sums[k] = 0;
  float Tl[12];
#pragma unroll
  for (int k = 0; k < 12; ++k) Tl[k] = T[k];
  // One thread per (point, candidate cell): 27x the threads of one per point, so the hash probes
  // and the float64 pair math of ~10^4 points fill the GPU instead of running 27 long chains.
  const int cells = cells_per_point(m.search);
  const long long items = static_cast<long long>(slot.count) * cells;
  for (long long w = static_cast<long long>(block) * kBlock + threadIdx.x; w < items;
       w += static_cast<long long>(nblocks) * kBlock) {
    const int i = static_cast<int>(w / cells), cell = static_cast<int>(w % cells);
    const float* p = xyz + 3 * static_cast<std::size_t>(slot.offset + i);
    float tx, ty, tz;
    transform_point(Tl, p[0], p[1], p[2], tx, ty, tz);
    for_neighbour_in_cell(m, tx, ty, tz, cell, [&](int v) {
      const double xo[3] = {p[0], p[1], p[2]};
      PointDerivatives pd;
      point_derivatives(*ad, xo, true, pd);
      accumulate_neighbour(m.voxels[v], pd, c.gauss, true, tx, ty, tz, sums);
    });
  }
  common::block_reduce_sum_n<kBlock, kSums>(sums, red_smem);
  if (threadIdx.x < kSums) {
#pragma unroll
    for (int k = 0; k < kSums; ++k)
      if (k == static_cast<int>(threadIdx.x)) partial[k] = sums[k];
  }
}

// The step of alignment `s`: the first 30 threads each add one value's partials in block order
// (deterministic), thread 0 advances the solver. Returns (in thread 0) whether it is done.
__device__ __forceinline__ bool step_block(const double* partials, int nblocks, SolverState& s, const SolverConfig& c,
                                           TraceRow* trace, double* sums_smem) {
  if (threadIdx.x < kSums) {
    double t = 0;
    for (int b = 0; b < nblocks; ++b) t += partials[b * kSums + threadIdx.x];
    sums_smem[threadIdx.x] = t;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    solver_advance(s, c, sums_smem, true, trace);
    return solver_done(s);
  }
  return false;
}

// Launchers (gpu_kernels.cu). `alignments` alignments, `blocks` evaluation blocks each; partials
// hold alignments x blocks x 30 doubles. The step launcher, given a conditional handle, clears it
// when every alignment is done (a batch of one: when its alignment is).
int eval_blocks_for(int points);
void launch_eval(const MapView& m, const float* xyz, const AlignmentSlot* slots, const SolverState* states,
                 const SolverConfig* cfg, double* partials, KernelClock* clocks, int blocks, int alignments,
                 cudaStream_t stream);
void launch_step(const double* partials, int blocks, SolverState* states, const SolverConfig* cfg, TraceRow* traces,
                 int trace_stride, KernelClock* clocks, int alignments, cudaStream_t stream);
void launch_loop_control(const SolverState* states, int alignments, cudaGraphConditionalHandle handle,
                         cudaStream_t stream);
void launch_step_conditional(const double* partials, int blocks, SolverState* states, const SolverConfig* cfg,
                             TraceRow* traces, KernelClock* clocks, cudaGraphConditionalHandle handle,
                             cudaStream_t stream);
void launch_init(SolverState* states, const double* guesses, KernelClock* clocks, int alignments, cudaStream_t stream);

// The device-resident state shared by versions 2-5 (one alignment): map, source, state, trace,
// partials, clock, pinned readback. Versions differ only in how they drive the loop.
class DeviceAlignment {
 public:
  void prepare(const Problem& p);
  void upload_source_and_init(cudaStream_t s);  // enqueue: source upload + state init
  void download(cudaStream_t s);                 // enqueue: state + trace + clock to pinned memory
  AlignResult result() const;
  double kernel_ns() const { return h_clock_[0].total_ns; }
  bool done_on_host() const { return solver_done(h_state_[0]); }

  DeviceMap map;
  MapView view{};
  SolverConfig cfg{};
  int n = 0, blocks = 0, max_iter = 0;
  common::DeviceBuffer<float> xyz;
  common::DeviceBuffer<AlignmentSlot> slot;
  common::DeviceBuffer<SolverState> state;
  common::DeviceBuffer<SolverConfig> d_cfg;
  common::DeviceBuffer<TraceRow> trace;
  common::DeviceBuffer<double> partials, guess;
  common::DeviceBuffer<KernelClock> clock;
  common::PinnedBuffer<float> h_xyz_;
  common::PinnedBuffer<SolverState> h_state_;
  common::PinnedBuffer<TraceRow> h_trace_;
  common::PinnedBuffer<KernelClock> h_clock_;
  common::PinnedBuffer<double> h_guess_;
  common::Stream stream;
};

// The base of the single-alignment device versions (v2-v5): they own one DeviceAlignment and
// read their result and kernel time back the same way; each adds only how it drives the loop.
class DeviceRunner : public Runner {
 public:
  AlignResult result() override { return a_.result(); }
  double kernel_ns() const override { return a_.kernel_ns(); }

 protected:
  DeviceAlignment a_;
};

}  // namespace gpu
}  // namespace ndt
