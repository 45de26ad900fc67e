#include <vector>

#include "common/cuda_check.hpp"
#include "gpu_common.cuh"

namespace ground_seg {
namespace gpu {

Grid make_grid(const Params& p) {
  p.validate();
  Grid g{p.x_min,
         p.x_max,
         p.y_min,
         p.y_max,
         p.cell,
         p.nx(),
         p.ny(),
         static_cast<unsigned>(p.point_threshold),
         p.var_threshold,
         p.height_threshold,
         p.improved,
         static_cast<int>(std::ceil(p.local_radius / p.cell)),
         p.raised_threshold};
  return g;
}

namespace {

__global__ void variance_classify_kernel(Grid g, DeviceCells c) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= g.nx * g.ny) return;
  const int x = k % g.nx, y = k / g.nx;
  std::uint8_t ground = 0;
  if (c.count[k] >= g.point_threshold) {
    ground = c.var[k] < g.var_threshold;
  } else if (c.count[k] > 0) {
    double s = 0;  // same order as the CPU: dy outer, dx inner
    int m = 0;
    for (int dy = -1; dy <= 1; ++dy)
      for (int dx = -1; dx <= 1; ++dx) {
        const int xx = x + dx, yy = y + dy;
        if (xx < 0 || yy < 0 || xx >= g.nx || yy >= g.ny) continue;
        const int q = yy * g.nx + xx;
        if (c.count[q] < g.point_threshold) continue;
        s += c.var[q];
        ++m;
      }
    ground = m == 0 || s / m < g.var_threshold;
  }
  c.variance_ground[k] = ground;
  c.ground[k] = ground;
}

__global__ void improved_classify_kernel(Grid g, DeviceCells c) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= g.nx * g.ny || !c.variance_ground[k]) return;
  const int x = k % g.nx, y = k / g.nx, r = g.radius_cells;
  float low = c.mean[k];
  for (int dy = -r; dy <= r; ++dy)
    for (int dx = -r; dx <= r; ++dx) {
      const int xx = x + dx, yy = y + dy;
      if (xx < 0 || yy < 0 || xx >= g.nx || yy >= g.ny || dx * dx + dy * dy > r * r) continue;
      const int q = yy * g.nx + xx;
      if (c.variance_ground[q]) low = fminf(low, c.mean[q]);
    }
  c.ground[k] = c.mean[k] - low < g.raised_threshold;
}

__global__ void label_kernel(Grid g, const float* __restrict__ x, const float* __restrict__ y,
                             const float* __restrict__ z, int n, DeviceCells c, std::uint8_t* __restrict__ out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int k = cell_index(g, x[i], y[i]);
  out[i] = k >= 0 && c.ground[k] && (c.count[k] < 2 || fabsf(z[i] - c.mean[k]) < g.height_threshold);
}

}  // namespace

void classify_cells(const Grid& g, const DeviceCells& c, cudaStream_t s) {
  const int cells = g.nx * g.ny;
  variance_classify_kernel<<<(cells + 255) / 256, 256, 0, s>>>(g, c);
  CUDA_CHECK_LAST();
  if (g.improved) {
    improved_classify_kernel<<<(cells + 255) / 256, 256, 0, s>>>(g, c);
    CUDA_CHECK_LAST();
  }
}

void improve_cells(const Grid& g, const DeviceCells& c, cudaStream_t s) {
  const int cells = g.nx * g.ny;
  improved_classify_kernel<<<(cells + 255) / 256, 256, 0, s>>>(g, c);
  CUDA_CHECK_LAST();
}

void label_points(const Grid& g, const float* x, const float* y, const float* z, int n, const DeviceCells& c,
                  std::uint8_t* is_ground, cudaStream_t s) {
  if (n == 0) return;
  label_kernel<<<(n + 255) / 256, 256, 0, s>>>(g, x, y, z, n, c, is_ground);
  CUDA_CHECK_LAST();
}

Result download(const Grid& g, const DeviceCells& c, const std::uint8_t* d_labels, int n, std::size_t outside,
                Outputs out) {
  const std::size_t cells = static_cast<std::size_t>(g.nx) * g.ny;
  Result r;
  r.outside = outside;
  r.is_ground.resize(n);
  if (out == Outputs::labels) {
    if (n) CUDA_CHECK(cudaMemcpy(r.is_ground.data(), d_labels, n, cudaMemcpyDeviceToHost));
    return r;
  }
  auto& cs = r.cells;
  cs.count.resize(cells);
  cs.mean.resize(cells);
  cs.var.resize(cells);
  cs.min.resize(cells);
  cs.max.resize(cells);
  cs.ground.resize(cells);
  CUDA_CHECK(cudaMemcpy(cs.count.data(), c.count, cells * 4, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(cs.mean.data(), c.mean, cells * 4, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(cs.var.data(), c.var, cells * 4, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(cs.min.data(), c.min, cells * 4, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(cs.max.data(), c.max, cells * 4, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(cs.ground.data(), c.ground, cells, cudaMemcpyDeviceToHost));
  if (n) CUDA_CHECK(cudaMemcpy(r.is_ground.data(), d_labels, n, cudaMemcpyDeviceToHost));
  for (std::size_t k = 0; k < cells; ++k)
    if (cs.count[k] == 0) {  // the CPU's conventions for empty cells
      cs.min[k] = INFINITY;
      cs.max[k] = -INFINITY;
      cs.mean[k] = cs.var[k] = 0.f;
    }
  return r;
}

}  // namespace gpu
}  // namespace ground_seg
