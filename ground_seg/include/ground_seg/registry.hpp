// The single list of ground_seg versions. v5 (streamed frames) has no single-frame run: it changes
// throughput, not a frame's result; the driver measures it with segment_gpu_streamed and checks
// its labels against the reference's.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/registry.hpp"
#include "ground_seg/ground_seg.hpp"
#include "ground_seg/engine.hpp"
#include "ground_seg/gpu.hpp"

namespace ground_seg {

struct Version : common::Entry {
  // A fresh runner of this version (common::Runner: prepare for a frame, enqueue, wait, result);
  // null for v5, which has no single-frame run of its own.
  std::function<std::unique_ptr<FrameRunner>()> make;
  // Its frame by phases (each synchronized), for the per-phase table; nullptr: none.
  Result (*phases)(const common::PointCloud&, const Params&, Phases*, Outputs) = nullptr;
};

// A version that is a function of the frame, as a runner.
inline std::function<std::unique_ptr<FrameRunner>()> call(Result (*fn)(const common::PointCloud&, const Params&,
                                                                       Outputs)) {
  return [fn] {
    return common::make_call_runner<Frame, Result>([fn](const Frame& f) { return fn(*f.cloud, f.params, f.outputs); });
  };
}

inline const std::vector<Version>& versions() {
  using common::kOnCpu;
  using common::kOnGpu;
  using common::Role;
  // clang-format off: the registry is a table, one entry per line
  static const std::vector<Version> v = {
      // {{id, name, file, idea, role, where it runs}, make a runner[, its frame by phases]}
      {{"cpu", "cpu", "src/reference.cpp", "the report's algorithm, single thread, float64 sums: the reference", Role::reference, kOnCpu},
       call([](const common::PointCloud& pc, const Params& p, Outputs) { return segment_cpu(pc, p); })},
      {{"omp", "cpu_openmp", "src/cpu.cpp", "the same on every core (OpenMP), per-thread partial sums", Role::version, kOnCpu},
       call([](const common::PointCloud& pc, const Params& p, Outputs) { return segment_cpu_openmp(pc, p); })},
      {{"v1", "v1_naive", "src/v1_naive.cu", "atomics for per-cell sums/min/max, host round trips between the passes", Role::version, kOnGpu},
       call(segment_gpu_naive)},
      {{"v2", "v2_cub", "src/v2_cub.cu", "library route: CUB radix sort by cell, run-length encode, segmented reductions", Role::library, kOnGpu},
       call(segment_gpu_cub)},
      {{"v3", "v3_grouped_stats", "src/v3_grouped_stats.cu", "report's GPU design: atomic row index, grouped warp/block statistics, tiled classification", Role::version, kOnGpu},
       call([](const common::PointCloud& pc, const Params& p, Outputs o) { return segment_gpu_grouped_stats(pc, p, nullptr, o); }),
       segment_gpu_grouped_stats},
      {{"v4", "v4_graph", "src/v4_graph.cu", "all on the device, buffers once, pinned memory, the frame as one CUDA graph", Role::version, kOnGpu},
       [] { return std::unique_ptr<FrameRunner>(new FrameEngine()); }},
      {{"v5", "v5_streams", "src/v5_streams.cu", "several frames in flight, one graph engine per stream", Role::version, kOnGpu}, nullptr},
  };
  // clang-format on
  return v;
}

// One run of a version on one frame (prepare, run, result): what a test or a one-off caller needs.
inline Result run_once(const Version& v, const common::PointCloud& pc, const Params& p,
                       Outputs out = Outputs::labels_and_cells) {
  auto r = v.make();
  r->prepare({&pc, p, out});
  r->run();
  return r->result();
}

inline const Version* find_version(const std::string& name) { return common::find_version(versions(), name); }

}  // namespace ground_seg
