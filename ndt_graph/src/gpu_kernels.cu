#include "gpu_kernels.cuh"

#include <algorithm>
#include <cstring>
#include <map>

#include "common/device_info.hpp"
#include "common/pdl.cuh"

namespace ndt {
namespace gpu {

MapView DeviceMap::view(Search s) const {
  MapView m = map_view(voxels.get(), table.get(), table_size, resolution, s);
  m.grid = grid.get();
  return m;
}

void upload_map(const VoxelMap& map, DeviceMap& d, cudaStream_t s) {
  d.voxels.resize(map.voxels.size());
  d.table.resize(map.table.size());
  CUDA_CHECK(
      cudaMemcpyAsync(d.voxels.get(), map.voxels.data(), map.voxels.size() * sizeof(Voxel), cudaMemcpyHostToDevice, s));
  CUDA_CHECK(
      cudaMemcpyAsync(d.table.get(), map.table.data(), map.table.size() * sizeof(CellSlot), cudaMemcpyHostToDevice, s));
  CUDA_CHECK(cudaStreamSynchronize(s));  // the host vectors may go away after this
  d.table_size = map.table.size();
  d.resolution = map.resolution;
  CellGrid box;
  std::vector<GridCell> cells;
  const bool fits = build_cell_grid(map, kMaxGridCells, box, cells);
  if (d.grid.size() == 0) {
    d.grid.resize(1);
    d.grid_cells.resize(fits ? cells.size() : 0);
  }
  if (!fits || cells.size() > d.grid_cells.size()) box = CellGrid{};
  box.cells = d.grid_cells.get();
  if (box.nx > 0)
    CUDA_CHECK(
        cudaMemcpyAsync(d.grid_cells.get(), cells.data(), cells.size() * sizeof(GridCell), cudaMemcpyHostToDevice, s));
  CUDA_CHECK(cudaMemcpyAsync(d.grid.get(), &box, sizeof box, cudaMemcpyHostToDevice, s));
  CUDA_CHECK(cudaStreamSynchronize(s));  // `cells` and `box` go away
}

namespace {

__global__ void init_kernel(SolverState* states, const double* guesses, KernelClock* clocks, int alignments) {
  const int a = blockIdx.x * blockDim.x + threadIdx.x;
  if (a >= alignments) return;
  double g[6];
  for (int k = 0; k < 6; ++k) g[k] = guesses[6 * a + k];
  solver_init(states[a], g);
  clocks[a] = KernelClock{~0ull, 0, 0, 0, 0, 0, 0};
}

// Block (x, y): evaluation block x of pass slot y % slots of alignment y / slots; slots past the
// alignment's current number of requests have nothing to do.
// MIN_BLOCKS blocks per SM (see EvalShape).
template <int MIN_BLOCKS>
__global__ void __launch_bounds__(kBlock, MIN_BLOCKS)
    eval_kernel(MapView m, const float* xyz, const AlignmentSlot* slots, const SolverState* states,
                const SolverConfig* cfg, double* partials, KernelClock* clocks, int blocks, int slots_per_alignment) {
  __shared__ EvalShared sh;
  common::pdl_wait();  // launched as a programmatic dependent (v8): the step before must be done
  common::pdl_trigger();
  const int a = blockIdx.y / slots_per_alignment, k = blockIdx.y % slots_per_alignment;
  const SolverState& s = states[a];
  if (solver_done(s) || k >= s.requests) return;
  if (threadIdx.x == 0) atomicMin(&clocks[a].eval_start, global_ns());
  eval_block<MIN_BLOCKS == 3 ? kMaxRounds : 4>(
      m, xyz, slots[a], request_at(s, k), cfg[a], blockIdx.x, blocks,
      partials + (static_cast<std::size_t>(blockIdx.y) * blocks + blockIdx.x) * kSums, sh);
  if (threadIdx.x == 0) atomicMax(&clocks[a].eval_end, global_ns());
}

__device__ void step_alignment(const double* partials, int blocks, SolverState* states, const SolverConfig* cfg,
                               TraceRow* traces, int trace_stride, KernelClock* clocks, int a, int slots, bool& done) {
  __shared__ StepShared sh;
  const unsigned long long t0 = global_ns();
  const long long c0 = clock64();
  done = step_block(partials + static_cast<std::size_t>(a) * slots * blocks * kSums, blocks, states[a], cfg[a],
                    traces + static_cast<std::size_t>(a) * trace_stride, sh);
  if (threadIdx.x == 0) {
    // The step's span on the global timer, split in proportion to thread 0's cycle counts (its
    // SM's clock, exact for one thread; the ratio converts at the clock rate the step ran at,
    // which boost moves). The cost: three clock reads in one thread and four more adds to the
    // record this thread already reads and writes, against a step of several microseconds.
    const long long c1 = clock64();
    const double step_ns = static_cast<double>(global_ns() - t0);
    const double ns_per_cycle = c1 > c0 ? step_ns / static_cast<double>(c1 - c0) : 0.0;
    const double reduce_ns = ns_per_cycle * static_cast<double>(sh.done_at[1] - sh.done_at[0]);
    const double solve_ns = ns_per_cycle * static_cast<double>(sh.done_at[2] - sh.done_at[1]);
    KernelClock& k = clocks[a];
    const double eval_ns = static_cast<double>(k.eval_end - k.eval_start);
    k.total_ns += eval_ns + step_ns;
    k.eval_ns += eval_ns;
    k.reduce_ns += reduce_ns;
    k.solve_ns += solve_ns;
    k.copy_ns += step_ns - reduce_ns - solve_ns;
    k.eval_start = ~0ull;
    k.eval_end = 0;
  }
}

__global__ void __launch_bounds__(kStepThreads)
    step_kernel(const double* partials, int blocks, SolverState* states, const SolverConfig* cfg, TraceRow* traces,
                int trace_stride, KernelClock* clocks, int slots) {
  common::pdl_wait();  // launched as a programmatic dependent (v8): the evaluation must be done
  common::pdl_trigger();
  const int a = blockIdx.x;
  if (solver_done(states[a])) return;
  bool done;
  step_alignment(partials, blocks, states, cfg, traces, trace_stride, clocks, a, slots, done);
}

__global__ void __launch_bounds__(kStepThreads)
    step_conditional_kernel(const double* partials, int blocks, SolverState* states, const SolverConfig* cfg,
                            TraceRow* traces, KernelClock* clocks, cudaGraphConditionalHandle handle, int slots) {
  if (solver_done(states[0])) {
    if (threadIdx.x == 0) cudaGraphSetConditional(handle, 0);
    return;
  }
  bool done;
  step_alignment(partials, blocks, states, cfg, traces, 0, clocks, 0, slots, done);
  if (threadIdx.x == 0 && done) cudaGraphSetConditional(handle, 0);
}

__global__ void loop_control_kernel(const SolverState* states, int alignments, cudaGraphConditionalHandle handle) {
  int running = 0;
  for (int a = threadIdx.x; a < alignments; a += blockDim.x) running |= !solver_done(states[a]);
  if (!__syncthreads_or(running) && threadIdx.x == 0) cudaGraphSetConditional(handle, 0);
}

}  // namespace

int eval_blocks_per_sm(EvalShape shape) {
  int per_sm = 0;
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &per_sm, shape == EvalShape::latency ? eval_kernel<3> : eval_kernel<4>, kBlock, 0));
  return per_sm;
}

