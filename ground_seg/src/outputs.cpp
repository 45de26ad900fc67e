#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "common/output_file.hpp"
#include "ground_seg/ground_seg.hpp"

namespace ground_seg {

std::string check_invariants(const common::PointCloud& pc, const Params& p, const Result& r) {
  const CellStats& c = r.cells;
  if (r.is_ground.size() != pc.size()) return "one label per point expected";
  std::size_t inside = 0;
  for (std::size_t k = 0; k < c.count.size(); ++k) {
    inside += c.count[k];
    if (c.count[k] == 0) {
      if (c.ground[k]) return "empty cell " + std::to_string(k) + " classified ground";
      continue;
    }
    if (!(c.mean[k] >= c.min[k] - 1e-4f && c.mean[k] <= c.max[k] + 1e-4f))
      return "cell " + std::to_string(k) + ": mean outside [min, max]";
    if (!(c.var[k] >= 0.f)) return "cell " + std::to_string(k) + ": negative or NaN variance";
    const float half = 0.5f * (c.max[k] - c.min[k]);
    if (c.var[k] > half * half * 1.0001f + 1e-6f) return "cell " + std::to_string(k) + ": variance above (range/2)^2";
  }
  if (inside + r.outside != pc.size())
    return "cell counts (" + std::to_string(inside) + ") + outside (" + std::to_string(r.outside) + ") != points (" +
           std::to_string(pc.size()) + ")";
  const int nx = p.nx();
  for (std::size_t i = 0; i < pc.size(); ++i) {
    const bool in = pc.x[i] >= p.x_min && pc.x[i] < p.x_max && pc.y[i] >= p.y_min && pc.y[i] < p.y_max;
    if (!in) {
      if (r.is_ground[i]) return "point " + std::to_string(i) + " outside the region labelled ground";
      continue;
    }
    const int cx = std::min(nx - 1, static_cast<int>((pc.x[i] - p.x_min) / p.cell));
    const int cy = std::min(p.ny() - 1, static_cast<int>((pc.y[i] - p.y_min) / p.cell));
    const std::size_t k = static_cast<std::size_t>(cy) * nx + cx;
    const bool expect = c.ground[k] && (c.count[k] < 2 || std::fabs(pc.z[i] - c.mean[k]) < p.height_threshold);
    if (expect != (r.is_ground[i] != 0)) return "point " + std::to_string(i) + " label disagrees with its cell";
  }
  return "";
}

std::string compare_to_reference(const Result& ref, const Result& got) {
  if (got.is_ground.size() != ref.is_ground.size())
    return std::to_string(got.is_ground.size()) + " labels, the reference has " + std::to_string(ref.is_ground.size());
  std::size_t flips = 0;
  for (std::size_t i = 0; i < ref.is_ground.size(); ++i) flips += got.is_ground[i] != ref.is_ground[i];
  if (flips > ref.is_ground.size() / 10000)
    return std::to_string(flips) + " labels differ from the reference's (at most " +
           std::to_string(ref.is_ground.size() / 10000) + " may: float summation order)";
  if (got.outside != ref.outside)
    return std::to_string(got.outside) + " points outside the region, the reference has " + std::to_string(ref.outside);
  const CellStats &a = ref.cells, &b = got.cells;
  if (b.count.empty()) return "";  // labels only
  if (b.count.size() != a.count.size())
    return "a grid of " + std::to_string(b.count.size()) + " cells, the reference has " +
           std::to_string(a.count.size());
  for (std::size_t k = 0; k < a.count.size(); ++k) {
    const std::string cell = "cell " + std::to_string(k) + ": ";
    if (b.count[k] != a.count[k])
      return cell + std::to_string(b.count[k]) + " points, the reference has " + std::to_string(a.count[k]);
    if (!a.count[k]) continue;
    if (!(std::fabs(b.mean[k] - a.mean[k]) <= 1e-6f * (1 + std::fabs(a.mean[k]))))
      return cell + "mean differs from the reference's";
    if (!(std::fabs(b.var[k] - a.var[k]) <= 1e-6f * a.var[k] + 1e-9f))
      return cell + "variance differs from the reference's";
    if (b.min[k] != a.min[k] || b.max[k] != a.max[k]) return cell + "min or max differs from the reference's";
  }
  return "";
}

void write_topdown_data(const std::string& path, const common::PointCloud& pc, const std::vector<std::uint32_t>& labels,
                        const std::vector<std::uint8_t>& variance, const std::vector<std::uint8_t>& improved,
                        const Params& p) {
  const std::uint64_t n = pc.size();
  const std::uint8_t has_variance = variance.size() == n, has_improved = improved.size() == n;
  if (!has_variance && !has_improved) throw std::invalid_argument("top-down data: neither rule's labels are given");
  std::vector<std::uint8_t> truth(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t src = pc.source_index.empty() ? static_cast<std::uint32_t>(i) : pc.source_index[i];
    const GroundTruth g = labels.empty() ? GroundTruth::Ignored : semantic_class(labels.at(src));
    truth[i] = g == GroundTruth::Ground ? 1 : g == GroundTruth::NonGround ? 2 : 0;
  }
  common::write_file_atomic(path, [&](std::ostream& os) {
    auto put = [&](const void* d, std::size_t bytes) {
      os.write(static_cast<const char*>(d), static_cast<std::streamsize>(bytes));
    };
    put("GSTOPDOWN1", 10);
    const float region[5] = {p.x_min, p.x_max, p.y_min, p.y_max, p.cell};
    put(region, sizeof region);
    put(&n, sizeof n);
    put(&has_variance, 1);
    put(&has_improved, 1);
    put(pc.x.data(), n * sizeof(float));
    put(pc.y.data(), n * sizeof(float));
    put(truth.data(), n);
    if (has_variance) put(variance.data(), n);
    if (has_improved) put(improved.data(), n);
  });
}

void write_labels(const std::string& path, const common::PointCloud& pc, const std::vector<std::uint8_t>& is_ground) {
  std::size_t total = pc.size() + pc.dropped_nonfinite + pc.dropped_no_return;
  for (auto i : pc.source_index) total = std::max<std::size_t>(total, i + 1);
  std::vector<std::uint8_t> out(total, 0);
  for (std::size_t i = 0; i < pc.size(); ++i) out[pc.source_index.empty() ? i : pc.source_index[i]] = is_ground[i];
  common::write_file_atomic(path, [&](std::ostream& os) {
    os.write(reinterpret_cast<const char*>(out.data()), static_cast<std::streamsize>(out.size()));
  });
}

void write_cell_stats_csv(const std::string& path, const CellStats& c, const Params& p) {
  common::write_file_atomic(path, [&](std::ostream& os) {
    os << "cell_x,cell_y,x,y,count,mean_z,var_z,min_z,max_z,ground\n";
    const int nx = p.nx();
    char line[256];
    for (std::size_t k = 0; k < c.count.size(); ++k) {
      if (!c.count[k]) continue;
      const int cx = static_cast<int>(k % nx), cy = static_cast<int>(k / nx);
      std::snprintf(line, sizeof line, "%d,%d,%.3f,%.3f,%u,%.6g,%.6g,%.6g,%.6g,%d\n", cx, cy,
                    p.x_min + (cx + 0.5f) * p.cell, p.y_min + (cy + 0.5f) * p.cell, c.count[k], c.mean[k], c.var[k],
                    c.min[k], c.max[k], c.ground[k]);
      os << line;
    }
  });
}

void write_labelled_ply(const std::string& path, const common::PointCloud& pc,
                        const std::vector<std::uint8_t>& is_ground) {
  common::write_file_atomic(path, [&](std::ostream& os) {
    os << "ply\nformat ascii 1.0\nelement vertex " << pc.size()
       << "\nproperty float x\nproperty float y\nproperty float z\n"
          "property uchar red\nproperty uchar green\nproperty uchar blue\nend_header\n";
    char line[128];
    for (std::size_t i = 0; i < pc.size(); ++i) {
      std::snprintf(line, sizeof line, "%.3f %.3f %.3f %s\n", pc.x[i], pc.y[i], pc.z[i],
                    is_ground[i] ? "40 160 60" : "120 120 120");
      os << line;
    }
  });
}

}  // namespace ground_seg
