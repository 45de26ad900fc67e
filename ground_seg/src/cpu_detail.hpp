// The pieces of the CPU reference (src/reference.cpp) the OpenMP exercise (src/cpu.cpp) builds on.
#pragma once
#include <cstddef>
#include <vector>

#include "ground_seg/ground_seg.hpp"

namespace ground_seg {

// The classification of the cells and the labels of the points from the cell statistics;
// parallel: split the classification and the labels over OpenMP threads (segment_cpu_openmp)
void classify_and_label(const common::PointCloud& pc, const Params& p, const std::vector<int>& cell_of_point, Result& r,
                        bool parallel);

// Empty-cell conventions: count 0, mean and variance 0, min +inf, max -inf, not ground.
void reset_cells(CellStats& c, std::size_t cells);

}  // namespace ground_seg
