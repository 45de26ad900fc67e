// ndt_graph driver: NDT alignments of the default cases (simulated pairs with a known transform,
// plus PCL's reference pairs from $COURSE_DATA_DIR) or of one pair given on the command line, by
// every version in the registry: each result checked (CPU reference vs PCL's recorded result,
// GPU versions vs the CPU reference), then timed per alignment and per Newton iteration; the
// target-map build and the VoxelGrid filter on the GPU; batched alignments and the
// multi-hypothesis initial-pose search; trace CSV and top-down images.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>
#include <cstring>
#include <random>
#include <sys/stat.h>

#include "common/nvtx.hpp"
#include "common/profile.hpp"
#include "common/output_file.hpp"
#include "common/progress.hpp"

#include "common/bench.hpp"
#include "common/cli.hpp"
#include "common/evidence.hpp"
#include "common/environment.hpp"
#include "common/lidar_sim.hpp"
#include "common/png.hpp"
#include "common/results.hpp"
#include "driver.hpp"
#include "ndt_graph/registry_detail.hpp"

namespace ndt::driver {

const char* const kSummary =
    "NDT scan registration (PCL 1.13-exact): every version checked against the reference, timed per alignment and "
    "per Newton iteration; map build, GPU filter, batched and multi-hypothesis alignments.";

const std::vector<common::ExtraFlag> kExtraFlags = {
    {"target", "target (map) cloud, .pcd or KITTI .bin (with --source: one alignment instead of the default set)", true,
     ""},
    {"source", "source (scan) cloud to align to the target", true, ""},
    {"target-filter", "none, voxel or approx", true, "none"},
    {"target-leaf", "leaf size of the target filter (m)", true, "0.2"},
    {"source-filter", "none, voxel or approx", true, "none"},
    {"source-leaf", "leaf size of the source filter (m)", true, "0.2"},
    {"resolution", "NDT voxel size (m)", true, "1.0"},
    {"step", "More-Thuente maximum step length", true, "0.1"},
    {"eps", "transformation epsilon (squared translation of the last step, m^2)", true, "1e-4"},
    {"max-iter", "maximum Newton iterations", true, "35"},
    {"outlier", "outlier ratio", true, "0.55"},
    {"guess", "initial pose x,y,z,roll,pitch,yaw (m, rad)", true, "0,0,0,0,0,0"},
    {"search", "neighbour search: radius (PCL), direct7 or direct1", true, "radius"},
    {"pose-out", "write one line per version: version iterations converged likelihood t00 ... t33", true, ""},
    {"images", "folder for the top-down before/after PNG images (empty: none)", true, ""},
    {"trace-csv", "write every version's per-iteration trace to this CSV", true, ""},
    {"no-batch", "skip the batched-alignment and multi-hypothesis rows", false, ""},
    {"launch-bench", "run only the launch-strategy micro-benchmark (5 empty dependent kernels per iteration)", false,
     ""},
    {"graph-study",
     "run only the CUDA-graph study: evaluations per graph swept, graph build and update costs, where an evaluation's "
     "time goes next to its limits, cooperative-grid coverage (a minute or two; --quick: seconds)",
     false, ""},
};

NdtParams params_from(const common::CliOptions& o) {
  NdtParams p;
  p.resolution = o.extra_double("resolution", 1e-3, 1e4);
  p.step_size = o.extra_double("step", 1e-9, 1e3);
  p.epsilon = o.extra_double("eps", 0, 1e6);
  p.outlier_ratio = o.extra_double("outlier", 0, 1);
  p.max_iterations = static_cast<int>(o.extra_int("max-iter", 1, 10000));
  try {
    p.search = parse_search(o.extra.at("search"));
    p.validate();
  } catch (const InputError& e) {
    throw common::UsageError(e.what());
  }
  return p;
}

common::PointCloud load_filtered(const std::string& path, Filter f, float leaf, std::size_t& raw) {
  const common::PointCloud c = common::read_point_cloud(path);
  raw = c.size();
  if (c.dropped_nonfinite)
    std::cout << path << ": " << c.dropped_nonfinite << " points with NaN/inf coordinates dropped\n";
  common::PointCloud out = apply_filter(c, f, leaf);
  if (out.size() == 0)
    throw InputError(path + ": the cloud is empty" + (f != Filter::none ? " after filtering" : std::string()));
  return out;
}

// `points` evenly spread points of `in` (which holds at least that many), in their order.
common::PointCloud evenly_spaced(const common::PointCloud& in, std::size_t points) {
  common::PointCloud out;
  for (std::size_t i = 0; i < points; ++i) {
    const std::size_t k = i * in.size() / points;
    out.x.push_back(in.x[k]);
    out.y.push_back(in.y[k]);
    out.z.push_back(in.z[k]);
  }
  return out;
}

// A pair simulated from one seed at two sensor poses, the target VoxelGrid-filtered at 0.2 m. The
// source likewise, or with `source_points` > 0 unfiltered: a denser scan (more azimuth steps)
// thinned evenly to exactly that many points.
Case simulated_case(const std::string& name, std::uint64_t seed, const double (&sensor)[3], const double (&perturb)[6],
                    std::size_t source_points) {
  Case c;
  c.name = name;
  common::LidarSimParams a, b;
  b.sensor_x = static_cast<float>(sensor[0]);
  b.sensor_y = static_cast<float>(sensor[1]);
  b.sensor_yaw = static_cast<float>(sensor[2]);
  const auto ta = common::simulate_lidar_scan(a, seed);
  auto tb = common::simulate_lidar_scan(b, seed);
  while (tb.cloud.size() < source_points) {  // about 93% of the rays hit something
    b.azimuth_steps =
        static_cast<int>(b.azimuth_steps * (1.1 * source_points / std::max<std::size_t>(1, tb.cloud.size())));
    tb = common::simulate_lidar_scan(b, seed);
  }
  c.target_file = "simulator seed " + std::to_string(seed) + " at (0, 0, 0)";
  c.source_file = "simulator seed " + std::to_string(seed) + " at (" + std::to_string(sensor[0]) + ", " +
                  std::to_string(sensor[1]) + ", yaw " + std::to_string(sensor[2]) + ")" +
                  (source_points ? ", " + std::to_string(b.azimuth_steps) + " azimuth steps" : "");
  c.target_raw = ta.cloud.size();
  c.source_raw = tb.cloud.size();
  c.target = voxel_grid_filter(ta.cloud, 0.2f);
  c.source = source_points ? evenly_spaced(tb.cloud, source_points) : voxel_grid_filter(tb.cloud, 0.2f);
  const double truth_pose[6] = {sensor[0], sensor[1], 0, 0, 0, sensor[2]};
  pose_to_matrix4(truth_pose, c.truth);  // source-frame points -> target frame
  c.have_truth = true;
  for (int k = 0; k < 6; ++k) c.guess[k] = truth_pose[k] + perturb[k];
  return c;
}

std::vector<Case> default_cases(const common::CliOptions& o, const NdtParams& base) {
  std::vector<Case> cases;
  cases.push_back(simulated_case("sim_street", o.seed, kStreetSensor, kStreetPerturb));
  if (!o.quick) {
    const double s2[3] = {-2.0, 0.8, -0.12}, p2[6] = {-0.25, 0.2, 0.0, 0.0, 0.02, -0.05};
    cases.push_back(simulated_case("sim_street_b", o.seed + 1, s2, p2));
  }
  for (auto& c : cases) c.params = base;
  const std::string d = common::data_dir();
  int missing = 0;
  for (const ReferencePair& r : reference_pairs()) {
    if (o.quick && std::string(r.name) != "room_tutorial" && std::string(r.name) != "cupcl_identity") continue;
    const std::string t = d + "/" + r.target, s = d + "/" + r.source;
    if (!common::file_exists(t) || !common::file_exists(s)) {
      ++missing;
      continue;
    }
    Case c;
    c.name = r.name;
    c.target_file = t;
    c.source_file = s;
    c.target = load_filtered(t, r.target_filter, kReferenceTargetLeaf, c.target_raw);
    c.source = load_filtered(s, r.source_filter, r.source_leaf, c.source_raw);
    c.params = base;
    std::copy(r.guess, r.guess + 6, c.guess);
    const std::string record = d + "/pcl_ndt_reference/" + r.name + ".txt";
    if (common::file_exists(record)) {
      c.pcl = read_pcl_reference(record);
      c.have_pcl = true;
    }
    cases.push_back(std::move(c));
  }
  if (missing)
    std::cout << missing << " real pair(s) not found in " << d
              << " (set COURSE_DATA_DIR; see data/README.md): they are left out\n";
  return cases;
}

Case command_line_case(const common::CliOptions& o, const NdtParams& base) {
  Case c;
  c.name = "command_line";
  c.target_file = o.extra.at("target");
  c.source_file = o.extra.at("source");
  if (c.target_file.empty() || c.source_file.empty()) throw common::UsageError("--target and --source go together");
  try {
    const Filter tf = parse_filter(o.extra.at("target-filter")), sf = parse_filter(o.extra.at("source-filter"));
    c.target =
        load_filtered(c.target_file, tf, static_cast<float>(o.extra_double("target-leaf", 1e-4, 1e4)), c.target_raw);
    c.source =
        load_filtered(c.source_file, sf, static_cast<float>(o.extra_double("source-leaf", 1e-4, 1e4)), c.source_raw);
  } catch (const InputError& e) {
    throw common::UsageError(e.what());
  }
  c.params = base;
  const auto g = common::split(o.extra.at("guess"), ',');
  if (g.size() != 6) throw common::UsageError("--guess needs six numbers x,y,z,roll,pitch,yaw");
  for (int k = 0; k < 6; ++k) c.guess[k] = common::parse_number(g[k], "guess", -1e6, 1e6);
  return c;
}

std::string fmt(double v, int prec) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", prec, v);
  return b;
}

