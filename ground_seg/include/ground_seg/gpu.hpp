// GPU versions of the ground segmentation. Each takes host points and returns the same Result as
// the CPU reference (labels and cell statistics), so every version is checked against it.
#pragma once
#include "common/bench.hpp"
#include <string>
#include <utility>
#include <vector>

#include "common/roofline.hpp"
#include "ground_seg/ground_seg.hpp"

namespace ground_seg {

// v1: per-cell sums, min and max with atomics, one thread per cell for the classification
// reading its neighbours from global memory, host round trips between the passes.
Result segment_gpu_naive(const common::PointCloud& pc, const Params& p, Outputs out = Outputs::labels_and_cells);
// v2: the library route: CUB radix sort of the points by cell, run-length encoding and
// segmented reductions for the statistics (deterministic order).
Result segment_gpu_cub(const common::PointCloud& pc, const Params& p, Outputs out = Outputs::labels_and_cells);

}  // namespace ground_seg

namespace ground_seg {

// Roofline cost (DRAM bytes, launches) of each kernel stage of v3/v4 for n points and the grid:
// assign reads x, y and writes cell and row (16 B/point); scatter reads z, cell, row and the
// cell's offset and writes z (20 B/point); statistics read the sorted z twice (8 B/point) and
// write 4 floats per occupied cell over 7 launches; classification reads count and variance and
// writes two flags per cell; labels read x, y, z and write a byte per point (13 B/point).
std::vector<std::pair<std::string, common::CostModel>> stage_costs(std::size_t n, const Params& p);

// Per-phase wall times (ms) of the frames run with it, in order: the report's per-phase table.
using Phases = common::StageTimes;

// v3: the report's GPU design (assign + histogram with atomic row index, host scan and grouping,
// scatter, grouped warp-shuffle / block statistics, tiled classification), buffers allocated per
// frame, host work between the stages.
Result segment_gpu_grouped_stats(const common::PointCloud& pc, const Params& p, Phases* phases = nullptr,
                                 Outputs out = Outputs::labels_and_cells);
// v4: the same stages all on the device, buffers allocated once, pinned memory, one CUDA graph
// per frame size. Kernel time is recorded inside the graph.
Result segment_gpu_graph(const common::PointCloud& pc, const Params& p, Phases* phases = nullptr,
                         Outputs out = Outputs::labels_and_cells);
// v5: `frames` copies of the scan pushed through `streams` engines: frames/s and per-frame latency.
struct StreamedRun {
  double frames_per_second = 0, median_latency_ms = 0, total_ms = 0;
};
StreamedRun segment_gpu_streamed(const common::PointCloud& pc, const Params& p, int streams, int frames,
                                 std::vector<std::uint8_t>* last_labels = nullptr);

}  // namespace ground_seg
