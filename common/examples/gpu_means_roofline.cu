// Worked example of the roofline prediction: the gpuMeans kernel of the kernel-time prediction
// report (NaN-aware means of every pair (vector a of A, vector b of B) over the positions where
// neither is NaN, finished by a shared-memory tree reduction), at the report's size: na = nb = 5
// vectors of dim = 100, NUMTHREADS = 16, one block per pair on a 5 x 5 grid.
//
// Counting, once, in FLOP and bytes:
//   per pair and position: 2 NaN tests + 3 adds (sum a, sum b, count)  = 5 FLOP
//   per pair, reduction:   3 sums x (NUMTHREADS - 1) adds + 2 divides   = 47 FLOP
//   total: 25 x (100 x 5 + 47) = 13,675 FLOP ~ 1.4e4 (the report's 1.4e7 is 1000x too many)
//   bytes: every pair reads both vectors, 25 x 2 x 100 x 4 B = 20,000 B, plus 25 x 3 floats out
//   = 20,300 B ~ 2.0e4 (not 2.0e7).
// Counted right, both the arithmetic and the memory traffic take nanoseconds and the launch takes
// microseconds: the kernel is launch-bound on every GPU in the table. With the report's inflated
// 2.0e7 bytes the model would call it memory-bound (60 us on a TITAN Black) - a wrong conclusion
// that the measurement below refutes.
#include <cmath>
#include <cstdio>
#include <vector>

#include "common/bench.hpp"
#include "common/ceilings.hpp"
#include "common/compare.hpp"
#include "common/cuda_check.hpp"
#include "common/device_buffer.hpp"
#include "common/device_info.hpp"
#include "common/roofline.hpp"

namespace {

constexpr int kThreads = 16;  // NUMTHREADS
constexpr int kNa = 5, kNb = 5, kDim = 100;

// One block per pair (blockIdx.x = a, blockIdx.y = b), kThreads threads striding over dim.
__global__ void gpu_means(const float* a_vecs, int na, const float* b_vecs, int nb, int dim, float* means,
                          float* pair_counts) {
  __shared__ float sum_a[kThreads], sum_b[kThreads], count[kThreads];
  const int a = blockIdx.x, b = blockIdx.y, t = threadIdx.x;
  if (a >= na || b >= nb) return;
  float sa = 0.f, sb = 0.f, c = 0.f;
  for (int k = t; k < dim; k += kThreads) {
    const float x = a_vecs[a * dim + k], y = b_vecs[b * dim + k];
    if (!(isnan(x) || isnan(y))) {
      sa += x;
      sb += y;
      c += 1.f;
    }
  }
  sum_a[t] = sa;
  sum_b[t] = sb;
  count[t] = c;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (t < stride) {
      sum_a[t] += sum_a[t + stride];
      sum_b[t] += sum_b[t + stride];
      count[t] += count[t + stride];
    }
    __syncthreads();
  }
  if (t == 0) {
    means[(a * nb + b) * 2] = sum_a[0] / count[0];
    means[(a * nb + b) * 2 + 1] = sum_b[0] / count[0];
    pair_counts[a * nb + b] = count[0];
  }
}

common::CostModel gpu_means_cost(double scale) {
  const double pairs = kNa * kNb;
  common::CostModel c;
  c.flops = scale * pairs * (kDim * 5.0 + 3.0 * (kThreads - 1) + 2.0);
  c.bytes = scale * (pairs * 2.0 * kDim * 4.0 + pairs * 3.0 * 4.0);
  c.launches = 1;
  return c;
}

void print_predictions(const std::vector<common::GpuSpec>& gpus) {
  const common::CostModel right = gpu_means_cost(1.0), report = gpu_means_cost(1000.0);
  std::printf("cost model: %.4g FLOP, %.4g bytes, 1 launch (the report's mixed-up counts: %.3g FLOP, %.3g bytes)\n\n",
              right.flops, right.bytes, report.flops, report.bytes);
  std::printf("%-26s %10s %9s %9s %10s %10s %9s  %s\n", "GPU", "FP32 GF/s", "mem GB/s", "launch us", "FLOP us",
              "bytes us", "pred us", "bound (pred us with the report's counts)");
  for (const auto& g : gpus) {
    const common::Prediction p = common::predict(right, g), q = common::predict(report, g);
    std::printf("%-26s %10.0f %9.0f %9.2f %10.5f %10.5f %9.2f  %s (%.2f us, %s)\n", g.name.c_str(), g.fp32_gflops,
                g.mem_gbs, g.launch_us, p.compute_ms * 1e3, p.memory_ms * 1e3, p.total_ms * 1e3, p.bound,
                q.total_ms * 1e3, q.bound);
  }
}

}  // namespace

