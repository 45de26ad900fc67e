// The single list of nbody versions: the driver, --list, the CSV, the plots and README tables
// all read it.
#pragma once
#include <string>
#include <vector>

#include "common/roofline.hpp"
#include "nbody/cpu.hpp"
#include "nbody/gpu.hpp"

namespace nbody {

enum class Mode { Step, Batch, MultiGpu };

struct Version {
  std::string id;    // "v4"
  std::string name;  // "v4_tuned"
  std::string idea;
  Mode mode;         // Step: a force kernel timed per step; Batch / MultiGpu: measured in those modes
  bool needs_gpu;
  bool is_library;   // the baseline a user would run instead (multi-threaded CPU)
  CpuAccelFn cpu = nullptr;
  AccelLauncher gpu = nullptr;
};

const std::vector<Version>& versions();
const Version* find_version(const std::string& name);
// The fastest single-GPU kernel, used by the batch and multi-GPU versions.
AccelLauncher best_kernel();
const char* best_kernel_name();

// Roofline cost of one step of n bodies: 20 FLOP per interaction, positions read once per tile
// pass from L2 are not DRAM traffic, so bytes = state read + written (32 B per body), 2 launches.
common::CostModel step_cost(long long n);

}  // namespace nbody
