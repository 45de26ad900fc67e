// v9_resident_clusters — v3's persistent kernel with one barrier per evaluation instead of two,
// and no block that the others wait for. (Since commit 66ea133 its poll does not acquire and no
// cluster barrier runs in the loop, so that the SM's L1 survives the barrier: "Kept ... the L1
// kept" below; since commit d965bfb the cluster's sums reach the leader by st.async: "Kept ...
// st.async". The paragraph that follows is the design up to then.) The grid is made of thread-block clusters (Hopper: 8
// blocks, or 4 or 2, scheduled together on one GPC, each able to read the others' shared memory).
// After its share of an evaluation, every block leaves its 30 sums in its own shared memory; the
// cluster syncs (a hardware barrier), its first block (the leader) adds its blocks' sums through
// distributed shared memory, adds the cluster's partial to the evaluation's fixed-point totals
// (integer atomics: every order gives the same bits) and arrives at the grid-wide barrier (one
// atomic per cluster). Every block polls the barrier, reads the same totals and advances its own
// copy of the solver in shared memory: the same sums and the same code give the same next
// request in every block, so no block broadcasts the state and no second grid-wide barrier is
// needed. The state starts from the guess in every block and lives in shared memory for the whole
// alignment; block 0 writes the trace and, at the end, the state and the trace straight to pinned
// host memory.
// Predicted (H100, room_tutorial, against v8's cost model of 18.3 us per evaluation): the time
// outside the kernels (4.9 us) and the state copies (0.4 us) go; the reduction reads ~50 cluster
// partials instead of ~400 block partials (2.2 -> ~0.8 us); the cluster syncs and the one barrier
// add ~1.5 us; the evaluation and the solve stay (7.5 and 3.4 us): ~13 us per evaluation, about
// 0.28 ms per alignment.
// Measured (H100, room_tutorial, 21 evaluations): 0.364 ms against v8's 0.393 in the same run,
// 17.3 us per evaluation. Thread 0 of block 0 (a leader), global timer, per evaluation: evaluation
// 5.4, cluster sync 0.6, cluster sum 0.4, arrival and barrier 2.8, reduction 3.8, second cluster
// sync and solve 4.2 us. The miss: one block per chunk of points needs 389 blocks there; on that
// H100 clusters of 8 or 4 fit only 360 or 384 at once (the GPCs' SM counts), so the grid takes
// clusters of 2, and then 195 leaders arrive on one counter (the atomics serialise: the barrier)
// and each reads all 195 partials (the reduction). Tried and not kept, same H100: every block
// polling the counter and adding a share of the partials (0.363 ms); the last leader to arrive
// adding them and publishing the totals (0.397: four dependent round trips after the last
// arrival); 4 blocks per SM, so that clusters of 8 give every chunk a block (0.410: the solver
// spilled at 128 registers).
// Measured next (H100, 2026-11-27, thread 0 of block 0, clock64 around each part of one solver
// call, room_tutorial, ~1.98 GHz): 7,400 cycles per call that ends an iteration (3.7 us): the line
// search and the end of the iteration 1,850, the 6 x 6 elimination 4,100 (six reciprocals of the
// pivots, ~250-cycle dependent sequences each, on its chain), the direction 730, the next
// request (three sincos, the float matrix) 1,300; ~1,400 cycles more the first time the code runs
// in an evaluation (instruction fetch: the same call again takes 6,150). Block 0's loop takes 330
// of the alignment's ~365 us; its prologue and epilogue under 1 us each: ~35 us are the cluster
// launch and its end, outside the kernel's code. Tried and not kept (same H100, room_tutorial;
// each against the kept kernel, 0.364 ms beside v8's 0.385, with v8 as the control in its run):
// the clusters' partials and totals exchanged as self-validating words (each half of a double
// beside the evaluation's number, NCCL's LL protocol; no counter, no fence), ten reducer clusters
// adding three values' partials each: 0.377 (v8 0.390; the exchange stays ~3.9 us after the last
// arrival); the points split evenly over the resident grid, so that clusters of 4 cover them:
// 0.411 against 0.359 in the same run (the chunk's points through shared memory and a barrier
// cost more than the fewer partials saved); each block keeping its chunk's points in shared
// memory between evaluations: 0.364 and 0.369 (v8 0.387, 0.384; the points' load is not on the
// chain); the elimination without a division on its chain (rows scaled by the pivot's mantissa,
// the reciprocals taken together at the end): 0.373 and 0.376 (v8 0.388, 0.389), its solve 5,350
// cycles (frexp, ldexp and the six divisions' slow-path branches serialise).
// Kept (2026-11-27): the Newton system solved ahead. Warp 1's first thread solves the next Newton
// step's 6 x 6 system from the totals (solve_ahead) while thread 0 runs the line search; the
// solver stops before that step, the block syncs, and the step is taken from the solve. Predicted
// ~0.9 us per evaluation that ends an iteration (0.364 -> ~0.348 ms); measured on an H200 0.346,
// 0.348, 0.347, 0.342 ms against 0.362, 0.355 without it, on the H100 0.355 ms in the reference run.
// Where an evaluation's exchange goes (H100, 2026-11-27, every block's end of its evaluation on the
// global timer, atomicMax per evaluation; block 0's thread 0 averages; the probes themselves take
// the alignment from 0.355 to 0.444 ms, so the parts are relative): room_tutorial (195 clusters of
// 2): block 0's evaluation 5.3 us, the slowest block's ends 1.8 later, the barrier passed 1.9 after
// that (cluster sync, cluster sum, arrival, poll), the reduction of 195 partials 2.8, the solve 3.1;
// koide_vg02_both (32 clusters of 8): 4.7, 1.2, 1.9, 1.5, 3.2. The reduction is the largest part of
// the exchange where clusters are small, the lateness of the slowest block next.
// The elimination measured alone later (one H100 thread, clock64): its six reciprocals take 66
// cycles each, not ~250; a chain of 36 fmax before the first pivot's test took 1,184 of its 2,468
// cycles. Kept in solve_pivoted (a tree, the tests after the elimination): 1,806 cycles; this
// kernel 0.350-0.357 -> 0.347-0.359 ms (the line search beside it is now the longer). Not kept
// (same H100, three runs each against the kept code): one copy of the solver's code per kernel
// (this kernel 317 -> 237 KB, advance's spills 176 / 456 -> 82 / 164 bytes): 0.356-0.361 against
// 0.351-0.355 ms; the pivot search by integer compares: 0.345-0.352 against 0.350-0.355.
// Kept (H100, 2026-11-27, three runs each, room_tutorial, v3 and v8 as controls in each run):
// the totals from fixed-point words (each leader adds its partial as two 64-bit integer atomics,
// every leader reads 60 words after the barrier instead of adding 195 partials of 30 values, the
// 9.1 MB of L2 reads per evaluation that the split above blamed): predicted ~1.9 us per
// evaluation, measured 0.346-0.350 -> 0.324-0.330 ms (~1.1 us); the init kernel, the memset and
// the three copies back replaced by the kernel's own start from the guess and its writes to
// pinned host memory (the exchange left zeroed by the last leader out): predicted ~10 us per
// alignment, measured 0.319-0.324 -> 0.305-0.310; the leader writing the totals into its cluster's
// blocks before the second cluster sync (no read after it): 0.311-0.313 -> 0.307-0.312; the
// arrival as an atomic that releases and the poll as loads that acquire, not two sequentially
// consistent fences (__threadfence) around them: 0.307-0.312 -> 0.304-0.305 (a relaxed poll and one
// acquiring fence after it: 0.307-0.313).
// Where an evaluation goes now (the same probes as above, room_tutorial, 21 evaluations, block 0's
// thread 0, us; the probes take the alignment to 0.365 ms): evaluation 5.5, cluster sync 0.7,
// cluster sum and atomics 0.4, arrival and barrier 3.1 (1.7 of it the slowest block's lateness),
// totals 0.7, second cluster sync and the solver 3.7.
// Tried and not kept (same H100, three runs each against the kept code):
//  - chunks of up to 33 points so that clusters of 4 cover room_tutorial (95 partials, not 195;
//    each probe round its own point): 0.390-0.400 against 0.348-0.355 ms, and koide_vg02_both (the
//    same grid) 0.214 against 0.184: the per-round points cost the evaluation more than the
//    fewer partials saved;
//  - counted words instead of a barrier (each word's top 12 bits count the leaders that added to
//    it; lanes poll their own words; no counter, no fence): 0.307-0.313 against 0.308-0.312 with
//    acquire loads, 0.326-0.331 against 0.311-0.313 with relaxed loads and one fence;
//  - a chunk's points spread over the cloud so that chunks hold alike numbers of neighbours (the
//    slowest block's lateness): 0.311-0.314 against 0.306-0.311 (every point, stride = chunks;
//    the probes lost their L1 locality: sim_street 0.295 against 0.246), 0.309-0.314 in runs of 8
//    (v3 and v8 gained 0.01 there);
//  - each neighbour voxel prefetched into L1 when its probe finds it: 0.321-0.322 against
//    0.309-0.310; the block reduction's row sums as a tree: 0.360-0.362 (spills).
// Where an evaluation goes, block 0's thread 0 (H100, 2026-11-27, clock64 at each phase's
// block barrier, room_tutorial, cycles at ~1.98 GHz; the probes take the alignment to 0.393 ms):
// the probes (point, transform, cell, grid loads, ballots) 4,930, the queue 930, the pairs 3,350
// (86 in block 0; the most in any block 158), the block reduction 960, the cluster sync 2,140,
// the leader's part (cluster sum, atomics, arrival, poll, totals, push) 6,600 (the slowest block
// ends its evaluation 1.6 us after block 0), the second cluster sync 1,120, the solver 6,160.
// On the CPU (room_tutorial at the final pose): 96 of the 389 chunks hold more than kBlock
// pairs (a second round of the pair loop, up to 162 pairs); even spread over a cluster of 2, 47
// clusters of 195 would still need a second round: balancing pairs within clusters cannot take
// the second round off the slowest block.
// Kept (H100, 2026-11-27, three runs each, room_tutorial, v3 and v8 as controls): the solver's
// configuration in shared memory (its first read was an L1 miss after the evaluation's probes),
// the totals' words and the set's flag read in one round of loads, not the flag first; the
// request's float matrix left by the solver (SolverConfig::defer_transform) and taken by warp 0,
// the three angles' sines and cosines in three lanes at once; the second round's voxels
// prefetched into L1 while the first round runs (eval_block): 0.298-0.303 -> 0.290-0.298 ms
// together (predicted ~1 us per evaluation, ~0.02 ms; measured ~0.3 us). Then every block
// polling the barrier and reading the totals itself (390 pollers instead of 195; no push into the
// cluster's shared memory, no second cluster sync): -> 0.280-0.287 against 0.297-0.303 in the
// same runs; every case gains (sim_street 0.242 -> 0.229, koide_vg02_both 0.168 -> 0.156,
// kitti00 0.296 -> 0.280).
// Tried and not kept (same H100, three runs each against the kept code):
//  - the derivatives' cosines and sines of the next request in warp 0's lanes 3..5 beside the
//    float ones in lanes 0..2 (off the evaluation's start): 0.297-0.303 against 0.292-0.296 (the
//    two lane groups run different code, so the warp runs them one after the other); in warp 2
//    after a named barrier with warp 0: 0.285-0.290 against 0.285-0.287; by warp 0 with its first
//    probes in flight: 0.317-0.320 against 0.280-0.286 (spills: 976 bytes of stack);
//  - the non-leaders' sums pushed into the leader's shared memory and an mbarrier arrival there
//    instead of the first cluster sync: 0.276-0.283 against 0.280-0.286, but koide_unfiltered
//    0.405 against 0.400 and kitti00 0.283 against 0.281: not a gain;
//  - the totals converted before the barrier that publishes the flag (one block barrier less):
//    0.293-0.295 against 0.285-0.287;
//  - the grid's box in shared memory, the alignment's slot in registers and, from the second
//    evaluation on, the block's points read from the shared memory where the previous evaluation
//    left them (one chunk per block): 0.285-0.286 against 0.280-0.286 (commit 8bcb040, reverted).
//    Clock64 in warps 0 and 1 of block 0 had put ~1,620 of the probes' ~5,000 cycles on those
//    dependent loads (then the grid cells' loads 1,880, the neighbour tests and ballots ~1,050,
//    warp 0's angle terms 510); predicted ~0.7 us per evaluation, measured none: in the kernel
//    without the probes' stores those loads hit L1, or are off the slowest block's path.
// Kept (H100, 2026-11-27, three runs each, room_tutorial, v10 beside it): the L1 kept from one
// evaluation to the next. The kernel's SASS showed CCTL.IVALL, the whole L1 of the SM invalidated,
// after the cluster barrier's wait and after every acquiring load of the poll: each evaluation
// read its points, grid cells and voxels from L2 again (that is where the clock64 probes above put
// 1,620 + 1,880 cycles). In an A/B (three runs each): the cluster's sums to the leader through
// an mbarrier in its shared memory (the non-leader's arrival releasing, the leader's threads
// waiting relaxed and acquiring with a fence restricted to shared::cluster memory) and the poll
// relaxed: predicted ~0.5-0.9 us per evaluation (three or four dependent L2 round trips of the
// evaluation become L1 hits), measured 0.285-0.286 -> 0.259-0.262 ms (~1.1 us per evaluation),
// every case faster (sim_street 0.229 -> 0.216, koide_vg02_both 0.158 -> 0.147, kitti00 0.281 ->
// 0.267), v10 0.268 -> 0.244. But racecheck reported the leader's reads of the other block's sums
// against that block's writes: it follows cluster barriers, not an mbarrier and a counter in
// global memory. A handoff the sanitizer cannot check has no place next to its "0 hazards", so
// the kernel now launches clusters of 1 (kClusterSizes): every block adds its own partial and
// arrives, no cluster barrier at all, and the poll stays relaxed (the loop's SASS has no
// CCTL.IVALL left). Reference run (H100, commit 66ea133): 0.269 ms on room_tutorial (12.74 us per
// evaluation in the graph study, 13.37 at dcc8b26), every case faster than at dcc8b26 (sim_street
// 0.218, koide_vg02_both 0.146, kitti00 0.274); the clusters of 1 cost ~0.4 us per evaluation
// against the mbarrier handoff's A/B (twice the leaders' atomics on the totals and the counter).
// Before that (same H100, three runs, the cluster barrier's invalidation still in both arms):
// clusters of 1, every block its own leader (389 arrivals, twice the atomics): 0.285-0.292
// against 0.281-0.287 with clusters of 2.
// Tried and not kept (2026-11-28, three runs each against the clusters of 1, room_tutorial):
//  - each value's words and the counter in 2, 4 or 8 copies (leader c adds to and arrives at
//    copy c % n; the readers add the copies' words, integers: the same bits), to shorten the
//    queue of 389 atomics on each word: predicted ~0.4 us per evaluation less, measured more
//    (H100, v10 0.267-0.269, 0.276-0.277, 0.295-0.296 against 0.256-0.257 ms; every case slower,
//    ~0.6 us per evaluation per doubling): the atomics' queue is not where the time goes, and
//    every copy is one more line that all 389 blocks poll or read;
//  - the last arrival (its fetch_add returns the count before the last) publishing the
//    evaluation's number to 8 or 32 flag lines, each block polling flag b % n, so that the 389
//    pollers no longer load the line the arrivals' atomics go to (H200): room_tutorial 0.255-0.256
//    and 0.253-0.255 against 0.257-0.258, but every smaller grid 2-4 us slower (koide_vg02_both
//    0.134-0.137 against 0.132-0.133, sim_street 0.203-0.205 against 0.201): one more dependent
//    round trip after the last arrival; a __nanosleep(32) in the poll: 0.258-0.260.
// Kept (H100, 2026-11-28, three runs each, room_tutorial, v10 beside it): clusters of 2 again,
// the non-leader's 30 sums pushed into the leader's shared memory with st.async (each thread's
// sum, 8 bytes, counted on the leader's mbarrier: the leader arrives with expect_tx(240) and its
// threads wait on the evaluation's parity, then acquire with a fence restricted to shared::cluster
// memory, which emits no instruction: the wait's own cluster-scope acquire would). No cluster barrier (no L1
// invalidation), half the leaders' atomics and arrivals (195), and racecheck follows the push: 0
// hazards, where the ed2f5af handoff (a remote arrive, the leader's reads through distributed
// shared memory) gave 7. Predicted ~0.7 us per evaluation (from that handoff's A/B, 0.257 ->
// ~0.244 ms for v10); measured v9 0.271-0.275 -> 0.265-0.270, v10 0.256-0.258 -> 0.252-0.257 ms
// (~0.2 us per evaluation), the other cases within their run-to-run spread (koide_unfiltered
// 0.377-0.380 -> 0.375-0.377, sim_street 0.204-0.206 -> 0.205-0.208). The miss is not explained:
// that A/B's arrival was relaxed after a fence restricted to shared memory (inline assembly), a
// form that never ran as committed code. One launch at a time needs one buffer: the non-leader
// pushes evaluation k + 1's sums after barrier k, which needs the leader's arrival, which comes
// after its reads of evaluation k's; and phase k + 1 of the mbarrier may count the bytes before
// the leader's expect_tx (the count goes below zero; the phase completes only with the arrival).
// Reference run (H100, commit d965bfb): v9 0.271, v10 0.255 ms on room_tutorial (12.63 and 12.12
// us per evaluation in the graph study, 12.74 and 12.19 at 66ea133; v3 ran 3% slower there too).
#include <cooperative_groups.h>
#include <cuda/atomic>

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <string>

