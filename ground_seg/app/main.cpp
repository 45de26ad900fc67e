// ground_seg driver: segments the simulated street scan and the labelled real scan (when the
// data directory has it) with the variance rule and the improved rule, checks every result's
// invariants, scores it against the labels (Patchwork++ convention), times it, and writes the
// grid population histogram, top-down view data (drawn by scripts/plot.py) and optionally a labelled PLY.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <random>
#include <set>
#include <sys/stat.h>

#include "common/bench.hpp"
#include "common/cli.hpp"
#include "common/evidence.hpp"
#include "common/output_file.hpp"
#include "common/environment.hpp"
#include "common/lidar_sim.hpp"
#include "common/nvtx.hpp"
#include "common/profile.hpp"
#include "common/results.hpp"
#include "ground_seg/registry.hpp"
#include "ground_seg/engine.hpp"

using common::ResultRow;
using namespace ground_seg;

namespace {

// The grader's own record of a checked result (common/evidence.hpp): the labels, of which two
// correct versions may differ in twice the reference check's allowance (1 in 10000 each, float
// summation order), and the outside count and the cells' counts, minima and maxima, exactly.
void record_evidence(const std::string& version, const std::string& key, const Result& res) {
  if (!common::evidence::enabled()) return;
  common::evidence::bits(version, key + " labels", res.is_ground, 2 * (res.is_ground.size() / 10000));
  const CellStats& c = res.cells;
  std::uint64_t h = common::evidence::fnv1a(&res.outside, sizeof res.outside);
  h = common::evidence::fnv1a(c.count.data(), c.count.size() * sizeof(std::uint32_t), h);
  h = common::evidence::fnv1a(c.min.data(), c.min.size() * sizeof(float), h);
  h = common::evidence::fnv1a(c.max.data(), c.max.size() * sizeof(float), h);
  common::evidence::exact(version, key + " cells", &h, sizeof h);
}

const char* const kSummary = "Ground segmentation: accuracy against labels, timing, grid population, top-down views.";

const std::vector<common::ExtraFlag> kExtraFlags = {
    {"rule", "variance, improved or both", true, "both"},
    {"cell", "cell size (m)", true, "0.3"},
    {"region", "x_min,x_max,y_min,y_max (m)", true, "-50,50,-50,50"},
    {"point-threshold", "points that make a cell valid", true, "3"},
    {"var-threshold", "ground cell variance threshold (m^2)", true, "0.01"},
    {"height-threshold", "point height above the cell mean (m)", true, "0.2"},
    {"topdown-out",
     "folder for the top-down view data of the first simulated and every real scan, drawn by "
     "scripts/plot.py --topdown-dir (empty: none)",
     true, ""},
    {"ply", "write the first input's labelled cloud to this PLY file (the variance rule's, unless --rule improved)",
     true, ""},
    {"sim-scans", "simulated scans to score (different seeds)", true, "4"},
    {"labels-out", "write the first input's per-point labels (one 0/1 byte per point, file order)", true, ""},
    {"cells-out", "write the first input's per-cell statistics as CSV (non-empty cells)", true, ""},
};

struct Input {
  std::string name;
  common::PointCloud cloud;
  std::vector<std::uint32_t> labels;  // empty when unlabelled
};

Params params_from(const common::CliOptions& o) {
  Params p;
  p.cell = static_cast<float>(o.extra_double("cell", 1e-4, 1e4));
  const auto r = common::split(o.extra.at("region"), ',');
  if (r.size() != 4) throw common::UsageError("--region needs x_min,x_max,y_min,y_max");
  p.x_min = static_cast<float>(common::parse_number(r[0], "region", -1e6, 1e6));
  p.x_max = static_cast<float>(common::parse_number(r[1], "region", -1e6, 1e6));
  p.y_min = static_cast<float>(common::parse_number(r[2], "region", -1e6, 1e6));
  p.y_max = static_cast<float>(common::parse_number(r[3], "region", -1e6, 1e6));
  p.point_threshold = static_cast<int>(o.extra_int("point-threshold", 1, 1 << 30));
  p.var_threshold = static_cast<float>(o.extra_double("var-threshold", 1e-12, 1e6));
  p.height_threshold = static_cast<float>(o.extra_double("height-threshold", 1e-6, 1e6));
  try {
    p.validate();
  } catch (const std::invalid_argument& e) {
    throw common::UsageError(e.what());
  }
  // per cell: the statistics, flags and float64 sums of the reference and of a version on the
  // host, and the versions' per-cell arrays (with v3's group counts) on the device
  const double cells = static_cast<double>(p.nx()) * p.ny();
  common::check_fits_in_memory("--cell " + o.extra.at("cell") + " over --region " + o.extra.at("region") + " (" +
                                   std::to_string(static_cast<long long>(cells)) + " cells)",
                               96.0 * cells, 96.0 * cells);
  return p;
}

// An input's name as a file-name part: its last path component, anything but [A-Za-z0-9._-] as '_'
// (an --input with directories must not put directories into an image's name).
std::string file_stem(const std::string& name) {
  std::string s = name.substr(name.find_last_of('/') == std::string::npos ? 0 : name.find_last_of('/') + 1);
  for (char& c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) c = '_';
  return s.empty() ? "input" : s;
}

std::vector<Input> load_inputs(const common::CliOptions& o) {
  std::vector<Input> in;
  if (!o.input.empty()) {
    Input i{o.input, common::read_point_cloud(o.input), {}};
    const std::string stem = o.input.substr(0, o.input.find_last_of('.'));
    if (common::file_exists(stem + ".label"))
      i.labels = common::read_semantickitti_labels(
          stem + ".label", i.cloud.size() + i.cloud.dropped_nonfinite + i.cloud.dropped_no_return);
    in.push_back(std::move(i));
    return in;
  }
  const int sims = o.quick && !o.was_given("sim-scans") ? 1 : static_cast<int>(o.extra_int("sim-scans", 1, 100000));
  for (int k = 0; k < sims; ++k) {
    auto s = common::simulate_lidar_scan({}, o.seed + k);
    if (k == 0)  // every scan is kept: points (x, y, z, source index, label) and a result per version
      common::check_fits_in_memory("--sim-scans " + std::to_string(sims), 40.0 * sims * s.cloud.size(), 0);
    in.push_back({"sim_seed" + std::to_string(o.seed + k), std::move(s.cloud), std::move(s.labels)});
  }
  const std::string real = common::data_dir() + "/semantickitti_04_000056/000056";
  if (common::file_exists(real + ".bin") && common::file_exists(real + ".label")) {
    Input i{"semantickitti_04_000056", common::read_kitti_bin(real + ".bin"), {}};
    i.labels = common::read_semantickitti_labels(real + ".label", i.cloud.size() + i.cloud.dropped_nonfinite);
    in.push_back(std::move(i));
  } else {
    std::cout << "real labelled scan not found in " << common::data_dir()
              << "/semantickitti_04_000056 (set COURSE_DATA_DIR; see data/README.md): simulator only\n";
  }
  return in;
}

// --fresh-inputs for timed frames. A version that remembered its last frame could hand back the
// labels it computed then, checked once and timed doing a copy. Before every timed frame the scan
// is turned about the sensor by an angle drawn untimed (the same street seen from another heading:
// the same points, in the same order, binned into other cells; two headings give about 1000 of the
// simulated scan's 110k labels differently, where the check lets 11 differ), and the reference
// labels of that frame are computed (segment_cpu, ~5 ms); after it, the frame's labels as the
// version hands them back (`got`) are checked against them. `frame` starts as a copy of `scan`.
common::FreshInputs fresh_frames(const common::PointCloud& scan, common::PointCloud& frame, const Params& p,
                                 Result& expected, std::mt19937_64& rng, std::function<Result()> got) {
  auto refresh = [&scan, &frame, p, &expected, &rng] {
    const double angle = std::uniform_real_distribution<double>(0, 2 * 3.14159265358979323846)(rng);
    const double c = std::cos(angle), s = std::sin(angle);
    for (std::size_t i = 0; i < scan.size(); ++i) {
      frame.x[i] = static_cast<float>(c * scan.x[i] - s * scan.y[i]);
      frame.y[i] = static_cast<float>(s * scan.x[i] + c * scan.y[i]);
    }
    expected = segment_cpu(frame, p);
  };
  auto verify = [&expected, got] {
    const std::string wrong = compare_to_reference(expected, got());
    return wrong.empty() ? wrong : "on a turned frame, " + wrong;
  };
  return {refresh, verify};
}

std::string fmt(double v, int prec = 2) {
  char b[32];
  std::snprintf(b, sizeof b, "%.*f", prec, v);
  return b;
}

// The grid census of one input (the report's section 1.1): what the statistics stage is designed
// from. A cell of 2 to 32 points is one warp's work (a lane per point, shuffles for the sums), a
// single point needs no reduction, and the cells over 32 take a block each.
void print_census(const std::string& input, const Census& k) {
  const std::size_t full = k.cells - k.empty, points = k.points_one + k.points_warp + k.points_over;
  auto pct = [](std::size_t a, std::size_t b) { return b ? fmt(100.0 * static_cast<double>(a) / b, 1) : "-"; };
  std::printf("\ngrid census, %s: %zu cells, %zu empty (%s%%); of the %zu holding points:\n", input.c_str(), k.cells,
              k.empty, pct(k.empty, k.cells).c_str(), full);
  std::printf("  one point     %8zu cells (%5s%%)  %9zu points (%5s%%)\n", k.one, pct(k.one, full).c_str(),
              k.points_one, pct(k.points_one, points).c_str());
  std::printf("  2-32 points   %8zu cells (%5s%%)  %9zu points (%5s%%)  one warp each\n", k.warp,
              pct(k.warp, full).c_str(), k.points_warp, pct(k.points_warp, points).c_str());
  std::printf("  over 32       %8zu cells (%5s%%)  %9zu points (%5s%%)  one block each; the fullest holds %u\n", k.over,
              pct(k.over, full).c_str(), k.points_over, pct(k.points_over, points).c_str(), k.max);
  std::printf("  cells of n points, n = 2..32:");
  for (int n = 2; n <= 32; ++n) std::printf("%s%d:%zu", n == 2 || n == 18 ? "\n    " : "  ", n, k.by_size[n]);
  std::printf("\n");
}

int run(const common::CliOptions& o) {
  if (o.list) return common::list_versions(versions(), o.csv);
  const std::vector<const Version*> selected = common::select_versions(versions(), o.versions);
  const std::string rule = o.extra.at("rule");
  if (rule != "variance" && rule != "improved" && rule != "both")
    throw common::UsageError("--rule: variance, improved or both");
  const Params base = params_from(o);
  {  // every output checked before the run; none may be an input
    const std::string stem = o.input.empty() ? "" : o.input.substr(0, o.input.find_last_of('.'));
    const std::vector<std::string> ins = {o.input, stem.empty() ? "" : stem + ".label"};
    for (const char* flag : {"ply", "labels-out", "cells-out"})
      if (!o.extra.at(flag).empty()) common::check_output_path(o.extra.at(flag), flag, ins);
  }
  const common::Environment env = common::detect_environment();
  common::BenchOptions bench;
  if (o.quick) bench.max_seconds = 0.1;
  if (o.reps > 0) bench.min_samples = bench.max_samples = o.reps;
  if (o.warmup >= 0) bench.warmup = o.warmup;
  const std::vector<Input> inputs = load_inputs(o);
  const std::string topdown = o.extra.at("topdown-out");
  if (!topdown.empty()) common::make_output_dir(topdown, "topdown-out");
  common::RowList rows, extra_rows;
  rows.push_back(common::meta_row("ground_seg", env));
  rows.back()
      .add_metric("cell", base.cell, "m")
      .add_metric("grid_x", base.nx(), "cells")
      .add_metric("grid_y", base.ny(), "cells")
      .add_metric("point_threshold", base.point_threshold, "points")
      .add_metric("var_threshold", base.var_threshold, "m^2")
      .add_metric("height_threshold", base.height_threshold, "m")
      .add_metric("target_frame", kTargetFrameMs, "ms")
      .add_metric("target_rate", kTargetFramesPerSecond, "frames/s");
  rows.back().params = "seed=" + std::to_string(o.seed);
  std::cout << "ground_seg: cell " << base.cell << " m, grid " << base.nx() << " x " << base.ny()
            << ", point threshold " << base.point_threshold << ", variance < " << base.var_threshold
            << " m^2, height < " << base.height_threshold << " m (seed " << o.seed << ")\n";
  std::cout
      << "every version's labels and cells are checked against the reference (cpu); timed runs go from host points to\n"
         "host labels (no cell statistics downloaded), so every version is timed on the same work\n\n";
  std::printf("%-26s %-9s %-14s %8s %9s %8s %8s %8s %8s %9s  %s\n", "input", "rule", "version", "points", "ms/frame",
              "prec%", "recall%", "F1%", "IoU%", "ground", "check");
  std::vector<std::pair<std::string, Census>> censuses;  // printed after the table
  std::set<std::string> cold_done;                       // the versions whose cold first frame is measured
  for (const auto& in : inputs) {
    common::NvtxRange input_range(("input " + in.name).c_str());
    std::vector<std::uint8_t> rule_labels[2];  // the checked labels of each rule, for the top-down view
    const bool pictured = &in == &inputs.front() || in.name.rfind("sim", 0) != 0;  // first sim + real scans
    for (const bool improved : {false, true}) {
      if ((improved && rule == "variance") || (!improved && rule == "improved")) continue;
      Params p = base;
      p.improved = improved;
      const char* rname = improved ? "improved" : "variance";
      common::NvtxRange rule_range(rname);
      const Result ref = segment_cpu(in.cloud, p);  // what every version is checked against
      Result written;                               // the outputs: the result of the last selected version that passed
      std::string written_by;                       // empty: none passed
      for (const Version* vp : selected) {
        const Version& v = *vp;
        if (!v.make) continue;  // v5: the streamed section below
        ResultRow r =
            common::make_row("ground_seg", v.name, v.idea, static_cast<std::int64_t>(in.cloud.size()),
                             "input=" + in.name + " rule=" + rname, env.device_label, common::role_name(v.role));
        if (v.needs_gpu && !env.gpu) {
          r.verdict = common::no_gpu_verdict();
          rows.push_back(r);
          continue;
        }
        Result res;
        common::NvtxRange version_range(v.name.c_str());
        // not in a graded run (--fresh-inputs): there the checked run stays the version's first call
        const bool cold_row = v.needs_gpu && !o.fresh_inputs && &in == &inputs.front() && !cold_done.count(v.name);
        double cold_ms = -1;
        common::run_guarded(r, v.needs_gpu, [&] {
          if (cold_row) {  // the first frame of a fresh runner, as a program's first frame pays it:
            // its allocation, graph build and the lazy loading of kernels this process has not run
            common::PointCloud first_frame = in.cloud;
            const auto t0 = std::chrono::steady_clock::now();
            auto fresh_runner = v.make();
            fresh_runner->prepare({&first_frame, p, Outputs::labels});
            fresh_runner->run();
            (void)fresh_runner->result();
            cold_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
          }
          // one runner per version and frame: prepared (buffers, staging, graph) once, checked
          // with the cell statistics, then timed from host points to host labels
          auto runner = v.make();
          runner->prepare({&in.cloud, p, Outputs::labels_and_cells});
          runner->run();
          res = runner->result();
          std::string bad = check_invariants(in.cloud, p, res);
          if (bad.empty()) bad = compare_to_reference(ref, res);
          record_evidence(v.name, "input=" + in.name + " rule=" + rname, res);
          r.verdict = common::Verdict::pass_if(bad.empty(), bad);
          if (!common::is_pass(r)) return;
          common::PointCloud frame = in.cloud;            // the timed frames' input: turned anew by --fresh-inputs
          runner->prepare({&frame, p, Outputs::labels});  // what is timed: the labels alone
          runner->run();
          if (compare_to_reference(ref, runner->result()) != "")
            throw std::runtime_error("the labels-only run differs from the reference");
          Result expected;
          std::mt19937_64 rng(std::random_device{}());
          const common::FreshInputs fresh =
              fresh_frames(in.cloud, frame, p, expected, rng, [&runner] { return runner->result(); });
          const common::FreshInputs* fresh_if = o.fresh_inputs ? &fresh : nullptr;
          std::vector<double> kernels;
          // a staging runner (v4) is timed from its pinned input, as a sensor driver would hand it
          // over; the same from the caller's std::vector (the copy into pinned memory included) is
          // another row. With --fresh-inputs both are timed from the caller's vector (bench_runner):
          // the staging is the version's own code, which must not see a frame before its timing.
          r.stats = common::bench_runner(*runner, bench, &kernels, false, fresh_if);
          if (runner->stages_input()) {
            ResultRow from_vector = r;
            from_vector.kind = "from_vector";
            from_vector.stats = common::bench_runner(*runner, bench, nullptr, true, fresh_if);
            extra_rows.push_back(from_vector);
          }
          if (!kernels.empty()) {  // the kernels alone, timed by event nodes inside the graph
            ResultRow k = r;
            k.kind = "kernels";
            k.stats = common::summarize(kernels);
            common::CostModel all{};
            for (const auto& [stage, cost] : stage_costs(in.cloud.size(), p)) {
              all.bytes += cost.bytes;
              all.launches += cost.launches;
            }
            all.launches += 3;  // the scan (memset + kernel) and the grouping
            k.predicted_ms = common::predict(all, env.spec).total_ms;
            extra_rows.push_back(k);
          }
        });
        Accuracy a;
        std::size_t ground = 0;
        if (common::is_pass(r)) {
          if (!in.labels.empty()) {
            a = score(in.cloud, res.is_ground, in.labels);
            r.metric = 100 * a.f1();
            r.metric_unit = "F1%";
            r.add_metric("precision", 100 * a.precision(), "%")
                .add_metric("recall", 100 * a.recall(), "%")
                .add_metric("iou", 100 * a.iou(), "%")
                .add_metric("false_positives", static_cast<double>(a.fp), "points")
                .add_metric("false_negatives", static_cast<double>(a.fn), "points");
          }
          for (auto g : res.is_ground) ground += g;
          written = std::move(res);
          written_by = v.name;
        }
        const bool scored = common::is_pass(r) && !in.labels.empty();
        std::printf("%-26s %-9s %-14s %8zu %9s %8s %8s %8s %8s %9zu  %s\n", in.name.c_str(), rname, v.name.c_str(),
                    in.cloud.size(), r.stats.samples ? fmt(r.stats.median_ms, 3).c_str() : "-",
                    scored ? fmt(100 * a.precision()).c_str() : "-", scored ? fmt(100 * a.recall()).c_str() : "-",
                    scored ? fmt(100 * a.f1()).c_str() : "-", scored ? fmt(100 * a.iou()).c_str() : "-", ground,
                    r.verdict.text().c_str());
        rows.push_back(r);
        if (cold_row && cold_ms >= 0 && common::is_pass(r)) {  // the cold frame beside the warm median
          cold_done.insert(v.name);
          ResultRow cold = common::make_row("ground_seg", v.name, v.idea, static_cast<std::int64_t>(in.cloud.size()),
                                            "input=" + in.name + " rule=" + rname, env.device_label,
                                            common::role_name(v.role), "cold");
          cold.metric = cold_ms;
          cold.metric_unit = "ms (first frame)";
          cold.add_metric("warm_ms", r.stats.median_ms, "ms");
          cold.verdict = common::Verdict::pass();
          extra_rows.push_back(cold);
        }
        if (v.role == common::Role::reference && !improved) {  // the grid census, once per input
          const Census k = census(ref.cells);
          for (const auto& [bucket, cells] : k.bins()) {
            ResultRow h =
                common::make_row("ground_seg", v.name, v.idea, static_cast<std::int64_t>(in.cloud.size()),
                                 "input=" + in.name + " points_per_cell=" + bucket, env.device_label, "", "histogram");
            h.metric = static_cast<double>(cells);
            h.metric_unit = "cells";
            h.verdict = common::Verdict::pass();
            rows.push_back(h);
          }
          ResultRow c = common::make_row("ground_seg", v.name, v.idea, static_cast<std::int64_t>(in.cloud.size()),
                                         "input=" + in.name, env.device_label, "", "census");
          c.metric = k.max;
          c.metric_unit = "points in the fullest cell";
          c.add_metric("cells", static_cast<double>(k.cells), "cells")
              .add_metric("empty", static_cast<double>(k.empty), "cells")
              .add_metric("one", static_cast<double>(k.one), "cells")
              .add_metric("warp", static_cast<double>(k.warp), "cells")
              .add_metric("over", static_cast<double>(k.over), "cells")
              .add_metric("points_one", static_cast<double>(k.points_one), "points")
              .add_metric("points_warp", static_cast<double>(k.points_warp), "points")
              .add_metric("points_over", static_cast<double>(k.points_over), "points");
          c.verdict = common::Verdict::pass();
          rows.push_back(c);
          censuses.emplace_back(in.name, k);
        }
      }
      // outputs from the checked result of the last (most optimised) selected version that passed
      // the output files: the first input under the first rule run (variance, or improved alone)
      const bool file_outputs =
          &in == &inputs.front() && (!improved || rule == "improved") &&
          (!o.extra.at("ply").empty() || !o.extra.at("labels-out").empty() || !o.extra.at("cells-out").empty());
      if (written_by.empty() && ((!topdown.empty() && pictured) || file_outputs)) {
        std::fprintf(
            stderr,
            "ground_seg: %s, rule %s: no version passed, so no top-down view or output file is written for it\n",
            in.name.c_str(), rname);
        continue;
      }
      if (!topdown.empty() && pictured) rule_labels[improved] = written.is_ground;
      if (file_outputs) {
        if (!o.extra.at("ply").empty()) write_labelled_ply(o.extra.at("ply"), in.cloud, written.is_ground);
        if (!o.extra.at("labels-out").empty()) write_labels(o.extra.at("labels-out"), in.cloud, written.is_ground);
        if (!o.extra.at("cells-out").empty()) write_cell_stats_csv(o.extra.at("cells-out"), written.cells, p);
        std::printf("  (output files of %s from %s's checked result)\n", in.name.c_str(), written_by.c_str());
      }
    }
    if (!topdown.empty() && pictured && (!rule_labels[0].empty() || !rule_labels[1].empty()))
      write_topdown_data(topdown + "/topdown_" + file_stem(in.name) + ".gstd", in.cloud, in.labels, rule_labels[0],
                         rule_labels[1], base);
    for (const char* rn : {"variance", "improved"}) {  // ratios within each (input, rule) block
      const std::string tag = "input=" + in.name + " rule=" + rn;
      std::vector<ResultRow*> group;
      for (auto& r : rows)
        if (r.kind == "version" && r.params == tag) group.push_back(&r);
      common::fill_ratios(group);
    }
    if (in.cloud.dropped_nonfinite || in.cloud.dropped_no_return)
      std::printf("  (%s: %zu NaN/inf points and %zu no-return points dropped by the reader)\n", in.name.c_str(),
                  in.cloud.dropped_nonfinite, in.cloud.dropped_no_return);
  }
  for (const auto& r : extra_rows) rows.push_back(r);
  for (const auto& [name, k] : censuses) print_census(name, k);
  const auto phased =
      std::find_if(selected.begin(), selected.end(), [](const Version* v) { return v->phases != nullptr; });
  if (env.gpu && !inputs.empty() && phased != selected.end()) {
    const Version* v3 = *phased;
    const Input& in = inputs.back();  // the real scan when present
    Params p = base;
    Phases phases;
    common::BenchStats frames;
    common::NvtxRange range("per-phase table");
    ResultRow failed = common::make_row("ground_seg", v3->name, v3->idea, static_cast<std::int64_t>(in.cloud.size()),
                                        "input=" + in.name, env.device_label, common::role_name(v3->role), "phase");
    if (!common::run_guarded(failed, true, [&] {
          common::PointCloud frame = in.cloud;
          Result got, expected;
          std::mt19937_64 rng(std::random_device{}());
          const common::FreshInputs fresh = fresh_frames(in.cloud, frame, p, expected, rng, [&got] { return got; });
          // the timed work (labels only), so the phases add up to the frame in the version table;
          // the same warm-up and stopping rule as every other row
          frames = common::bench_loop(
              [&](bool recording) {
                const common::WallTimer t;
                got = v3->phases(frame, p, recording ? &phases : nullptr, Outputs::labels);
                return t.elapsed_ms();
              },
              bench, o.fresh_inputs ? &fresh : nullptr);
        }))
      rows.push_back(failed);
    else
      std::printf("\nper-phase table, %s, %s (median of %d frames):\n", in.name.c_str(), v3->name.c_str(),
                  frames.samples);
    for (const auto& [phase, stats] : phases.summary()) {
      ResultRow r = common::make_row("ground_seg", v3->name, v3->idea, static_cast<std::int64_t>(in.cloud.size()),
                                     "input=" + in.name + " phase=" + phase, env.device_label,
                                     common::role_name(v3->role), "phase");
      r.stats = stats;
      r.verdict = common::Verdict::pass();
      for (const auto& [stage, cost] : stage_costs(in.cloud.size(), p))
        if (stage == phase) r.predicted_ms = common::predict(cost, env.spec).total_ms;
      std::printf("  %-28s %8.3f ms   predicted %s\n", phase.c_str(), r.stats.median_ms,
                  std::isnan(r.predicted_ms) ? "-" : (fmt(r.predicted_ms * 1e3, 1) + " us").c_str());
      rows.push_back(r);
    }
  }
  const auto streamed_version =
      std::find_if(selected.begin(), selected.end(), [](const Version* v) { return !v->make; });
  if (streamed_version != selected.end() && !inputs.empty()) {
    const Version& v5 = **streamed_version;
    common::NvtxRange version_range(v5.name.c_str());  // what --profile keeps of the run
    const Input& in = inputs.back();
    Params p = base;
    const Result reference = segment_cpu(in.cloud, p);
    std::vector<std::uint8_t> streamed;
    if (env.gpu)
      std::printf("\nstreamed frames (%s: one frame engine per stream), %s:\n", v5.name.c_str(), in.name.c_str());
    for (int streams : {1, 2, 4, 8}) {
      common::NvtxRange range((v5.name + " streams=" + std::to_string(streams)).c_str());
      const int frames = o.quick ? 50 : 500;  // per sample
      ResultRow r = common::make_row("ground_seg", v5.name, v5.idea, static_cast<std::int64_t>(in.cloud.size()),
                                     "input=" + in.name + " streams=" + std::to_string(streams), env.device_label,
                                     common::role_name(v5.role), "streams");
      if (!env.gpu) {
        r.verdict = common::no_gpu_verdict();
        rows.push_back(r);
        continue;
      }
      common::run_guarded(r, true, [&] {
        // each sample: `frames` frames through the engines, ms per frame; the bench's stopping rule.
        // --fresh-inputs turns the frame before every sample and checks its last frame's labels
        // (the frames within one sample are one staged frame, as the version is written).
        common::PointCloud frame = in.cloud;
        Result expected;
        std::mt19937_64 rng(std::random_device{}());
        const common::FreshInputs fresh = fresh_frames(in.cloud, frame, p, expected, rng, [&] {
          Result got;  // v5 hands back labels only: no cells, no outside count
          got.is_ground = streamed;
          got.outside = expected.outside;
          return got;
        });
        if (common::evidence::enabled()) {  // the grader's record, of the frame every run of it sees
          segment_gpu_streamed(in.cloud, p, streams, 1, &streamed);
          Result first;
          first.is_ground = streamed;
          record_evidence(v5.name, "input=" + in.name + " streams=" + std::to_string(streams), first);
        }
        std::vector<double> latency;
        r.stats = common::bench_loop(
            [&](bool) {
              const StreamedRun sr = segment_gpu_streamed(frame, p, streams, frames, &streamed);
              latency.push_back(sr.median_latency_ms);
              return sr.total_ms / frames;
            },
            bench, o.fresh_inputs ? &fresh : nullptr);
        const double latency_ms = common::summarize(latency).median_ms;
        r.metric = 1e3 / r.stats.median_ms;
        r.metric_unit = "frames/s";
        r.add_metric("latency", latency_ms, "ms").add_metric("frames_per_sample", frames, "frames");
        Result got;  // v5 hands back labels only: no cells, no outside count
        const Result& last = o.fresh_inputs ? expected : reference;  // the reference of the last frame timed
        got.is_ground = streamed;
        got.outside = last.outside;
        const std::string bad = compare_to_reference(last, got);
        r.verdict = common::Verdict::pass_if(bad.empty(), bad);
        std::printf("  %d streams: %9.0f frames/s, latency %.3f ms  %s\n", streams, r.metric, latency_ms,
                    r.verdict.text().c_str());
      });
      rows.push_back(r);
    }
  }
  return common::finish_run(std::cout, "ground_seg", rows, o.csv);
}

}  // namespace

int main(int argc, char** argv) {
  common::DriverSpec spec{"ground_seg", kSummary, kExtraFlags, {"n", "sweep", "cold"}};
  // --profile: --quick's inputs (one simulated scan, and SemanticKITTI's where the data folder has it)
  spec.profile = common::profile_mode("ground_seg", versions(), std::vector<std::string>{"--quick", "--reps", "1"});
  return common::driver_main(argc, argv, spec, run);
}
