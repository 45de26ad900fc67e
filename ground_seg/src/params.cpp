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

Census census(const CellStats& c) {
  Census k;
  k.cells = c.count.size();
  for (std::uint32_t n : c.count) {
    k.max = n > k.max ? n : k.max;
    if (n == 0) {
      ++k.empty;
    } else if (n == 1) {
      ++k.one;
      k.points_one += 1;
    } else if (n <= 32) {
      ++k.warp;
      ++k.by_size[n];
      k.points_warp += n;
    } else {
      ++k.over;
      k.points_over += n;
      std::size_t i = 0;
      for (std::uint64_t hi = 64; n > hi; hi *= 2) ++i;
      if (k.over_by_range.size() <= i) k.over_by_range.resize(i + 1, 0);
      ++k.over_by_range[i];
    }
  }
  return k;
}

std::vector<std::pair<std::string, std::size_t>> Census::bins() const {
  std::vector<std::pair<std::string, std::size_t>> h = {{"0", empty}, {"1", one}};
  for (int n = 2; n <= 32; ++n) h.push_back({std::to_string(n), by_size[n]});
  std::uint64_t lo = 33, hi = 64;
  for (std::size_t cells_in_range : over_by_range) {
    h.push_back({std::to_string(lo) + "-" + std::to_string(hi), cells_in_range});
    lo = hi + 1;
    hi *= 2;
  }
  return h;
}

}  // namespace ground_seg
