#include <cmath>
#include <random>

#include "nbody/plummer.hpp"

namespace nbody {

Bodies make_plummer(std::size_t n, std::uint64_t seed) {
  Bodies b;
  b.resize(n);
  if (n == 0) return b;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  const double pi = 3.14159265358979323846;
  const double scale_r = 3.0 * pi / 16.0;  // Plummer scale length a in units where E = -1/4
  const double scale_v = 1.0 / std::sqrt(scale_r);
  std::vector<double> x(n), y(n), z(n), vx(n), vy(n), vz(n);
  auto isotropic = [&](double r, double& ox, double& oy, double& oz) {
    const double cz = 2.0 * U(rng) - 1.0, phi = 2.0 * pi * U(rng), s = std::sqrt(1.0 - cz * cz);
    ox = r * s * std::cos(phi);
    oy = r * s * std::sin(phi);
    oz = r * cz;
  };
  for (std::size_t i = 0; i < n; ++i) {
    const double mass_fraction = 0.999 * U(rng) + 1e-12;  // cut the infinite tail at 99.9% of the mass
    const double r = 1.0 / std::sqrt(std::pow(mass_fraction, -2.0 / 3.0) - 1.0);
    isotropic(r, x[i], y[i], z[i]);
    double q, g;
    do {  // von Neumann rejection on g(q) = q^2 (1 - q^2)^(7/2), whose maximum is below 0.1
      q = U(rng);
      g = 0.1 * U(rng);
    } while (g > q * q * std::pow(1.0 - q * q, 3.5));
    const double v = q * std::sqrt(2.0) * std::pow(1.0 + r * r, -0.25);
    isotropic(v, vx[i], vy[i], vz[i]);
  }
  double cx = 0, cy = 0, cz = 0, cvx = 0, cvy = 0, cvz = 0;
  for (std::size_t i = 0; i < n; ++i) {
    cx += x[i];
    cy += y[i];
    cz += z[i];
    cvx += vx[i];
    cvy += vy[i];
    cvz += vz[i];
  }
  for (std::size_t i = 0; i < n; ++i) {
    b.x[i] = static_cast<float>((x[i] - cx / n) * scale_r);
    b.y[i] = static_cast<float>((y[i] - cy / n) * scale_r);
    b.z[i] = static_cast<float>((z[i] - cz / n) * scale_r);
    b.vx[i] = static_cast<float>((vx[i] - cvx / n) * scale_v);
    b.vy[i] = static_cast<float>((vy[i] - cvy / n) * scale_v);
    b.vz[i] = static_cast<float>((vz[i] - cvz / n) * scale_v);
    b.m[i] = static_cast<float>(1.0 / n);
    b.id[i] = static_cast<std::int64_t>(i);
  }
  return b;
}

}  // namespace nbody
