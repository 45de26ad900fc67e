#include <algorithm>
#include <cstdint>

#include "common/bench.hpp"
#include "common/ceilings.hpp"
#include "common/cuda_check.hpp"
#include "common/device_buffer.hpp"

namespace common {
namespace {

constexpr int kFmaChains = 8;
constexpr int kFmaIters = 4096;

// Eight independent FMA chains per thread keep the pipes full; the result is stored so the
// compiler cannot drop the work.
__global__ void fma_peak_kernel(float* out, float a, float b) {
  float acc[kFmaChains];
#pragma unroll
  for (int c = 0; c < kFmaChains; ++c) acc[c] = threadIdx.x * 1e-3f + c;
  for (int i = 0; i < kFmaIters; ++i) {
#pragma unroll
    for (int c = 0; c < kFmaChains; ++c) acc[c] = fmaf(acc[c], a, b);
  }
  float s = 0;
#pragma unroll
  for (int c = 0; c < kFmaChains; ++c) s += acc[c];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

__global__ void empty_kernel() {}

}  // namespace

Ceilings measure_ceilings(const DeviceInfo& device) {
  Ceilings c;
  cudaStream_t s;
  CUDA_CHECK(cudaStreamCreate(&s));
  BenchOptions o;
  o.max_seconds = 0.5;
  o.min_samples = 10;

  {  // copy: large enough to dwarf L2 by far
    const std::size_t bytes = std::min<std::size_t>(std::size_t{1} << 30, device.global_mem_bytes / 8);
    DeviceBuffer<unsigned char> src(bytes), dst(bytes);
    CUDA_CHECK(cudaMemset(src.get(), 1, bytes));
    const BenchStats st = bench_gpu(
        [&](cudaStream_t st_) {
          CUDA_CHECK(cudaMemcpyAsync(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice, st_));
        },
        s, o);
    c.copy_gbs = 2.0 * bytes / (st.median_ms * 1e-3) / 1e9;
  }
  {  // FMA peak
    const int block = 256;
    const int grid = device.sm_count * 8;
    DeviceBuffer<float> out(static_cast<std::size_t>(grid) * block);
    const BenchStats st = bench_gpu(
        [&](cudaStream_t st_) {
          fma_peak_kernel<<<grid, block, 0, st_>>>(out.get(), 0.999f, 1e-4f);
          CUDA_CHECK_LAST();
        },
        s, o);
    const double flops = 2.0 * kFmaChains * kFmaIters * double(grid) * block;
    c.fma_gflops = flops / (st.median_ms * 1e-3) / 1e9;
  }
  {  // lone launch
    const BenchStats st = bench_gpu(
        [&](cudaStream_t st_) {
          empty_kernel<<<1, 1, 0, st_>>>();
          CUDA_CHECK_LAST();
        },
        s, o);
    c.launch_us = st.median_ms * 1e3;
  }
  CUDA_CHECK(cudaStreamDestroy(s));
  return c;
}

}  // namespace common
