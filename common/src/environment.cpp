#include "common/environment.hpp"

#include <iostream>

#include "common/requirements.hpp"

namespace common {

Environment detect_environment() {
  Environment e;
  e.gpu = has_cuda_device();
  if (!e.gpu) {
    // no GPU at all is the plain CI case; anything else (an old driver, a GPU this build has no
    // code for) is said once, with its fix, before the rows that it turns into skips
    if (gpu_unavailable_reason() != "no CUDA device") std::cerr << "warning: " << gpu_unavailable_reason() << "\n";
    return e;
  }
  e.device = query_device();
  e.device_label = e.device.name;
  e.ceilings = measure_ceilings(e.device);
  e.spec = measured_spec(e.device, e.ceilings);
  return e;
}

ResultRow meta_row(const std::string& subproject, const Environment& env) {
  ResultRow r = make_row(subproject, "", "the run's device, measured ceilings and parameters", 0, "", env.device_label,
                         "", "meta");
  r.verdict = Verdict::pass();
  if (!env.gpu) return r;
  r.add_metric("copy_bandwidth", env.ceilings.copy_gbs, "GB/s");
  r.add_metric("fp32_fma_peak", env.ceilings.fma_gflops, "GFLOP/s");
  r.add_metric("launch_latency", env.ceilings.launch_us, "us");
  r.add_metric("sm_count", env.device.sm_count, "");
  r.add_metric("sm_clock", env.device.sm_clock_khz / 1e3, "MHz");
  r.add_metric("l2", env.device.l2_bytes / 1048576.0, "MiB");
  r.add_metric("compute_capability", env.device.cc_major + env.device.cc_minor / 10.0, "");
  return r;
}

}  // namespace common
