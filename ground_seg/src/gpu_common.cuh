// Pieces every GPU version shares: the cell of a point, the cell classification (variance and
// improved rules) and the point labels, written to mirror cpu.cpp line for line so the labels
// match the reference exactly whenever the statistics do.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

#include "ground_seg/ground_seg.hpp"

namespace ground_seg {
namespace gpu {

struct Grid {
  float x_min, x_max, y_min, y_max, cell;
  int nx, ny;
  unsigned point_threshold;
  float var_threshold, height_threshold;
  bool improved;
  int radius_cells;
  float raised_threshold;
};
Grid make_grid(const Params& p);

__device__ __forceinline__ int cell_index(const Grid& g, float x, float y) {
  if (!(x >= g.x_min && x < g.x_max && y >= g.y_min && y < g.y_max)) return -1;
  const int cx = min(g.nx - 1, static_cast<int>((x - g.x_min) / g.cell));
  const int cy = min(g.ny - 1, static_cast<int>((y - g.y_min) / g.cell));
  return cy * g.nx + cx;
}

// Order-preserving map of floats onto unsigned ints, for atomicMin/atomicMax on floats.
__device__ __forceinline__ unsigned float_key(float f) {
  const unsigned b = __float_as_uint(f);
  return b & 0x80000000u ? ~b : b | 0x80000000u;
}
__host__ __device__ inline float key_float(unsigned k) {
  const unsigned b = k & 0x80000000u ? k & 0x7fffffffu : ~k;
  float f;
  memcpy(&f, &b, 4);
  return f;
}

struct DeviceCells {  // cell arrays on the device
  unsigned* count;
  float *mean, *var, *min, *max;
  std::uint8_t *variance_ground, *ground;
};

// Variance-rule classification, then the improved rule when asked; one thread per cell.
void classify_cells(const Grid& g, const DeviceCells& c, cudaStream_t s);
// The improved rule alone, on top of a variance classification already in c.variance_ground / c.ground.
void improve_cells(const Grid& g, const DeviceCells& c, cudaStream_t s);
// Point labels from the cell classification.
void label_points(const Grid& g, const float* x, const float* y, const float* z, int n, const DeviceCells& c,
                  std::uint8_t* is_ground, cudaStream_t s);
// Copies the cell statistics and labels back into a Result (and counts the outside points).
// The labels, and with Outputs::labels_and_cells the cell statistics (CPU conventions for empty cells).
Result download(const Grid& g, const DeviceCells& c, const std::uint8_t* d_labels, int n, std::size_t outside,
                Outputs out = Outputs::labels_and_cells);

}  // namespace gpu
}  // namespace ground_seg