#include "common/bulk_copy.cuh"
#include "gpu_kernels.cuh"
#include "ndt_graph/fixed_sum.hpp"
#include "ndt_graph/registry_detail.hpp"

namespace ndt {
namespace gpu {
namespace {

// Cluster sizes tried, largest first (portable ones: every sm_90 GPU schedules them): the grid
// takes the largest whose resident clusters give every chunk of points a block of its own (or,
// when none does, the most blocks). Measured (room_tutorial, 389 chunks): clusters of 8 fit 45 at
// once (360 blocks: 29 blocks evaluate two chunks, 8.6 against 6.2 us per evaluation on the H200).
// Launched now: clusters of 2, the non-leader's sums pushed to the leader by st.async (header: the
// cluster barrier's wait invalidates the SM's L1 at every evaluation). {8, 4, 2} and a kernel per
// size in resident_kernel_for give the earlier grids' choice (their push takes `peer` rows).
constexpr int kClusterSizes[] = {2};

// What the kernel reads and writes besides the map. The state starts from `guess` in every block
// (no init kernel); at the end block 0 writes the state and the trace rows straight to pinned host
// memory (no copies after the kernel), and a kernel that finds another cluster size or grid than
// it was compiled and sized for writes what it found to `found` (host) and does nothing.
struct ResidentArgs {
  const float* xyz;
  const AlignmentSlot* slot;
  const SolverConfig* cfg;
  const double* guess;
  double* cluster_sums;
  unsigned clusters;
  unsigned long long* exchange;
  TraceRow* trace;  // device: block 0's rows while it runs
  SolverState* state_out;
  TraceRow* trace_out;
  int trace_rows;
  unsigned* found;    // [0], [1]: the cluster size and grid found; [2]: the evaluations summed in order
  bool ordered_only;  // every evaluation to the ordered fallback (a test's), counted in found[2]
  // v10 (null for v9, whose runner copied the source): the pinned source, which the kernel reads
  // into `xyz` at its start (each block its own chunks, while thread 0 starts the state); block
  // 0's trace rows then go straight to `trace_out`, and at the end block 0 writes its span on the
  // global timer to done[1] and then 1 to done[0] (pinned), which the host polls.
  const float* host_xyz;
  float* xyz_out;  // v10: `xyz` itself (written only there, each block's chunks before it reads them)
  unsigned long long* done;
};

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// Given (not the exercise): where v10 differs, called by the kernel at its start, for block 0's
// trace rows and at its end. Nothing of it runs for v9 (host_xyz null) but the copy of the rows.
// v10, called by every thread of the block: this block's chunks of the pinned source into `xyz`,
// as eval_block deals them (chunk = block, block + grid, ...), by the threads from warp 1 on (warp
// 0's thread 0 starts the state meanwhile).
__device__ void mapped_source_in(const MapView& m, const ResidentArgs& a) {
  if (!a.host_xyz || threadIdx.x < 32) return;
  const AlignmentSlot sl = *a.slot;
  const int per = 3 * points_per_chunk(cells_per_point(m.search)), n = 3 * sl.count;
  const std::size_t at = 3 * static_cast<std::size_t>(sl.offset);
  const int first = static_cast<int>(threadIdx.x) - 32, stride = static_cast<int>(blockDim.x) - 32;
  for (int c = blockIdx.x; c * per < n; c += gridDim.x)
    for (int j = c * per + first; j < min(n, (c + 1) * per); j += stride) a.xyz_out[at + j] = a.host_xyz[at + j];
}
// Where block 0's solver writes the trace rows: v9 the device (copied at the end), v10 the host.
__device__ TraceRow* block0_rows(const ResidentArgs& a) {
  return blockIdx.x == 0 ? (a.host_xyz ? a.trace_out : a.trace) : nullptr;
}
// Block 0's end, every thread: the state and the rows to the host; v10 then its span (from
// `started`, global_ns() at its start) and the completion word the host polls.
__device__ void results_out(const ResidentArgs& a, const SolverState& st, unsigned ordered,
                            unsigned long long started) {
  const int tid = threadIdx.x;
  if (tid == 0) a.found[2] = ordered;
  block_copy(*a.state_out, st);
  if (!a.host_xyz) {
    auto* to = reinterpret_cast<unsigned long long*>(a.trace_out);
    const auto* from = reinterpret_cast<const unsigned long long*>(a.trace);
    const int words = a.trace_rows * static_cast<int>(sizeof(TraceRow) / 8);
    for (int j = tid; j < words; j += blockDim.x) to[j] = from[j];
    return;
  }
  __threadfence_system();  // this thread's writes to the host before the barrier
  __syncthreads();
  if (tid == 0) {
    a.done[1] = global_ns() - started;
    cuda::atomic_ref<unsigned long long, cuda::thread_scope_system> word(a.done[0]);
    word.store(1ull, cuda::memory_order_release);  // every write above before it, for the host
  }
}
#endif

// EXERCISE BEGIN
// An acquire at cluster or GPU scope invalidates the SM's whole L1 (SASS: CCTL.IVALL after the
// cluster barrier's wait and after every acquiring load of the poll), and with it the block's
// points, grid cells and voxels, which the next evaluation then reads from L2 again: the
// cluster's sums reach its leader by st.async on the leader's mbarrier (the wait's acquire
// restricted to shared memory: no invalidation), not through a cluster barrier, and the grid
// barrier's poll is relaxed (below).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// The solver, one thread's call: not inlined into the kernel, so its registers are not the
// evaluation's (inlined, the kernel spilled 8.9 KB at 4 blocks per SM).
// `resume`: null for the call with the evaluation's sums (true: a Newton step deferred), else the
// deferred step's solve ahead (solver_resume).
__device__ __noinline__ bool advance(SolverState& st, const SolverConfig* cfg, const double* sums, TraceRow* trace,
                                     const NewtonAhead* resume) {
  const SolverConfig c = *cfg;
  if (resume) {
    solver_resume(st, c, trace, *resume);
    return false;
  }
  return solver_advance(st, c, sums, true, trace, true);
}
// The Newton system's solve ahead of the solver (another warp's thread), out of line for the same
// reason.
__device__ __noinline__ void solve_ahead(const double* sums, NewtonAhead& a) { newton_ahead(sums, a); }
#endif

// The cluster size is compiled into the kernel (__cluster_dims__), not set at launch: a launch
// attribute is lost where a tool replays the launch (Nsight Compute's kernel replay ran it in
// clusters of 1), and a kernel that trusted it would write past its partials. Below sm_90 there
// are no clusters (the registry never runs it there).
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
#define NDT_CLUSTER_DIMS(n) __cluster_dims__(n, 1, 1)
#else
#define NDT_CLUSTER_DIMS(n)
#endif

// The exchange's words (one allocation, zeroed once when the runner is prepared; every launch
// leaves it zeroed): line 0 two counters (the leaders' arrivals over the whole run, the blocks
// out); then three sets of fixed-point accumulators, each value's two words and the set's overflow
// flag on lines of their own (128 bytes: the leaders' atomics on one word do not queue behind
// another's).
constexpr int kLineWords = 16;
constexpr int kSetWords = (2 * kSums + 1) * kLineWords;
constexpr int kExchangeWords = kLineWords + 3 * kSetWords;
// A cluster's partial is added as a 64-bit integer part and a 52-bit fraction (fixed_sum.hpp):
// integer sums, so every order of the leaders' atomics gives the same bits (deterministic). A
// partial of kFixedLimit or more, or not finite, raises the set's flag instead, and the
// evaluation's totals are then the partials added in order (the fallback).

// Cluster c's partial (the sum of its SIZE blocks' sums) of evaluation k is added to accumulator
// set k % 3 (integer atomics) and written to half k % 2 of `cluster_sums` (for the fallback; a
// block still reading evaluation k's cannot meet a leader writing evaluation k + 2's: that one has
// passed barrier k + 1, which needs every leader's arrival, and a leader arrives after its
// cluster's push of evaluation k + 1, which every block of the cluster makes after its reads).
// The counter counts the leaders' arrivals over the whole run: barrier k waits for
// (k + 1) x clusters. Past barrier k, block 0 zeroes set (k + 2) % 3: every block read evaluation
// k - 1's totals before its cluster's push of evaluation k, so before its leader arrived, and no
// leader adds evaluation k + 2's before barrier k + 1, which waits for block 0's arrival after the
// zeroing. The last block out zeroes the counters and the sets for the next launch (every other
// block has left the loop: no one polls or reads them). One request per pass (the serial line
// search: the registry gives v9 one candidate), as in v3. The push: a non-leader pushes
// evaluation k + 1's sums (st.async into its leader's `peer`) after it read evaluation k's totals,
// and its leader waits for the push's bytes before it adds and arrives. That the leader's reads of
// `peer` for evaluation k come before the push of k + 1 rests on the relaxed poll's ordering
// (below), as the totals' reads do: the leader reads, then arrives with a release; the non-leader
// sees the count, then pushes.
template <int SIZE>
__global__ void NDT_CLUSTER_DIMS(SIZE) __launch_bounds__(kBlock, 3) resident_kernel(MapView m, ResidentArgs a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  unsigned long long* const exchange = a.exchange;
  unsigned* const sync = reinterpret_cast<unsigned*>(exchange);  // [0] arrivals, [1] blocks out
  const unsigned clusters = a.clusters;
  if (cluster.num_blocks() != SIZE || gridDim.x != clusters * SIZE) {  // the same test in every block
    if (blockIdx.x == 0 && threadIdx.x == 0) a.found[0] = cluster.num_blocks(), a.found[1] = gridDim.x;
    return;
  }
  __shared__ EvalShared sh;
  __shared__ StepShared step;
  __shared__ double mine[kSums];                           // this block's sums (thread t writes and reads [t])
  __shared__ double peer[SIZE > 1 ? SIZE - 1 : 1][kSums];  // a leader's: its other blocks' sums (st.async)
  __shared__ std::uint64_t sums_in;  // a leader's mbarrier: counts peer's bytes in, one phase per evaluation
  __shared__ NewtonAhead ahead;
  __shared__ unsigned long long overflow;
  __shared__ bool last_out;
  __shared__ SolverConfig cfg;  // read by the solver at the start of every call: not through L1
  unsigned ordered = 0;         // evaluations summed in order (thread 0; block 0 reports it)
  const int tid = threadIdx.x;
  const bool leader = cluster.block_rank() == 0;
  const unsigned long long started = global_ns();  // block 0's span (v10's kernel time)
  if (tid == 0) {
    double g[6];
    for (int j = 0; j < 6; ++j) g[j] = a.guess[j];
    solver_init(step.st, g);
    cfg = *a.cfg;
    cfg.defer_transform = 1;  // the request's matrix by warp 0 after the solver (below)
  }
  mapped_source_in(m, a);  // v10's source (given: it does nothing for v9)
  if constexpr (SIZE > 1) {
    if (leader && tid == 0) {
      common::mbarrier_init(&sums_in, 1);
      common::mbarrier_init_fence();
    }
    cluster.sync();  // the leader's barrier is set before any block stores to it (an L1 invalidation, once)
  } else {
    __syncthreads();
  }
  for (unsigned k = 0; !solver_done(step.st); ++k) {
    eval_block(m, a.xyz, *a.slot, step.st.req, cfg, blockIdx.x, gridDim.x, mine, sh);
    // every block's sums are in its shared memory (thread t wrote mine[t]: it alone reads it);
    // a non-leader pushes them into its leader's `peer` row
    if constexpr (SIZE > 1)
      if (!leader &&
          tid < kSums)  // thread t's sum into its row of the leader's `peer`, counted on the leader's barrier
        common::store_async_remote(cluster.map_shared_rank(&peer[cluster.block_rank() - 1][tid], 0), mine[tid],
                                   cluster.map_shared_rank(&sums_in, 0));
    // the leader waits for its cluster's push, adds the cluster's sum to the set and arrives (one
    // atomic per cluster); every block polls the barrier and reads the set's totals itself
    double* sums = a.cluster_sums + static_cast<std::size_t>(k & 1) * clusters * kSums;
    unsigned long long* set = exchange + kLineWords + (k % 3) * kSetWords;
    cuda::atomic_ref<unsigned, cuda::thread_scope_device> arrivals(*sync);
    if (leader) {
      if constexpr (SIZE > 1)
        if (tid == 0)  // this phase's one arrival, and the bytes it waits for
          common::mbarrier_arrive_expect_tx(&sums_in, (SIZE - 1) * kSums * sizeof(double));
      if (tid < kSums) {
        double t = mine[tid];
        if constexpr (SIZE > 1) {
          common::mbarrier_wait_cluster_data(&sums_in, k & 1);
          for (int r = 1; r < SIZE; ++r) t += peer[r - 1][tid];
        }
        sums[blockIdx.x / SIZE * kSums + tid] = t;
        std::uint64_t whole, frac;
        if (!a.ordered_only && clusters <= kMaxFixedPartials && to_fixed(t, kFixedLimit, whole, frac)) {
          atomicAdd(set + tid * kLineWords, static_cast<unsigned long long>(whole));
          atomicAdd(set + (kSums + tid) * kLineWords, static_cast<unsigned long long>(frac));
        } else {
          atomicOr(set + 2 * kSums * kLineWords, 1ull);
        }
      }
      __syncthreads();
      // the arrival releases the block's partial and atomics (the barrier above ordered them
      // before it): they are at L2 before the count that includes it
      if (tid == 0) arrivals.fetch_add(1u, cuda::memory_order_release);
    }
    // The poll is relaxed: an acquiring load (or the fence after a relaxed one that CUB's
    // decoupled look-back has) invalidates this SM's L1, the evaluation's points, grid cells and
    // voxels. The memory model wants that acquire: without it nothing in the model orders the
    // leaders' atomics before the totals' loads. What orders them is the hardware: each leader's
    // releasing arrival reaches L2 after its atomics, the loads below are issued only once the
    // count is seen, and they are relaxed atomic loads at device scope (coherent, from L2), as is
    // the zeroing block 0 stores (the fallback's partials go through __ldcg in reduce_partials).
    // Measured: ~1.1 us per evaluation against the acquiring poll (header).
    if (tid == 0)
      while (arrivals.load(cuda::memory_order_relaxed) < (k + 1) * clusters) {}
    __syncthreads();
    // the totals' words and the set's flag in one round of loads (the flag decides only after it)
    std::uint64_t whole = 0, frac = 0;
    using Word = cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>;
    if (tid < kSums)
      whole = Word(set[tid * kLineWords]).load(cuda::memory_order_relaxed),
      frac = Word(set[(kSums + tid) * kLineWords]).load(cuda::memory_order_relaxed);
    if (tid == kSums) overflow = Word(set[2 * kSums * kLineWords]).load(cuda::memory_order_relaxed);
    if (blockIdx.x == 0 && tid <= 2 * kSums)
      Word(exchange[kLineWords + ((k + 2) % 3) * kSetWords + tid * kLineWords]).store(0, cuda::memory_order_relaxed);
    __syncthreads();
    if (overflow) {
      reduce_partials(sums, static_cast<int>(clusters), step);
      ordered += tid == 0;
    } else if (tid < kSums) {
      step.sums[tid] = from_fixed(whole, frac);
    }
    __syncthreads();  // the totals are in step.sums
    // thread 0 runs the solver, warp 1's first thread solves the Newton system of the same sums
    TraceRow* const rows = block0_rows(a);
    bool deferred = false;
    if (tid == 32) solve_ahead(step.sums, ahead);
    if (tid == 0) deferred = advance(step.st, &cfg, step.sums, rows, nullptr);
    __syncthreads();  // the solve ahead is done
    if (tid == 0 && deferred) advance(step.st, &cfg, nullptr, rows, &ahead);
    if (tid < 32) {  // the request's matrix: the three angles' sines and cosines in lanes 0..2 at once
      __syncwarp();
      EvalRequest& r = step.st.req;
      if (r.transform_pending) {
        float sv = 0, cv = 0;
        if (tid < 3) float_angle_sin_cos(static_cast<float>(r.pose[3 + tid]), sv, cv);
        float s3[3], c3[3];
        for (int j = 0; j < 3; ++j) s3[j] = __shfl_sync(0xffffffffu, sv, j), c3[j] = __shfl_sync(0xffffffffu, cv, j);
        __syncwarp();  // every lane has read the flag
        if (tid == 0) float_transform_from(s3, c3, r.pose, r.T), r.transform_pending = 0;
      }
    }
    __syncthreads();
  }
  if (blockIdx.x == 0) results_out(a, step.st, ordered, started);
  if (tid == 0) {
    __threadfence();  // this block's reads before its count
    last_out = atomicAdd(sync + 1, 1u) == gridDim.x - 1;
    __threadfence();  // every other block's reads before the zeroing
  }
  __syncthreads();
  if (last_out) {
    __threadfence();
    for (int j = tid; j < kExchangeWords; j += blockDim.x) exchange[j] = 0;
  }
  // A safeguard: every push was waited for by its leader in the loop; no block leaves while
  // another of its cluster might still touch its shared memory.
  cluster.sync();
#endif
}

using ResidentKernel = void (*)(MapView, ResidentArgs);
ResidentKernel resident_kernel_for(int size) {
  static_assert(sizeof(kClusterSizes) / sizeof(kClusterSizes[0]) == 1, "a kernel per cluster size: add its case");
  if (size != kClusterSizes[0])
    throw std::invalid_argument("resident_kernel_for: clusters of " + std::to_string(size) + ", compiled for " +
                                std::to_string(kClusterSizes[0]));
  return resident_kernel<kClusterSizes[0]>;
}
// EXERCISE END

// The launch: `clusters` clusters of `size` blocks, cooperative (all resident at once, or it fails).
cudaError_t launch_resident(int clusters, int size, cudaStream_t s, const MapView& m, const ResidentArgs& args) {
  // EXERCISE BEGIN body unused(clusters, size, s, m, args)
  cudaLaunchConfig_t c = {};
  c.gridDim = dim3(static_cast<unsigned>(clusters * size));
  c.blockDim = dim3(kBlock);
  c.stream = s;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeCooperative;
  attr[0].val.cooperative = 1;
  c.attrs = attr;
  c.numAttrs = 1;
  return cudaLaunchKernelEx(&c, resident_kernel_for(size), m, args);
  // EXERCISE END
}

// The most clusters of `size` blocks of resident_kernel that fit on this GPU at once.
int max_resident_clusters(int size) {
  // EXERCISE BEGIN body unused(size)
  cudaLaunchConfig_t c = {};
  c.gridDim = dim3(static_cast<unsigned>(size));
  c.blockDim = dim3(kBlock);
  int clusters = 0;
  CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, resident_kernel_for(size), &c));
  return clusters;
  // EXERCISE END
}

class ResidentRunner : public DeviceRunner {
 public:
  // `ordered_only`: every evaluation's totals by the ordered fallback (a test's); `ordered`, when
  // given, receives after each result() how many evaluations went there. `mapped`: v10's round
  // trip (one graph launch, the source read by the kernel from pinned memory, the answer and its
  // completion word in pinned memory, polled).
  explicit ResidentRunner(bool ordered_only = false, int* ordered = nullptr, bool mapped = false)
      : ordered_only_(ordered_only), ordered_(ordered), mapped_(mapped) {
    found_.resize(3);  // enqueue writes it whatever prepare does
    done_.resize(2);
  }
  ~ResidentRunner() override {
    // wait() may return while the kernel's last blocks still leave (v10): nothing is freed under them
    (void)cudaStreamSynchronize(a_.stream.get());
    if (exec_) (void)cudaGraphExecDestroy(exec_);
  }
  void prepare(const Problem& p) override {
    // The kernel evaluates one request per pass and takes its matrix (defer_transform) for that
    // one: the parallel line search's candidates are v6's.
    if (p.params.line_search_candidates != 1)
      throw std::invalid_argument(name() + ": one line-search candidate per pass, not " +
                                  std::to_string(p.params.line_search_candidates));
    if (exec_) (void)cudaGraphExecDestroy(exec_), exec_ = nullptr;  // v10: its buffers are about to move
    a_.prepare(p);
    // EXERCISE BEGIN body
    const int per_chunk = points_per_chunk(cells_per_point(p.params.search));
    const long long chunks = (static_cast<long long>(p.source->size()) + per_chunk - 1) / per_chunk;
    clusters_ = 0;
    for (int size : kClusterSizes) {
      const int fit = max_resident_clusters(size);
      // no more clusters than the evaluation has chunks of points for, nor than the fixed-point
      // words hold partials of
      const int use = static_cast<int>(
          std::min<long long>({fit, (chunks + size - 1) / size, static_cast<long long>(kMaxFixedPartials)}));
      if (use * size > clusters_ * size_) clusters_ = use, size_ = size;
      if (static_cast<long long>(use) * size >= chunks) break;
    }
    if (clusters_ < 1)
      throw std::runtime_error(name() +
                               ": no thread-block cluster fits on this GPU "
                               "(cudaOccupancyMaxActiveClusters)");
    cluster_sums_.resize(2 * static_cast<std::size_t>(clusters_) * kSums);
    exchange_.resize(kExchangeWords);
    // zeroed once, on the alignment's stream (the launches' order): every launch leaves it zeroed
    // (its last block out)
    CUDA_CHECK(cudaMemsetAsync(exchange_.get(), 0, kExchangeWords * sizeof(unsigned long long), a_.stream.get()));
    // EXERCISE END
    if (mapped_) capture();
  }
  // The run: the source up, the one launch (the kernel starts the state from the guess and writes
  // the state and the trace rows to pinned host memory, so nothing is copied back and no init
  // kernel runs; the exchange is left zeroed by the previous launch). The exercise is the kernel,
  // its launch and the grid's size.
  void enqueue() override {
    cudaStream_t s = a_.stream.get();
    found_[0] = found_[1] = found_[2] = 0;  // the previous run is over (the runner waited for it)
    if (mapped_) {  // v10: the word the kernel sets last, then the one launch of the captured graph
      done_[0] = 0;
      check_launch(cudaGraphLaunch(exec_, s));
      return;
    }
    a_.upload_source(s);
    start_.record(s);
    check_launch(launch_resident(clusters_, size_, s, a_.view, args()));
    stop_.record(s);
  }
  // v10: the run is over for the caller when the kernel's completion word is set (the state, the
  // rows and `found` are in pinned memory before it); the stream is asked now and then, so that a
  // kernel that failed, or left without computing (a wrong cluster size), ends the wait too. The
  // kernel's last blocks may still be leaving: whatever touches the runner's buffers next goes
  // through its stream (DeviceAlignment::reload syncs it first) or waits for it (the destructor).
  void wait() override {
    if (!mapped_) return DeviceRunner::wait();
    const volatile unsigned long long* word = done_.get();
    for (unsigned spins = 1;; ++spins) {
      if (*word) break;
      if (spins % 4096 == 0) {
        const cudaError_t e = cudaStreamQuery(a_.stream.get());
        if (e == cudaSuccess) {  // the kernel is over: its word is final
          if (!*word && found_[0] == 0)
            throw std::runtime_error(name() +
                                     ": the kernel ended without its completion word (block 0 never reached "
                                     "results_out): no result");
          break;
        }
        if (e != cudaErrorNotReady) CUDA_CHECK(e);
      }
    }
    std::atomic_thread_fence(std::memory_order_seq_cst);  // the results after the word
  }
  AlignResult result() override {
    if (found_.size() > 0 && found_[0] != 0)
      throw std::runtime_error(name() + ": the kernel ran in clusters of " + std::to_string(found_[0]) +
                               " blocks in a grid of " + std::to_string(found_[1]) + ", not the " +
                               std::to_string(clusters_) + " clusters of " + std::to_string(size_) +
                               " it was compiled and sized for (a tool replaying the launch?): it computed nothing");
    if (ordered_) *ordered_ = static_cast<int>(found_[2]);
    return DeviceRunner::result();
  }
  // v10: block 0's span on the global timer (as v2-v8's kernel clocks), not events around it
  double kernel_ms() const override { return mapped_ ? static_cast<double>(done_[1]) / 1e6 : stop_.since(start_); }
  // One kernel: its evaluation, reduction and solve have no clock of their own.
  KernelSplit kernel_split() const override { return {}; }

