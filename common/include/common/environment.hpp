// What every driver establishes first: is there a GPU, which, and its measured ceilings.
#pragma once
#include <string>

#include "common/ceilings.hpp"
#include "common/device_info.hpp"
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

}  // namespace common
