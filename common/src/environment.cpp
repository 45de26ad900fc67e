#include "common/environment.hpp"

#include <cstdlib>
#include <iostream>
#include <stdexcept>
#include <string>

#include "common/cli.hpp"

#include "common/requirements.hpp"

namespace common {

Ceilings parse_ceilings(const std::string& text) {
  // "copy_bandwidth=3012.5;fp32_fma_peak=61000;launch_latency=2.1" (the meta row's metrics)
  Ceilings c;
  double* slots[] = {&c.copy_gbs, &c.fma_gflops, &c.launch_us};
  const char* names[] = {"copy_bandwidth", "fp32_fma_peak", "launch_latency"};
  for (const auto& item : split(text, ';')) {
    const auto eq = item.find('=');
    const std::string name = item.substr(0, eq == std::string::npos ? item.size() : eq);
    int k = 0;
    while (k < 3 && name != names[k]) ++k;
    if (k == 3 || eq == std::string::npos)
      throw std::invalid_argument("COURSE_CEILINGS: '" + item + "' is not copy_bandwidth, fp32_fma_peak or " +
                                  "launch_latency = a number");
    *slots[k] = parse_number(item.substr(eq + 1), "COURSE_CEILINGS " + name, 1e-6, 1e12);
  }
  for (int k = 0; k < 3; ++k)
    if (!(*slots[k] > 0)) throw std::invalid_argument(std::string("COURSE_CEILINGS: no ") + names[k]);
  return c;
}

Ceilings ceilings_from_environment(const DeviceInfo& device) {
  const char* given = std::getenv("COURSE_CEILINGS");
  if (given == nullptr || *given == 0) return measure_ceilings(device);
  return parse_ceilings(given);
}

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
  e.ceilings = ceilings_from_environment(e.device);
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
