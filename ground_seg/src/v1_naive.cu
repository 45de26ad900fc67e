// v1 naive: the report's algorithm ported as directly as possible. Per-cell count, sum, min and max
// by atomics (one thread per point; the cells near the sensor hold >1000 points, so those
// atomics serialize), the mean and variance finished on the host between the passes (each a
// round trip), one thread per cell for the classification reading its neighbours from global
// memory. Prediction: dominated by the round trips and pageable copies, ~1 ms per frame on an
// H100/H200 — slower than the CPU's ~2 ms only in name.
#include <vector>

#include "common/cuda_check.hpp"
#include "common/device_buffer.hpp"
#include "gpu_common.cuh"
#include "ground_seg/gpu.hpp"

namespace ground_seg {
namespace {
// EXERCISE BEGIN

using common::DeviceBuffer;

__global__ void accumulate_kernel(gpu::Grid g, const float* x, const float* y, const float* z, int n, int* cell_of,
                                  unsigned* count, double* sum, unsigned* min_key, unsigned* max_key,
                                  unsigned* outside) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int k = gpu::cell_index(g, x[i], y[i]);
  cell_of[i] = k;
  if (k < 0) {
    atomicAdd(outside, 1u);
    return;
  }
  atomicAdd(&count[k], 1u);
  atomicAdd(&sum[k], static_cast<double>(z[i]));
  atomicMin(&min_key[k], gpu::float_key(z[i]));
  atomicMax(&max_key[k], gpu::float_key(z[i]));
}

__global__ void deviation_kernel(const float* z, const int* cell_of, int n, const float* mean, double* sq) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n || cell_of[i] < 0) return;
  const double d = static_cast<double>(z[i]) - mean[cell_of[i]];
  atomicAdd(&sq[cell_of[i]], d * d);
}

// EXERCISE END
}  // namespace

Result segment_gpu_naive(const common::PointCloud& pc, const Params& p, Outputs out) {
  // EXERCISE BEGIN body
  const gpu::Grid g = gpu::make_grid(p);
  const int n = static_cast<int>(pc.size());
  const std::size_t cells = static_cast<std::size_t>(g.nx) * g.ny;
  DeviceBuffer<float> x(n + 1), y(n + 1), z(n + 1), mean(cells), var(cells), mn(cells), mx(cells);
  DeviceBuffer<int> cell_of(n + 1);
  DeviceBuffer<unsigned> count(cells), min_key(cells), max_key(cells), outside(1);
  DeviceBuffer<double> sum(cells), sq(cells);
  DeviceBuffer<std::uint8_t> variance_ground(cells), ground(cells), labels(n + 1);
  CUDA_CHECK(cudaMemcpy(x.get(), pc.x.data(), n * 4, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(y.get(), pc.y.data(), n * 4, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(z.get(), pc.z.data(), n * 4, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemset(count.get(), 0, cells * 4));
  CUDA_CHECK(cudaMemset(sum.get(), 0, cells * 8));
  CUDA_CHECK(cudaMemset(sq.get(), 0, cells * 8));
  CUDA_CHECK(cudaMemset(min_key.get(), 0xff, cells * 4));
  CUDA_CHECK(cudaMemset(max_key.get(), 0, cells * 4));
  CUDA_CHECK(cudaMemset(outside.get(), 0, 4));
  const unsigned blocks = (n + 255) / 256;
  if (n) {
    accumulate_kernel<<<blocks, 256>>>(g, x.get(), y.get(), z.get(), n, cell_of.get(), count.get(), sum.get(),
                                       min_key.get(), max_key.get(), outside.get());
    CUDA_CHECK_LAST();
  }
  // round trip 1: means on the host
  std::vector<unsigned> h_count(cells), h_keys(cells);
  std::vector<double> h_sum(cells);
  std::vector<float> h_mean(cells, 0.f), h_var(cells, 0.f), h_min(cells), h_max(cells);
  CUDA_CHECK(cudaMemcpy(h_count.data(), count.get(), cells * 4, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(h_sum.data(), sum.get(), cells * 8, cudaMemcpyDeviceToHost));
  for (std::size_t k = 0; k < cells; ++k)
    if (h_count[k]) h_mean[k] = static_cast<float>(h_sum[k] / h_count[k]);
  CUDA_CHECK(cudaMemcpy(mean.get(), h_mean.data(), cells * 4, cudaMemcpyHostToDevice));
  if (n) {
    deviation_kernel<<<blocks, 256>>>(z.get(), cell_of.get(), n, mean.get(), sq.get());
    CUDA_CHECK_LAST();
  }
  // round trip 2: variances, min and max on the host
  CUDA_CHECK(cudaMemcpy(h_sum.data(), sq.get(), cells * 8, cudaMemcpyDeviceToHost));
  for (std::size_t k = 0; k < cells; ++k)
    if (h_count[k]) h_var[k] = static_cast<float>(h_sum[k] / h_count[k]);
  CUDA_CHECK(cudaMemcpy(h_keys.data(), min_key.get(), cells * 4, cudaMemcpyDeviceToHost));
  for (std::size_t k = 0; k < cells; ++k) h_min[k] = gpu::key_float(h_keys[k]);
  CUDA_CHECK(cudaMemcpy(h_keys.data(), max_key.get(), cells * 4, cudaMemcpyDeviceToHost));
  for (std::size_t k = 0; k < cells; ++k) h_max[k] = gpu::key_float(h_keys[k]);
  CUDA_CHECK(cudaMemcpy(var.get(), h_var.data(), cells * 4, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(mn.get(), h_min.data(), cells * 4, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(mx.get(), h_max.data(), cells * 4, cudaMemcpyHostToDevice));
  const gpu::DeviceCells c{count.get(), mean.get(), var.get(), mn.get(), mx.get(), variance_ground.get(), ground.get()};
  gpu::classify_cells(g, c, nullptr);
  gpu::label_points(g, x.get(), y.get(), z.get(), n, c, labels.get(), nullptr);
  unsigned h_outside = 0;
  CUDA_CHECK(cudaMemcpy(&h_outside, outside.get(), 4, cudaMemcpyDeviceToHost));
  return gpu::download(g, c, labels.get(), n, h_outside, out);
  // EXERCISE END
}

}  // namespace ground_seg
