#include "common/roofline.hpp"

#include <algorithm>

namespace common {

const std::vector<GpuSpec>& reference_gpus() {
  // Datasheet FP32 = 2 x CUDA cores x boost clock; bandwidth from the memory data rate and bus.
  // Launch latency: about 5 us for lone launches on Kepler/Maxwell-era drivers and about 3 us
  // from Volta on (a kernel timed alone with events; our own measurement replaces it for the
  // current device).
  static const std::vector<GpuSpec> specs = {
      {"GTX TITAN Black", 5645, 336.0, 5.0, false},  // 2880 cores @ 980 MHz
      {"GTX TITAN X", 6604, 336.5, 5.0, false},      // 3072 cores @ 1075 MHz (Maxwell)
      {"TITAN V", 14899, 652.8, 3.0, false},         // 5120 cores @ 1455 MHz
      {"RTX 2080 Ti", 13448, 616.0, 3.0, false},     // 4352 cores @ 1545 MHz
      {"RTX 4070", 29147, 504.2, 3.0, false},        // 5888 cores @ 2475 MHz
      {"A100 SXM 80GB", 19500, 2039.0, 3.0, false},  // 6912 cores @ 1410 MHz
      {"H100 SXM", 66900, 3350.0, 3.0, false},       // 16896 cores @ 1980 MHz
      {"H100 PCIe", 51200, 2000.0, 3.0, false},      // 14592 cores @ 1755 MHz
      {"H200 SXM", 66900, 4800.0, 3.0, false},       // H100 SXM compute, HBM3e
  };
  return specs;
}

GpuSpec measured_spec(const DeviceInfo& d, const Ceilings& c) {
  return GpuSpec{d.name + " (measured)", c.fma_gflops, c.copy_gbs, c.launch_us, true};
}

Prediction predict(const CostModel& cost, const GpuSpec& g) {
  Prediction p;
  p.compute_ms = g.fp32_gflops > 0 ? cost.flops / (g.fp32_gflops * 1e9) * 1e3 : 0;
  if (g.fp32_gflops > 0) p.compute_ms = std::max(p.compute_ms, cost.instructions / (g.fp32_gflops / 2 * 1e9) * 1e3);
  p.memory_ms = g.mem_gbs > 0 ? cost.bytes / (g.mem_gbs * 1e9) * 1e3 : 0;
  p.launch_ms = cost.launches * g.launch_us * 1e-3;
  p.total_ms = std::max(p.compute_ms, p.memory_ms) + p.launch_ms;
  if (p.launch_ms >= std::max(p.compute_ms, p.memory_ms))
    p.bound = "launch";
  else
    p.bound = p.compute_ms >= p.memory_ms ? "compute" : "memory";
  return p;
}

}  // namespace common
