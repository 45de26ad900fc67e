// The NDT target map on the CPU: PCL's VoxelGridCovariance (leaf = resolution, >= 6 points,
// per-leaf sums in file order) and the cell hash used by the neighbour search.
#include <algorithm>
#include <cmath>
#include <map>

#include "ndt_graph/ndt.hpp"

namespace ndt {

MapView VoxelMap::view(Search s) const { return map_view(voxels.data(), table.data(), table.size(), resolution, s); }

void build_hash(const std::vector<int>& cells, VoxelMap& map) {
  const std::size_t nv = cells.size() / 3;
  // At most a quarter full: a probe for an absent cell (most of a point's 27 candidates) ends at
  // an empty slot, after one more slot in ~1 of 4 lookups at this load (1 in 2 at half full).
  std::size_t cap = 16;
  while (cap < 4 * nv) cap *= 2;
  map.table.assign(cap, empty_slot());
  for (std::size_t v = 0; v < nv; ++v) {
    const std::uint64_t key = cell_key(cells[3 * v], cells[3 * v + 1], cells[3 * v + 2]);
    std::uint32_t s = hash_slot(key, cap - 1);
    while (map.table[s].key != kEmptyKey) s = (s + 1) & static_cast<std::uint32_t>(cap - 1);
    fill_slot(map.table[s], key, static_cast<int>(v), map.voxels[v]);
  }
}

bool build_cell_grid(const VoxelMap& map, std::size_t max_cells, CellGrid& box, std::vector<GridCell>& cells) {
  box = CellGrid{};
  cells.clear();
  long long lo[3] = {0, 0, 0}, hi[3] = {-1, -1, -1};
  bool any = false;
  for (const CellSlot& s : map.table) {
    if (s.key == kEmptyKey) continue;
    int c[3];
    key_cell(s.key, c[0], c[1], c[2]);
    for (int k = 0; k < 3; ++k) {
      lo[k] = any ? std::min<long long>(lo[k], c[k]) : c[k];
      hi[k] = any ? std::max<long long>(hi[k], c[k]) : c[k];
    }
    any = true;
  }
  if (!any) return false;
  long long n[3], total = 1;
  for (int k = 0; k < 3; ++k) {
    n[k] = hi[k] - lo[k] + 3;  // a cell of margin each side: a point there still has neighbours
    total *= n[k];
    if (total > static_cast<long long>(max_cells)) return false;
  }
  box.x0 = static_cast<int>(lo[0] - 1), box.y0 = static_cast<int>(lo[1] - 1), box.z0 = static_cast<int>(lo[2] - 1);
  box.nx = static_cast<int>(n[0]), box.ny = static_cast<int>(n[1]), box.nz = static_cast<int>(n[2]);
  cells.assign(static_cast<std::size_t>(total), GridCell{-1, {0, 0, 0}});
  for (const CellSlot& s : map.table) {
    if (s.key == kEmptyKey) continue;
    int c[3];
    key_cell(s.key, c[0], c[1], c[2]);
    GridCell& g = cells[static_cast<std::size_t>(grid_index(box, c[0], c[1], c[2]))];
    g.voxel = s.voxel | (s.valid ? kGridValidBit : 0);
    for (int k = 0; k < 3; ++k) g.centroid[k] = s.centroid[k];
  }
  return true;
}

std::string compare_maps(const VoxelMap& a, const VoxelMap& b) {
  if (a.voxels.size() != b.voxels.size() || a.occupied != b.occupied || a.valid != b.valid)
    return std::to_string(a.voxels.size()) + "/" + std::to_string(a.valid) + " vs " + std::to_string(b.voxels.size()) +
           "/" + std::to_string(b.valid) + " searchable/valid voxels";
  for (std::size_t v = 0; v < a.voxels.size(); ++v) {  // field by field: the struct has padding
    const Voxel &x = a.voxels[v], &y = b.voxels[v];
    bool same = x.points == y.points && x.valid == y.valid;
    for (int k = 0; k < 3; ++k) same = same && x.mean[k] == y.mean[k] && x.centroid[k] == y.centroid[k];
    for (int k = 0; k < 6; ++k) same = same && x.icov[k] == y.icov[k];
    if (!same) return "voxel " + std::to_string(v) + " differs";
  }
  return "";
}

VoxelMap build_voxel_map(const common::PointCloud& target, float resolution) {
  if (!(resolution > 0) || !std::isfinite(resolution)) throw InputError("resolution must be positive and finite");
  if (target.size() == 0) throw InputError("target cloud is empty");
  VoxelMap map;
  map.resolution = resolution;
  const float inv = 1.0f / resolution;
  struct Sums {
    double s[3] = {0, 0, 0}, q[6] = {0, 0, 0, 0, 0, 0};
    float c[3] = {0, 0, 0};
    int n = 0;
  };
  // PCL keys its std::map by the leaf index relative to the cloud minimum; ordering by (z, y, x)
  // cell coordinates is the same order.
  std::map<std::tuple<long long, long long, long long>, Sums> leaves;
  for (std::size_t i = 0; i < target.size(); ++i) {
    const float fx = std::floor(target.x[i] * inv), fy = std::floor(target.y[i] * inv),
                fz = std::floor(target.z[i] * inv);
    if (!cell_in_range(static_cast<long long>(fx)) || !cell_in_range(static_cast<long long>(fy)) ||
        !cell_in_range(static_cast<long long>(fz)) || std::fabs(fx) > 2e6f || std::fabs(fy) > 2e6f ||
        std::fabs(fz) > 2e6f)
      throw InputError("target point " + std::to_string(i) + " lies more than 2^20 voxels from the origin");
    Sums& l = leaves[{static_cast<long long>(fz), static_cast<long long>(fy), static_cast<long long>(fx)}];
    const double p[3] = {target.x[i], target.y[i], target.z[i]};
    for (int k = 0; k < 3; ++k) l.s[k] += p[k];
    l.q[0] += p[0] * p[0];
    l.q[1] += p[0] * p[1];
    l.q[2] += p[0] * p[2];
    l.q[3] += p[1] * p[1];
    l.q[4] += p[1] * p[2];
    l.q[5] += p[2] * p[2];
    l.c[0] += target.x[i];
    l.c[1] += target.y[i];
    l.c[2] += target.z[i];
    ++l.n;
  }
  map.occupied = leaves.size();
  std::vector<int> cells;
  for (const auto& [key, l] : leaves) {
    if (l.n < kMinPointsPerVoxel) continue;
    Voxel v;
    voxel_from_sums(l.s, l.q, l.c, l.n, v);
    map.voxels.push_back(v);
    map.valid += v.valid;
    cells.push_back(static_cast<int>(std::get<2>(key)));
    cells.push_back(static_cast<int>(std::get<1>(key)));
    cells.push_back(static_cast<int>(std::get<0>(key)));
  }
  if (map.voxels.empty())
    throw InputError("no voxel of the target has " + std::to_string(kMinPointsPerVoxel) + " points (resolution " +
                     std::to_string(resolution) + " m, " + std::to_string(target.size()) + " points)");
  if (map.valid == 0)
    throw InputError("no valid voxel in the target: all " + std::to_string(map.voxels.size()) +
                     " voxels with enough points have a degenerate covariance");
  build_hash(cells, map);
  return map;
}

}  // namespace ndt
