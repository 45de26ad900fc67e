// The version interface and registry of ndt_graph. A version owns resources (device map, buffers,
// streams, captured graphs), so it is a common::Runner: prepared once for a problem (map, source,
// params), then run any number of times (enqueue + wait: one whole alignment from the guess, the
// source upload included, ending with the result on the host), then read back.
#pragma once
#include <functional>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/bench.hpp"
#include "common/registry.hpp"
#include "common/requirements.hpp"
#include "common/runner.hpp"
#include "ndt_graph/ndt.hpp"

namespace ndt {

struct Problem {
  const VoxelMap* map = nullptr;
  const common::PointCloud* target = nullptr;  // the unfiltered-by-NDT target (the PCL version builds its own map)
  const common::PointCloud* source = nullptr;
  NdtParams params;
  double guess[6] = {};
};

// Where the last run's kernel time went (ms, summed over its evaluations; NaN where a version does
// not measure it): the evaluation kernels, and the step kernels' reduction of the per-block
// partials, their solve (one thread's solver_advance) and their bookkeeping (the solver state
// copied in and out). The four add up to kernel_ms().
struct KernelSplit {
  double eval_ms = std::numeric_limits<double>::quiet_NaN(), reduce_ms = std::numeric_limits<double>::quiet_NaN();
  double solve_ms = std::numeric_limits<double>::quiet_NaN(), bookkeeping_ms = std::numeric_limits<double>::quiet_NaN();
};

// kernel_ms(): the device time of the last run's kernels, NaN where not measured.
class Runner : public common::Runner<Problem, AlignResult> {
 public:
  virtual KernelSplit kernel_split() const { return {}; }
  // --fresh-inputs: the prepared problem with other data of the same shape (a map with as many
  // voxels and slots, clouds with as many points, the same parameters), copied into what the next
  // enqueue reads by the harness's code. Never the version's own prepare: a version that saw its
  // input there could compute the answer untimed.
  virtual void reload(const Problem& p) {
    (void)p;
    throw std::logic_error("this version cannot take a fresh input (ndt::Runner::reload)");
  }
};

using Role = common::Role;

// Evaluations per graph launch of v4 and v8 (the plan's knob, between 4 and 8; --graph-study
// sweeps it).
constexpr int kGraphBatchUnrolled = 8;

struct Version : common::Entry {
  double predicted_us_per_eval;                   // the launch/sync cost model: what each evaluation should cost
  std::function<std::unique_ptr<Runner>()> make;  // null: not built here (e.g. PCL missing)
  std::string unavailable;                        // why make is null
  // > 1: the version runs the parallel line search with this many candidates per pass; it is
  // then checked against the CPU reference run with the same line search (PCL's path is not
  // its path wherever PCL needed extra trials), and its distance from PCL's path is reported.
  int line_search_candidates = 1;
  // The version this one adds its idea to, when it is not the one listed before it ("x prev" is
  // taken against that one).
  std::string builds_on = "";
  // Many alignments in one launch (make_batch_runner): the batch and multi-hypothesis rows, not
  // the per-alignment table (make is null).
  bool batched = false;
  // A version whose graph unrolls a number of evaluations per launch: its runner with `unrolled`
  // of them (make() is its own number; --graph-study sweeps it). Null for the others.
  std::function<std::unique_ptr<Runner>(int unrolled)> make_unrolled = nullptr;
  // The design's claim for this version, which --graph-study measures: `claimed_speedup` times the
  // speed of the version named `claimed_over` (0: none).
  double claimed_speedup = 0;
  std::string claimed_over = "";
  // A version that keeps its whole grid resident (a cooperative launch): how many blocks of its
  // kernel fit on this GPU at once (--graph-study reports the points they cover). Null otherwise.
  std::function<int()> resident_blocks = nullptr;
  NdtParams params_for(NdtParams base) const {
    base.line_search_candidates = line_search_candidates;
    return base;
  }
};

const std::vector<Version>& versions();

// Batched alignments (v7): many (source, guess) pairs against one map in one graph launch.
struct BatchItem {
  const common::PointCloud* source;
  double guess[6];
};
struct BatchProblem {
  const VoxelMap* map = nullptr;
  std::vector<BatchItem> items;
  NdtParams params;
};
class BatchRunner : public common::Runner<BatchProblem, std::vector<AlignResult>> {
 public:
  // --fresh-inputs: Runner::reload for a batch (its items in the prepared order).
  virtual void reload(const BatchProblem& p) {
    (void)p;
    throw std::logic_error("this version cannot take fresh inputs (ndt::BatchRunner::reload)");
  }
};
std::unique_ptr<BatchRunner> make_batch_runner();

// The GPU target-map build (sort by cell, per-voxel statistics in file order, hash insert); the
// result is copied back so it can be compared with build_voxel_map. `device_ms` receives the
// build's own time (events, the upload excluded) when not null.
VoxelMap build_voxel_map_gpu(const common::PointCloud& target, float resolution, float* device_ms = nullptr);
// The GPU VoxelGrid filter (sort by leaf, segmented sums in file order): the same points as
// voxel_grid_filter.
common::PointCloud voxel_grid_filter_gpu(const common::PointCloud& in, float leaf, float* device_ms = nullptr);

// The launch-strategy micro-benchmark (launch_bench.cu): five dependent empty kernels per
// iteration driven from a stream (with and without a host sync per iteration), by a graph of 8
// unrolled iterations, by a conditional WHILE graph, and inside one cooperative kernel with grid
// syncs (48 blocks and a full resident grid). Each checks that every kernel step ran.
struct LaunchStrategyResult {
  std::string name, idea;
  int blocks = 1;
  int kernels_per_iteration = 0;  // the dependent kernels (or grid syncs) of one iteration
  common::BenchStats stats;       // per whole run of `iterations`
  double us_per_iteration = 0;
};
std::vector<LaunchStrategyResult> launch_strategy_benchmark(int iterations, int repeats);

}  // namespace ndt
