// The device pieces every GPU version is assembled from: the device copy of the map, the
// evaluation of one block's share of the points (the shared per-point math + the 30-value block
// reduction), the step (reduce the per-block partials in a fixed order, advance the solver state
// machine in one thread), their launchers (and the same launches as graph kernel nodes, for graphs
// built node by node), and a device clock that measures the kernels' own time and splits the step's.
#pragma once
#include <cuda_runtime.h>

#include <memory>
#include <tuple>
#include <utility>
#include <vector>

#include "common/block_primitives.cuh"
#include "common/device_buffer.hpp"
#include "common/gpu_resources.hpp"
#include "ndt_graph/versions.hpp"

namespace ndt {
namespace gpu {

constexpr int kBlock = 128;

struct DeviceMap {
  common::DeviceBuffer<Voxel> voxels;
  common::DeviceBuffer<CellSlot> table;
  std::size_t table_size = 0;
  float resolution = 1.f;
  // the grid's cells (allocated once, for the first map's box: a later map of a larger box is
  // probed through the hash) and its box (nx = 0: none), which the kernels read
  common::DeviceBuffer<GridCell> grid_cells;
  common::DeviceBuffer<CellGrid> grid;
  MapView view(Search s) const;
};
void upload_map(const VoxelMap& map, DeviceMap& d, cudaStream_t s);

// Kernel time, read from %globaltimer: the evaluation's first block start to its last block end,
// plus the step kernel's own span, summed over a run. The gaps between kernels (launch latency,
// host round trips) are what this leaves out. The split of total_ns (KernelSplit): the
// evaluations, and the steps' reduction, solve and state copies (copy_ns also holds the step's
// few clock reads and writes).
struct KernelClock {
  unsigned long long eval_start, eval_end;
  double total_ns;
  double eval_ns, reduce_ns, solve_ns, copy_ns;
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

// Shared memory of one evaluation block: the request's angular derivatives (and the angles'
// cosines and sines), the block reduction's scratch, the chunk's points and the pair queue. Only ~1 in 8 (point, cell)
// probes finds a neighbour voxel, so a thread that went on to the float64 pair math at once would
// run it with ~4 of its warp's 32 lanes active; instead the hits go to a queue in shared memory
// (in a fixed order: round, then warp, then lane) and every thread takes pairs from it with all
// lanes busy.
// Rounds of probes per chunk: 32 points x 27 cells over kBlock threads (radius; direct7 takes 2,
// direct1 1). The queue holds a chunk's hits: at most one per thread and round.
constexpr int kMaxRounds = (32 * 27 + kBlock - 1) / kBlock;
constexpr int kQueue = kMaxRounds * kBlock;
// The 30 sums are kept and reduced in shared memory (31 KB per block): measured on the H200
// (room_tutorial), 14.9 against 15.7 us per evaluation with shuffles; with them in registers during
// the probes, the probes' loads could not all be in flight (168 registers, spills); for batches
// (4 blocks per SM) 14,135 alignments/s against 4,883 with register sums and shuffles.
struct EvalShared {
  double red[common::block_reduce_smem_values<kBlock, kSums>()];
  AngleDerivatives ad;
  double cs[2][3];
  int round_hits[kMaxRounds][kBlock / 32];
  float x[3][kBlock], t[3][kBlock];  // the chunk's points, as read and transformed
  int q_voxel[kQueue];
  unsigned char q_point[kQueue];  // the point's place in its chunk
};

// Points per chunk of an evaluation block: with several candidate cells per point the block's
// warps share 32 points (lane = point, warp w probes cells w, w + 4, ...), so each thread
// transforms its point and finds its cell once per chunk, not once per probe; with one cell per
// point (direct1) every thread has a point of its own.
__host__ __device__ constexpr int points_per_chunk(int cells) { return cells >= kBlock / 32 ? 32 : kBlock; }
static_assert(kBlock <= 256, "a queue entry names its point in one byte");

// A thread's 30 sums in its slots of the block reduction's scratch (value k at base[k * the
// row stride]): a pair's terms are added there, one at a time, so they hold no registers.
struct SlotSums {
  double* base;
  __device__ __forceinline__ double& operator[](int k) const {
    return base[k * (common::block_reduce_smem_slot<kBlock>(1) - common::block_reduce_smem_slot<kBlock>(0))];
  }
};

template <typename Shared, typename Sums>
__device__ __forceinline__ void eval_pair(const MapView& m, const Shared& sh, int e, const SolverConfig& c,
                                          Sums&& sums) {
  const int i = sh.q_point[e];
  const double xo[3] = {sh.x[0][i], sh.x[1][i], sh.x[2][i]};
  PointDerivatives pd;
  point_derivatives(sh.ad, xo, true, pd);
  accumulate_neighbour(m.voxels[sh.q_voxel[e]], pd, c.gauss, true, sh.t[0][i], sh.t[1][i], sh.t[2][i], sums);
}

// What a probe tests of a hash slot (its key, voxel, valid flag and centroid), read as two
// 16-byte loads through the read-only path (the map does not change during an evaluation).
__device__ __forceinline__ CellSlot load_slot(const CellSlot* at) {
  const int4* p = reinterpret_cast<const int4*>(at);
  const int4 a = __ldg(p), b = __ldg(p + 1);
  CellSlot s;
  s.key = static_cast<std::uint64_t>(static_cast<unsigned>(a.x)) |
          (static_cast<std::uint64_t>(static_cast<unsigned>(a.y)) << 32);
  s.voxel = a.z;
  s.valid = a.w;
  s.centroid[0] = __int_as_float(b.x);
  s.centroid[1] = __int_as_float(b.y);
  s.centroid[2] = __int_as_float(b.z);
  s.unused = 0;
  return s;
}

// One block's share of one evaluation at `req`: chunks of points_per_chunk points. Each thread
// loads the grid cells of its (point, cell) items of every round at once (or, without the grid,
// the hash's slots in lockstep), so a chunk's probes cost one memory latency instead of one per
// round and probe chain; the hits are queued in
// (round, warp, lane) order, and the queue's pairs are dealt to the threads in turn. The 30 sums
// are reduced over the block and written by threads 0..29 to `partial` (30 doubles).
// Deterministic: the same pairs reach the same threads in the same order on every run.
template <int PROBE_BATCH = kMaxRounds>
__device__ __forceinline__ void eval_block(const MapView& m, const float* xyz, const AlignmentSlot& slot,
                                           const EvalRequest& req, const SolverConfig& c, int block, int nblocks,
                                           double* partial, EvalShared& sh) {
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  // The transform straight from the request (one address for the whole block); the angles'
  // cosines and sines in warp 0's first lanes, their derivatives by thread 0 while its probes are
  // in flight (read after the first chunk's first barrier): no barrier before the probes.
  float Tl[12];
#pragma unroll
  for (int k = 0; k < 12; ++k) Tl[k] = req.T[k];
  if (tid < 3) angle_cos_sin(req.pose[3 + tid], sh.cs[0][tid], sh.cs[1][tid]);
  __syncwarp();
  // The thread's sums live in its slots of the reduction's scratch (a pair's 30 terms are added
  // there), so none holds a register while the probes are in flight.
#pragma unroll
  for (int k = 0; k < kSums; ++k) sh.red[common::block_reduce_smem_slot<kBlock>(k)] = 0;
  const float* src = xyz + 3 * static_cast<std::size_t>(slot.offset);
  const int cells = cells_per_point(m.search), per_chunk = points_per_chunk(cells);
  const int chunks = (slot.count + per_chunk - 1) / per_chunk, rounds = (per_chunk * cells + kBlock - 1) / kBlock;
  const int mine = tid % per_chunk, first_cell = tid / per_chunk, cell_stride = kBlock / per_chunk;
  const std::uint32_t mask = static_cast<std::uint32_t>(m.mask);
  CellGrid grid;  // nx = 0: the map's cells are probed through the hash
  if (m.grid) grid = *m.grid;
  for (int chunk = block; chunk < chunks; chunk += nblocks) {
    const int idx = chunk * per_chunk + mine;
    float t[3] = {0, 0, 0};
    int ix = 0, iy = 0, iz = 0;
    bool inside = idx < slot.count;
    if (inside) {
      const float* p = src + 3 * static_cast<std::size_t>(idx);
      const float x0 = p[0], x1 = p[1], x2 = p[2];
      transform_point(Tl, x0, x1, x2, t[0], t[1], t[2]);
      inside = point_cell(m, t[0], t[1], t[2], ix, iy, iz);
      if (first_cell == 0) {
        sh.x[0][mine] = x0, sh.x[1][mine] = x1, sh.x[2][mine] = x2;
        sh.t[0][mine] = t[0], sh.t[1][mine] = t[1], sh.t[2][mine] = t[2];
      }
    }
    // Without the grid, the hash's probes of kProbeBatch rounds at a time, in lockstep: each step
    // loads the next slot of every probe still open (independent loads, in flight together), so a
    // batch costs as many memory latencies as its longest chain of linear probing (an absent cell
    // ends at an empty slot, often after one step more), not the sum of the rounds' chains. All 7
    // rounds at once in the latency budget (168 registers); 4 at a time in the batches' 128.
    constexpr int kProbeBatch = PROBE_BATCH;
    unsigned hits[kMaxRounds];
    int v[kMaxRounds];
    if (grid.nx > 0) {  // the dense grid: every round's cell in one load each, all in flight together
      int4 got[kMaxRounds];
#pragma unroll
      for (int r = 0; r < kMaxRounds; ++r) {
        const int cell = first_cell + r * cell_stride;
        got[r] = make_int4(-1, 0, 0, 0);
        if (r < rounds && inside && cell < cells) {
          int cx, cy, cz;
          candidate_cell(m.search, ix, iy, iz, cell, cx, cy, cz);
          const long long g = grid_index(grid, cx, cy, cz);
          if (g >= 0) got[r] = __ldg(reinterpret_cast<const int4*>(grid.cells + g));
        }
      }
      if (chunk == block && tid == 0) angle_derivatives_from(sh.cs[0], sh.cs[1], sh.ad);  // with the loads in flight
#pragma unroll
      for (int r = 0; r < kMaxRounds; ++r) {
        v[r] = -1;
        if (got[r].x >= 0) {
          CellSlot sl;
          sl.voxel = got[r].x & (kGridValidBit - 1);
          sl.valid = (got[r].x & kGridValidBit) != 0;
          sl.centroid[0] = __int_as_float(got[r].y);
          sl.centroid[1] = __int_as_float(got[r].z);
          sl.centroid[2] = __int_as_float(got[r].w);
          v[r] = neighbour_of_slot(m, sl, t[0], t[1], t[2]);
        }
        hits[r] = __ballot_sync(0xffffffffu, v[r] >= 0);
        if (lane == 0) sh.round_hits[r][warp] = __popc(hits[r]);
      }
    } else {
#pragma unroll
      for (int r0 = 0; r0 < kMaxRounds; r0 += kProbeBatch) {
        std::uint64_t key[kProbeBatch];
        std::uint32_t at[kProbeBatch];
        bool open[kProbeBatch];
#pragma unroll
        for (int b = 0; b < kProbeBatch; ++b) {
          const int r = r0 + b, cell = first_cell + r * cell_stride;
          open[b] = r < kMaxRounds && r < rounds && inside && cell < cells;
          key[b] = open[b] ? candidate_key(m.search, ix, iy, iz, cell) : kEmptyKey;
          at[b] = hash_slot(key[b], m.mask);
          if (r < kMaxRounds) v[r] = -1;
        }
        for (bool first = true;; first = false) {
          CellSlot sl[kProbeBatch];
#pragma unroll
          for (int b = 0; b < kProbeBatch; ++b)
            if (open[b]) sl[b] = load_slot(m.table + at[b]);
          if (first && r0 == 0 && chunk == block && tid == 0)  // with the loads in flight
            angle_derivatives_from(sh.cs[0], sh.cs[1], sh.ad);
          bool more = false;
#pragma unroll
          for (int b = 0; b < kProbeBatch; ++b) {
            if (!open[b]) continue;
            if (sl[b].key == key[b]) {
              v[r0 + b] = neighbour_of_slot(m, sl[b], t[0], t[1], t[2]);
              open[b] = false;
            } else if (sl[b].key == kEmptyKey) {
              open[b] = false;
            } else {
              at[b] = (at[b] + 1) & mask;
              more = true;
            }
          }
          if (!more) break;
        }
#pragma unroll
        for (int b = 0; b < kProbeBatch && r0 + b < kMaxRounds; ++b) {
          const int r = r0 + b;
          hits[r] = __ballot_sync(0xffffffffu, v[r] >= 0);
          if (lane == 0) sh.round_hits[r][warp] = __popc(hits[r]);
        }
      }
    }
    __syncthreads();
    // Queue order: round, then warp, then lane (fixed, so the sums are deterministic).
    int queued = 0;  // the same in every thread
#pragma unroll
    for (int r = 0; r < kMaxRounds; ++r) {
      int before = 0, total = 0;
#pragma unroll
      for (int k = 0; k < kBlock / 32; ++k) {
        const int h = sh.round_hits[r][k];
        before += k < warp ? h : 0;
        total += h;
      }
      if (v[r] >= 0) {
        const int e = queued + before + __popc(hits[r] & ((1u << lane) - 1u));
        sh.q_point[e] = static_cast<unsigned char>(mine);
        sh.q_voxel[e] = v[r];
      }
      queued += total;
    }
    __syncthreads();
    // A chunk of more than kBlock pairs (a quarter of room_tutorial's) takes a second round, on
    // the evaluation's longest path: its voxels (mean and inverse covariance, up to two lines) on
    // their way to L1 while the first round runs.
    if (tid + kBlock < queued) {
      const Voxel* later = m.voxels + sh.q_voxel[tid + kBlock];
      asm volatile("prefetch.global.L1 [%0];" ::"l"(later->mean));
      asm volatile("prefetch.global.L1 [%0];" ::"l"(later->icov + 5));
    }
    for (int e = tid; e < queued; e += kBlock)
      eval_pair(m, sh, e, c, SlotSums{sh.red + common::block_reduce_smem_slot<kBlock>(0)});
    if (chunk + nblocks < chunks) __syncthreads();  // the next chunk rewrites the points and the queue
  }
  double sums[kSums];
  common::block_reduce_smem_finish<kBlock, kSums>(sums, sh.red);
  if (tid < kSums) {
#pragma unroll
    for (int k = 0; k < kSums; ++k)
      if (k == tid) partial[k] = sums[k];
  }
}

// Threads of the step kernels: enough to read the per-block partials of up to kMaxCandidates
// evaluations in a few rounds of loads.
constexpr int kStepThreads = 256;

struct StepShared {
  SolverState st;
  NewtonAhead ahead;  // the Newton system's solve, by warp 1 while thread 0 runs the line search
  double part[kStepThreads];
  double sums[kMaxCandidates * kSums];
  // thread 0's clock64 when the state copy, the reduction and the solve were done: the step's
  // split (step_alignment reads it; the cooperative kernel leaves it)
  long long done_at[3];
};

// Copies a trivially copyable struct between global and shared memory with the whole block, 8
// bytes per thread and step.
template <typename T>
__device__ __forceinline__ void block_copy(T& to, const T& from) {
  static_assert(sizeof(T) % 8 == 0 && alignof(T) >= 8, "copied as 8-byte words");
  auto* d = reinterpret_cast<unsigned long long*>(&to);
  const auto* s = reinterpret_cast<const unsigned long long*>(&from);
  for (int k = threadIdx.x; k < static_cast<int>(sizeof(T) / 8); k += blockDim.x) d[k] = s[k];
}

// Groups of threads that share the partials of one value in the step's reduction (at most 8), and
// the loads one thread issues at once: see reduce_partials.
__host__ __device__ constexpr int partial_groups(int values, int threads) {
  return threads / values < 1 ? 1 : threads / values > 8 ? 8 : threads / values;
}
constexpr int kPartialBatch = 32;

// The totals of each of the pass's evaluations (sh.st.requests of them) in sh.sums: thread
// (value, group) adds every `groups`-th block of one value of one evaluation, then the groups are
// added in order, so the order is fixed (deterministic).
__device__ __forceinline__ void reduce_partials(const double* partials, int nblocks, StepShared& sh) {
  const int tid = threadIdx.x;
  const int values = sh.st.requests * kSums;
  const int groups = partial_groups(values, static_cast<int>(blockDim.x));
  if (tid < groups * values) {
    const int v = tid % values, g = tid / values, k = v / kSums, j = v % kSums;
    const double* p = partials + static_cast<std::size_t>(k) * nblocks * kSums + j;
    // Read at L2 (__ldcg): v9's resident leaders read partials that other SMs wrote since this
    // SM last read the same addresses, which its L1 could still hold.
    // A thread adds ~50 partials (a wave of ~400 blocks, 8 groups). Each batch of loads is an L2
    // round trip (~770 cycles on the H200, clock64 in the step); batches of 32 predicated loads
    // make that two round trips instead of seven (a plain `unroll 32` left a remainder loop that
    // issued its loads one round trip at a time: 10.1 us per step against 8.5).
    constexpr int kBatch = kPartialBatch;
    double t = 0;
    for (int base = g; base < nblocks; base += kBatch * groups) {
      double v[kBatch];
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const int b = base + u * groups;
        v[u] = b < nblocks ? __ldcg(p + static_cast<std::size_t>(b) * kSums) : 0.0;
      }
#pragma unroll
      for (int u = 0; u < kBatch; ++u) t += v[u];  // the same order as one block after another
    }
    sh.part[tid] = t;
  }
  __syncthreads();
  if (tid < values) {
    double t = 0;
    for (int g = 0; g < groups; ++g) t += sh.part[g * values + tid];
    sh.sums[tid] = t;
  }
  __syncthreads();
}

// The step of alignment `state`: the block adds the partials of each of its requests'
// evaluations (`nblocks` blocks of 30 each, evaluation k at partials + k * nblocks * 30) in a
// fixed order, then thread 0 advances the solver. The solver runs on a copy of the state in
// shared memory: one thread's hundreds of dependent reads and writes of the state
// then cost a shared-memory access each, not a round trip through L1/L2 to global memory.
// Returns (in thread 0) whether the alignment is done.
__device__ __forceinline__ bool step_block(const double* partials, int nblocks, SolverState& state,
                                           const SolverConfig& c, TraceRow* trace, StepShared& sh) {
  const int tid = threadIdx.x;
  const SolverConfig cfg = c;  // loaded here, its latency under the copy and the reduction
  block_copy(sh.st, state);
  __syncthreads();
  if (tid == 0) sh.done_at[0] = clock64();
  reduce_partials(partials, nblocks, sh);
  bool done = false, deferred = false;
  if (tid == 32) newton_ahead(sh.sums, sh.ahead);  // warp 1, beside thread 0's line search
  if (tid == 0) {
    sh.done_at[1] = clock64();
    deferred = solver_advance(sh.st, cfg, sh.sums, true, trace, true);
  }
  __syncthreads();  // the solve ahead is done
  if (tid == 0) {
    if (deferred) solver_resume(sh.st, cfg, trace, sh.ahead);
    done = solver_done(sh.st);
    sh.done_at[2] = clock64();
  }
  __syncthreads();
  block_copy(state, sh.st);
  return done;
}

// Launchers (gpu_kernels.cu). `alignments` alignments, `blocks` evaluation blocks per
// evaluation, `slots` evaluations per alignment and pass (kMaxCandidates for the parallel line
// search, else 1); partials hold alignments x slots x blocks x 30 doubles. The step launcher,
// given a conditional handle, clears it when every alignment is done (a batch of one: when its
// alignment is). `programmatic`: launched as a programmatic dependent of the stream's previous
// kernel (v8; the kernels wait for it before reading the state).
// The evaluation kernel comes in two register budgets. latency (one alignment, v2-v6, v8): 3
// blocks per SM, 168 registers; the pass is a few rounds long and its length is what counts.
// throughput (many alignments, v7): 4 blocks per SM, 128 registers (the hash's probes 4 rounds at
// a time), a third more warps to hide the loads' latency. Measured on the H200 with the kernel
// before the dense grid (one probe round at a time): latency's budget for a batch peaked at 9,099
// alignments/s on koide_vg02_both, throughput's at 10,218; throughput's for one alignment of
// room_tutorial took 0.622 ms against 0.542.
enum class EvalShape { latency, throughput };
int eval_blocks_for(int points, Search search, int evaluations = 1,
                    EvalShape shape = EvalShape::latency);  // blocks per evaluation
int eval_blocks_per_sm(EvalShape shape);                    // the occupancy query at kBlock threads
void launch_eval(const MapView& m, const float* xyz, const AlignmentSlot* slots, const SolverState* states,
                 const SolverConfig* cfg, double* partials, KernelClock* clocks, int blocks, int alignments,
                 cudaStream_t stream, int slots_per_alignment = 1, EvalShape shape = EvalShape::latency,
                 bool programmatic = false);
void launch_step(const double* partials, int blocks, SolverState* states, const SolverConfig* cfg, TraceRow* traces,
                 int trace_stride, KernelClock* clocks, int alignments, cudaStream_t stream,
                 int slots_per_alignment = 1, bool programmatic = false);
void launch_loop_control(const SolverState* states, int alignments, cudaGraphConditionalHandle handle,
                         cudaStream_t stream);
void launch_step_conditional(const double* partials, int blocks, SolverState* states, const SolverConfig* cfg,
                             TraceRow* traces, KernelClock* clocks, cudaGraphConditionalHandle handle,
                             cudaStream_t stream, int slots_per_alignment = 1);
void launch_init(SolverState* states, const double* guesses, KernelClock* clocks, int alignments, cudaStream_t stream);

// A kernel launch as the parameters of a graph kernel node (the explicit node API): the kernel,
// its grid and its arguments, each converted to the kernel's parameter type (so a wrong argument
// is a compile error, not a corrupt launch) and held where the parameters point; the graph copies
// them when the node is added or its parameters set.
class KernelNode {
 public:
  template <typename... KArgs, typename... Args>
  KernelNode(void (*kernel)(KArgs...), dim3 grid, dim3 block, Args&&... args) {
    static_assert(sizeof...(KArgs) == sizeof...(Args), "one argument per kernel parameter");
    auto held = std::make_shared<std::tuple<KArgs...>>(std::forward<Args>(args)...);
    pointers_ = std::apply([](auto&... a) { return std::vector<void*>{static_cast<void*>(&a)...}; }, *held);
    held_ = held;
    params_.func = reinterpret_cast<void*>(kernel);
    params_.gridDim = grid;
    params_.blockDim = block;
  }
  cudaKernelNodeParams params() const {
    cudaKernelNodeParams p = params_;
    p.kernelParams = const_cast<void**>(pointers_.data());
    return p;
  }