template <EvalShape SHAPE>
int resident_eval_blocks() {
  static const int resident = std::max(1, eval_blocks_per_sm(SHAPE)) * common::current_sm_count();
  return resident;
}

int eval_blocks_for(int points, Search search, int evaluations, EvalShape shape) {
  // One wave of evaluation blocks shared by the evaluations of a pass (the occupancy API says how
  // many fit per SM), and no more blocks than there are chunks of points.
  const int resident = shape == EvalShape::latency ? resident_eval_blocks<EvalShape::latency>()
                                                   : resident_eval_blocks<EvalShape::throughput>();
  const int per_chunk = points_per_chunk(cells_per_point(search));
  const long long chunks = (static_cast<long long>(points) + per_chunk - 1) / per_chunk;
  const long long wave = std::max(1, resident / std::max(1, evaluations));
  return static_cast<int>(std::max(1ll, std::min(chunks, wave)));
}

void launch_init(SolverState* states, const double* guesses, KernelClock* clocks, int alignments, cudaStream_t stream) {
  init_kernel<<<(alignments + 127) / 128, 128, 0, stream>>>(states, guesses, clocks, alignments);
  CUDA_CHECK_LAST();
}

KernelNode eval_node(const MapView& m, const float* xyz, const AlignmentSlot* slots, const SolverState* states,
                     const SolverConfig* cfg, double* partials, KernelClock* clocks, int blocks, int alignments) {
  return KernelNode(eval_kernel<3>, dim3(blocks, alignments), dim3(kBlock), m, xyz, slots, states, cfg, partials,
                    clocks, blocks, 1);
}

