// Bodies, parameters and the physics shared by every version.
// Softened direct sum: a_i = G * sum_j m_j (r_j - r_i) / (|r_j - r_i|^2 + eps^2)^(3/2).
// State is float32 structure-of-arrays on the host, float4 (x, y, z, m) / (vx, vy, vz, 0) on the
// device; diagnostics (energy, momentum) are float64.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace nbody {

struct Bodies {
  std::vector<float> x, y, z, vx, vy, vz, m;
  std::vector<std::int64_t> id;
  std::size_t size() const { return x.size(); }
  void resize(std::size_t n);
};

enum class Integrator { ExplicitEuler, SymplecticEuler, Leapfrog };
const char* integrator_name(Integrator i);
Integrator parse_integrator(const std::string& name);  // throws std::invalid_argument naming it

struct Params {
  double G = 1.0;     // N-body (Henon) units
  double eps = 0.01;  // softening length
  double dt = 1e-3;
  int steps = 10;
  Integrator integrator = Integrator::SymplecticEuler;
};

// The customary 20 FLOP per interaction (the convention of GPU Gems 3, ch. 31, and NVIDIA's
// nbody sample), used for GFLOP/s. What the tuned kernel really issues per interaction is
// 3 FADD + 3 FFMA (r^2 + eps^2) + 1 MUFU.RSQ + 3 FMUL (m / r^3) + 3 FFMA (accumulate): the
// instruction-issue ceiling in the README is derived from that, not from this count.
constexpr double kFlopsPerInteraction = 20.0;

struct Accelerations {
  std::vector<double> ax, ay, az;
};

// float64 reference accelerations (i-loop over all j, self term skipped), of every body or of the
// bodies listed in `indices` (in that order).
Accelerations reference_accelerations(const Bodies& b, double G, double eps);
Accelerations reference_accelerations_at(const Bodies& b, const std::vector<std::size_t>& indices, double G,
                                         double eps);
double kinetic_energy(const Bodies& b);
// Potential energy with the same softening as the force (so E is conserved by the dynamics).
double potential_energy(const Bodies& b, double G, double eps);
double total_energy(const Bodies& b, double G, double eps);
// |sum m a| / sum m |a| : zero for exact pairwise forces; a check of force antisymmetry.
double momentum_balance(const Bodies& b, const std::vector<float>& ax, const std::vector<float>& ay,
                        const std::vector<float>& az);

struct AccelError {
  double max_rel = 0, median_rel = 0;
};
AccelError compare_accelerations(const Accelerations& ref, const std::vector<float>& ax, const std::vector<float>& ay,
                                 const std::vector<float>& az);

}  // namespace nbody
