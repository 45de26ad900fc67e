// The batch workload of the seed experiment (a directory of snapshots, each advanced p.steps
// steps and written out) and the multi-GPU versions.
#pragma once
#include "common/bench.hpp"
#include <string>
#include <vector>

#include "nbody/gpu.hpp"

namespace nbody {

struct BatchResult {
  std::vector<double> file_ms;  // wall time attributed to each snapshot (completion to completion)
  double total_ms = 0;
  std::vector<Bodies> final_states;  // kept only when asked (tests)
};

// Read -> upload -> simulate -> download -> write, one snapshot after the other.
BatchResult run_batch_sequential(const std::vector<std::string>& files, const Params& p, AccelLauncher accel,
                                 const std::string& out_dir, bool keep_states = false);
// v5: the same work as a pipeline: snapshot k+1 is parsed (background thread) into pinned memory and
// copied on a second stream while snapshot k computes, and k-1 is written out meanwhile.
BatchResult run_batch_streamed(const std::vector<std::string>& files, const Params& p, AccelLauncher accel,
                               const std::string& out_dir, bool keep_states = false);
// One snapshot per GPU: files dealt round-robin to `gpus` devices, each running the streamed
// pipeline in its own host thread.
BatchResult run_batch_per_gpu(const std::vector<std::string>& files, const Params& p, AccelLauncher accel,
                              const std::string& out_dir, int gpus);

void write_snapshot_fast(const std::string& path, const Bodies& b);  // to_chars, atomic rename

// v7: each of `gpus` devices owns n/P bodies (padded with massless ones), positions are
// replicated and re-assembled with one NCCL all-gather per position update.
bool have_nccl();
int device_count();
// Advances b in place; returns the statistics of the per-step wall times (each step synchronized
// on every GPU), the first step (NCCL's lazy set-up) left out, or throws if NCCL or the GPUs are
// missing.
common::BenchStats multi_gpu_simulate(Bodies& b, const Params& p, int gpus, AccelLauncher accel);

}  // namespace nbody