void draw_topdown(const std::string& path, const Case& c, const double (&T)[4][4], const double (&G)[4][4]) {
  const int W = 900, H = 450;
  common::RgbImage img(W, H, 255);
  float minx = 1e30f, maxx = -1e30f, miny = 1e30f, maxy = -1e30f;
  for (std::size_t i = 0; i < c.target.size(); ++i) {
    minx = std::min(minx, c.target.x[i]);
    maxx = std::max(maxx, c.target.x[i]);
    miny = std::min(miny, c.target.y[i]);
    maxy = std::max(maxy, c.target.y[i]);
  }
  const float span = std::max({maxx - minx, maxy - miny, 1e-3f});
  const float scale = std::min((W / 2 - 10) / span, (H - 10) / span);
  auto plot = [&](int panel, float x, float y, std::uint8_t r, std::uint8_t g, std::uint8_t b) {
    const int px = panel * W / 2 + 5 + static_cast<int>((x - minx) * scale);
    const int py = H - 5 - static_cast<int>((y - miny) * scale);
    if (px >= panel * W / 2 && px < (panel + 1) * W / 2 && py >= 0 && py < H) img.set(px, py, r, g, b);
  };
  for (int panel = 0; panel < 2; ++panel) {
    for (std::size_t i = 0; i < c.target.size(); ++i) plot(panel, c.target.x[i], c.target.y[i], 150, 150, 150);
    const auto& M = panel == 0 ? G : T;
    for (std::size_t i = 0; i < c.source.size(); ++i) {
      const double x = c.source.x[i], y = c.source.y[i], z = c.source.z[i];
      plot(panel, static_cast<float>(M[0][0] * x + M[0][1] * y + M[0][2] * z + M[0][3]),
           static_cast<float>(M[1][0] * x + M[1][1] * y + M[1][2] * z + M[1][3]), panel == 0 ? 220 : 20, 60,
           panel == 0 ? 40 : 200);
    }
  }
  for (int y = 0; y < H; ++y) img.set(W / 2, y, 0, 0, 0);
  common::write_png(path, img);
}

// --launch-bench: the launch-strategy micro-benchmark alone.
int launch_bench_mode(const common::CliOptions& o) {
  for (const auto& f : o.given)
    if (f != "launch-bench")
      throw common::UsageError("--" + f + " is not read by --launch-bench (it times empty kernels only)");
  if (!o.versions.empty())
    throw common::UsageError("--version is not read by --launch-bench (it times empty kernels only)");
  const common::Environment env = common::detect_environment();
  common::RowList rows;
  rows.push_back(common::meta_row("ndt_graph", env));
  const int iterations = o.quick ? 256 : 2048;
  if (!env.gpu) {
    ResultRow r = common::make_row("ndt_graph", "launch_strategies", "launch-strategy micro-benchmark", iterations, "",
                                   env.device_label, "", "launch");
    r.verdict = common::no_gpu_verdict();
    rows.push_back(r);
    return common::finish_run(std::cout, "ndt_graph", rows, o.csv);
  }
  std::cout << "launch strategies: 5 dependent empty kernels per iteration, " << iterations
            << " iterations per run, median of 7 runs\n";
  for (const auto& l : launch_strategy_benchmark(iterations, 7)) {
    ResultRow r = common::make_row("ndt_graph", l.name, l.idea, iterations, "blocks=" + std::to_string(l.blocks),
                                   env.device_label, "", "launch");
    r.stats = l.stats;
    r.metric = l.us_per_iteration;
    r.metric_unit = "us/iteration";
    r.verdict = common::Verdict::pass();
    rows.push_back(r);
    std::printf("  %-16s %8.2f us/iteration  (%s)\n", l.name.c_str(), l.us_per_iteration, l.idea.c_str());
  }
  return common::finish_run(std::cout, "ndt_graph", rows, o.csv);
}

