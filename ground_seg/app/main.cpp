// ground_seg driver: segments the simulated street scan and the labelled real scan (when the
// data directory has it) with the seed rule and the improved rule, checks every result's
// invariants, scores it against the labels (Patchwork++ convention), times it, and writes the
// grid population histogram, top-down label images and optionally a labelled PLY.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sys/stat.h>

#include "common/bench.hpp"
#include "common/cli.hpp"
#include "common/output_file.hpp"
#include "common/environment.hpp"
#include "common/lidar_sim.hpp"
#include "common/results.hpp"
#include "ground_seg/registry.hpp"
#include "ground_seg/engine.hpp"

using common::ResultRow;
using namespace ground_seg;

namespace {

const char* const kSummary = "Ground segmentation: accuracy against labels, timing, grid population, images.";

const std::vector<common::ExtraFlag> kExtraFlags = {
    {"rule", "seed, improved or both", true, "both"},
    {"cell", "cell size (m)", true, "0.3"},
    {"region", "x_min,x_max,y_min,y_max (m)", true, "-50,50,-50,50"},
    {"point-threshold", "points that make a cell valid", true, "3"},
    {"var-threshold", "ground cell variance threshold (m^2)", true, "0.01"},
    {"height-threshold", "point height above the cell mean (m)", true, "0.2"},
    {"images", "folder for the top-down PNG images (empty: none)", true, ""},
    {"ply", "write the first input's labelled cloud to this PLY file", true, ""},
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
      i.labels = common::read_semantickitti_labels(stem + ".label", i.cloud.size() + i.cloud.dropped_nonfinite + i.cloud.dropped_no_return);
    in.push_back(std::move(i));
    return in;
  }
  const int sims = o.quick ? 1 : static_cast<int>(o.extra_int("sim-scans", 1, 100000));
  for (int k = 0; k < sims; ++k) {
    auto s = common::simulate_lidar_scan({}, o.seed + k);
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

std::string fmt(double v, int prec = 2) {
  char b[32];
  std::snprintf(b, sizeof b, "%.*f", prec, v);
  return b;
}

int run(const common::CliOptions& o) {
  if (o.list) {
    for (const auto& v : versions()) std::printf("%-6s %-6s %s\n", v.id.c_str(), v.name.c_str(), v.idea.c_str());
    return 0;
  }
  const std::string rule = o.extra.at("rule");
  if (rule != "seed" && rule != "improved" && rule != "both") throw common::UsageError("--rule: seed, improved or both");
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
  const std::vector<Input> inputs = load_inputs(o);
  const std::string images = o.extra.at("images");
  if (!images.empty()) common::make_output_dir(images, "images");
  std::vector<ResultRow> rows, extra_rows;
  std::cout << "ground_seg: cell " << base.cell << " m, grid " << base.nx() << " x " << base.ny() << ", point threshold "
            << base.point_threshold << ", variance < " << base.var_threshold << " m^2, height < " << base.height_threshold
            << " m (seed " << o.seed << ")\n\n";
  std::printf("%-26s %-9s %-9s %8s %9s %8s %8s %8s %8s %9s  %s\n", "input", "rule", "version", "points", "ms/frame", "prec%",
              "recall%", "F1%", "IoU%", "ground", "check");
  for (const auto& in : inputs) {
    for (const bool improved : {false, true}) {
      if ((improved && rule == "seed") || (!improved && rule == "improved")) continue;
      Params p = base;
      p.improved = improved;
      const char* rname = improved ? "improved" : "seed";
      for (const auto& v : versions()) {
        // v1/v2 allocate and copy inside each call, so their time is end to end (host points in,
        // labels out, allocation included); kernel-only figures come with the all-on-device version.
        ResultRow r = common::make_row("ground_seg", v.name, v.idea, static_cast<std::int64_t>(in.cloud.size()),
                                       "input=" + in.name + " rule=" + rname + (v.needs_gpu ? " timing=end_to_end" : ""),
                                       env.device_label);
        if (v.needs_gpu && !env.gpu) {
          r.passed = "skipped: no CUDA device";
          rows.push_back(r);
          continue;
        }
        const Result res = v.run(in.cloud, p);
        const std::string bad = check_invariants(in.cloud, p, res);
        r.passed = bad.empty() ? "PASS" : "FAIL: " + bad;
        if (v.name == "v4_graph") {  // a warm engine: graph captured once, then replayed per frame
          FrameEngine engine(p, static_cast<int>(in.cloud.size()));
          engine.launch(in.cloud);
          engine.wait();
          std::vector<double> kernels;
          // end to end from pinned host points to host labels (a sensor driver writes into pinned
          // memory); the same from a std::vector (copy into pinned memory included) is another row
          r.stats = common::bench_cpu([&] {
            engine.launch_pinned(static_cast<int>(in.cloud.size()));
            engine.wait();
            kernels.push_back(engine.kernel_ms());
          }, bench);
          r.params += " from=pinned";
          ResultRow from_vector = r;
          from_vector.params = "input=" + in.name + " rule=" + rname + " timing=end_to_end from=std::vector";
          from_vector.stats = common::bench_cpu([&] { engine.launch(in.cloud); engine.wait(); }, bench);
          extra_rows.push_back(from_vector);
          ResultRow k = r;
          k.params = "input=" + in.name + " rule=" + rname + " timing=kernels";
          k.stats = common::summarize(kernels);
          common::CostModel all{};
          for (const auto& [stage, cost] : stage_costs(in.cloud.size(), p)) {
            all.bytes += cost.bytes;
            all.launches += cost.launches;
          }
          all.launches += 3;  // the scan (memset + kernel) and the grouping
          k.predicted_ms = common::predict(all, env.spec).total_ms;
          extra_rows.push_back(k);
        } else {
          r.stats = common::bench_cpu([&] { (void)v.run(in.cloud, p); }, bench);
        }
        Accuracy a;
        if (!in.labels.empty()) {
          a = score(in.cloud, res.is_ground, in.labels);
          r.metric = 100 * a.f1();
          r.metric_unit = "F1%";
          r.params += " precision=" + fmt(100 * a.precision()) + " recall=" + fmt(100 * a.recall()) + " iou=" + fmt(100 * a.iou()) +
                      " fp=" + std::to_string(a.fp) + " fn=" + std::to_string(a.fn);
        }
        std::size_t ground = 0;
        for (auto g : res.is_ground) ground += g;
        std::printf("%-26s %-9s %-9s %8zu %9.3f %8s %8s %8s %8s %9zu  %s\n", in.name.c_str(), rname, v.name.c_str(),
                    in.cloud.size(), r.stats.median_ms,
                    in.labels.empty() ? "-" : fmt(100 * a.precision()).c_str(), in.labels.empty() ? "-" : fmt(100 * a.recall()).c_str(),
                    in.labels.empty() ? "-" : fmt(100 * a.f1()).c_str(), in.labels.empty() ? "-" : fmt(100 * a.iou()).c_str(), ground,
                    r.passed.c_str());
        rows.push_back(r);
        if (v.name == "cpu" && !improved) {  // grid population, once per input
          for (const auto& [bucket, cells] : population_histogram(res.cells)) {
            ResultRow h = common::make_row("ground_seg", v.name, v.idea, static_cast<std::int64_t>(in.cloud.size()),
                                           "input=" + in.name + " histogram=" + bucket, env.device_label);
            h.metric = static_cast<double>(cells);
            h.metric_unit = "cells";
            h.passed = r.passed;
            rows.push_back(h);
          }
        }
        const bool pictured = &in == &inputs.front() || in.name.rfind("sim", 0) != 0;  // first sim + real scans
        if (v.name == "cpu" && !images.empty() && pictured)
          write_topdown_png(images + "/topdown_" + file_stem(in.name) + "_" + rname + ".png", in.cloud, res.is_ground,
                            in.labels, p);
        if (v.name == "cpu" && &in == &inputs.front() && !improved) {
          if (!o.extra.at("ply").empty()) write_labelled_ply(o.extra.at("ply"), in.cloud, res.is_ground);
          if (!o.extra.at("labels-out").empty()) write_labels(o.extra.at("labels-out"), in.cloud, res.is_ground);
          if (!o.extra.at("cells-out").empty()) write_cell_stats_csv(o.extra.at("cells-out"), res.cells, p);
        }
      }
    }
    for (const char* rn : {"seed", "improved"}) {  // ratios within each (input, rule) block
      const std::string tag = "input=" + in.name + " rule=" + rn;
      double cpu = common::kNoValue, cub = common::kNoValue, prev = common::kNoValue;
      for (auto& r : rows)
        if (r.params.rfind(tag, 0) == 0 && r.params.find("histogram") == std::string::npos && r.stats.samples) {
          if (r.version == "cpu") cpu = r.stats.median_ms;
          if (r.version == "v2_cub") cub = r.stats.median_ms;
        }
      for (auto& r : rows)
        if (r.params.rfind(tag, 0) == 0 && r.params.find("histogram") == std::string::npos && r.stats.samples) {
          r.speedup_vs_cpu = cpu / r.stats.median_ms;
          r.speedup_vs_library = cub / r.stats.median_ms;
          r.speedup_vs_prev = prev / r.stats.median_ms;
          prev = r.stats.median_ms;
        }
    }
    if (in.cloud.dropped_nonfinite || in.cloud.dropped_no_return)
      std::printf("  (%s: %zu NaN/inf points and %zu no-return points dropped by the reader)\n", in.name.c_str(),
                  in.cloud.dropped_nonfinite, in.cloud.dropped_no_return);
  }
  rows.insert(rows.end(), extra_rows.begin(), extra_rows.end());
  if (env.gpu && !inputs.empty()) {
    const Input& in = inputs.back();  // the real scan when present
    Params p = base;
    const Version& v3 = *std::find_if(versions().begin(), versions().end(), [](const Version& v) { return v.name == "v3_seed_design"; });
    (void)segment_gpu_seed_design(in.cloud, p);  // warm-up
    std::vector<Phases> samples;
    for (int rep = 0; rep < (o.quick ? 3 : 21); ++rep) {
      Phases ph;
      (void)segment_gpu_seed_design(in.cloud, p, &ph);
      samples.push_back(ph);
    }
    std::printf("\nper-phase table, %s, v3 (median of %zu frames):\n", in.name.c_str(), samples.size());
    for (std::size_t i = 0; i < samples[0].size(); ++i) {
      std::vector<double> t;
      for (const auto& ph : samples) t.push_back(ph[i].second);
      ResultRow r = common::make_row("ground_seg", v3.name, v3.idea, static_cast<std::int64_t>(in.cloud.size()),
                                     "input=" + in.name + " phase=" + samples[0][i].first, env.device_label);
      r.stats = common::summarize(t);
      r.passed = "PASS";
      for (const auto& [stage, cost] : stage_costs(in.cloud.size(), p))
        if (stage == samples[0][i].first) r.predicted_ms = common::predict(cost, env.spec).total_ms;
      std::printf("  %-28s %8.3f ms   predicted %s\n", samples[0][i].first.c_str(), r.stats.median_ms,
                  std::isnan(r.predicted_ms) ? "-" : (fmt(r.predicted_ms * 1e3, 1) + " us").c_str());
      rows.push_back(r);
    }
    std::vector<std::uint8_t> reference = segment_cpu(in.cloud, p).is_ground, streamed;
    std::printf("\nstreamed frames (v5: one v4 engine per stream), %s:\n", in.name.c_str());
    for (int streams : {1, 2, 4, 8}) {
      const int frames = o.quick ? 50 : 2000;
      const StreamedRun sr = segment_gpu_streamed(in.cloud, p, streams, frames, &streamed);
      ResultRow r = common::make_row("ground_seg", "v5_streams", "several frames in flight, one graph engine per stream",
                                     static_cast<std::int64_t>(in.cloud.size()),
                                     "input=" + in.name + " streams=" + std::to_string(streams) + " latency_ms=" +
                                         fmt(sr.median_latency_ms, 4),
                                     env.device_label);
      r.metric = sr.frames_per_second;
      r.metric_unit = "frames/s";
      r.stats = common::summarize({sr.total_ms / frames});
      r.passed = streamed == reference ? "PASS" : "FAIL: streamed labels differ from the CPU's";
      std::printf("  %d streams: %9.0f frames/s, latency %.3f ms  %s\n", streams, sr.frames_per_second, sr.median_latency_ms,
                  r.passed.c_str());
      rows.push_back(r);
    }
  }
  return common::finish_run(std::cout, "ground_seg", rows, o.csv);
}

}  // namespace

int main(int argc, char** argv) {
  return common::driver_main(argc, argv, {"ground_seg", kSummary, kExtraFlags, {"n", "sweep", "cold", "version"}}, run);
}