 private:
  std::shared_ptr<void> held_;
  std::vector<void*> pointers_;
  cudaKernelNodeParams params_{};
};
// The launches launch_eval and launch_step make (not programmatic), as kernel nodes.
KernelNode eval_node(const MapView& m, const float* xyz, const AlignmentSlot* slots, const SolverState* states,
                     const SolverConfig* cfg, double* partials, KernelClock* clocks, int blocks, int alignments);
KernelNode step_node(const double* partials, int blocks, SolverState* states, const SolverConfig* cfg, TraceRow* traces,
                     int trace_stride, KernelClock* clocks, int alignments);
// The registers and static shared memory of the evaluation kernel in either register budget.
cudaFuncAttributes eval_kernel_attributes(EvalShape shape);

// The device-resident state of the device versions: map, sources, per-alignment solver states,
// configs, traces, partials and clocks, pinned readback. A single alignment (v2-v6, v8) is a batch
// of one; v7 holds many. Versions differ only in how they drive the loop.
class DeviceAlignment {
 public:
  // `slots`: evaluations per pass (the parallel line search's candidates), partials sized for it.
  void prepare(const Problem& p, int slots = 1);
  void prepare(const VoxelMap& map, const std::vector<BatchItem>& items, const NdtParams& params, int slots,
               EvalShape shape);
  // --fresh-inputs: another map (as many voxels and slots), sources (each as many points as the
  // one it replaces, the items in the prepared order) and guesses, written into the device map,
  // the pinned source and the device guesses that the enqueue reads. No buffer moves and the view
  // stays the same, so a captured graph reads them as it is.
  void reload(const VoxelMap& m, const std::vector<BatchItem>& items);
  void upload_source(cudaStream_t s);           // enqueue: the pinned source to the device
  void upload_source_and_init(cudaStream_t s);  // enqueue: source upload + state init
  // enqueue: states + traces (+ the kernel clocks) to pinned memory
  void download(cudaStream_t s, bool with_clocks = true);
  AlignResult result(int a = 0) const;
  double kernel_ns() const { return h_clock_[0].total_ns; }
  KernelSplit kernel_split() const {
    const KernelClock& k = h_clock_[0];
    KernelSplit out;
    out.eval_ms = k.eval_ns / 1e6;
    out.reduce_ms = k.reduce_ns / 1e6;
    out.solve_ms = k.solve_ns / 1e6;
    out.bookkeeping_ms = k.copy_ns / 1e6;
    return out;
  }
  bool done_on_host() const { return solver_done(h_state_[0]); }