// The target-map build rows of one case: the CPU's, and the GPU's checked equal to it voxel for voxel.
void map_build_rows(Context& x, const Case& c, const std::string& base_params, common::RowList& rows) {
  ResultRow r = common::make_row("ndt_graph", common::with_role(versions(), Role::reference)->name,
                                 "target map build (VoxelGridCovariance + cell hash), one thread",
                                 static_cast<std::int64_t>(c.target.size()), base_params, x.env.device_label,
                                 "reference", "map_build");
  r.stats = common::bench_cpu([&] { build_voxel_map(c.target, static_cast<float>(c.params.resolution)); }, x.bench);
  r.metric = c.target.size() / (r.stats.median_ms * 1e3);
  r.metric_unit = "Mpts/s";
  r.verdict = common::Verdict::pass();
  rows.push_back(r);
  ResultRow g = common::make_row(
      "ndt_graph", "gpu_map_build", "sort by cell + per-voxel statistics + hash insert on the GPU",
      static_cast<std::int64_t>(c.target.size()), base_params, x.env.device_label, "version", "map_build");
  if (!x.env.gpu) {
    g.verdict = common::no_gpu_verdict();
  } else {
    common::run_guarded(g, true, [&] {
      float ms = 0;
      const VoxelMap gm = build_voxel_map_gpu(c.target, static_cast<float>(c.params.resolution), &ms);
      const std::string diff = compare_maps(c.map, gm);
      g.stats = common::bench_loop(  // the build's own event time, the upload excluded
          [&](bool) {
            build_voxel_map_gpu(c.target, static_cast<float>(c.params.resolution), &ms);
            return double(ms);
          },
          x.bench);
      g.metric = c.target.size() / (g.stats.median_ms * 1e3);
      g.metric_unit = "Mpts/s";
      g.speedup_vs_cpu = r.stats.median_ms / g.stats.median_ms;
      g.verdict = common::Verdict::pass_if(diff.empty(), "GPU map differs from the CPU map: " + diff);
    });
  }
  x.record(rows, g);
}

// The grader's own record of a checked alignment (common/evidence.hpp): its translation (m) and
// rotation matrix. `cm` and `deg` are the in-process check's distances from the reference; two
// correct results are within twice them of each other, and a rotation of angle a moves no matrix
// entry by more than a (radians): the tolerances are twice those, with 1.5x margin for the entries.
void record_pose(const std::string& version, const std::string& key, const AlignResult& res, double cm, double deg) {
  if (!common::evidence::enabled()) return;
  std::vector<double> t, rot;
  for (int i = 0; i < 3; ++i) {
    t.push_back(res.T[i][3]);
    for (int j = 0; j < 3; ++j) rot.push_back(res.T[i][j]);
  }
  constexpr double kPi = 3.14159265358979323846;
  common::evidence::close(version, key + " translation", t, 2 * cm / 100, 0);
  common::evidence::close(version, key + " rotation", rot, 1.5 * 2 * deg * kPi / 180, 0);
}

// The CPU reference judged against PCL's recorded result and, for a simulated pair, the known transform.
common::Verdict check_reference(const Case& c, const AlignResult& res, ResultRow& r) {
  common::Verdict verdict = common::Verdict::pass();
  if (c.have_pcl) {
    double e_cm = 0, e_deg = 0;
    pose_error(res.T, c.pcl.T, e_cm, e_deg);
    e_cm *= 100;
    const double lrel = std::fabs(res.likelihood - c.pcl.likelihood) / std::fabs(c.pcl.likelihood);
    r.add_metric("err_pcl", e_cm, "cm").add_metric("err_pcl_rotation", e_deg, "deg");
    r.add_metric("pcl_iterations", c.pcl.iterations, "");
    if (e_cm > 0.5 || e_deg > 0.05 || std::abs(res.iterations - c.pcl.iterations) > 1 || lrel > 1e-3)
      verdict = common::Verdict::fail("the reference is off PCL's recorded result (" + fmt(e_cm, 3) + " cm, " +
                                      fmt(e_deg, 4) + " deg, " + std::to_string(res.iterations) + " vs " +
                                      std::to_string(c.pcl.iterations) + " iterations, likelihood " +
                                      fmt(res.likelihood, 6) + " vs " + fmt(c.pcl.likelihood, 6) + ")");
  }
  if (c.have_truth) {
    double t_cm, t_deg;
    pose_error(res.T, c.truth, t_cm, t_deg);
    r.add_metric("err_truth", 100 * t_cm, "cm").add_metric("err_truth_rotation", t_deg, "deg");
    if (100 * t_cm > 2.0 || t_deg > 0.1)
      verdict = common::Verdict::fail("the simulated pair's known transform is not recovered (" + fmt(100 * t_cm, 2) +
                                      " cm, " + fmt(t_deg, 3) + " deg)");
  }
  if (res.status == Status::no_correspondences || res.status == Status::numerical)
    verdict = common::Verdict::fail(res.reason());
  return verdict;
}

// A result judged against `own` (the result it should have, named `own_name`): the library within
// PCL's tolerances of the reference, a version within the course's.
common::Verdict within_tolerance(const AlignResult& res, const AlignResult& own, const std::string& own_name,
                                 bool library) {
  double e_cm = 0, e_deg = 0;
  pose_error(res.T, own.T, e_cm, e_deg);
  e_cm *= 100;
  const double tol_cm = library ? 0.5 : 1.0, tol_deg = library ? 0.05 : 0.1;
  const int tol_it = library ? 1 : 2;
  if (e_cm > tol_cm || e_deg > tol_deg || std::abs(res.iterations - own.iterations) > tol_it)
    return common::Verdict::fail(fmt(e_cm, 3) + " cm, " + fmt(e_deg, 4) + " deg, " + std::to_string(res.iterations) +
                                 " vs " + std::to_string(own.iterations) + " iterations from " + own_name);
  return common::Verdict::pass();
}

