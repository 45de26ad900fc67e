// Shared GPU machinery: device state, the integrator kernels, stepping, and host<->device
// conversion between SoA (host) and float4 (device).
#include <vector>

#include "common/cuda_check.hpp"
#include "nbody/gpu.hpp"

namespace nbody {
namespace {

// x += rate * dt on the three components (a kick: v += a dt; a drift: x += v dt).
__device__ __forceinline__ void advance(float4& x, const float4& rate, float dt) {
  x.x += rate.x * dt;
  x.y += rate.y * dt;
  x.z += rate.z * dt;
}

__global__ void integrate_kernel(float4* __restrict__ pos, float4* __restrict__ vel, const float4* __restrict__ acc,
                                 int first, int count, int stage, float kick_dt, float drift_dt) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= count) return;
  float4 p = pos[first + t], v = vel[first + t];
  const float4 a = acc[t];
  switch (static_cast<Stage>(stage)) {
    case Stage::Kick: advance(v, a, kick_dt); break;
    case Stage::Drift: advance(p, v, drift_dt); break;
    case Stage::KickDrift:
      advance(v, a, kick_dt);
      advance(p, v, drift_dt);
      break;
    case Stage::DriftKick:
      advance(p, v, drift_dt);
      advance(v, a, kick_dt);
      break;
  }
  pos[first + t] = p;
  vel[first + t] = v;
}

}  // namespace

void DeviceSystem::resize(int n) {
  n_ = n;
  const std::size_t c = n > 0 ? n : 1;
  pos_.resize(c);
  vel_.resize(c);
  acc_.resize(c);
}

void pack_bodies(const Bodies& b, float4* pos, float4* vel) {
  for (std::size_t i = 0; i < b.size(); ++i) {
    pos[i] = make_float4(b.x[i], b.y[i], b.z[i], b.m[i]);
    vel[i] = make_float4(b.vx[i], b.vy[i], b.vz[i], 0.f);
  }
}

void unpack_bodies(const float4* pos, const float4* vel, Bodies& b) {
  for (std::size_t i = 0; i < b.size(); ++i) {
    b.x[i] = pos[i].x;
    b.y[i] = pos[i].y;
    b.z[i] = pos[i].z;
    b.vx[i] = vel[i].x;
    b.vy[i] = vel[i].y;
    b.vz[i] = vel[i].z;
  }
}

void DeviceSystem::upload(const Bodies& b, cudaStream_t s) {
  resize(static_cast<int>(b.size()));
  std::vector<float4> p(b.size()), v(b.size());
  pack_bodies(b, p.data(), v.data());
  CUDA_CHECK(cudaMemcpyAsync(pos_.get(), p.data(), p.size() * sizeof(float4), cudaMemcpyHostToDevice, s));
  CUDA_CHECK(cudaMemcpyAsync(vel_.get(), v.data(), v.size() * sizeof(float4), cudaMemcpyHostToDevice, s));
  CUDA_CHECK(cudaStreamSynchronize(s));  // the staging vectors die here
}

void DeviceSystem::download(Bodies& b, cudaStream_t s) const {
  std::vector<float4> p(n_), v(n_);
  CUDA_CHECK(cudaMemcpyAsync(p.data(), pos_.get(), p.size() * sizeof(float4), cudaMemcpyDeviceToHost, s));
  CUDA_CHECK(cudaMemcpyAsync(v.data(), vel_.get(), v.size() * sizeof(float4), cudaMemcpyDeviceToHost, s));
  CUDA_CHECK(cudaStreamSynchronize(s));
  unpack_bodies(p.data(), v.data(), b);
}

void integrate(float4* pos, float4* vel, const float4* acc, int first, int count, Stage stage, float kick_dt,
               float drift_dt, cudaStream_t s) {
  if (count <= 0) return;
  integrate_kernel<<<(count + 255) / 256, 256, 0, s>>>(pos, vel, acc, first, count, static_cast<int>(stage), kick_dt,
                                                       drift_dt);
  CUDA_CHECK_LAST();
}

void gpu_simulate(DeviceSystem& sys, const Params& p, AccelLauncher accel, cudaStream_t s) {
  const int n = sys.size();
  if (n == 0 || p.steps <= 0) return;
  if (!(p.eps > 0)) throw std::invalid_argument("softening eps must be > 0 (each body's own term divides by eps^3)");
  const float dt = static_cast<float>(p.dt), G = static_cast<float>(p.G);
  const float eps2 = static_cast<float>(p.eps * p.eps);
  auto forces = [&] { accel(sys.pos(), n, sys.acc(), 0, n, eps2, G, s); };
  if (p.integrator == Integrator::Leapfrog) forces();
  for (int step = 0; step < p.steps; ++step) {
    switch (p.integrator) {
      case Integrator::ExplicitEuler:
        forces();
        integrate(sys.pos(), sys.vel(), sys.acc(), 0, n, Stage::DriftKick, dt, dt, s);
        break;
      case Integrator::SymplecticEuler:
        forces();
        integrate(sys.pos(), sys.vel(), sys.acc(), 0, n, Stage::KickDrift, dt, dt, s);
        break;
      case Integrator::Leapfrog:
        integrate(sys.pos(), sys.vel(), sys.acc(), 0, n, Stage::KickDrift, 0.5f * dt, dt, s);
        forces();
        integrate(sys.pos(), sys.vel(), sys.acc(), 0, n, Stage::Kick, 0.5f * dt, 0.f, s);
        break;
    }
  }
}

void gpu_accelerations(const Bodies& b, float G, float eps, AccelLauncher accel, std::vector<float>& ax,
                       std::vector<float>& ay, std::vector<float>& az) {
  if (!(eps > 0)) throw std::invalid_argument("softening eps must be > 0 (each body's own term divides by eps^3)");
  DeviceSystem sys;
  sys.upload(b, nullptr);
  const int n = sys.size();
  CUDA_CHECK(cudaMemset(sys.acc(), 0xff, std::max(n, 1) * sizeof(float4)));  // NaN poison
  if (n > 0) accel(sys.pos(), n, sys.acc(), 0, n, eps * eps, G, nullptr);
  std::vector<float4> a(n);
  CUDA_CHECK(cudaMemcpy(a.data(), sys.acc(), n * sizeof(float4), cudaMemcpyDeviceToHost));
  ax.resize(n);
  ay.resize(n);
  az.resize(n);
  for (int i = 0; i < n; ++i) {
    ax[i] = a[i].x;
    ay[i] = a[i].y;
    az[i] = a[i].z;
  }
}

}  // namespace nbody
