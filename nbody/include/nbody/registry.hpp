// The single list of nbody versions: the driver, --list, the CSV, the plots and README tables
// all read it.
#pragma once
#include <string>
#include <vector>

#include "common/registry.hpp"
#include "common/roofline.hpp"
#include "nbody/cpu.hpp"
#include "nbody/gpu.hpp"

namespace nbody {

enum class Mode { Step, Batch, MultiGpu };

struct Version : common::Entry {
  Mode mode;  // Step: a force kernel timed per step; Batch / MultiGpu: measured in those modes
  CpuAccelFn cpu = nullptr;
  AccelLauncher gpu = nullptr;
  // The launch shape it picks for n bodies, for the row's params ("block=256"); nullptr: fixed.
  std::string (*shape)(long long n) = nullptr;
  bool best = false;  // the fastest single-GPU kernel: the batch, multi-GPU and drift modes use it
  // Its cost model: thread instructions issued per interaction, ncu's dynamic count
  // (smsp__thread_inst_executed.sum / n^2) on an H200 at n = 2^16; 0: not a force kernel.
  double instructions_per_interaction = 0;
};

const std::vector<Version>& versions();
const Version* find_version(const std::string& name);
// The fastest single-GPU kernel (the entry marked best), used by the batch and multi-GPU versions.
const Version& best_version();
AccelLauncher best_kernel();

// Cost of one step of n bodies by version v: 20 FLOP and v's instructions per interaction (the
// kernels are issue-bound: the instruction count, not the FLOPs, sets their floor), positions read
// once per tile pass from L2 are not DRAM traffic, so bytes = state read + written (32 B per
// body), 2 launches.
common::CostModel step_cost(const Version& v, long long n);

}  // namespace nbody