// Any other version judged against the CPU reference (or, with its own line search, against the
// CPU running that line search); its distance from PCL's path (the reference) is reported too.
common::Verdict check_version(const Case& c, const Version& v, const Problem& p, const AlignResult& res, ResultRow& r) {
  double e_cm = 0, e_deg = 0;
  pose_error(res.T, c.reference.T, e_cm, e_deg);
  e_cm *= 100;
  r.add_metric("err_ref", e_cm, "cm").add_metric("err_ref_rotation", e_deg, "deg");
  AlignResult own = c.reference;
  std::string own_name = "the CPU reference";
  if (v.line_search_candidates > 1) {
    own = align_cpu(c.map, c.source, p.params, c.guess);
    own_name = "the CPU reference with the same line search";
    pose_error(res.T, own.T, e_cm, e_deg);
    e_cm *= 100;
    r.add_metric("reference_iterations", c.reference.iterations, "")
        .add_metric("reference_evaluations", c.reference.evaluations, "");
    r.add_metric("err_own_ref", e_cm, "cm").add_metric("err_own_ref_rotation", e_deg, "deg");
  }
  return within_tolerance(res, own, own_name, v.role == Role::library);
}

// --fresh-inputs for timed alignments. A version that remembered its last problem could hand back
// the result it computed then: checked once, then timed doing a copy. Before every timed alignment
// the target is moved by d, a whole number of voxels and at least 1 m along each axis it moves
// (drawn untimed from the moves of up to 5 steps across and 2 up that are at least 4 steps long,
// each used once),
// and the guess with it: the map holds the same voxels, moved, so the problem is the same problem
// in a moved target frame and its answer is the checked result moved by d. The version takes the
// moved map and guess through reload (the harness's staging, never its own prepare).
// How close must the result come? In exact arithmetic the Newton path is the same path moved by d,
// but NDT is chaotic in float: the moved coordinates round differently, a point crosses a search
// radius, and room_tutorial's 18-iteration alignment ends up to 11 cm / 1.2 deg (5 iterations)
// away from the moved answer (the CPU reference, 8 moves; the simulated pair: 0.1 cm; the GPU
// versions on an H100: up to 60 cm / 5.7 deg). So the result must be within half the shortest
// move (2 m) and 15 deg of the moved answer. A replay is off by its whole move: an earlier input's
// answer. Its accuracy was checked before timing; this check tells which input it answers. What it
// does not stop: a version that reads d off the moved map (each voxel mean moved by exactly d) and
// hands back its checked result moved by d (see README, Timing that cannot be replayed).
// The hypothesis of a batch with the highest likelihood (the first of equals).
std::size_t most_likely(const std::vector<AlignResult>& res) {
  std::size_t best = 0;
  for (std::size_t k = 1; k < res.size(); ++k)
    if (res[k].likelihood > res[best].likelihood) best = k;
  return best;
}

class FreshMaps {
  // Measured on an H100 (room_tutorial, every GPU version, --quick --fresh-inputs): a correct
  // alignment on a moved map lands up to 60 cm / 5.7 deg from the moved answer (float NDT takes
  // another path through the same basin). So every move is at least 4 steps long and a result must
  // be within half of that (2 m at 1 m steps) and 15 deg: a replay is off by the whole move (>= 4 m),
  // a correct alignment by a third of the allowance at most.
  static constexpr int kMinMoveSteps = 4;
  static constexpr double kAllowedDeg = 15.0;

 public:
  explicit FreshMaps(const Case& c) : case_(c), target_(c.target) {
    const double r = c.map.resolution;
    unit_ = r * std::ceil(1.0 / r);  // steps of at least 1 m, and whole voxels
  }
  // The next move: map(), target() and move_guess() give the moved problem, check() judges it.
  void next() {
    if (order_.empty()) {
      for (int ix = -5; ix <= 5; ++ix)
        for (int iy = -5; iy <= 5; ++iy)
          for (int iz = -2; iz <= 2; ++iz)
            if (ix * ix + iy * iy + iz * iz >= kMinMoveSteps * kMinMoveSteps) order_.push_back({ix, iy, iz});
      std::shuffle(order_.begin(), order_.end(), rng_);
    }
    const std::array<int, 3> k = order_.back();
    order_.pop_back();
    const int voxels = static_cast<int>(std::lround(unit_ / case_.map.resolution));
    for (int a = 0; a < 3; ++a) d_[a] = k[a] * unit_;
    map_ = moved_map(case_.map, {k[0] * voxels, k[1] * voxels, k[2] * voxels});
    for (std::size_t i = 0; i < target_.size(); ++i) {
      target_.x[i] = static_cast<float>(case_.target.x[i] + d_[0]);
      target_.y[i] = static_cast<float>(case_.target.y[i] + d_[1]);
      target_.z[i] = static_cast<float>(case_.target.z[i] + d_[2]);
    }
  }
  // The next move for a batch: the moved map and every item's guess of `base` moved, into `moved`
  // (the same items in the same order), handed to the runner through its reload.
  void next_batch(const BatchProblem& base, BatchProblem& moved, BatchRunner& runner) {
    next();
    moved.map = &map_;
    for (std::size_t k = 0; k < base.items.size(); ++k) move_guess(base.items[k].guess, moved.items[k].guess);
    runner.reload(moved);
  }
  const VoxelMap& map() const { return map_; }
  const common::PointCloud& target() const { return target_; }
  void move_guess(const double (&guess)[6], double (&out)[6]) const {
    std::copy(guess, guess + 6, out);
    for (int a = 0; a < 3; ++a) out[a] += d_[a];
  }
  // "" when `got` is the checked result T moved by d; else how far off it is.
  std::string check(const AlignResult& got, const double (&T)[4][4]) const {
    if (got.status == Status::no_correspondences || got.status == Status::numerical)
      return "an alignment to a moved map failed: " + got.reason();
    double answer[4][4], m = 0, deg = 0;
    std::copy(&T[0][0], &T[0][0] + 16, &answer[0][0]);
    for (int a = 0; a < 3; ++a) answer[a][3] += d_[a];
    pose_error(got.T, answer, m, deg);
    const double allowed_m = 0.5 * kMinMoveSteps * unit_;
    if (m < allowed_m && deg <= kAllowedDeg) return "";
    return "an alignment to a map moved by (" + fmt(d_[0], 2) + ", " + fmt(d_[1], 2) + ", " + fmt(d_[2], 2) +
           ") m is " + fmt(100 * m, 1) + " cm / " + fmt(deg, 2) +
           " deg from the checked result moved with it (allowed: " + fmt(100 * allowed_m, 0) + " cm / " +
           fmt(kAllowedDeg, 0) + " deg)";
  }