 private:
  ResidentArgs args() {
    return ResidentArgs{a_.xyz.get(),
                        a_.slot.get(),
                        a_.d_cfg.get(),
                        a_.guess.get(),
                        cluster_sums_.get(),
                        static_cast<unsigned>(clusters_),
                        exchange_.get(),
                        a_.trace.get(),
                        a_.h_state_.get(),
                        a_.h_trace_.get(),
                        a_.max_iter + 1,
                        found_.get(),
                        ordered_only_,
                        mapped_ ? a_.h_xyz_.get() : nullptr,
                        mapped_ ? a_.xyz.get() : nullptr,
                        done_.get()};
  }
  void check_launch(cudaError_t e) {
    if (e == cudaErrorCooperativeLaunchTooLarge) {
      (void)cudaGetLastError();
      throw std::runtime_error(name() + ": " + std::to_string(clusters_) + " clusters of " + std::to_string(size_) +
                               " blocks cannot be resident at once on this GPU (at most " +
                               std::to_string(max_resident_clusters(size_)) + "): cudaErrorCooperativeLaunchTooLarge");
    }
    CUDA_CHECK(e);
  }
  // v10: the one launch, captured as a graph once the problem is prepared (its arguments are the
  // runner's buffers, the same on every run).
  void capture() {
    cudaStream_t s = a_.stream.get();      // (prepare dropped the previous graph)
    CUDA_CHECK(cudaStreamSynchronize(s));  // the exchange's zeroing is done
    cudaGraph_t g = nullptr;
    CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    cudaError_t launched = cudaSuccess;
    try {
      launched = launch_resident(clusters_, size_, s, a_.view, args());
    } catch (...) {  // a launch that throws (the handout's, unwritten): the capture ends before it leaves
      if (cudaStreamEndCapture(s, &g) == cudaSuccess && g) (void)cudaGraphDestroy(g);
      throw;
    }
    const cudaError_t ended = cudaStreamEndCapture(s, &g);
    if ((launched != cudaSuccess || ended != cudaSuccess) && g) (void)cudaGraphDestroy(g), g = nullptr;
    check_launch(launched);
    CUDA_CHECK(ended);
    cudaGraphExec_t made_exec = nullptr;
    const cudaError_t made = cudaGraphInstantiate(&made_exec, g, 0);
    (void)cudaGraphDestroy(g);
    check_launch(made);
    exec_ = made_exec;
  }
  std::string name() const { return mapped_ ? "v10_mapped_io" : "v9_resident_clusters"; }

