// The references the checks compare against: float64 accelerations, energies and momentum, and
// the sequential batch pipeline (the streamed and per-GPU pipelines' expected states). A harness
// file: no exercise lives here, so no student's code is compiled with it (grading/rubric.toml's
// checker_files).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "batch_detail.hpp"
#include "common/cuda_check.hpp"
#include "common/nvtx.hpp"
#include "nbody/io.hpp"
#include "nbody/pipeline.hpp"
#include "nbody/system.hpp"

namespace nbody {

Accelerations reference_accelerations_at(const Bodies& b, const std::vector<std::size_t>& indices, double G,
                                         double eps) {
  const std::size_t n = b.size(), k = indices.size();
  Accelerations a{std::vector<double>(k), std::vector<double>(k), std::vector<double>(k)};
  const double eps2 = eps * eps;
#pragma omp parallel for schedule(dynamic, 16)
  for (std::ptrdiff_t q = 0; q < static_cast<std::ptrdiff_t>(k); ++q) {
    const std::size_t i = indices[q];
    double ax = 0, ay = 0, az = 0;
    for (std::size_t j = 0; j < n; ++j) {
      if (j == i) continue;
      const double dx = double(b.x[j]) - b.x[i], dy = double(b.y[j]) - b.y[i], dz = double(b.z[j]) - b.z[i];
      const double r2 = dx * dx + dy * dy + dz * dz + eps2;
      const double s = b.m[j] / (r2 * std::sqrt(r2));
      ax += dx * s;
      ay += dy * s;
      az += dz * s;
    }
    a.ax[q] = G * ax;
    a.ay[q] = G * ay;
    a.az[q] = G * az;
  }
  return a;
}

Accelerations reference_accelerations(const Bodies& b, double G, double eps) {
  std::vector<std::size_t> all(b.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  return reference_accelerations_at(b, all, G, eps);
}

double kinetic_energy(const Bodies& b) {
  double k = 0;
  for (std::size_t i = 0; i < b.size(); ++i)
    k += 0.5 * b.m[i] * (double(b.vx[i]) * b.vx[i] + double(b.vy[i]) * b.vy[i] + double(b.vz[i]) * b.vz[i]);
  return k;
}

double potential_energy(const Bodies& b, double G, double eps) {
  double w = 0;
  const double eps2 = eps * eps;
  const std::ptrdiff_t n = static_cast<std::ptrdiff_t>(b.size());
#pragma omp parallel for schedule(dynamic, 64) reduction(+ : w)
  for (std::ptrdiff_t i = 0; i < n; ++i)
    for (std::ptrdiff_t j = i + 1; j < n; ++j) {
      const double dx = double(b.x[j]) - b.x[i], dy = double(b.y[j]) - b.y[i], dz = double(b.z[j]) - b.z[i];
      w -= double(b.m[i]) * b.m[j] / std::sqrt(dx * dx + dy * dy + dz * dz + eps2);
    }
  return G * w;
}

double total_energy(const Bodies& b, double G, double eps) { return kinetic_energy(b) + potential_energy(b, G, eps); }

double momentum_balance(const Bodies& b, const std::vector<float>& ax, const std::vector<float>& ay,
                        const std::vector<float>& az) {
  double px = 0, py = 0, pz = 0, norm = 0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    px += double(b.m[i]) * ax[i];
    py += double(b.m[i]) * ay[i];
    pz += double(b.m[i]) * az[i];
    norm += b.m[i] * std::sqrt(double(ax[i]) * ax[i] + double(ay[i]) * ay[i] + double(az[i]) * az[i]);
  }
  return norm > 0 ? std::sqrt(px * px + py * py + pz * pz) / norm : 0.0;
}

AccelError compare_accelerations(const Accelerations& ref, const std::vector<float>& ax, const std::vector<float>& ay,
                                 const std::vector<float>& az) {
  const std::size_t n = ref.ax.size();
  std::vector<double> rel(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double ex = ax[i] - ref.ax[i], ey = ay[i] - ref.ay[i], ez = az[i] - ref.az[i];
    const double norm = std::sqrt(ref.ax[i] * ref.ax[i] + ref.ay[i] * ref.ay[i] + ref.az[i] * ref.az[i]);
    const double err = std::sqrt(ex * ex + ey * ey + ez * ez);
    rel[i] = std::isfinite(err) ? (norm > 0 ? err / norm : err) : INFINITY;
  }
  AccelError e;
  if (n == 0) return e;
  e.max_rel = *std::max_element(rel.begin(), rel.end());
  std::nth_element(rel.begin(), rel.begin() + n / 2, rel.end());
  e.median_rel = rel[n / 2];
  return e;
}

BatchResult run_batch_sequential(const std::vector<std::string>& files, const Params& p, AccelLauncher accel,
                                 const std::string& out_dir, bool keep_states) {
  BatchResult r;
  cudaStream_t s;
  CUDA_CHECK(cudaStreamCreate(&s));
  DeviceSystem sys;
  Pinned in, out;
  const auto t0 = Clock::now();
  for (const auto& file : files) {
    common::NvtxRange range("snapshot (sequential)");
    const auto t = Clock::now();
    Bodies b = read_snapshot_csv(file);
    const int n = static_cast<int>(b.size());
    pack(b, in);
    enqueue_snapshot(sys, in, out, n, p, accel, s);
    CUDA_CHECK(cudaStreamSynchronize(s));
    unpack(out, b);
    if (!out_dir.empty()) write_snapshot_fast(output_path(out_dir, file), b);
    if (keep_states) r.final_states.push_back(std::move(b));
    r.file_ms.push_back(ms_since(t));
  }
  r.total_ms = ms_since(t0);
  CUDA_CHECK(cudaStreamDestroy(s));
  return r;
}

}  // namespace nbody
