// The grid's parameters and the cells' population histogram (harness code shared by every version).
#include <cmath>
#include <stdexcept>
#include <string>
#include <tuple>

#include "ground_seg/ground_seg.hpp"

namespace ground_seg {

int Params::nx() const { return static_cast<int>(std::ceil((x_max - x_min) / cell - 1e-4f)); }
int Params::ny() const { return static_cast<int>(std::ceil((y_max - y_min) / cell - 1e-4f)); }

void Params::validate() const {
  auto bad = [](const std::string& what) { throw std::invalid_argument("ground_seg parameter: " + what); };
  if (!(cell > 0)) bad("cell size must be > 0");
  if (!(x_max > x_min) || !(y_max > y_min)) bad("the region must have x_max > x_min and y_max > y_min");
  if (point_threshold < 1) bad("point threshold must be >= 1");
  if (!(var_threshold > 0) || !(height_threshold > 0)) bad("variance and height thresholds must be > 0");
  // nx()/ny()'s float expressions, checked before their int casts (a huge region over a tiny
  // cell must not overflow them, a cell larger than the region must not give zero cells)
  const float gx = std::ceil((x_max - x_min) / cell - 1e-4f), gy = std::ceil((y_max - y_min) / cell - 1e-4f);
  if (!(gx >= 1 && gy >= 1)) bad("the region must be at least one cell wide in x and y");
  if (!(static_cast<double>(gx) * gy <= static_cast<double>(1LL << 28))) bad("grid of more than 2^28 cells");
  if (improved && (!(local_radius > 0) || !(raised_threshold > 0)))
    bad("improved-mode radius and threshold must be > 0");
}

bool Params::operator==(const Params& o) const {
  return std::tie(x_min, x_max, y_min, y_max, cell, point_threshold, var_threshold, height_threshold, improved,
                  local_radius, raised_threshold) == std::tie(o.x_min, o.x_max, o.y_min, o.y_max, o.cell,
                                                              o.point_threshold, o.var_threshold, o.height_threshold,
                                                              o.improved, o.local_radius, o.raised_threshold);
}

std::vector<std::pair<std::string, std::size_t>> population_histogram(const CellStats& c) {
  std::vector<std::pair<std::string, std::size_t>> h = {{"0", 0}, {"1", 0}};
  for (unsigned lo = 2; lo <= (1u << 15); lo *= 2)
    h.push_back({std::to_string(lo) + "-" + std::to_string(2 * lo - 1), 0});
  for (std::uint32_t n : c.count) {
    if (n < 2) {
      ++h[n].second;
      continue;
    }
    std::size_t b = 2;
    for (unsigned lo = 2; 2 * lo <= n && b + 1 < h.size(); lo *= 2) ++b;
    ++h[b].second;
  }
  while (h.size() > 3 && h.back().second == 0) h.pop_back();
  return h;
}

}  // namespace ground_seg
