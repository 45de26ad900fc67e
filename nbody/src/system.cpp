#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "nbody/system.hpp"

namespace nbody {

void Bodies::resize(std::size_t n) {
  for (auto* v : {&x, &y, &z, &vx, &vy, &vz, &m}) v->resize(n);
  id.resize(n);
}

const char* integrator_name(Integrator i) {
  switch (i) {
    case Integrator::ExplicitEuler: return "euler";
    case Integrator::SymplecticEuler: return "symplectic";
    case Integrator::Leapfrog: return "leapfrog";
  }
  return "?";
}

Integrator parse_integrator(const std::string& name) {
  if (name == "euler") return Integrator::ExplicitEuler;
  if (name == "symplectic") return Integrator::SymplecticEuler;
  if (name == "leapfrog") return Integrator::Leapfrog;
  throw std::invalid_argument("unknown integrator '" + name + "' (euler, symplectic, leapfrog)");
}

}  // namespace nbody
