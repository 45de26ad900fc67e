// GPU versions. A version is a force kernel (accelerations of bodies [i_begin, i_begin + count)
// from all n bodies); stepping, integrators, transfers and the batch pipelines are shared.
#pragma once
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "common/device_buffer.hpp"
#include "nbody/system.hpp"

namespace nbody {

// pos[j] = (x, y, z, m); acc is written for i in [i_begin, i_begin + count): acc[i - i_begin].
using AccelLauncher = void (*)(const float4* pos, int n, float4* acc, int i_begin, int count, float eps2, float G,
                               cudaStream_t stream);

void accel_naive(const float4*, int, float4*, int, int, float, float, cudaStream_t);
void accel_tiled(const float4*, int, float4*, int, int, float, float, cudaStream_t);
void accel_rsqrt_unroll(const float4*, int, float4*, int, int, float, float, cudaStream_t);
void accel_tuned(const float4*, int, float4*, int, int, float, float, cudaStream_t);
void accel_warp_split(const float4*, int, float4*, int, int, float, float, cudaStream_t);
void accel_multi_body(const float4*, int, float4*, int, int, float, float, cudaStream_t);
void accel_mass_fold(const float4*, int, float4*, int, int, float, float, cudaStream_t);
// v8's kernel with the equal-mass fold, at v8's shape (v9 calls it).
void launch_multi_body_fold(const float4*, int, float4*, int, int, float, float, cudaStream_t);

// Shapes of the several-bodies-per-thread kernel ("threads x bodies per thread [min resident
// blocks]"), timed by `nbody --mode tune`; accel_multi_body uses the measured best.
struct KernelVariant {
  std::string name;
  AccelLauncher launch;
};
const std::vector<KernelVariant>& multi_body_variants();

// Block size chosen by cudaOccupancyMaxPotentialBlockSize for the tuned kernel (for the README).
int tuned_block_size(int count);
// Threads per body the warp-split kernel uses at this n (1 = plain).
int warp_split_group(int n);

// Device-resident simulation state of one GPU (current device).
class DeviceSystem {
 public:
  void upload(const Bodies& b, cudaStream_t s);    // host staging inside
  void download(Bodies& b, cudaStream_t s) const;  // positions and velocities back
  int size() const { return n_; }
  float4* pos() { return pos_.get(); }
  float4* vel() { return vel_.get(); }
  float4* acc() { return acc_.get(); }
  void resize(int n);

 private:
  int n_ = 0;
  common::DeviceBuffer<float4> pos_, vel_, acc_;
};

// The host's SoA bodies <-> the device's float4 layout (pos.w = mass, vel.w = 0), b.size() bodies.
void pack_bodies(const Bodies& b, float4* pos, float4* vel);
void unpack_bodies(const float4* pos, const float4* vel, Bodies& b);

// p.steps steps on the device with `accel` for the forces (all bodies on this GPU).
void gpu_simulate(DeviceSystem& sys, const Params& p, AccelLauncher accel, cudaStream_t s);
// One integrator stage over count bodies starting at `first` (acc indexed from first): a kick is
// v += a * kick_dt, a drift x += v * drift_dt.
enum class Stage { Kick, Drift, KickDrift, DriftKick };
void integrate(float4* pos, float4* vel, const float4* acc, int first, int count, Stage stage, float kick_dt,
               float drift_dt, cudaStream_t s);
// Accelerations of all bodies into host arrays (for checks).
void gpu_accelerations(const Bodies& b, float G, float eps, AccelLauncher accel, std::vector<float>& ax,
                       std::vector<float>& ay, std::vector<float>& az);

}  // namespace nbody
