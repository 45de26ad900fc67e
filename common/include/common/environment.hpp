// What every driver establishes first: is there a GPU, which, and its measured ceilings.
#pragma once
#include <string>

#include "common/ceilings.hpp"
#include "common/device_info.hpp"
#include "common/results.hpp"
#include "common/roofline.hpp"

namespace common {

struct Environment {
  bool gpu = false;
  DeviceInfo device;
  Ceilings ceilings;
  GpuSpec spec;  // the measured ceilings as a roofline spec
  std::string device_label = "none (CPU only)";
};

// Queries device 0 and measures its ceilings when a GPU is visible; otherwise gpu = false.
Environment detect_environment();

// The ceilings handed over in $COURSE_CEILINGS ("copy_bandwidth=GB/s;fp32_fma_peak=GFLOP/s;
// launch_latency=us", the meta row's metrics: what the grader measured once for the GPU and every
// run of the job reuses, about a second a process), else measured. A malformed value throws
// (UsageError or std::invalid_argument) naming COURSE_CEILINGS and the item.
Ceilings ceilings_from_environment(const DeviceInfo& device);
Ceilings parse_ceilings(const std::string& text);

// The run's metadata record (kind "meta"): the device and, with a GPU, its measured ceilings
// (copy_bandwidth, fp32_fma_peak, launch_latency) and shape (sm_count, sm_clock, l2) as
// metrics. A driver adds the parameters its plots need (add_metric) before pushing it first.
ResultRow meta_row(const std::string& subproject, const Environment& env);

}  // namespace common
