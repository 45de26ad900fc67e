// CPU sequential, "best possible": structure of arrays, one i at a time, the j-loop written so
// the compiler vectorizes it (omp simd reduction: 8 bodies per AVX2 instruction). Prediction: a
// few GFLOP/s per core, ~1000x below one H100/H200 - the reference point for "speedup vs CPU".
#include <cmath>
#include <stdexcept>

#include "nbody/cpu.hpp"

namespace nbody {
namespace {

inline void accel_row(const Bodies& b, std::size_t i, float eps2, float& ax, float& ay, float& az) {
  const float xi = b.x[i], yi = b.y[i], zi = b.z[i];
  const float* __restrict x = b.x.data();
  const float* __restrict y = b.y.data();
  const float* __restrict z = b.z.data();
  const float* __restrict m = b.m.data();
  const std::size_t n = b.size();
  float sx = 0, sy = 0, sz = 0;
#pragma omp simd reduction(+ : sx, sy, sz)
  for (std::size_t j = 0; j < n; ++j) {
    const float dx = x[j] - xi, dy = y[j] - yi, dz = z[j] - zi;
    const float r2 = dx * dx + dy * dy + dz * dz + eps2;
    const float inv = 1.0f / std::sqrt(r2);
    const float s = m[j] * inv * inv * inv;
    sx += dx * s;
    sy += dy * s;
    sz += dz * s;
  }
  ax = sx;
  ay = sy;
  az = sz;
}

void check_eps(float eps) {
  if (!(eps > 0))
    throw std::invalid_argument("softening eps must be > 0 (each body's own term divides by eps^3): got " +
                                std::to_string(eps));
}

}  // namespace

void cpu_accelerations(const Bodies& b, float G, float eps, HostAccel& a) {
  check_eps(eps);
  const std::size_t n = b.size();
  a.ax.resize(n);
  a.ay.resize(n);
  a.az.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    accel_row(b, i, eps * eps, a.ax[i], a.ay[i], a.az[i]);
    a.ax[i] *= G;
    a.ay[i] *= G;
    a.az[i] *= G;
  }
}

void cpu_accelerations_openmp(const Bodies& b, float G, float eps, HostAccel& a) {
  check_eps(eps);
  const std::ptrdiff_t n = static_cast<std::ptrdiff_t>(b.size());
  a.ax.resize(n);
  a.ay.resize(n);
  a.az.resize(n);
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < n; ++i) {
    accel_row(b, i, eps * eps, a.ax[i], a.ay[i], a.az[i]);
    a.ax[i] *= G;
    a.ay[i] *= G;
    a.az[i] *= G;
  }
}

void cpu_simulate(Bodies& b, const Params& p, CpuAccelFn accel) {
  const float dt = static_cast<float>(p.dt), G = static_cast<float>(p.G), eps = static_cast<float>(p.eps);
  HostAccel a;
  const std::size_t n = b.size();
  auto kick = [&](float h) {
    for (std::size_t i = 0; i < n; ++i) {
      b.vx[i] += a.ax[i] * h;
      b.vy[i] += a.ay[i] * h;
      b.vz[i] += a.az[i] * h;
    }
  };
  auto drift = [&](float h) {
    for (std::size_t i = 0; i < n; ++i) {
      b.x[i] += b.vx[i] * h;
      b.y[i] += b.vy[i] * h;
      b.z[i] += b.vz[i] * h;
    }
  };
  if (p.integrator == Integrator::Leapfrog && p.steps > 0) accel(b, G, eps, a);
  for (int s = 0; s < p.steps; ++s) {
    switch (p.integrator) {
      case Integrator::ExplicitEuler:  // both updates from the old state
        accel(b, G, eps, a);
        drift(dt);
        kick(dt);
        break;
      case Integrator::SymplecticEuler:  // kick, then drift with the new velocity
        accel(b, G, eps, a);
        kick(dt);
        drift(dt);
        break;
      case Integrator::Leapfrog:  // kick-drift-kick; the last acceleration is reused next step
        kick(0.5f * dt);
        drift(dt);
        accel(b, G, eps, a);
        kick(0.5f * dt);
        break;
    }
  }
}

}  // namespace nbody