 private:
  // The map moved by k cells: the same voxels, their means and centroids moved, the hash of the
  // moved cells rebuilt (the same number of slots).
  static VoxelMap moved_map(const VoxelMap& m, const std::array<int, 3>& k) {
    VoxelMap out = m;
    for (auto& v : out.voxels)
      for (int a = 0; a < 3; ++a) {
        v.mean[a] += k[a] * static_cast<double>(m.resolution);
        v.centroid[a] = static_cast<float>(v.centroid[a] + k[a] * static_cast<double>(m.resolution));
      }
    std::vector<int> cells(3 * m.voxels.size());
    constexpr std::uint64_t kAxis = (std::uint64_t{1} << 21) - 1;
    for (const CellSlot& slot : m.table) {
      if (slot.key == kEmptyKey) continue;
      cells[3 * slot.voxel] = static_cast<int>(slot.key >> 42) - kCellBias + k[0];
      cells[3 * slot.voxel + 1] = static_cast<int>((slot.key >> 21) & kAxis) - kCellBias + k[1];
      cells[3 * slot.voxel + 2] = static_cast<int>(slot.key & kAxis) - kCellBias + k[2];
    }
    build_hash(cells, out);
    return out;
  }
  const Case& case_;
  common::PointCloud target_;
  VoxelMap map_;
  double unit_ = 1, d_[3] = {};
  std::vector<std::array<int, 3>> order_;
  std::mt19937_64 rng_{std::random_device{}()};
};

// Times a checked runner and fills the row: per alignment, per iteration, the kernel's share and
// the launch-latency floor. With `fresh`, every run is on a moved problem and checked (FreshMaps).
common::Verdict time_version(const Context& x, const Version& v, Runner& runner, const AlignResult& res, ResultRow& r,
                             const common::FreshInputs* fresh) {
  std::vector<double> kernel_ms;  // each timed run's own kernel time, where the version measures it
  const common::BenchStats stats = common::bench_runner(runner, x.bench, &kernel_ms, false, fresh);
  const AlignResult again = runner.result();
  // Versions that sum with atomics or per-thread partials may differ in the last bits between
  // runs, never by more than this (fresh runs were each checked against their own answer).
  const std::string repeat = fresh ? "" : compare_to_reference(again, res, 1e-3, 1e-4, 0);
  r.stats = stats;
  r.metric = 1e3 * stats.median_ms / std::max(1, res.iterations);
  r.metric_unit = "us/iteration";
  const double kernel_us_iter = kernel_ms.empty()
                                    ? std::numeric_limits<double>::quiet_NaN()
                                    : 1e3 * common::summarize(kernel_ms).median_ms / std::max(1, res.iterations);
  r.add_metric("iterations", res.iterations, "").add_metric("evaluations", res.evaluations, "");
  r.add_metric("solve_fallbacks", res.solve_fallbacks, "").add_metric("converged", res.converged, "");
  r.add_metric("likelihood", res.likelihood, "");
  if (std::isfinite(kernel_us_iter))
    r.add_metric("kernel_per_iteration", kernel_us_iter, "us")
        .add_metric("other_per_iteration", r.metric - kernel_us_iter, "us");
  if (v.needs_gpu && std::isfinite(x.launch_us)) {
    // the floor of a device loop: two dependent launches per evaluation at the lone-launch latency
    const double floor_us = 2.0 * x.launch_us * res.evaluations;
    r.pct_of_ceiling = 100.0 * floor_us / (1e3 * stats.median_ms);
    r.ceiling = "launch_latency";
    r.predicted_ms = v.predicted_us_per_eval * res.evaluations / 1e3;
  }
  if (!repeat.empty()) return common::Verdict::fail("a repeated run gave another result: " + repeat);
  return common::Verdict::pass();
}

// --pose-out and --trace-csv lines of one version's alignment.
void write_outputs(Context& x, const Case& c, const Version& v, const AlignResult& res) {
  if (!x.opt.extra.at("pose-out").empty()) {
    x.pose_out << v.name << " " << res.iterations << " " << (res.converged ? 1 : 0) << " " << res.likelihood;
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) x.pose_out << " " << res.T[i][j];
    x.pose_out << "\n";
  }
  if (!x.opt.extra.at("trace-csv").empty())
    for (std::size_t k = 0; k < res.trace.size(); ++k) {
      const auto& tr = res.trace[k];
      x.trace_csv << "trace," << c.name << "," << v.name << "," << k;
      for (double q : tr.pose) x.trace_csv << "," << q;
      x.trace_csv << "," << tr.score << "," << tr.score / c.source.size() << "," << tr.step << "," << tr.neighbours
                  << "," << tr.pairs << "\n";
    }
}

// The problem version `v` gets for case `c` (its own solver options on the case's parameters).
Problem problem_for(const Case& c, const Version& v) {
  Problem p;
  p.map = &c.map;
  p.target = &c.target;
  p.source = &c.source;
  p.params = v.params_for(c.params);
  std::copy(c.guess, c.guess + 6, p.guess);
  return p;
}