  bool ordered_only_;
  int* ordered_;
  bool mapped_;
  common::PinnedBuffer<unsigned long long> done_;  // v10: [0] the completion word, [1] block 0's span (ns)
  cudaGraphExec_t exec_ = nullptr;
  int clusters_ = 0, size_ = 0;  // clusters of size_ blocks
  common::DeviceBuffer<double> cluster_sums_;
  common::DeviceBuffer<unsigned long long> exchange_;  // the barrier's counters and the accumulator sets
  common::PinnedBuffer<unsigned> found_;
  common::Event start_, stop_;
};

}  // namespace

std::unique_ptr<Runner> make_resident_runner(bool mapped) {
  return std::make_unique<ResidentRunner>(false, nullptr, mapped);
}

}  // namespace gpu

std::unique_ptr<Runner> make_v9_resident_clusters() { return gpu::make_resident_runner(false); }
std::unique_ptr<Runner> make_v9_resident_clusters_counting(bool ordered_only, int* ordered) {
  return std::make_unique<gpu::ResidentRunner>(ordered_only, ordered);
}

int v9_resident_clusters_resident_blocks() {
  int most = 0;
  for (int size : gpu::kClusterSizes) most = std::max(most, gpu::max_resident_clusters(size) * size);
  return most;
}

}  // namespace ndt
