// CPU versions, the Plummer generator, integrators and invariants (run everywhere, CI included).
#include <gtest/gtest.h>

#include <cmath>

#include "nbody/cpu.hpp"
#include "nbody/plummer.hpp"
#include "nbody/registry.hpp"
#include "nbody/system.hpp"
#include "physics_checks.hpp"

using namespace nbody;

TEST(Plummer, EnergyIsAQuarterInStandardUnits) {
  // unsoftened energy of a 16384-body realization; the scatter between realizations is ~1%
  for (std::uint64_t seed : {1, 2, 3}) {
    const Bodies b = make_plummer(16384, seed);
    const double e = kinetic_energy(b) + potential_energy(b, 1.0, 0.0);
    EXPECT_NEAR(e, -0.25, 0.02 * 0.25) << "seed " << seed;
  }
}

TEST(Plummer, CentreOfMassAtRestAtTheOriginAndTotalMassOne) {
  const Bodies b = make_plummer(10000, 9);
  double m = 0, x = 0, vx = 0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    m += b.m[i];
    x += b.m[i] * b.x[i];
    vx += b.m[i] * b.vx[i];
  }
  EXPECT_NEAR(m, 1.0, 1e-5);
  EXPECT_NEAR(x, 0.0, 1e-5);
  EXPECT_NEAR(vx, 0.0, 1e-5);
}

TEST(CpuForces, MatchFloat64WithinTolerance) {
  for (std::size_t n : {512u, 1000u, 1023u}) {
    const Bodies b = make_plummer(n, 100 + n);
    for (auto fn : {cpu_accelerations, cpu_accelerations_openmp}) {
      HostAccel a;
      fn(b, 1.f, 0.01f, a);
      expect_forces_accurate(b, a.ax, a.ay, a.az, 0.01, "cpu n=" + std::to_string(n));
    }
  }
}

TEST(CpuForces, SmallAndDegenerateSizes) {
  for (std::size_t n : {0u, 1u, 2u, 31u, 33u}) {
    const Bodies b = make_plummer(n, 5);
    HostAccel a;
    cpu_accelerations(b, 1.f, 0.01f, a);
    ASSERT_EQ(a.ax.size(), n);
    if (n == 1) EXPECT_EQ(a.ax[0], 0.f);  // a body does not pull itself
    if (n >= 2) expect_forces_accurate(b, a.ax, a.ay, a.az, 0.01, "cpu n=" + std::to_string(n));
  }
}

TEST(CpuForces, ZeroSofteningIsRejected) {
  const Bodies b = make_plummer(4, 1);
  HostAccel a;
  EXPECT_THROW(cpu_accelerations(b, 1.f, 0.f, a), std::invalid_argument);
}

TEST(CpuIntegrators, TenStepEnergyDriftWithinBounds) {
  for (Integrator i : {Integrator::ExplicitEuler, Integrator::SymplecticEuler, Integrator::Leapfrog}) {
    Bodies b = drift_test_system();
    const double drift =
        run_and_measure_drift(b, i, [](Bodies& s, const Params& p) { cpu_simulate(s, p, cpu_accelerations); });
    EXPECT_LE(drift, drift_bound(i)) << integrator_name(i);
  }
}

TEST(CpuIntegrators, TwoBodyCircularOrbitHasTheAnalyticPeriod) {
  const double period =
      measure_two_body_period([](Bodies& s, const Params& p) { cpu_simulate(s, p, cpu_accelerations); });
  EXPECT_NEAR(period, 2 * M_PI, 2 * M_PI * 1e-4);
}

TEST(CpuIntegrators, BitwiseDeterministic) {
  Bodies a = make_plummer(700, 8), b = a;
  Params p;
  p.steps = 3;
  cpu_simulate(a, p, cpu_accelerations_openmp);
  cpu_simulate(b, p, cpu_accelerations_openmp);
  EXPECT_EQ(a.x, b.x);
  EXPECT_EQ(a.vy, b.vy);
}

TEST(Checks, AWrongForceIsCaught) {
  const Bodies b = make_plummer(512, 4);
  HostAccel a;
  cpu_accelerations(b, 1.f, 0.01f, a);
  for (auto& v : a.ax) v *= 1.001f;  // 0.1% too strong in x
  const auto ref = reference_accelerations(b, 1.0, 0.01);
  EXPECT_GT(compare_accelerations(ref, a.ax, a.ay, a.az).max_rel, 1e-4);
  HostAccel self;  // a force missing its j > i half breaks momentum balance
  cpu_accelerations(b, 1.f, 0.01f, self);
  self.ax[0] += 1.0f;
  EXPECT_GT(momentum_balance(b, self.ax, self.ay, self.az), 1e-5);
}

// The per-version cost model: every single-GPU force kernel carries its measured instructions per
// interaction, and the predicted step time falls along the ladder wherever the count does (the
// counts are what the predicted column and the issue ceiling are made of).
TEST(NbodyRegistry, EveryForceKernelHasAnInstructionCountThatOrdersItsPrediction) {
  const common::GpuSpec h200{"h200", 63700, 4200, 5.4, true};
  const long long n = 1 << 16;
  double previous = 0;
  const nbody::Version* before = nullptr;
  for (const auto& v : nbody::versions()) {
    if (v.mode != nbody::Mode::Step || !v.needs_gpu) {
      EXPECT_EQ(v.instructions_per_interaction, 0) << v.name;
      continue;
    }
    // 6 FFMA + 3 FADD + 2 FMUL + 1 MUFU at least (3 FMUL unless equal masses are folded out)
    EXPECT_GE(v.instructions_per_interaction, 12.0) << v.name;
    const double ms = common::predict(nbody::step_cost(v, n), h200).total_ms;
    if (before && v.instructions_per_interaction < before->instructions_per_interaction)
      EXPECT_LT(ms, previous) << v.name << " after " << before->name;
    previous = ms;
    before = &v;
  }
  EXPECT_GT(nbody::best_version().instructions_per_interaction, 0);
}
