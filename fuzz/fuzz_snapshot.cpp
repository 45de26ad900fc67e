// nbody snapshot CSV (x,y,z,vx,vy,vz,m[,id]): either bodies with finite values, non-negative
// masses and integer ids, or nbody::InputError naming the line.
#include <cmath>
#include <cstdlib>

#include "nbody/io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const nbody::Bodies b = nbody::parse_snapshot_csv(text, "fuzz.csv");
    if (b.size() == 0 || b.m.size() != b.size() || b.id.size() != b.size()) std::abort();
    for (std::size_t i = 0; i < b.size(); ++i)
      if (!std::isfinite(b.x[i]) || !std::isfinite(b.vz[i]) || !(b.m[i] >= 0) || b.id[i] < 0) std::abort();
  } catch (const nbody::InputError&) {}
  return 0;
}
