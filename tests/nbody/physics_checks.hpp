// Checks shared by the CPU and GPU tests (same bounds for every version).
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include "nbody/plummer.hpp"
#include "nbody/system.hpp"

// float32 sums over n terms against float64: max relative error 1e-4 (close pairs, where a few
// terms dominate and cancel), median 1e-5; momentum balance 1e-5.
inline void expect_forces_accurate(const nbody::Bodies& b, const std::vector<float>& ax, const std::vector<float>& ay,
                                   const std::vector<float>& az, double eps, const std::string& what) {
  const auto ref = nbody::reference_accelerations(b, 1.0, eps);
  const auto e = nbody::compare_accelerations(ref, ax, ay, az);
  EXPECT_LE(e.max_rel, 1e-4) << what;
  EXPECT_LE(e.median_rel, 1e-5) << what;
  if (b.size() >= 2) EXPECT_LE(nbody::momentum_balance(b, ax, ay, az), 1e-5) << what;
}

// 1024-body Plummer sphere, softening 0.05: the setting of the drift bounds below (with 0.01 the
// first-order integrators' error is dominated by the closest pair: see the nbody README).
inline nbody::Bodies drift_test_system() { return nbody::make_plummer(1024, 42); }
constexpr double kDriftEps = 0.05;
inline double drift_bound(nbody::Integrator i) {
  switch (i) {
    case nbody::Integrator::ExplicitEuler: return 3e-4;
    case nbody::Integrator::SymplecticEuler: return 2e-6;
    case nbody::Integrator::Leapfrog: return 1e-6;
  }
  return 0;
}

using Simulate = std::function<void(nbody::Bodies&, const nbody::Params&)>;

inline double run_and_measure_drift(nbody::Bodies& b, nbody::Integrator i, const Simulate& sim) {
  nbody::Params p;
  p.eps = kDriftEps;
  p.dt = 1e-3;
  p.steps = 10;
  p.integrator = i;
  const double e0 = nbody::total_energy(b, p.G, p.eps);
  sim(b, p);
  return std::fabs((nbody::total_energy(b, p.G, p.eps) - e0) / e0);
}

// Two equal masses 1 apart on a circular orbit (G = M = 1): period 2 pi. Leapfrog, dt = 1e-3;
// the period is where body 0's unwrapped angle crosses 2 pi, interpolated between steps.
inline double measure_two_body_period(const Simulate& sim) {
  nbody::Bodies b;
  b.resize(2);
  b.x = {0.5f, -0.5f};
  b.y = {0.f, 0.f};
  b.z = {0.f, 0.f};
  b.vx = {0.f, 0.f};
  b.vy = {0.5f, -0.5f};
  b.vz = {0.f, 0.f};
  b.m = {0.5f, 0.5f};
  nbody::Params p;
  p.eps = 1e-4;  // force change eps^2 / r^2 = 1e-8
  p.dt = 1e-3;
  p.steps = 100;
  p.integrator = nbody::Integrator::Leapfrog;
  double angle = 0, prev = 0, t = 0;
  for (int chunk = 0; chunk < 80; ++chunk) {
    sim(b, p);
    t += p.steps * p.dt;
    const double a = std::atan2(double(b.y[0]) - b.y[1], double(b.x[0]) - b.x[1]);
    double d = a - std::fmod(angle, 2 * M_PI);
    while (d > M_PI) d -= 2 * M_PI;
    while (d < -M_PI) d += 2 * M_PI;
    prev = angle;
    angle += d;
    if (angle >= 2 * M_PI) return t - p.steps * p.dt * (angle - 2 * M_PI) / (angle - prev);
  }
  return -1;
}
