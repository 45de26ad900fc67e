// LiDAR ground segmentation on a 2D grid (the report's algorithm), CPU reference.
//
// Points inside the x/y region fall into square cells; per cell: count, mean z, variance of z
// (two-pass, population), min, max. A cell with >= point_threshold points is ground if its
// variance is below var_threshold; a sparser non-empty cell uses the average variance of the
// valid (>= point_threshold) cells of its 3 x 3 neighbourhood (0 when it has none, so an isolated
// sparse cell counts as flat).
// Point labels: outside the region -> non-ground; in a non-ground cell -> non-ground; in a ground
// cell with < 2 points -> ground; otherwise ground if |z - cell mean| < height_threshold.
//
// Improved mode adds one rule against flat raised surfaces (car roofs, wall cells hit by one
// beam): a ground cell must also lie within raised_threshold of the local ground level, the lowest
// mean z among the variance-ground cells within local_radius.
#pragma once
#include <cstdint>
#include <array>
#include <string>
#include <vector>

#include "common/pointcloud.hpp"

namespace ground_seg {

struct Params {
  float x_min = -50.f, x_max = 50.f, y_min = -50.f, y_max = 50.f;
  float cell = 0.3f;
  int point_threshold = 3;
  float var_threshold = 0.01f;    // m^2
  float height_threshold = 0.2f;  // m
  bool improved = false;
  float local_radius = 2.5f;      // m (see README: chosen so recall is unchanged on 04/000056)
  float raised_threshold = 0.8f;  // m: below a car roof (1.4-1.6 m), above curbs and slopes
  int nx() const;
  int ny() const;
  void validate() const;  // throws std::invalid_argument naming the parameter
  bool operator==(const Params& o) const;
};

// The speed targets of the report ground_seg follows: one frame from host points to host labels
// within 150 us, and at least 10,000 frames/s when frames are streamed.
constexpr double kTargetFrameMs = 0.150;
constexpr double kTargetFramesPerSecond = 10000;

struct CellStats {
  std::vector<std::uint32_t> count;
  std::vector<float> mean, var, min, max;
  std::vector<std::uint8_t> ground;  // cell classification
};

// What a run hands back: the labels (what a pipeline needs; every version's timed run downloads
// only these, so all versions are timed on the same work) or the labels and the cell statistics
// (the checks against the reference, --cells-out). The CPU versions have both either way.
enum class Outputs { labels, labels_and_cells };

struct Result {
  std::vector<std::uint8_t> is_ground;  // per point
  CellStats cells;
  std::size_t outside = 0;
};

Result segment_cpu(const common::PointCloud& pc, const Params& p);
// The same on every core (OpenMP): per-thread float64 partial sums merged in thread order, the
// classification and labels split over cells and points. What a user would run without a GPU.
Result segment_cpu_openmp(const common::PointCloud& pc, const Params& p);

// The grid census (the report's section 1.1): the cells by population, each size from 2 to 32 on
// its own (a cell of up to 32 points is one warp's work, a lane per point), the cells over 32 (a
// block's), and the points each group holds: what the statistics stage's design is derived from.
struct Census {
  std::size_t cells = 0, empty = 0, one = 0, warp = 0, over = 0;  // warp: 2..32 points, over: > 32
  std::array<std::size_t, 33> by_size{};                          // [k]: cells of exactly k points
  std::vector<std::size_t> over_by_range;  // [i]: cells of 33-64, 65-128, ... points (2^(5+i)+1 .. 2^(6+i))
  std::size_t points_one = 0, points_warp = 0, points_over = 0;
  std::uint32_t max = 0;  // the most points in one cell
  // "0", "1", "2", ..., "32", then "33-64", "65-128", ... up to the fullest cell
  std::vector<std::pair<std::string, std::size_t>> bins() const;
};
Census census(const CellStats& c);

// Scoring under the Patchwork++ convention: ground = semantic ids {40, 44, 48, 49, 60, 72};
// ids {0, 1, 70} are left out; every other id is non-ground.
struct Accuracy {
  std::size_t tp = 0, fp = 0, fn = 0, tn = 0, scored = 0, gt_ground = 0;
  double precision() const;
  double recall() const;
  double f1() const;
  double iou() const;
};
enum class GroundTruth { Ground, NonGround, Ignored };
GroundTruth semantic_class(std::uint32_t label);
// labels: one per point of the *file*; pc.source_index maps kept points to it.
Accuracy score(const common::PointCloud& pc, const std::vector<std::uint8_t>& is_ground,
               const std::vector<std::uint32_t>& labels);

}  // namespace ground_seg

namespace ground_seg {

// Invariants any correct segmentation satisfies (cell counts sum to the points inside, mean
// within [min, max], variance >= 0, every outside point non-ground, labels consistent with the
// point rule); empty string when they hold, else the first violation.
std::string check_invariants(const common::PointCloud& pc, const Params& p, const Result& r);
// A version's result against the reference's (segment_cpu) on the same input: labels equal up to
// 0.01% of the points (float summation order may flip a threshold tie), the same points outside,
// and, when `got` has cell statistics, equal counts, min and max and mean and variance within
// float tolerance. Empty string when it agrees, else the first difference.
std::string compare_to_reference(const Result& ref, const Result& got);

// The data of a top-down view, drawn by scripts/plot.py (--topdown-dir): the region and cell size,
// then per point x, y, its ground truth (0 not scored, 1 ground, 2 non-ground) and the labels of
// the variance and the improved rule (either may be missing: an empty vector). Binary, little-endian:
// "GSTOPDOWN1", float x_min x_max y_min y_max cell, uint64 n, uint8 has_variance, uint8 has_improved,
// float x[n], float y[n], uint8 truth[n], [uint8 variance[n]], [uint8 improved[n]].
void write_topdown_data(const std::string& path, const common::PointCloud& pc, const std::vector<std::uint32_t>& labels,
                        const std::vector<std::uint8_t>& variance, const std::vector<std::uint8_t>& improved,
                        const Params& p);
// Per-point labels in the input file's order (dropped points count as non-ground): one byte each.
void write_labels(const std::string& path, const common::PointCloud& pc, const std::vector<std::uint8_t>& is_ground);
// Non-empty cells as CSV: cell_x, cell_y, centre x, centre y, count, mean, variance, min, max, ground.
void write_cell_stats_csv(const std::string& path, const CellStats& c, const Params& p);
// ASCII PLY with x y z and an RGB colour per point (ground green, non-ground grey).
void write_labelled_ply(const std::string& path, const common::PointCloud& pc,
                        const std::vector<std::uint8_t>& is_ground);

}  // namespace ground_seg