// One version aligning one case: prepared, run, checked, timed, one row.
void align_version(Context& x, Case& c, const Version& v, const std::string& base_params, common::RowList& rows) {
  common::NvtxRange version_range(v.name.c_str());
  ResultRow r = common::make_row("ndt_graph", v.name, v.idea, static_cast<std::int64_t>(c.source.size()), base_params,
                                 x.env.device_label, common::role_name(v.role));
  if (v.needs_gpu && !x.env.gpu) {
    r.verdict = common::no_gpu_verdict();
    rows.push_back(r);
    return;
  }
  if (!v.make) {
    r.verdict = common::Verdict::skip(v.unavailable);
    rows.push_back(r);
    return;
  }
  const Problem p = problem_for(c, v);
  decltype(v.make()) runner;
  bool unfit = false;  // the case does not suit this version (an InputError from prepare)
  const bool prepared = common::run_guarded(
      r, v.needs_gpu,
      [&] {
        runner = v.make();
        try {
          runner->prepare(p);
        } catch (const InputError& e) {
          r.verdict = common::Verdict::skip(e.what());
          unfit = true;
        }
      },
      v.needs);
  if (!prepared || unfit) {
    x.record(rows, r);
    return;
  }
  AlignResult res;
  common::Verdict verdict = common::Verdict::pass();
  if (!common::run_guarded(
          r, v.needs_gpu,
          [&] {
            runner->run();
            res = runner->result();
            if (v.role == Role::reference) c.reference = res;
            verdict = v.role == Role::reference ? check_reference(c, res, r) : check_version(c, v, p, res, r);
            record_pose(v.name, "case=" + c.name, res, 1.0, 0.1);
            FreshMaps moves(c);
            Problem moved = p;
            const common::FreshInputs fresh{[&] {
                                              moves.next();
                                              moved.map = &moves.map();
                                              moved.target = &moves.target();
                                              moves.move_guess(p.guess, moved.guess);
                                              runner->reload(moved);
                                            },
                                            [&] { return moves.check(runner->result(), res.T); }};
            if (v.role == Role::reference && !x.times_reference()) {
              r.add_metric("iterations", res.iterations, "").add_metric("likelihood", res.likelihood, "");
              return;  // checked, not timed: this run's --version leaves the reference out
            }
            const common::Verdict repeat = time_version(x, v, *runner, res, r, x.opt.fresh_inputs ? &fresh : nullptr);
            if (!repeat.ok()) verdict = repeat;
          },
          v.needs)) {
    x.record(rows, r);
    std::cout << "  " << v.name << ": " << r.verdict << "\n";
    return;
  }
  r.verdict = verdict;
  x.record(rows, r);
  const std::string took = r.stats.samples > 0 ? fmt(r.stats.median_ms, 3) + " ms" : "checked, not timed";
  std::cout << "  " << v.name << ": " << res.iterations << " it, " << took << ", " << res.reason() << ", pose "
            << fmt(res.pose[0], 5) << " " << fmt(res.pose[1], 5) << " " << fmt(res.pose[2], 5) << " / "
            << fmt(res.pose[3], 5) << " " << fmt(res.pose[4], 5) << " " << fmt(res.pose[5], 5) << "  " << verdict
            << "\n";
  write_outputs(x, c, v, res);
  if (v.role == Role::reference && res.status != Status::converged) std::cout << "  note: " << res.reason() << "\n";
}

// A case's target map (printed with its inputs).
void build_case_map(Case& c) {
  std::cout << "\n== " << c.name << ": target " << c.target_file << " (" << c.target_raw << " -> " << c.target.size()
            << " pts), source " << c.source_file << " (" << c.source_raw << " -> " << c.source.size() << " pts)\n";
  try {
    c.map = build_voxel_map(c.target, static_cast<float>(c.params.resolution));
  } catch (const InputError& e) {
    throw std::runtime_error(c.name + ": target map: " + e.what());
  }
  std::cout << "target voxels: " << c.map.occupied << " occupied, " << c.map.voxels.size() << " searchable (>= 6 pts), "
            << c.map.valid << " valid\n";
}

// One case: its map, its map-build rows, every selected version's alignment (the reference always),
// the ratios among them and the top-down image.
void case_mode(Context& x, Case& c, common::RowList& rows) {
  common::NvtxRange case_range(("case " + c.name).c_str());
  build_case_map(c);
  const std::string base_params = "case=" + c.name + " search=" + search_name(c.params.search);
  if (x.times_reference()) map_build_rows(x, c, base_params, rows);
  const std::size_t first_align = rows.size();
  for (const auto& v : versions())
    if (!v.batched && (x.selected(v) || v.role == Role::reference)) align_version(x, c, v, base_params, rows);
  // this case's alignment rows: x CPU, x PCL (the library) and x prev along builds_on
  std::vector<ResultRow*> group;
  for (std::size_t i = first_align; i < rows.size(); ++i)
    if (rows[i].kind == "version" && rows[i].params == base_params) group.push_back(&rows[i]);
  common::fill_ratios(group, [](const std::string& name) {
    const Version* v = common::find_version(versions(), name);
    return v ? v->builds_on : std::string();
  });
  if (!x.images.empty()) {
    double G[4][4];
    pose_to_matrix4(c.guess, G);
    draw_topdown(x.images + "/" + c.name + "_alignment.png", c, c.reference.T, G);
  }
}

const Case* find_case(const Context& x, const std::string& name) {
  for (const auto& c : x.cases)
    if (c.name == name) return &c;
  return nullptr;
}

// Batched alignments of one case (KITTI's where present) at growing batch sizes.
void batch_mode(Context& x, const Version& batched, common::RowList& rows) {
  common::NvtxRange version_range(batched.name.c_str());  // what --profile keeps of this version
  const Case* koide = find_case(x, "koide_vg02_both");
  const Case& bc = koide ? *koide : x.cases.front();
  const AlignResult& ref = bc.reference;
  std::vector<int> sizes = x.opt.quick ? std::vector<int>{1, 8} : std::vector<int>{1, 2, 4, 8, 16, 32, 64, 128};
  std::mt19937_64 rng(x.opt.seed);
  std::uniform_real_distribution<double> U(-1, 1);
  for (int b : sizes) {
    common::NvtxRange range(("batch " + std::to_string(b)).c_str());
    std::vector<BatchItem> items;
    for (int k = 0; k < b; ++k) {
      BatchItem it{&bc.source, {}};
      for (int q = 0; q < 6; ++q) it.guess[q] = bc.guess[q] + (k == 0 ? 0.0 : (q < 3 ? 0.05 : 0.005) * U(rng));
      items.push_back(it);
    }
    ResultRow r = common::make_row("ndt_graph", batched.name, batched.idea, static_cast<std::int64_t>(bc.source.size()),
                                   "case=" + bc.name + " batch=" + std::to_string(b), x.env.device_label,
                                   common::role_name(batched.role), "batch");
    common::run_guarded(r, true, [&] {
      auto runner = make_batch_runner();
      runner->prepare({&bc.map, items, bc.params});
      runner->run();
      const auto res = runner->result();
      double e_cm, e_deg;
      pose_error(res[0].T, ref.T, e_cm, e_deg);
      int unconverged = 0;
      for (const auto& q : res) unconverged += !q.converged;
      r.add_metric("unconverged", unconverged, "alignments").add_metric("err_ref", 100 * e_cm, "cm");
      record_pose(batched.name, "case=" + bc.name + " batch=" + std::to_string(b) + " entry 0", res[0], 1.0, 0.1);
      // --fresh-inputs: every run against a moved map (FreshMaps), entry 0 checked as above
      FreshMaps moves(bc);
      const BatchProblem base{&bc.map, items, bc.params};
      BatchProblem moved = base;
      const common::FreshInputs fresh{[&] { moves.next_batch(base, moved, *runner); },
                                      [&] { return moves.check(runner->result()[0], res[0].T); }};
      r.stats = common::bench_runner(*runner, x.bench, nullptr, false, x.opt.fresh_inputs ? &fresh : nullptr);
      r.metric = b / (r.stats.median_ms / 1e3);
      r.metric_unit = "alignments/s";
      r.verdict = common::Verdict::pass_if(
          100 * e_cm <= 1.0 && e_deg <= 0.1 && std::abs(res[0].iterations - ref.iterations) <= 2,
          "batch entry 0 is " + fmt(100 * e_cm, 3) + " cm from the CPU reference");
    });
    if (!r.verdict.ok()) x.any_fail = true;
    rows.push_back(r);
    std::cout << "  " << batched.name << " x" << b << ": " << fmt(r.stats.median_ms, 3) << " ms, " << fmt(r.metric, 0)
              << " alignments/s  " << r.verdict << "\n";
  }
}