  DeviceMap map;
  MapView view{};
  int alignments = 0, blocks = 0, max_iter = 0, slots = 1;
  std::size_t n_xyz = 0;
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
  common::Stream stream;
  std::vector<AlignmentSlot> h_slots_;  // each item's source in h_xyz_ (reload writes there)
};

// v9's runner; `mapped`: v10's (the same kernel, the run's host round trip through pinned memory).
std::unique_ptr<Runner> make_resident_runner(bool mapped);

// v4's runner: `unrolled` evaluations per graph, each kernel a programmatic dependent of the one
// before it when `programmatic` (v8).
std::unique_ptr<Runner> make_graph_batch_runner(int unrolled, bool programmatic);

// The base of the single-alignment device versions (v2-v5): they own one DeviceAlignment and
// read their result and kernel time back the same way; each adds only how it drives the loop.
class DeviceRunner : public Runner {
 public:
  void reload(const Problem& p) override {
    BatchItem one{p.source, {}};
    std::copy(p.guess, p.guess + 6, one.guess);
    a_.reload(*p.map, {one});
  }
  void wait() override { CUDA_CHECK(cudaStreamSynchronize(a_.stream.get())); }
  AlignResult result() override { return a_.result(); }
  double kernel_ms() const override { return a_.kernel_ns() / 1e6; }
  KernelSplit kernel_split() const override { return a_.kernel_split(); }

 protected:
  DeviceAlignment a_;
};

}  // namespace gpu
}  // namespace ndt