KernelNode step_node(const double* partials, int blocks, SolverState* states, const SolverConfig* cfg, TraceRow* traces,
                     int trace_stride, KernelClock* clocks, int alignments) {
  return KernelNode(step_kernel, dim3(alignments), dim3(kStepThreads), partials, blocks, states, cfg, traces,
                    trace_stride, clocks, 1);
}

cudaFuncAttributes eval_kernel_attributes(EvalShape shape) {
  cudaFuncAttributes a{};
  CUDA_CHECK(cudaFuncGetAttributes(&a, shape == EvalShape::latency ? eval_kernel<3> : eval_kernel<4>));
  return a;
}

void launch_eval(const MapView& m, const float* xyz, const AlignmentSlot* slots, const SolverState* states,
                 const SolverConfig* cfg, double* partials, KernelClock* clocks, int blocks, int alignments,
                 cudaStream_t stream, int slots_per_alignment, EvalShape shape, bool programmatic) {
  const dim3 grid(blocks, alignments * slots_per_alignment);
  common::launch_maybe_programmatic(shape == EvalShape::latency ? eval_kernel<3> : eval_kernel<4>, grid, dim3(kBlock),
                                    stream, programmatic, m, xyz, slots, states, cfg, partials, clocks, blocks,
                                    slots_per_alignment);
}

void launch_step(const double* partials, int blocks, SolverState* states, const SolverConfig* cfg, TraceRow* traces,
                 int trace_stride, KernelClock* clocks, int alignments, cudaStream_t stream, int slots_per_alignment,
                 bool programmatic) {
  common::launch_maybe_programmatic(step_kernel, dim3(alignments), dim3(kStepThreads), stream, programmatic, partials,
                                    blocks, states, cfg, traces, trace_stride, clocks, slots_per_alignment);
}

void launch_step_conditional(const double* partials, int blocks, SolverState* states, const SolverConfig* cfg,
                             TraceRow* traces, KernelClock* clocks, cudaGraphConditionalHandle handle,
                             cudaStream_t stream, int slots_per_alignment) {
  step_conditional_kernel<<<1, kStepThreads, 0, stream>>>(partials, blocks, states, cfg, traces, clocks, handle,
                                                          slots_per_alignment);
  CUDA_CHECK_LAST();
}

void launch_loop_control(const SolverState* states, int alignments, cudaGraphConditionalHandle handle,
                         cudaStream_t stream) {
  loop_control_kernel<<<1, 256, 0, stream>>>(states, alignments, handle);
  CUDA_CHECK_LAST();
}

void DeviceAlignment::prepare(const Problem& p, int pass_slots) {
  if (!p.source) throw InputError("source cloud is empty");
  BatchItem one{p.source, {}};
  std::copy(p.guess, p.guess + 6, one.guess);
  prepare(*p.map, {one}, p.params, pass_slots, EvalShape::latency);
}

void DeviceAlignment::prepare(const VoxelMap& m, const std::vector<BatchItem>& items, const NdtParams& params,
                              int pass_slots, EvalShape shape) {
  params.validate();
  if (items.empty()) throw InputError("batch has no alignments");
  upload_map(m, map, stream.get());
  view = map.view(params.search);
  alignments = static_cast<int>(items.size());
  slots = pass_slots;
  max_iter = params.max_iterations;
  // Sources shared between alignments are uploaded once.
  std::map<const common::PointCloud*, int> offset_of;
  std::vector<float> all;
  std::vector<AlignmentSlot> h_slots;
  std::vector<SolverConfig> cfgs;
  std::vector<double> guesses;
  int max_points = 0;
  for (const auto& it : items) {
    if (!it.source || it.source->size() == 0) throw InputError("source cloud is empty");
    if (it.source->size() > (1u << 30)) throw InputError("source cloud has more than 2^30 points");
    auto [pos, fresh] = offset_of.emplace(it.source, static_cast<int>(all.size() / 3));
    if (fresh) {
      const auto inter = interleave(*it.source);
      if (all.size() + inter.size() > (std::size_t{1} << 31))
        throw InputError("batch sources hold more than 2^31 values");
      all.insert(all.end(), inter.begin(), inter.end());
    }
    h_slots.push_back({pos->second, static_cast<int>(it.source->size())});
    cfgs.push_back(params.solver_config(it.source->size()));
    cfgs.back().fast_solve = 1;  // every device version: see SolverConfig
    guesses.insert(guesses.end(), it.guess, it.guess + 6);
    max_points = std::max(max_points, static_cast<int>(it.source->size()));
  }
  // one wave shared by all the evaluations of a pass
  blocks = eval_blocks_for(max_points, params.search, alignments * slots, shape);
  const std::size_t rows = static_cast<std::size_t>(alignments) * (max_iter + 1);
  n_xyz = all.size();
  xyz.resize(n_xyz);
  slot.resize(alignments);
  state.resize(alignments);
  d_cfg.resize(alignments);
  trace.resize(rows);
  partials.resize(static_cast<std::size_t>(alignments) * slots * blocks * kSums);
  guess.resize(6 * static_cast<std::size_t>(alignments));
  clock.resize(alignments);
  h_xyz_.resize(n_xyz);
  std::memcpy(h_xyz_.get(), all.data(), n_xyz * sizeof(float));
  h_state_.resize(alignments);
  h_trace_.resize(rows);
  h_clock_.resize(alignments);
  cudaStream_t s = stream.get();
  CUDA_CHECK(
      cudaMemcpyAsync(slot.get(), h_slots.data(), alignments * sizeof(AlignmentSlot), cudaMemcpyHostToDevice, s));
  CUDA_CHECK(cudaMemcpyAsync(d_cfg.get(), cfgs.data(), alignments * sizeof(SolverConfig), cudaMemcpyHostToDevice, s));
  CUDA_CHECK(cudaMemcpyAsync(guess.get(), guesses.data(), guesses.size() * sizeof(double), cudaMemcpyHostToDevice, s));
  stream.sync();
  h_slots_ = h_slots;
}

