#include "nbody/registry.hpp"

namespace nbody {

const std::vector<Version>& versions() {
  static const std::vector<Version> table = {
      {"cpu", "cpu", "sequential, SoA, SIMD-vectorized inner loop (one core)", Mode::Step, false, false, cpu_accelerations, nullptr},
      {"omp", "cpu_openmp", "the same loop on every core (OpenMP): what a user would run instead", Mode::Step, false, true, cpu_accelerations_openmp, nullptr},
      {"v1", "v1_naive", "one thread per body, positions from global memory, 1/sqrtf", Mode::Step, true, false, nullptr, accel_naive},
      {"v2", "v2_tiled", "shared-memory tiles, one coalesced float4 load per thread per tile", Mode::Step, true, false, nullptr, accel_tiled},
      {"v3", "v3_rsqrt_unroll", "rsqrtf (one MUFU op) and the tile loop unrolled", Mode::Step, true, false, nullptr, accel_rsqrt_unroll},
      {"v4", "v4_tuned", "occupancy-API block size, softening in the FMA chain, flush-to-zero", Mode::Step, true, false, nullptr, accel_tuned},
      {"v5", "v5_streams", "19-file batch: parse/copy snapshot k+1 and write k-1 while k computes", Mode::Batch, true, false, nullptr, nullptr},
      {"v6", "v6_warp_split", "small N: S lanes per body split the j-range, shuffle reduction", Mode::Step, true, false, nullptr, accel_warp_split},
      {"v7", "v7_multi_gpu", "N/P bodies per GPU, positions replicated, one NCCL all-gather per step", Mode::MultiGpu, true, false, nullptr, nullptr},
      {"v8", "v8_multi_body", "4 bodies per thread (one shared load feeds 4 interactions), j-range split", Mode::Step, true, false, nullptr, accel_multi_body},
  };
  return table;
}

const Version* find_version(const std::string& name) {
  for (const auto& v : versions())
    if (v.name == name) return &v;
  return nullptr;
}

AccelLauncher best_kernel() { return accel_multi_body; }
const char* best_kernel_name() { return "v8_multi_body"; }

common::CostModel step_cost(long long n) {
  return {kFlopsPerInteraction * double(n) * double(n), 32.0 * double(n) * 2, 2};
}

}  // namespace nbody
