// The single list of ground_seg versions. v5 (streamed frames) is measured by the driver with
// segment_gpu_streamed: it changes throughput, not the frame's result.
#pragma once
#include <string>
#include <vector>

#include "ground_seg/ground_seg.hpp"
#include "ground_seg/gpu.hpp"

namespace ground_seg {

struct Version {
  std::string id, name, idea;
  bool needs_gpu;
  Result (*run)(const common::PointCloud&, const Params&);
};

inline const std::vector<Version>& versions() {
  static const std::vector<Version> v = {
      {"cpu", "cpu", "the seed's algorithm, single thread, float64 sums: the reference", false, segment_cpu},
      {"omp", "cpu_openmp", "the same on every core (OpenMP), per-thread partial sums", false, segment_cpu_openmp},
      {"v1", "v1_naive", "atomics for per-cell sums/min/max, host round trips between the passes", true, segment_gpu_naive},
      {"v2", "v2_cub", "library route: CUB radix sort by cell, run-length encode, segmented reductions", true, segment_gpu_cub},
      {"v3", "v3_seed_design", "seed's design: atomic row index, grouped warp/block statistics, tiled classification", true,
       [](const common::PointCloud& pc, const Params& p) { return segment_gpu_seed_design(pc, p); }},
      {"v4", "v4_graph", "all on the device, buffers once, pinned memory, the frame as one CUDA graph", true,
       [](const common::PointCloud& pc, const Params& p) { return segment_gpu_graph(pc, p); }},
  };
  return v;
}

}  // namespace ground_seg