int main() {
  try {
    std::printf("gpuMeans roofline example: na = nb = %d, dim = %d, NUMTHREADS = %d, grid %dx%d\n", kNa, kDim, kThreads,
                kNa, kNb);
    std::printf(
        "note: the report launched 32x32 blocks, but the kernel's shared arrays hold NUMTHREADS = 16\n"
        "entries indexed by threadIdx.x; 32 threads in x would write past them and 32 rows in y would\n"
        "repeat the same work. This example launches the %d threads the kernel is written for.\n\n",
        kThreads);
    std::vector<common::GpuSpec> gpus = common::reference_gpus();
    if (!common::has_cuda_device()) {
      print_predictions(gpus);
      std::printf("\nmeasurement skipped: no CUDA device\n");
      return 0;
    }
    const common::DeviceInfo dev = common::query_device();
    const common::Ceilings ceil = common::measure_ceilings(dev);
    gpus.push_back(common::measured_spec(dev, ceil));
    print_predictions(gpus);

    // Inputs with NaN holes so the NaN-aware path is exercised and checked.
    std::vector<float> a(kNa * kDim), b(kNb * kDim);
    for (int i = 0; i < kNa * kDim; ++i) a[i] = (i % 17 == 3) ? NAN : std::sin(0.1f * i);
    for (int i = 0; i < kNb * kDim; ++i) b[i] = (i % 23 == 5) ? NAN : std::cos(0.07f * i);
    std::vector<double> ref_means(kNa * kNb * 2), ref_counts(kNa * kNb);
    for (int i = 0; i < kNa; ++i)
      for (int j = 0; j < kNb; ++j) {
        double sa = 0, sb = 0, c = 0;
        for (int k = 0; k < kDim; ++k) {
          const float x = a[i * kDim + k], y = b[j * kDim + k];
          if (std::isnan(x) || std::isnan(y)) continue;
          sa += x;
          sb += y;
          c += 1;
        }
        ref_means[(i * kNb + j) * 2] = sa / c;
        ref_means[(i * kNb + j) * 2 + 1] = sb / c;
        ref_counts[i * kNb + j] = c;
      }
    common::DeviceBuffer<float> d_a(a.size()), d_b(b.size()), d_means(ref_means.size()), d_counts(ref_counts.size());
    CUDA_CHECK(cudaMemcpy(d_a.get(), a.data(), a.size() * 4, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_b.get(), b.data(), b.size() * 4, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(d_means.get(), 0xff, d_means.bytes()));  // NaN poison
    cudaStream_t s;
    CUDA_CHECK(cudaStreamCreate(&s));
    auto launch = [&](cudaStream_t st) {
      gpu_means<<<dim3(kNa, kNb), kThreads, 0, st>>>(d_a.get(), kNa, d_b.get(), kNb, kDim, d_means.get(),
                                                     d_counts.get());
      CUDA_CHECK_LAST();
    };
    launch(s);
    CUDA_CHECK(cudaStreamSynchronize(s));
    std::vector<float> means(ref_means.size()), counts(ref_counts.size());
    CUDA_CHECK(cudaMemcpy(means.data(), d_means.get(), d_means.bytes(), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(counts.data(), d_counts.get(), d_counts.bytes(), cudaMemcpyDeviceToHost));
    // float32 sums of <= 100 terms of magnitude <= 1: relative error well under 1e-5.
    const auto cm = common::compare_close(means.data(), ref_means.data(), means.size(), {1e-6, 1e-5});
    const auto cc = common::compare_close(counts.data(), ref_counts.data(), counts.size(), {0, 0});
    std::printf("\ncheck against float64: %s\n", cm.ok && cc.ok ? "PASS" : ("FAIL " + cm.message + cc.message).c_str());
    common::BenchOptions o;
    o.min_samples = 50;
    o.max_seconds = 1.0;
    const common::BenchStats st = common::bench_gpu(launch, s, o);
    const common::Prediction p = common::predict(gpu_means_cost(1.0), gpus.back());
    std::printf("measured on %s: median %.2f us (min %.2f, max %.2f, %d samples); predicted %.2f us (%s-bound)\n",
                dev.name.c_str(), st.median_ms * 1e3, st.min_ms * 1e3, st.max_ms * 1e3, st.samples, p.total_ms * 1e3,
                p.bound);
    CUDA_CHECK(cudaStreamDestroy(s));
    return cm.ok && cc.ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpu_means_roofline: %s\n", e.what());
    return 1;
  }
}
