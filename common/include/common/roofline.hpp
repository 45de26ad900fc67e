// Roofline prediction: t = max(FLOPs / FP32 peak, bytes / memory bandwidth) + launches * launch
// latency. Units are fixed here once: FLOP, bytes, GFLOP/s, GB/s (1e9), microseconds, ms.
#pragma once
#include <string>
#include <vector>

#include "common/ceilings.hpp"
#include "common/device_info.hpp"

namespace common {

struct GpuSpec {
  std::string name;
  double fp32_gflops = 0;  // datasheet FP32 (FMA = 2 FLOP) at boost clock
  double mem_gbs = 0;      // datasheet DRAM bandwidth
  double launch_us = 0;    // typical lone-launch latency of its generation (see README)
  bool measured = false;   // true: numbers measured on this run's GPU
};

struct CostModel {
  double flops = 0;
  double bytes = 0;
  double launches = 0;
  // Thread instructions issued (an issue-bound kernel: measured with ncu's dynamic counts). The
  // issue ceiling is one instruction per FP32 lane per clock, fp32_gflops / 2 G instructions/s.
  double instructions = 0;
};

// GTX TITAN Black, GTX TITAN X, TITAN V, RTX 2080 Ti, RTX 4070, A100 SXM, H100 SXM, H100 PCIe, H200.
const std::vector<GpuSpec>& reference_gpus();
GpuSpec measured_spec(const DeviceInfo& device, const Ceilings& ceilings);

struct Prediction {
  double compute_ms = 0, memory_ms = 0, launch_ms = 0, total_ms = 0;
  const char* bound = "";  // "compute", "memory" or "launch"
};
Prediction predict(const CostModel& cost, const GpuSpec& gpu);

}  // namespace common
