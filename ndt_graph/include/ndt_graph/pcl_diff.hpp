// The differential test against PCL itself (built only where CMake finds PCL): the same filtered
// clouds go through PCL 1.13's VoxelGrid, ApproximateVoxelGrid, VoxelGridCovariance and
// NormalDistributionsTransform and through ndt_graph's filters, map, reference and versions, on
// the sample pairs moved by seeded random rigid transforms and started from seeded random guesses.
// Every stage is compared, so a divergence is located (which filter, which voxel, which
// iteration), not only detected. Used by the ndt_pcl_diff tool (ndt_graph/app/pcl_diff.cpp) and by
// the PclDifferential tests.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "ndt_graph/versions.hpp"

namespace ndt::pcl_diff {

// A filter's output next to PCL's: the point counts and, point by point in PCL's order, the
// largest coordinate difference (0 when bit-identical).
struct CloudDiff {
  std::size_t ours = 0, pcl = 0, differing = 0;
  double max_diff = 0;
  std::string first;  // the first differing point, or the count mismatch
  bool same() const { return ours == pcl && differing == 0; }
};
CloudDiff compare_filter(const common::PointCloud& in, Filter f, float leaf);

// The target map next to PCL's VoxelGridCovariance (leaf = resolution, >= 6 points): which voxels
// exist (and in which order), which PCL invalidated, their means and inverse covariances.
struct MapDiff {
  std::size_t ours = 0, pcl = 0, missing = 0, extra = 0, validity = 0;
  double max_mean_diff = 0, max_icov_rel = 0;
  std::string first;
  bool same(double icov_rel = 1e-9) const {
    return ours == pcl && missing == 0 && extra == 0 && validity == 0 && max_mean_diff <= 1e-12 &&
           max_icov_rel <= icov_rel;
  }
};
MapDiff compare_map(const common::PointCloud& target, float resolution);

// One filter setting of a pair: the filters applied to both clouds after they are read (the source
// after it is moved). "recorded" is the pair's own (pcl_ndt_reference/<pair>.txt).
struct Setting {
  std::string name;
  Filter target_filter, source_filter;
  float target_leaf, source_leaf;
};
std::vector<Setting> settings_of(const ReferencePair& pair, const std::vector<std::string>& names);
const std::vector<std::string>& setting_names();  // recorded, voxel02, approx02

// A case: the raw source moved by `motion` (then filtered), aligned from `guess`. The truth is
// PCL's pose on the unmoved pair composed with the inverse motion.
struct Case {
  int index = 0;
  double motion[6] = {};
  double guess[6] = {};
};
// Seeded cases: even indices move the source (translation <= max_m, rotation <= max_deg, random
// axes) and start from the pair's guess; odd ones keep the source and start from the truth moved
// by such a transform. The same seed gives the same cases on every machine.
std::vector<Case> make_cases(const ReferencePair& pair, const Setting& s, int count, std::uint64_t seed, double max_m,
                             double max_deg, const double (&base)[4][4]);

// How one version's alignment of a case compares with PCL's and with the truth.
// agrees: within the version's tolerance of PCL. rounding: the paths separate where the float
// transforms first differ by at most kRoundingDiff (the derivative sums agree to ~1e-13, and the
// Newton step's ill-conditioning lifts that into the float rounding of the transform), or, for the
// parallel line search, its own promise holds. pcl_failure: PCL is off the truth and the version is
// not. both_fail: both off the truth. differs: anything else (a fault).
// own_path: the parallel line search (v6), which takes other steps than PCL by design, off PCL's
// pose but within kOwnPathCm / kOwnPathDeg of the truth, or PCL off the truth as well.
enum class Verdict { agrees, rounding, own_path, differs, pcl_failure, both_fail, skipped };
constexpr double kOwnPathCm = 10.0, kOwnPathDeg = 1.0;
constexpr double kRoundingDiff = 1e-6;
const char* verdict_name(Verdict v);
struct Row {
  std::string pair, setting, version;
  int case_index = 0;
  std::uint64_t seed = 0;
  double motion[6] = {}, guess[6] = {};
  int iterations = 0, pcl_iterations = 0;
  double likelihood = 0, pcl_likelihood = 0;
  double cm_to_pcl = 0, deg_to_pcl = 0, cm_to_truth = 0, deg_to_truth = 0, pcl_cm_to_truth = 0, pcl_deg_to_truth = 0;
  double ms = 0, pcl_ms = 0;
  Verdict verdict = Verdict::skipped;
  std::string detail;  // why it differs or was skipped; the first diverging iteration of the reference
};

// The per-version promise: the same pose as PCL within cm / deg (and iterations within +-1) for
// the versions that follow PCL's line search; the parallel line search (candidates > 1) its own.
struct Tolerance {
  double cm, deg;
  int iterations;  // < 0: not compared
};
Tolerance tolerance_of(const Version& v);
constexpr double kParallelLineSearchCm = 2.0, kParallelLineSearchDeg = 0.2;
// PCL is counted as failed on a case (and the case classified, not hidden) when its pose is this
// far from the truth.
constexpr double kPclFailCm = 5.0, kPclFailDeg = 0.5;

// What PCL's NDT did on a case: its pose, iterations, likelihood, time and the float transform after
// every iteration (read in its per-iteration visualizer callback).
struct PclAlignment {
  double T[4][4] = {};
  int iterations = 0;
  double likelihood = 0, ms = 0;
  std::size_t source_points = 0;
  std::vector<std::array<float, 12>> trace;
};
// PCL's side (pcl_live.cpp where CMake found PCL; elsewhere these throw InputError saying so).
bool pcl_built();
PclAlignment pcl_align(const common::PointCloud& target, const common::PointCloud& source, const double (&guess)[6]);
// PCL's own derivatives (its computeDerivatives, through a subclass) at `pose` against the
// reference's sums there: one line with the relative differences, the Hessian's condition number,
// and how far apart the unit Newton directions are that PCL's solve (JacobiSVD) gives from PCL's
// derivatives and the reference's solve from its own: whether a path that leaves PCL's there
// leaves it in the direction (the solve) or in the step length (the line search).
std::string pcl_derivatives_at(const VoxelMap& map, const common::PointCloud& target, const common::PointCloud& source,
                               const double (&pose)[6]);

// Where a version's path leaves PCL's: the first iteration whose float transform is not PCL's, and
// whether that first difference is rounding (at most kRoundingDiff).
struct Divergence {
  int iteration = 0;
  bool rounding = false;
  std::string text;
};
Divergence first_divergence(const AlignResult& got, const PclAlignment& pcl);

// A recording of PCL's side, so a machine without PCL (the lent GPUs) compares its versions with
// the same PCL results: one line per case.
struct Recorded {
  std::string pair, setting;
  int index = 0;
  std::uint64_t seed = 0;
  PclAlignment pcl;
  double truth[4][4] = {};
};
void write_recording(const std::vector<Recorded>& recs, const std::string& path);
std::vector<Recorded> read_recording(const std::string& path);  // throws InputError naming the line

struct Options {
  std::vector<std::string> pairs;     // empty: every reference pair
  std::vector<std::string> settings;  // empty: every setting
  std::vector<std::string> versions;  // ids or names; "cpu" is the reference; empty: the reference only
  int cases = 8;
  std::uint64_t seed = 1;
  double max_m = 0.5, max_deg = 10.0;
  bool locate = true;  // PCL's derivatives where the reference's path leaves PCL's
  std::string
      replay;  // a recording to compare with instead of running PCL (the filters and maps are then not compared)
};
// Runs the whole comparison; `progress` receives one line per case. Pairs whose files are missing
// from $COURSE_DATA_DIR are left out and named in `missing`. Throws InputError for unknown names, a
// recording that does not hold the cases asked for, and a live run where PCL is not built.
struct Report {
  std::vector<Row> rows;
  std::vector<std::string> missing;
  std::vector<std::string> filter_lines;  // one per (pair, setting, cloud): the filter and map comparisons
  bool filters_and_maps_agree = true;
  std::vector<Recorded> recorded;  // PCL's side of every case (live runs), for write_recording
};
Report run(const Options& o, void (*progress)(const std::string&) = nullptr);

// The summary table (markdown): per version, cases, agreements within its tolerance, classified PCL
// failures, divergences, and the worst distance to PCL among the agreements.
std::string summary_markdown(const Report& r);
void write_csv(const Report& r, const std::string& path);

}  // namespace ndt::pcl_diff
