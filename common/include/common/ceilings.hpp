// The measured limits every result is reported against, taken once per run on the GPU at hand:
//  - device-to-device copy bandwidth, counting bytes read + bytes written;
//  - FP32 FMA peak (independent FMA chains, counted as 2 FLOP each);
//  - launch latency: one empty kernel timed alone with events (what a lone launch costs).
#pragma once
#include "common/device_info.hpp"

namespace common {

struct Ceilings {
  double copy_gbs = 0;
  double fma_gflops = 0;
  double launch_us = 0;
};

Ceilings measure_ceilings(const DeviceInfo& device);

}  // namespace common
