#include "nbody/registry.hpp"

#include <stdexcept>

#include "nbody/gpu.hpp"

namespace nbody {

namespace {
std::string tuned_shape(long long n) { return "block=" + std::to_string(tuned_block_size(static_cast<int>(n))); }
std::string split_shape(long long n) {
  return "lanes_per_body=" + std::to_string(warp_split_group(static_cast<int>(n)));
}
}  // namespace

const std::vector<Version>& versions() {
  using common::kOnCpu;
  using common::kOnGpu;
  using common::Role;
  // clang-format off: the registry is a table, one entry per line
  static const std::vector<Version> table = {
      // {{id, name, file, idea, role, where it runs}, mode, cpu function, gpu launcher[, shape, best, instructions/interaction]}
      {{"cpu", "cpu", "src/cpu.cpp", "sequential, SoA, SIMD-vectorized inner loop (one core)", Role::reference, kOnCpu}, Mode::Step, cpu_accelerations, nullptr},
      {{"omp", "cpu_openmp", "src/cpu.cpp", "the same loop on every core (OpenMP): what a user would run instead", Role::library, kOnCpu}, Mode::Step, cpu_accelerations_openmp, nullptr},
      {{"v1", "v1_naive", "src/v1_naive.cu", "one thread per body, positions from global memory, 1/sqrtf", Role::version, kOnGpu}, Mode::Step, nullptr, accel_naive, nullptr, false, 35.50},
      {{"v2", "v2_tiled", "src/v2_tiled.cu", "shared-memory tiles, one coalesced float4 load per thread per tile", Role::version, kOnGpu}, Mode::Step, nullptr, accel_tiled, nullptr, false, 35.08},
      {{"v3", "v3_rsqrt_unroll", "src/v3_rsqrt_unroll.cu", "rsqrtf (one MUFU op) and the tile loop unrolled", Role::version, kOnGpu}, Mode::Step, nullptr, accel_rsqrt_unroll, nullptr, false, 18.27},
      {{"v4", "v4_tuned", "src/v4_tuned.cu", "occupancy-API block size, softening in the FMA chain, flush-to-zero", Role::version, kOnGpu}, Mode::Step, nullptr, accel_tuned, tuned_shape, false, 14.84},
      {{"v5", "v5_streams", "src/v5_streams.cpp", "19-file batch: parse/copy snapshot k+1 and write k-1 while k computes", Role::version, kOnGpu}, Mode::Batch, nullptr, nullptr},
      {{"v6", "v6_warp_split", "src/v6_warp_split.cu", "small N: S lanes per body split the j-range, shuffle reduction", Role::version, kOnGpu}, Mode::Step, nullptr, accel_warp_split, split_shape, false, 14.80},
      {{"v7", "v7_multi_gpu", "src/v7_multi_gpu.cpp", "N/P bodies per GPU, positions replicated, one NCCL all-gather per step", Role::version, kOnGpu}, Mode::MultiGpu, nullptr, nullptr},
      {{"v8", "v8_multi_body", "src/v8_multi_body.cu", "4 bodies per thread (one shared load feeds 4 interactions), j-range split", Role::version, kOnGpu}, Mode::Step, nullptr, accel_multi_body, nullptr, false, 13.38},
      {{"v9", "v9_mass_fold", "src/v9_mass_fold.cu", "equal masses folded out of the inner loop (12 instructions); others keep v8's", Role::version, kOnGpu}, Mode::Step, nullptr, accel_mass_fold, nullptr, true, 12.41},
  };
  // clang-format on
  return table;
}

const Version* find_version(const std::string& name) { return common::find_version(versions(), name); }

const Version& best_version() {
  for (const auto& v : versions())
    if (v.best) return v;
  throw std::logic_error("nbody registry: no version is marked best");
}

AccelLauncher best_kernel() { return best_version().gpu; }

common::CostModel step_cost(const Version& v, long long n) {
  const double pairs = double(n) * double(n);
  return {kFlopsPerInteraction * pairs, 32.0 * double(n) * 2, 2, v.instructions_per_interaction * pairs};
}

}  // namespace nbody