void DeviceAlignment::reload(const VoxelMap& m, const std::vector<BatchItem>& items) {
  if (items.size() != h_slots_.size())
    throw std::invalid_argument("reload: " + std::to_string(items.size()) + " alignments, " +
                                std::to_string(h_slots_.size()) + " prepared");
  stream.sync();  // the last run's source copy is done with the pinned buffer
  upload_map(m, map, stream.get());
  const MapView now = map.view(view.search);
  if (now.voxels != view.voxels || now.table != view.table || now.mask != view.mask ||
      now.resolution != view.resolution || now.grid != view.grid)
    throw std::invalid_argument(
        "reload: a map of another shape (the prepared view, and any graph holding it, would "
        "be stale)");
  std::vector<double> guesses;
  for (std::size_t k = 0; k < items.size(); ++k) {
    const common::PointCloud& src = *items[k].source;
    if (src.size() != static_cast<std::size_t>(h_slots_[k].count))
      throw std::invalid_argument("reload: a source of " + std::to_string(src.size()) + " points replaces one of " +
                                  std::to_string(h_slots_[k].count));
    float* at = h_xyz_.get() + 3 * static_cast<std::size_t>(h_slots_[k].offset);
    for (std::size_t i = 0; i < src.size(); ++i) {
      at[3 * i] = src.x[i];
      at[3 * i + 1] = src.y[i];
      at[3 * i + 2] = src.z[i];
    }
    guesses.insert(guesses.end(), items[k].guess, items[k].guess + 6);
  }
  CUDA_CHECK(cudaMemcpyAsync(guess.get(), guesses.data(), guesses.size() * sizeof(double), cudaMemcpyHostToDevice,
                             stream.get()));
  stream.sync();
}

void DeviceAlignment::upload_source(cudaStream_t s) {
  CUDA_CHECK(cudaMemcpyAsync(xyz.get(), h_xyz_.get(), n_xyz * sizeof(float), cudaMemcpyHostToDevice, s));
}

void DeviceAlignment::upload_source_and_init(cudaStream_t s) {
  upload_source(s);
  launch_init(state.get(), guess.get(), clock.get(), alignments, s);
}

void DeviceAlignment::download(cudaStream_t s, bool with_clocks) {
  CUDA_CHECK(cudaMemcpyAsync(h_state_.get(), state.get(), alignments * sizeof(SolverState), cudaMemcpyDeviceToHost, s));
  CUDA_CHECK(
      cudaMemcpyAsync(h_trace_.get(), trace.get(), h_trace_.size() * sizeof(TraceRow), cudaMemcpyDeviceToHost, s));
  if (with_clocks)
    CUDA_CHECK(
        cudaMemcpyAsync(h_clock_.get(), clock.get(), alignments * sizeof(KernelClock), cudaMemcpyDeviceToHost, s));
}

AlignResult DeviceAlignment::result(int a) const {
  return result_from_state(h_state_[a], h_trace_.get() + static_cast<std::size_t>(a) * (max_iter + 1));
}

}  // namespace gpu

}  // namespace ndt