// The multi-hypothesis initial-pose search on the room pair: from a guess 2 m / 30 deg off PCL's
// answer, where one alignment fails, the best likelihood of a grid of guesses.
void hypotheses_mode(Context& x, const Version& batched, const Case& room, common::RowList& rows) {
  const AlignResult& rref = room.reference;
  constexpr double kPi = 3.14159265358979323846;
  double far[6];
  std::copy(rref.pose, rref.pose + 6, far);
  far[0] += 2.0 * std::cos(0.7);
  far[1] += 2.0 * std::sin(0.7);
  far[5] += 30.0 * kPi / 180.0;
  const AlignResult lone = align_cpu(room.map, room.source, room.params, far);
  double lone_cm, lone_deg;
  pose_error(lone.T, rref.T, lone_cm, lone_deg);
  std::vector<BatchItem> items;
  for (int ix = -2; ix <= 2; ++ix)
    for (int iy = -2; iy <= 2; ++iy)
      for (int iyaw = -3; iyaw <= 3; ++iyaw) {
        BatchItem it{&room.source, {}};
        std::copy(far, far + 6, it.guess);
        it.guess[0] += ix * 1.0;
        it.guess[1] += iy * 1.0;
        it.guess[5] += iyaw * 15.0 * kPi / 180.0;
        items.push_back(it);
      }
  ResultRow r = common::make_row(
      "ndt_graph", batched.name, "multi-hypothesis initial-pose search: best likelihood of a grid of guesses",
      static_cast<std::int64_t>(room.source.size()), "case=room_tutorial hypotheses=" + std::to_string(items.size()),
      x.env.device_label, common::role_name(batched.role), "hypotheses");
  r.add_metric("single_err", 100 * lone_cm, "cm").add_metric("single_err_rotation", lone_deg, "deg");
  double b_cm = 0, b_deg = 0;
  common::run_guarded(r, true, [&] {
    auto runner = make_batch_runner();
    runner->prepare({&room.map, items, room.params});
    runner->run();
    const auto res = runner->result();
    const std::size_t best = most_likely(res);
    pose_error(res[best].T, rref.T, b_cm, b_deg);
    record_pose(batched.name, "case=room_tutorial hypotheses best", res[best], 2.0, 0.2);
    r.add_metric("best_err", 100 * b_cm, "cm").add_metric("best_err_rotation", b_deg, "deg");
    // --fresh-inputs: every run against a moved map (FreshMaps), its best hypothesis checked
    FreshMaps moves(room);
    const BatchProblem base{&room.map, items, room.params};
    BatchProblem moved = base;
    const common::FreshInputs fresh{[&] { moves.next_batch(base, moved, *runner); },
                                    [&] {
                                      const auto now = runner->result();
                                      return moves.check(now[most_likely(now)], res[best].T);
                                    }};
    r.stats = common::bench_runner(*runner, x.bench, nullptr, false, x.opt.fresh_inputs ? &fresh : nullptr);
    r.metric = items.size() / (r.stats.median_ms / 1e3);
    r.metric_unit = "alignments/s";
    r.verdict = common::Verdict::pass_if(
        100 * b_cm <= 2.0 && b_deg <= 0.2,
        "the best hypothesis is " + fmt(100 * b_cm, 2) + " cm / " + fmt(b_deg, 3) + " deg from the reference");
  });
  if (!r.verdict.ok()) x.any_fail = true;
  rows.push_back(r);
  std::cout << "  multi-hypothesis (" << items.size() << " guesses around one 2 m / 30 deg off): single alignment "
            << fmt(100 * lone_cm, 1) << " cm / " << fmt(lone_deg, 2) << " deg off; best hypothesis "
            << fmt(100 * b_cm, 3) << " cm / " << fmt(b_deg, 4) << " deg; " << fmt(r.stats.median_ms, 2) << " ms  "
            << r.verdict << "\n";
}

// The GPU VoxelGrid filter on the largest raw inputs at hand, checked equal to the CPU filter.
void filter_mode(Context& x, common::RowList& rows) {
  for (const auto& c : x.cases) {
    if (c.name != "kitti00_0_1_vg02" && c.name != "sim_street") continue;
    const common::PointCloud raw = c.name == "sim_street" ? common::simulate_lidar_scan({}, x.opt.seed).cloud
                                                          : common::read_point_cloud(c.source_file);
    ResultRow r = common::make_row(
        "ndt_graph", "gpu_voxel_filter", "VoxelGrid on the GPU: sort by leaf, segmented sums in file order",
        static_cast<std::int64_t>(raw.size()), "case=" + c.name + " leaf=0.2", x.env.device_label, "version", "filter");
    common::run_guarded(r, true, [&] {
      const auto cpu = voxel_grid_filter(raw, 0.2f, LeafOrder::file);
      float ms = 0;
      const auto gpuf = voxel_grid_filter_gpu(raw, 0.2f, &ms);
      const bool same = cpu.x == gpuf.x && cpu.y == gpuf.y && cpu.z == gpuf.z;
      r.add_metric("points_out", static_cast<double>(gpuf.size()), "points");
      r.stats = common::bench_loop(
          [&](bool) {
            voxel_grid_filter_gpu(raw, 0.2f, &ms);
            return double(ms);
          },
          x.bench);
      const auto cs = common::bench_cpu([&] { voxel_grid_filter(raw, 0.2f); }, x.bench);
      r.speedup_vs_cpu = cs.median_ms / r.stats.median_ms;
      r.metric = raw.size() / (r.stats.median_ms * 1e3);
      r.metric_unit = "Mpts/s";
      r.verdict = common::Verdict::pass_if(same, "GPU filter output differs from the CPU filter");
    });
    x.record(rows, r);
  }
}

