// CPU versions: the "best possible" sequential code (SoA, a SIMD-reduced inner loop) and the same
// loop across cores with OpenMP. Both compute accelerations in float32; stepping is shared.
#pragma once
#include <vector>

#include "nbody/system.hpp"

namespace nbody {

struct HostAccel {
  std::vector<float> ax, ay, az;
};

void cpu_accelerations(const Bodies& b, float G, float eps, HostAccel& a);
void cpu_accelerations_openmp(const Bodies& b, float G, float eps, HostAccel& a);
using CpuAccelFn = void (*)(const Bodies&, float, float, HostAccel&);

// Runs p.steps steps of p.integrator with the given acceleration function (float32 state).
void cpu_simulate(Bodies& b, const Params& p, CpuAccelFn accel);

}  // namespace nbody
