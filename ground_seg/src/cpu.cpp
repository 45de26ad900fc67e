// The OpenMP exercise: the reference's algorithm (src/reference.cpp) on every core. This file
// holds the exercise and nothing the checker uses: the reference lives in src/reference.cpp.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include <omp.h>

#include "cpu_detail.hpp"
#include "ground_seg/ground_seg.hpp"

namespace ground_seg {

namespace {

// The reference's cell rule (src/reference.cpp keeps its own copy: no code of this file is the
// checker's). Unused while the exercise is the handout's starter body.
[[maybe_unused]] bool cell_of(const Params& p, float x, float y, int& cx, int& cy) {
  if (!(x >= p.x_min && x < p.x_max && y >= p.y_min && y < p.y_max)) return false;
  cx = std::min(p.nx() - 1, static_cast<int>((x - p.x_min) / p.cell));
  cy = std::min(p.ny() - 1, static_cast<int>((y - p.y_min) / p.cell));
  return true;
}

}  // namespace

Result segment_cpu_openmp(const common::PointCloud& pc, const Params& p) {
  p.validate();
  // EXERCISE BEGIN body unused(pc) exercise=cpu_openmp
  const int nx = p.nx(), ny = p.ny();
  const std::size_t cells = static_cast<std::size_t>(nx) * ny, n = pc.size();
  const int threads = omp_get_max_threads();
  Result r;
  CellStats& c = r.cells;
  reset_cells(c, cells);
  std::vector<int> cell_of_point(n, -1);
  std::vector<std::vector<double>> sums(threads), sqs(threads);
  std::vector<std::vector<std::uint32_t>> counts(threads);
  std::vector<std::vector<float>> mins(threads), maxs(threads);
  std::size_t outside = 0;
#pragma omp parallel reduction(+ : outside)
  {
    const int t = omp_get_thread_num();
    sums[t].assign(cells, 0.0);
    counts[t].assign(cells, 0);
    mins[t].assign(cells, INFINITY);
    maxs[t].assign(cells, -INFINITY);
#pragma omp for schedule(static)
    for (std::ptrdiff_t i = 0; i < static_cast<std::ptrdiff_t>(n); ++i) {
      int cx, cy;
      if (!cell_of(p, pc.x[i], pc.y[i], cx, cy)) {
        ++outside;
        continue;
      }
      const int k = cy * nx + cx;
      cell_of_point[i] = k;
      ++counts[t][k];
      sums[t][k] += pc.z[i];
      mins[t][k] = std::min(mins[t][k], pc.z[i]);
      maxs[t][k] = std::max(maxs[t][k], pc.z[i]);
    }
#pragma omp for schedule(static)
    for (std::ptrdiff_t k = 0; k < static_cast<std::ptrdiff_t>(cells); ++k) {
      double s = 0;
      for (int u = 0; u < threads; ++u) {  // thread order: deterministic for a given thread count
        c.count[k] += counts[u][k];
        s += sums[u][k];
        c.min[k] = std::min(c.min[k], mins[u][k]);
        c.max[k] = std::max(c.max[k], maxs[u][k]);
      }
      if (c.count[k]) c.mean[k] = static_cast<float>(s / c.count[k]);
    }
    sqs[t].assign(cells, 0.0);
#pragma omp for schedule(static)
    for (std::ptrdiff_t i = 0; i < static_cast<std::ptrdiff_t>(n); ++i) {
      const int k = cell_of_point[i];
      if (k < 0) continue;
      const double d = double(pc.z[i]) - c.mean[k];
      sqs[t][k] += d * d;
    }
#pragma omp for schedule(static)
    for (std::ptrdiff_t k = 0; k < static_cast<std::ptrdiff_t>(cells); ++k) {
      double q = 0;
      for (int u = 0; u < threads; ++u) q += sqs[u][k];
      if (c.count[k]) c.var[k] = static_cast<float>(q / c.count[k]);
    }
  }
  r.outside = outside;
  classify_and_label(pc, p, cell_of_point, r, true);
  return r;
  // EXERCISE END
}

}  // namespace ground_seg
