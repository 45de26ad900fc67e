// Launch-side helpers shared by the launchers of this sub-project.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

namespace StreamCompaction {
namespace Device {

inline unsigned grid_for(std::int64_t work_items, std::int64_t per_block) {
  const std::int64_t g = (work_items + per_block - 1) / per_block;
  if (g > 0x7fffffff) throw std::invalid_argument("grid of " + std::to_string(g) + " blocks exceeds the 2^31-1 limit");
  return static_cast<unsigned>(g < 1 ? 1 : g);
}

inline void check_block(int block, const char* who, bool power_of_two) {
  if (block < 1 || block > 1024 || (power_of_two && (block & (block - 1))))
    throw std::invalid_argument(std::string(who) + ": block size " + std::to_string(block) +
                                (power_of_two ? " is not a power of two in [1, 1024]" : " is not in [1, 1024]"));
}

inline void check_n(std::int64_t n, const char* who) {
  if (n < 0) throw std::invalid_argument(std::string(who) + ": negative element count " + std::to_string(n));
}

}  // namespace Device
}  // namespace StreamCompaction
