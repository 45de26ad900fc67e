// The single list of ground_seg versions. v5 (streamed frames) has no single-frame run: it changes
// throughput, not a frame's result; the driver measures it with segment_gpu_streamed and checks
// its labels against the reference's.
#pragma once
#include <string>
#include <vector>

#include "common/registry.hpp"
#include "ground_seg/ground_seg.hpp"
#include "ground_seg/gpu.hpp"

namespace ground_seg {

struct Version {
  std::string id, name, idea;
  common::Role role;  // reference (x CPU), library (the CUB route, x lib), version
  bool needs_gpu;
  Result (*run)(const common::PointCloud&, const Params&, Outputs);  // nullptr: streamed (v5)
  // Its frame by phases (each synchronized), for the per-phase table; nullptr: none.
  Result (*phases)(const common::PointCloud&, const Params&, Phases*, Outputs) = nullptr;
  // Timed as a warm frame engine (graph captured once, replayed from pinned memory) rather than
  // call by call.
  bool warm_engine = false;
};

inline const std::vector<Version>& versions() {
  using common::Role;
  static const std::vector<Version> v = {
      {"cpu", "cpu", "the seed's algorithm, single thread, float64 sums: the reference", Role::reference, false,
       [](const common::PointCloud& pc, const Params& p, Outputs) { return segment_cpu(pc, p); }},
      {"omp", "cpu_openmp", "the same on every core (OpenMP), per-thread partial sums", Role::version, false,
       [](const common::PointCloud& pc, const Params& p, Outputs) { return segment_cpu_openmp(pc, p); }},
      {"v1", "v1_naive", "atomics for per-cell sums/min/max, host round trips between the passes", Role::version, true,
       [](const common::PointCloud& pc, const Params& p, Outputs o) { return segment_gpu_naive(pc, p, o); }},
      {"v2", "v2_cub", "library route: CUB radix sort by cell, run-length encode, segmented reductions", Role::library, true,
       [](const common::PointCloud& pc, const Params& p, Outputs o) { return segment_gpu_cub(pc, p, o); }},
      {"v3", "v3_seed_design", "seed's design: atomic row index, grouped warp/block statistics, tiled classification", Role::version, true,
       [](const common::PointCloud& pc, const Params& p, Outputs o) { return segment_gpu_seed_design(pc, p, nullptr, o); },
       segment_gpu_seed_design},
      {"v4", "v4_graph", "all on the device, buffers once, pinned memory, the frame as one CUDA graph", Role::version, true,
       [](const common::PointCloud& pc, const Params& p, Outputs o) { return segment_gpu_graph(pc, p, nullptr, o); },
       nullptr, true},
      {"v5", "v5_streams", "several frames in flight, one graph engine per stream", Role::version, true, nullptr},
  };
  return v;
}

inline const Version* find_version(const std::string& name) { return common::find_version(versions(), name); }

}  // namespace ground_seg
