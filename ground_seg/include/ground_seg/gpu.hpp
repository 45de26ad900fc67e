// GPU versions of the ground segmentation. Each takes host points and returns the same Result as
// the CPU reference (labels and cell statistics), so every version is checked against it.
#pragma once
#include "ground_seg/ground_seg.hpp"

namespace ground_seg {

// v1: per-cell sums, min and max with atomics, one thread per cell for the classification
// reading its neighbours from global memory, host round trips between the passes.
Result segment_gpu_naive(const common::PointCloud& pc, const Params& p);
// v2: the library route: CUB radix sort of the points by cell, run-length encoding and
// segmented reductions for the statistics (deterministic order).
Result segment_gpu_cub(const common::PointCloud& pc, const Params& p);

}  // namespace ground_seg