// Flags, cases, timing policy and the outputs checked before anything runs.
void set_up(Context& x) {
  const common::CliOptions& o = x.opt;
  x.chosen = common::select_versions(versions(), o.versions);
  x.base = params_from(o);
  x.single = !o.extra.at("target").empty() || !o.extra.at("source").empty();
  // flags that only one kind of run reads: given to the other kind, they are a usage error
  for (const char* f : {"guess", "target-filter", "target-leaf", "source-filter", "source-leaf"})
    if (!x.single && o.was_given(f))
      throw common::UsageError(std::string("--") + f +
                               " applies to one alignment (--target and --source), not to the default set");
  if (x.single && o.flag("no-batch"))
    throw common::UsageError("--no-batch: one alignment (--target and --source) has no batched rows to skip");
  if (x.single)
    x.cases.push_back(command_line_case(o, x.base));
  else
    x.cases = default_cases(o, x.base);
  x.env = common::detect_environment();
  x.bench.max_seconds = o.quick ? 0.2 : 1.0;
  x.bench.warmup = 1;
  x.bench.min_samples = 3;
  // --quick (CI, the grader): at most 30 samples a row. Under --fresh-inputs every sample first
  // moves the map (left out of the time budget), so a 0.4 ms alignment took up to 200 samples. The
  // cap was predicted to save 12 s of a graded solution on an H200 and saved 2.1 s (the moves were
  // cheap; the reference's timed alignments were the cost: times_reference); the reference's spread
  // stayed 2-6% for six versions and was 10% for v1 and v8 (2% before).
  if (o.quick) x.bench.max_samples = 30;
  if (o.reps > 0) x.bench.min_samples = x.bench.max_samples = o.reps;
  if (o.warmup >= 0) x.bench.warmup = o.warmup;
  x.images = o.extra.at("images");
  if (!x.images.empty()) common::make_output_dir(x.images, "images");
  // --pose-out and --trace-csv: checked now, written whole (atomically) at the end
  const std::vector<std::string> inputs = {o.extra.at("target"), o.extra.at("source")};
  if (!o.extra.at("pose-out").empty()) {
    common::check_output_path(o.extra.at("pose-out"), "pose-out", inputs);
    x.pose_out.precision(9);
  }
  if (!o.extra.at("trace-csv").empty()) {
    common::check_output_path(o.extra.at("trace-csv"), "trace-csv", inputs);
    x.trace_csv << "kind,case,version,iteration,x,y,z,roll,pitch,yaw,score,likelihood,step,neighbours,pairs\n";
    x.trace_csv.precision(10);
  }
  x.launch_us = x.env.gpu ? x.env.ceilings.launch_us : common::kNoValue;
}

// The run's metadata record (the device, its ceilings, the alignment parameters) and its console header.
void start_rows(const Context& x, common::RowList& rows) {
  rows.push_back(common::meta_row("ndt_graph", x.env));
  rows.back()
      .add_metric("resolution", x.base.resolution, "m")
      .add_metric("step_size", x.base.step_size, "")
      .add_metric("epsilon", x.base.epsilon, "")
      .add_metric("max_iterations", x.base.max_iterations, "")
      .add_metric("outlier_ratio", x.base.outlier_ratio, "");
  rows.back().params = "seed=" + std::to_string(x.opt.seed);  // exact: a 64-bit seed is not a double
  std::cout << "ndt_graph: resolution " << x.base.resolution << " m, step " << x.base.step_size << ", eps "
            << x.base.epsilon << ", max " << x.base.max_iterations << " iterations, outlier " << x.base.outlier_ratio
            << ", search " << search_name(x.base.search) << " (seed " << x.opt.seed << ")\n";
}

int run(const common::CliOptions& o) {
  if (o.list)
    return common::list_versions<Version>(versions(), o.csv, [](const Version& v) {
      return v.make || v.batched ? std::string() : "  [" + v.unavailable + "]";
    });
  if (o.flag("launch-bench")) return launch_bench_mode(o);
  if (o.flag("graph-study")) return graph_study_mode(o);
  Context x(o);
  set_up(x);
  common::RowList rows;
  start_rows(x, rows);
  common::Progress progress(static_cast<int>(x.cases.size()), "ndt_graph cases");
  for (auto& c : x.cases) {
    case_mode(x, c, rows);
    progress.step(c.name);
  }
  const Version* batched = nullptr;
  for (const auto& v : versions())
    if (v.batched) batched = &v;
  if (x.env.gpu && !o.flag("no-batch") && !x.single && batched && x.selected(*batched)) {
    batch_mode(x, *batched, rows);
    if (const Case* room = find_case(x, "room_tutorial")) hypotheses_mode(x, *batched, *room, rows);
  }
  if (x.env.gpu && !x.single) filter_mode(x, rows);
  if (x.any_fail) std::cout << "\nsome rows FAILED (see above)";
  std::cout << "\n";
  if (!o.extra.at("pose-out").empty())
    common::write_file_atomic(o.extra.at("pose-out"), [&](std::ostream& os) { os << x.pose_out.str(); });
  if (!o.extra.at("trace-csv").empty())
    common::write_file_atomic(o.extra.at("trace-csv"), [&](std::ostream& os) { os << x.trace_csv.str(); });
  return common::finish_run(std::cout, "ndt_graph", rows, o.csv);
}

}  // namespace ndt::driver

int main(int argc, char** argv) {
  using namespace ndt;
  using namespace ndt::driver;
  common::DriverSpec spec{"ndt_graph", kSummary, kExtraFlags, {"n", "sweep", "cold", "input"}};
  // --profile (common/profile.hpp): every GPU version on --quick's cases
  spec.profile = common::profile_mode("ndt_graph", versions(), std::vector<std::string>{"--quick", "--reps", "1"});
  return common::driver_main(argc, argv, spec, [](const common::CliOptions& o) {
    try {
      return run(o);
    } catch (const InputError& e) {
      throw std::runtime_error(e.what());
    }
  });
}
