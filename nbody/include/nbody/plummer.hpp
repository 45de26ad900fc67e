// Plummer sphere by the Aarseth-Henon-Wielen (1974) recipe, as NEMO's mkplummer: radius from the
// cumulative mass (cut at 99.9% of the mass), speed by von Neumann rejection on q^2 (1-q^2)^(7/2),
// isotropic directions, scaled to standard units G = M = 1, E = -1/4, centre of mass removed.
#pragma once
#include <cstdint>

#include "nbody/system.hpp"

namespace nbody {

Bodies make_plummer(std::size_t n, std::uint64_t seed);

}  // namespace nbody
