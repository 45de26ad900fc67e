// nbody driver: every version checked against a float64 reference, then timed per step
// (interactions/s, GFLOP/s at 20 FLOP per interaction, % of the measured FP32 FMA peak); the
// the original project's 19-snapshot batch end to end; multi-GPU scaling; energy drift per integrator.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <numeric>
#include <random>
#include <sys/stat.h>

#include "common/exercise.hpp"
#include "common/bench.hpp"
#include "common/ceilings.hpp"
#include "common/cli.hpp"
#include "common/evidence.hpp"
#include "common/cuda_check.hpp"
#include "common/device_info.hpp"
#include "common/environment.hpp"
#include "common/gpu_resources.hpp"
#include "common/output_file.hpp"
#include "common/nvtx.hpp"
#include "common/profile.hpp"
#include "common/progress.hpp"
#include "common/results.hpp"
#include "common/roofline.hpp"
#include "nbody/io.hpp"
#include "nbody/pipeline.hpp"
#include "nbody/plummer.hpp"
#include "nbody/registry.hpp"

using common::ResultRow;
using namespace nbody;

namespace {

const std::vector<common::ExtraFlag> kExtraFlags = {
    {"mode",
     "step, batch, table (every version over snapshots of different sizes), scaling, drift, all (= those five) "
     "or tune (kernel shapes)",
     true, "all"},
    {"steps", "steps per snapshot in the batch", true, "10"},
    {"integrator", "euler, symplectic or leapfrog", true, "symplectic"},
    {"eps", "softening length", true, "0.01"},
    {"dt", "time step", true, "0.001"},
    {"batch-dir", "directory of snapshot CSVs (x,y,z,vx,vy,vz,m[,id]); default: generate them", true, ""},
    {"files", "snapshots generated for the batch", true, "19"},
    {"batch-n", "bodies per generated snapshot", true, "64000"},
    {"cpu-max-n", "largest n timed on one CPU core", true, "2^14"},
    {"openmp-max-n", "largest n timed with OpenMP", true, "2^16"},
    {"scaling-n", "sizes of the multi-GPU scaling table", true, "2^16,2^18,2^20"},
    {"gpus-max", "use at most this many GPUs", true, "8"},
};
const char* const kSummary = "Checks and times every N-body version (forces, batch, multi-GPU, integrators).";

struct Context : common::Environment {
  common::CliOptions opt;
  std::vector<std::string> selected;  // --version; empty: all
  Params params;
  common::BenchOptions bench;
  double issue_ceiling_ips = 0;
};

bool is_selected(const Context& c, const Version& v) {
  return c.selected.empty() || std::find(c.selected.begin(), c.selected.end(), v.name) != c.selected.end();
}

// The version a mode measures: batch the pipeline version, scaling the multi-GPU version, drift
// and tune the best kernel (step measures every per-step version).
const Version& mode_version(const std::string& mode) {
  const Mode want = mode == "batch" ? Mode::Batch : mode == "scaling" ? Mode::MultiGpu : Mode::Step;
  if (want == Mode::Step) return best_version();
  for (const auto& v : versions())
    if (v.mode == want) return v;
  throw std::logic_error("no version for mode " + mode);
}

// Where the batch writes its output snapshots (and the generated inputs go beside it).
constexpr const char* kBatchOutputDir = "results/scratch/nbody_output";
constexpr const char* kTableOutputDir = "results/scratch/nbody_table_output";  // the table's outputs

// Flags that only some modes read: given for a run without those modes, they are a usage error.
const std::vector<std::pair<std::string, std::vector<std::string>>> kFlagModes = {
    {"steps", {"batch", "table"}},
    {"integrator", {"batch", "table"}},
    {"batch-dir", {"batch", "table"}},
    {"files", {"batch", "table"}},
    {"batch-n", {"batch", "table"}},
    {"cpu-max-n", {"step"}},
    {"openmp-max-n", {"step"}},
    {"scaling-n", {"scaling"}},
    {"gpus-max", {"batch", "scaling"}},
    {"n", {"step", "tune"}},
    {"sweep", {"step"}},
    {"reps", {"step", "tune"}},
    {"warmup", {"step", "tune"}},
};

void check_flags_used(const common::CliOptions& o, const std::vector<std::string>& modes) {
  for (const auto& [flag, used_by] : kFlagModes) {
    if (!o.was_given(flag)) continue;
    bool used = false;
    std::string list;
    for (const auto& m : used_by) {
      used = used || std::find(modes.begin(), modes.end(), m) != modes.end();
      list += (list.empty() ? "" : " or ") + m;
    }
    if (!used)
      throw common::UsageError("--" + flag + " is read only by --mode " + list + ", which this run does not include");
  }
  if (!o.extra.at("batch-dir").empty())
    for (const char* f : {"files", "batch-n"})
      if (o.was_given(f))
        throw common::UsageError(std::string("--") + f + " sizes generated snapshots; --batch-dir reads them instead");
}

// kind: the mode that produced the row ("version" for the per-step ladder, "batch", "batch_file",
// "scaling", "tune", "drift").
ResultRow base_row(const Context& c, const Version& v, long long n, const std::string& kind,
                   const std::string& params) {
  return common::make_row("nbody", v.name, v.idea, n, params, c.device_label, common::role_name(v.role), kind);
}

// A list of body counts, each in [1, 2^31 - 1] and checked against the memory it implies.
std::vector<long long> parse_sizes(const std::string& text, const std::string& flag) {
  std::vector<long long> v;
  for (const auto& s : common::split(text, ',')) {
    v.push_back(common::parse_int(s, flag, 1, (std::int64_t{1} << 31) - 1));
    common::check_fits_in_memory("--" + flag + " " + s, 160.0 * v.back(), 96.0 * v.back());
  }
  if (v.empty()) throw common::UsageError("--" + flag + " needs at least one size");
  return v;
}

void fill_rate(const Context& c, ResultRow& r, double interactions) {
  const double s = r.stats.median_ms * 1e-3;
  r.metric = interactions / s / 1e9;
  r.metric_unit = "Ginter/s";
  if (c.gpu) {
    r.pct_of_ceiling = 100.0 * kFlopsPerInteraction * interactions / s / (c.ceilings.fma_gflops * 1e9);
    r.ceiling = "fp32_fma_peak";
  }
}

// What is wrong with accelerations (ax, ay, az) of the bodies b, judged against float64 at the
// bodies `at` and by the momentum balance of all; "" when within the bounds.
std::string force_errors(const Context& c, const Bodies& b, const std::vector<std::size_t>& at,
                         const std::vector<float>& ax, const std::vector<float>& ay, const std::vector<float>& az) {
  const Accelerations ref = reference_accelerations_at(b, at, c.params.G, c.params.eps);
  std::vector<float> sx(at.size()), sy(at.size()), sz(at.size());
  for (std::size_t q = 0; q < at.size(); ++q) {
    sx[q] = ax[at[q]];
    sy[q] = ay[at[q]];
    sz[q] = az[at[q]];
  }
  const AccelError e = compare_accelerations(ref, sx, sy, sz);
  const double mom = momentum_balance(b, ax, ay, az);
  // float32 sums over n terms: max relative error 1e-4, median 1e-5 (see tests/nbody for why)
  if (e.max_rel <= 1e-4 && e.median_rel <= 1e-5 && mom <= 1e-5) return "";
  char buf[200];
  std::snprintf(buf, sizeof buf, "max rel %.2e (<= 1e-4), median %.2e (<= 1e-5), momentum %.2e (<= 1e-5)", e.max_rel,
                e.median_rel, mom);
  return buf;
}

// Accuracy of one version against float64 on a sample of bodies, and momentum balance.
common::Verdict check_forces(const Context& c, const Version& v, const Bodies& b) {
  std::vector<float> ax, ay, az;
  const float G = static_cast<float>(c.params.G), eps = static_cast<float>(c.params.eps);
  if (v.cpu) {
    HostAccel a;
    v.cpu(b, G, eps, a);
    ax = a.ax;
    ay = a.ay;
    az = a.az;
  } else {
    gpu_accelerations(b, G, eps, v.gpu, ax, ay, az);
  }
  const std::size_t n = b.size();
  const std::size_t stride = std::max<std::size_t>(1, n / 512);  // reference forces on a sample
  std::vector<std::size_t> idx;
  for (std::size_t i = 0; i < n; i += stride) idx.push_back(i);
  const std::string wrong = force_errors(c, b, idx, ax, ay, az);
  // the grader's own record (evidence.hpp): the sampled accelerations. Each correct version is
  // within 1e-4 |a| of float64 for each body, two within 2e-4 |a|: a component may differ by
  // 2e-4 of the largest |a| sampled (twice that, for margin), none more
  std::vector<double> sample;
  double largest = 0;
  for (std::size_t i : idx) {
    sample.insert(sample.end(), {ax[i], ay[i], az[i]});
    const double mag = std::sqrt(double(ax[i]) * ax[i] + double(ay[i]) * ay[i] + double(az[i]) * az[i]);
    if (mag > largest) largest = mag;
  }
  common::evidence::close(v.name, "forces n=" + std::to_string(n), sample, 4e-4 * largest, 0);
  return common::Verdict::pass_if(wrong.empty(), wrong);
}

// --fresh-inputs for the steps timed on the device (a step: the version's forces, then the
// harness's integration). A step that remembered the last one could leave its accelerations in
// place and be timed doing nothing. Before every step the bodies are shuffled (the same system in a
// new order, drawn untimed; the work is the same), so an earlier step's accelerations belong to
// other bodies; after it, the accelerations the step left in the system are checked as
// check_forces does, against float64 from the state the step started from, at bodies drawn after
// the run (512 up to n = 2^14, fewer above: about 8M float64 interactions a check).
common::FreshInputs fresh_steps(const Context& c, DeviceSystem& sys, Bodies& start, std::mt19937_64& rng,
                                cudaStream_t s) {
  auto refresh = [&sys, &start, &rng, s] {
    sys.download(start, s);  // positions and velocities; the masses are start's, in the device's order
    std::vector<std::size_t> order(start.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::shuffle(order.begin(), order.end(), rng);
    Bodies shuffled = start;
    for (std::size_t k = 0; k < order.size(); ++k) {
      const std::size_t i = order[k];
      shuffled.x[k] = start.x[i];
      shuffled.y[k] = start.y[i];
      shuffled.z[k] = start.z[i];
      shuffled.vx[k] = start.vx[i];
      shuffled.vy[k] = start.vy[i];
      shuffled.vz[k] = start.vz[i];
      shuffled.m[k] = start.m[i];
      if (!start.id.empty()) shuffled.id[k] = start.id[i];
    }
    start = std::move(shuffled);
    sys.upload(start, s);
  };
  auto verify = [&c, &sys, &start, &rng] {
    const std::size_t n = start.size();
    std::vector<float4> a(n);
    CUDA_CHECK(cudaMemcpy(a.data(), sys.acc(), n * sizeof(float4), cudaMemcpyDeviceToHost));
    std::vector<float> ax(n), ay(n), az(n);
    for (std::size_t i = 0; i < n; ++i) {
      ax[i] = a[i].x;
      ay[i] = a[i].y;
      az[i] = a[i].z;
    }
    const std::size_t checked = std::min<std::size_t>(n, std::clamp<std::size_t>((std::size_t{1} << 23) / n, 64, 512));
    std::uniform_int_distribution<std::size_t> body(0, n - 1);
    std::vector<std::size_t> at(checked);
    for (auto& i : at) i = body(rng);
    const std::string wrong = force_errors(c, start, at, ax, ay, az);
    return wrong.empty() ? wrong : "the step's accelerations are off the float64 forces of its state: " + wrong;
  };
  return {refresh, verify};
}

void step_mode(Context& c, common::RowList& rows) {
  std::vector<long long> sizes(c.opt.sizes.begin(), c.opt.sizes.end());
  if (sizes.empty()) {
    if (c.opt.quick)
      sizes = {1 << 10, 1 << 12};
    else if (c.opt.sweep)
      sizes = {1 << 8, 1 << 10, 1 << 12, 1 << 13, 1 << 14, 1 << 15, 1 << 16, 1 << 17, 1 << 18, 1 << 19};
    else
      sizes = {1 << 10, 1 << 12, 1 << 14, 1 << 16, 1 << 18};
  }
  // per body: the initial, reference and version states (8 words each) and the checks' copies on
  // the host, a few state and acceleration arrays on the device
  for (long long n : sizes) common::check_fits_in_memory("--n " + std::to_string(n), 160.0 * n, 96.0 * n);
  const long long cpu_max = c.opt.extra_int("cpu-max-n", 0, std::int64_t{1} << 40),
                  omp_max = c.opt.extra_int("openmp-max-n", 0, std::int64_t{1} << 40);
  int steps = 0;
  for (const auto& v : versions()) steps += v.mode == Mode::Step && is_selected(c, v);
  common::Progress progress(steps * static_cast<int>(sizes.size()), "nbody step");
  for (long long n : sizes) {
    common::NvtxRange range(("step n=" + std::to_string(n)).c_str());
    const Bodies initial = make_plummer(n, c.opt.seed + n);
    const std::size_t first = rows.size();
    Params one = c.params;
    one.steps = 1;
    one.integrator = Integrator::SymplecticEuler;
    for (const auto& v : versions()) {
      if (v.mode != Mode::Step || !is_selected(c, v)) continue;
      progress.step(v.name + " n=" + std::to_string(n));
      ResultRow r = base_row(c, v, n, "version", "integrator=symplectic");
      if (v.needs_gpu && !c.gpu)
        r.verdict = common::no_gpu_verdict();
      else if (v.role == common::Role::reference && n > cpu_max)
        r.verdict = common::Verdict::skip("above --cpu-max-n");
      else if (v.role == common::Role::library && n > omp_max)
        r.verdict = common::Verdict::skip("above --openmp-max-n");
      else {
        common::NvtxRange vr(v.name.c_str());
        common::run_guarded(r, v.needs_gpu, [&] {
          r.verdict = check_forces(c, v, initial);
          if (!common::is_pass(r)) return;
          if (v.cpu) {
            Bodies b = initial;
            common::BenchOptions o = c.bench;
            o.max_seconds = std::max(o.max_seconds, 1.0);
            r.stats = common::bench_cpu([&] { cpu_simulate(b, one, v.cpu); }, o);
          } else {
            DeviceSystem sys;
            common::Stream s;
            sys.upload(initial, s.get());
            Bodies state = initial;
            std::mt19937_64 rng(std::random_device{}());
            const common::FreshInputs fresh = fresh_steps(c, sys, state, rng, s.get());
            r.stats = common::bench_gpu([&](cudaStream_t st) { gpu_simulate(sys, one, v.gpu, st); }, s.get(), c.bench,
                                        nullptr, c.opt.fresh_inputs ? &fresh : nullptr);
            r.predicted_ms = common::predict(step_cost(v, n), c.spec).total_ms;
            r.add_metric("instructions_per_interaction", v.instructions_per_interaction, "");
          }
          fill_rate(c, r, double(n) * double(n));
          if (v.shape) r.params += " " + v.shape(n);
        });
      }
      rows.push_back(r);
    }
    std::vector<ResultRow*> group;
    for (std::size_t i = first; i < rows.size(); ++i) group.push_back(&rows[i]);
    common::fill_ratios(group);
  }
}

// The snapshots a batch or table run reads: --batch-dir's as they are, else `files` generated
// Plummer spheres, written once under results/scratch (named by their sizes): with spread 1 every
// file has --batch-n bodies (the batch); with spread 16 they go from --batch-n / 16 to --batch-n in
// equal ratios (the table: real snapshot sets differ in size).
std::vector<std::string> snapshot_files(Context& c, const std::string& mode, double spread) {
  if (!c.opt.extra["batch-dir"].empty()) return list_snapshots(c.opt.extra["batch-dir"]);
  // explicit flags win over --quick's small defaults
  const int files =
      static_cast<int>(c.opt.quick && !c.opt.was_given("files") ? 3 : c.opt.extra_int("files", 1, 100000));
  const long long n =
      c.opt.quick && !c.opt.was_given("batch-n") ? 4096 : c.opt.extra_int("batch-n", 1, (std::int64_t{1} << 31) - 1);
  // per body: the snapshot's state and its text (~100 B) on the host; the state, accelerations and
  // pinned staging of two streams on the device
  common::check_fits_in_memory("--batch-n " + std::to_string(n), 400.0 * n, 160.0 * n);
  const std::string dir = spread == 1
                              ? "results/scratch/nbody_snapshots_" + std::to_string(n)
                              : "results/scratch/nbody_table_" + std::to_string(n) + "_" + std::to_string(files);
  common::make_output_dir(dir, mode);  // beside the output folder run() made
  std::vector<std::string> paths;
  for (int k = 0; k < files; ++k) {
    const double f = files == 1 ? 1.0 : static_cast<double>(k) / (files - 1);
    const auto nk = std::max<long long>(1, std::llround(n / spread * std::pow(spread, f)));
    char name[64];
    std::snprintf(name, sizeof name, "/c_%04d.csv", k * 100);
    paths.push_back(dir + name);
    struct stat st;
    if (stat(paths.back().c_str(), &st) != 0)
      write_snapshot_fast(paths.back(), make_plummer(nk, c.opt.seed + 7919 * k));
  }
  return paths;
}

bool same_states(const std::vector<Bodies>& a, const std::vector<Bodies>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t k = 0; k < a.size(); ++k)
    if (a[k].x != b[k].x || a[k].y != b[k].y || a[k].z != b[k].z || a[k].vx != b[k].vx || a[k].vy != b[k].vy ||
        a[k].vz != b[k].vz)
      return false;
  return true;
}

// --fresh-inputs for the batch: snapshots no earlier run read, one for each of `files` (a new
// Plummer sphere of its size, from a seed drawn from std::random_device), written untimed under
// results/scratch with the same names, so the outputs land where the originals' would.
std::vector<std::string> fresh_snapshots(const std::vector<std::string>& files) {
  const std::string dir = "results/scratch/nbody_fresh_snapshots";
  common::make_output_dir(dir, "batch");
  std::random_device device;
  std::vector<std::string> fresh;
  for (const auto& f : files) {
    const auto slash = f.find_last_of('/');
    fresh.push_back(dir + "/" + (slash == std::string::npos ? f : f.substr(slash + 1)));
    const std::uint64_t seed = (std::uint64_t{device()} << 32) | device();
    write_snapshot_fast(fresh.back(), make_plummer(read_snapshot_csv(f).size(), seed));
  }
  return fresh;
}

void batch_mode(Context& c, common::RowList& rows) {
  const Version& v5 = mode_version("batch");
  common::NvtxRange version_range(v5.name.c_str());  // what --profile keeps of the run
  const auto files = snapshot_files(c, "batch", 1);
  Params p = c.params;
  p.steps = c.opt.quick && !c.opt.was_given("steps")
                ? 2
                : static_cast<int>(c.opt.extra_int("steps", 1, (std::int64_t{1} << 31) - 1));
  const Bodies first = read_snapshot_csv(files[0]);
  const long long n = static_cast<long long>(first.size());
  const std::string tag = "files=" + std::to_string(files.size()) + " steps=" + std::to_string(p.steps);
  ResultRow failed = base_row(c, v5, n, "batch", tag);
  if (!c.gpu) {
    failed.verdict = common::no_gpu_verdict();
    rows.push_back(failed);
    return;
  }
  const bool done = common::run_guarded(failed, true, [&] {
    const std::string out_dir = kBatchOutputDir;
    std::cerr << "nbody batch: " << files.size() << " snapshots of " << n << " bodies, " << p.steps << " steps each\n";
    // Warm-up and the correctness reference: the sequential pipeline, states kept.
    BatchResult seq = run_batch_sequential(files, p, best_kernel(), out_dir, true);
    const double interactions = double(n) * double(n) * p.steps * files.size();
    // Energy of the first snapshot before and after (float64, all pairs): the batch really integrates.
    const double e0 = total_energy(first, p.G, p.eps), e1 = total_energy(seq.final_states[0], p.G, p.eps);
    const double drift = std::fabs((e1 - e0) / e0);
    auto emit = [&](const std::string& pipeline, const BatchResult& res, const common::Verdict& status, int gpus) {
      ResultRow r = base_row(c, v5, n, "batch", tag + " pipeline=" + pipeline + " gpus=" + std::to_string(gpus));
      r.verdict = status;
      r.stats = common::summarize(res.file_ms);  // per file (completion to completion), end to end including I/O
      r.metric = interactions / (res.total_ms * 1e-3) / 1e9;
      r.metric_unit = "Ginter/s";
      r.add_metric("total", res.total_ms, "ms").add_metric("mean_per_file", res.total_ms / files.size(), "ms");
      r.add_metric("gpus", gpus, "");
      rows.push_back(r);
      for (std::size_t k = 0; k < res.file_ms.size(); ++k) {
        ResultRow f =
            base_row(c, v5, n, "batch_file",
                     tag + " pipeline=" + pipeline + " gpus=" + std::to_string(gpus) + " file=" + std::to_string(k));
        f.verdict = status;
        f.stats = common::summarize({res.file_ms[k]});
        rows.push_back(f);
      }
    };
    const common::Verdict seq_status = common::Verdict::pass_if(drift < 1e-3, "energy drift " + std::to_string(drift));
    seq = run_batch_sequential(files, p, best_kernel(), out_dir, true);
    emit("sequential", seq, seq_status, 1);
    // --fresh-inputs: each pipeline's timed run reads snapshots no run read before (a pipeline that
    // remembered its files could write what it computed in the warm-up), and its states are checked
    // against the sequential pipeline's on the same files, run after it untimed
    const char* const replay_note = " (the version may replay an earlier result)";
    auto timed_inputs = [&](std::vector<Bodies>& expected) {
      if (!c.opt.fresh_inputs) {
        expected = seq.final_states;
        return files;
      }
      const std::vector<std::string> fresh = fresh_snapshots(files);
      expected = run_batch_sequential(fresh, p, best_kernel(), "", true).final_states;
      return fresh;
    };
    BatchResult streamed = run_batch_streamed(files, p, best_kernel(), out_dir, true);
    std::vector<Bodies> expected;
    std::vector<std::string> timed = timed_inputs(expected);
    streamed = run_batch_streamed(timed, p, best_kernel(), out_dir, true);
    emit(
        "streamed", streamed,
        common::Verdict::pass_if(
            same_states(streamed.final_states, expected),
            c.opt.fresh_inputs ? std::string("on fresh snapshots, streamed states differ from sequential") + replay_note
                               : std::string("streamed states differ from sequential")),
        1);
    const int gpus = std::min(device_count(), static_cast<int>(c.opt.extra_int("gpus-max", 1, 1024)));
    if (gpus > 1) {
      BatchResult per_gpu = run_batch_per_gpu(files, p, best_kernel(), out_dir, gpus);
      timed = timed_inputs(expected);
      per_gpu = run_batch_per_gpu(timed, p, best_kernel(), out_dir, gpus);
      bool ok = true;
      for (std::size_t k = 0; k < timed.size() && ok; ++k) {
        const std::string out = out_dir + timed[k].substr(timed[k].find_last_of('/'));
        const Bodies b = read_snapshot_csv(out);
        ok = b.x == expected[k].x && b.vx == expected[k].vx;
      }
      emit("per_gpu", per_gpu,
           common::Verdict::pass_if(ok, c.opt.fresh_inputs ? std::string("on fresh snapshots, per-GPU states differ "
                                                                         "from sequential") +
                                                                 replay_note
                                                           : std::string("per-GPU states differ from sequential")),
           gpus);
    }
  });
  if (!done) rows.push_back(failed);  // the pipeline that threw, as a FAIL (or skipped) row
}

// The table of the original term project: every per-step version over a batch of snapshots, each
// file end to end (read, upload, integrate, download, write), its average and the speed-up over
// the sequential code. Real snapshot sets differ in size, so the generated files do: --files of them
// (19 by default), from --batch-n / 16 to --batch-n bodies in equal ratios (--batch-dir: its files
// as they are). The sequential CPU is measured on the smallest file and extrapolated to the others:
// its reading and writing there x n / n_smallest, its integration x (n / n_smallest)^2 (all pairs:
// the same loop on every core, cpu_openmp, is measured on every file and shows that scaling).
// Rows: kind "table_file" per version and file (params measured=1 or measured=0), kind "table"
// per version (its mean per file and the whole batch); every GPU version's state after the
// smallest file is checked against the sequential CPU's.
// "" when `got` is `want` integrated alike: every position within 1e-4 of the system's RMS radius.
std::string state_error(const Bodies& got, const Bodies& want) {
  if (got.size() != want.size())
    return "the output has " + std::to_string(got.size()) + " bodies, not " + std::to_string(want.size());
  double r2 = 0, worst = 0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    r2 += double(want.x[i]) * want.x[i] + double(want.y[i]) * want.y[i] + double(want.z[i]) * want.z[i];
    const double d =
        std::hypot(double(got.x[i]) - want.x[i], double(got.y[i]) - want.y[i], double(got.z[i]) - want.z[i]);
    if (!(d <= worst)) worst = d, at = i;  // NaN counts as the worst
  }
  const double bound = 1e-4 * std::sqrt(r2 / std::max<std::size_t>(want.size(), 1));
  if (worst <= bound) return "";
  char buf[200];
  std::snprintf(buf, sizeof buf, "body %zu ends %.3g from the sequential CPU's position (bound %.3g)", at, worst,
                bound);
  return buf;
}

void table_mode(Context& c, common::RowList& rows) {
  const auto files = snapshot_files(c, "table", 16);
  Params p = c.params;
  p.steps = c.opt.quick && !c.opt.was_given("steps")
                ? 2
                : static_cast<int>(c.opt.extra_int("steps", 1, (std::int64_t{1} << 31) - 1));
  std::vector<long long> ns;
  for (const auto& f : files) ns.push_back(static_cast<long long>(read_snapshot_csv(f).size()));
  const std::size_t small = std::min_element(ns.begin(), ns.end()) - ns.begin();
  const std::size_t large = std::max_element(ns.begin(), ns.end()) - ns.begin();  // the rows' n
  const std::string tag = "files=" + std::to_string(files.size()) + " steps=" + std::to_string(p.steps);
  // the sequential CPU's state after the smallest file: what every version is checked against
  const Bodies start = read_snapshot_csv(files[small]);
  Bodies expected = start;
  const Version& seq = *common::with_role(versions(), common::Role::reference);  // the sequential CPU
  cpu_simulate(expected, p, seq.cpu);
  int count = 0;
  for (const auto& v : versions()) count += v.mode == Mode::Step && is_selected(c, v);
  common::Progress progress(count, "nbody table");
  for (const auto& v : versions()) {
    if (v.mode != Mode::Step || !is_selected(c, v)) continue;
    progress.step(v.name);
    common::NvtxRange range(("table " + v.name).c_str());
    std::vector<double> ms(files.size(), 0.0);
    std::vector<bool> measured(files.size(), false);
    ResultRow head = base_row(c, v, ns[large], "table", tag);
    if (v.needs_gpu && !c.gpu) {
      head.verdict = common::no_gpu_verdict();
    } else {
      common::run_guarded(head, v.needs_gpu, [&] {
        head.verdict = check_forces(c, v, start);  // a starter body says NOT IMPLEMENTED here, a wrong kernel fails
        if (!common::is_pass(head)) return;
        if (v.cpu) {
          // read, integrate, write one file on the host (the sequential CPU: the smallest; OpenMP:
          // every one); its reading and writing (linear in n) and its integration (n^2) apart
          double io_ms = 0, compute_ms = 0;
          auto one = [&](std::size_t k) {
            common::WallTimer t;
            Bodies b = read_snapshot_csv(files[k]);
            const double read = t.elapsed_ms();
            cpu_simulate(b, p, v.cpu);
            const double compute = t.elapsed_ms() - read;
            write_snapshot_fast(kTableOutputDir + files[k].substr(files[k].find_last_of('/')), b);
            ms[k] = t.elapsed_ms();
            measured[k] = true;
            io_ms = ms[k] - compute, compute_ms = compute;
            return b;
          };
          one(small);  // warm-up, as the GPU versions get: OpenMP starts its threads, the file is cached
          const Bodies got = one(small);
          const double io_small = io_ms, compute_small = compute_ms;
          auto extrapolated = [&](std::size_t k) {
            const double r = double(ns[k]) / ns[small];
            return io_small * r + compute_small * r * r;
          };
          if (v.role != common::Role::reference)  // cpu_openmp: every file
            for (std::size_t k = 0; k < files.size(); ++k)
              if (k != small) one(k);
          const std::string wrong = state_error(got, expected);
          head.verdict = common::Verdict::pass_if(wrong.empty(), wrong);
          for (std::size_t k = 0; k < files.size(); ++k)
            if (!measured[k]) ms[k] = extrapolated(k);
        } else {
          run_batch_sequential({files[small]}, p, v.gpu, "", false);  // warm-up: the first launch, the CSV code
          const BatchResult res = run_batch_sequential(files, p, v.gpu, kTableOutputDir, true);
          for (std::size_t k = 0; k < files.size(); ++k) ms[k] = res.file_ms[k], measured[k] = true;
          const std::string wrong = state_error(res.final_states[small], expected);
          head.verdict = common::Verdict::pass_if(wrong.empty(), wrong);
        }
      });
    }
    if (common::is_pass(head)) {
      double total = 0, interactions = 0;
      for (std::size_t k = 0; k < files.size(); ++k) {
        total += ms[k];
        interactions += double(ns[k]) * double(ns[k]) * p.steps;
        ResultRow f = base_row(c, v, ns[k], "table_file",
                               tag + " file=" + std::to_string(k) + " measured=" + (measured[k] ? "1" : "0"));
        f.verdict = head.verdict;
        f.stats = common::summarize({ms[k]});
        rows.push_back(f);
      }
      head.stats = common::summarize(ms);  // per file: its median, min and max
      head.metric = interactions / (total * 1e-3) / 1e9;
      head.metric_unit = "Ginter/s";
      const long long n_measured = std::count(measured.begin(), measured.end(), true);
      head.add_metric("total", total, "ms").add_metric("mean_per_file", total / files.size(), "ms");
      head.add_metric("files_measured", static_cast<double>(n_measured), "");
    }
    rows.push_back(head);
  }
}

void scaling_mode(Context& c, common::RowList& rows) {
  const Version& v7 = mode_version("scaling");
  common::NvtxRange version_range(v7.name.c_str());  // what --profile keeps of the run
  const auto sizes = c.opt.quick && !c.opt.was_given("scaling-n") ? std::vector<long long>{1 << 12}
                                                                  : parse_sizes(c.opt.extra["scaling-n"], "scaling-n");
  const int max_gpus = std::min(c.gpu ? device_count() : 0, static_cast<int>(c.opt.extra_int("gpus-max", 1, 1024)));
  for (long long n : sizes) {
    if (!c.gpu || !have_nccl()) {
      ResultRow r = base_row(c, v7, n, "scaling", "");
      r.verdict = !c.gpu ? common::no_gpu_verdict() : common::Verdict::skip("built without NCCL");
      rows.push_back(r);
      continue;
    }
    Params p = c.params;
    p.integrator = Integrator::SymplecticEuler;
    p.steps = c.opt.quick ? 2 : (n >= (1 << 20) ? 3 : 6);
    const Bodies initial = make_plummer(n, c.opt.seed + n);
    // Single-GPU reference with the same kernel: same steps, final state compared bitwise.
    Bodies single = initial;
    double single_ms = 0;
    ResultRow reference = base_row(c, v7, n, "scaling", "gpus=1");
    const bool have_reference = common::run_guarded(reference, true, [&] {
      DeviceSystem sys;
      common::Stream s;
      sys.upload(single, s.get());
      Params warm = p;
      warm.steps = 1;
      gpu_simulate(sys, warm, best_kernel(), s.get());
      sys.upload(single, s.get());
      std::vector<double> step_ms;
      common::EventTimer timer;
      for (int k = 0; k < p.steps; ++k) {
        timer.start(s.get());
        gpu_simulate(sys, warm, best_kernel(), s.get());
        step_ms.push_back(timer.stop_ms(s.get()));
      }
      sys.download(single, s.get());
      single_ms = common::summarize(step_ms).median_ms;
    });
    if (!have_reference) {  // the single-GPU reference failed: nothing to compare against
      rows.push_back(reference);
      continue;
    }
    if (max_gpus < 2) {
      ResultRow r = base_row(c, v7, n, "scaling", "gpus=2");
      r.verdict = common::Verdict::skip("one GPU on this machine (run on nvidia-h200-x2)");
      rows.push_back(r);
    }
    for (int g = 1; g <= max_gpus; ++g) {
      ResultRow r = base_row(c, v7, n, "scaling", "gpus=" + std::to_string(g));
      common::run_guarded(r, true, [&] {
        Bodies b = initial;
        r.stats = multi_gpu_simulate(b, p, g, best_kernel());
        const double ms = r.stats.median_ms;
        const bool same = b.x == single.x && b.y == single.y && b.z == single.z && b.vx == single.vx;
        r.verdict = common::Verdict::pass_if(same, "state differs from the single-GPU kernel's");
        fill_rate(c, r, double(n) * double(n));
        r.pct_of_ceiling = common::kNoValue;  // several GPUs: no single-GPU ceiling
        r.ceiling.clear();
        r.add_metric("gpus", g, "");
        r.add_metric("one_gpu_step", single_ms, "ms");  // the best kernel on one GPU without NCCL
        r.add_metric("speedup_vs_one_gpu", single_ms / ms, "x");
      });
      rows.push_back(r);
    }
  }
}

// Shapes of the several-bodies-per-thread kernel, each checked then timed per step.
void tune_mode(Context& c, common::RowList& rows) {
  const Version* owner = nullptr;  // the version whose kernel the shapes are (v8)
  for (const auto& v : versions())
    if (v.gpu == accel_multi_body) owner = &v;
  if (!owner)
    throw std::logic_error("nbody registry: no version runs accel_multi_body, whose shapes --mode tune times");
  const Version& v8 = *owner;
  std::vector<long long> sizes(c.opt.sizes.begin(), c.opt.sizes.end());
  if (sizes.empty()) sizes = c.opt.quick ? std::vector<long long>{1 << 12} : std::vector<long long>{1 << 16, 1 << 18};
  for (long long n : sizes) common::check_fits_in_memory("--n " + std::to_string(n), 160.0 * n, 96.0 * n);
  for (long long n : sizes) {
    const Bodies initial = make_plummer(n, c.opt.seed + n);
    Params one = c.params;
    one.steps = 1;
    one.integrator = Integrator::SymplecticEuler;
    std::vector<KernelVariant> shapes;
    try {
      shapes = multi_body_variants();
    } catch (const common::NotImplemented& e) {  // a handout's stub: one row says so
      ResultRow r = base_row(c, v8, n, "tune", "shape=-");
      r.verdict = common::not_implemented_verdict(e);
      rows.push_back(r);
    }
    for (const auto& k : shapes) {
      ResultRow r = base_row(c, v8, n, "tune", "shape=" + k.name);
      if (!c.gpu) {
        r.verdict = common::no_gpu_verdict();
        rows.push_back(r);
        continue;
      }
      Version shaped = v8;
      shaped.gpu = k.launch;
      common::run_guarded(r, true, [&] {
        r.verdict = check_forces(c, shaped, initial);
        if (!common::is_pass(r)) return;
        DeviceSystem sys;
        sys.upload(initial, nullptr);
        Bodies state = initial;
        std::mt19937_64 rng(std::random_device{}());
        const common::FreshInputs fresh = fresh_steps(c, sys, state, rng, nullptr);
        r.stats = common::bench_gpu([&](cudaStream_t st) { gpu_simulate(sys, one, k.launch, st); }, nullptr, c.bench,
                                    nullptr, c.opt.fresh_inputs ? &fresh : nullptr);
        fill_rate(c, r, double(n) * double(n));
        r.pct_of_ceiling = 100.0 * r.metric * 1e9 / c.issue_ceiling_ips;
        r.ceiling = "issue_ceiling";
      });
      rows.push_back(r);
    }
  }
}

void drift_mode(Context& c, common::RowList& rows) {
  const Version& best = mode_version("drift");
  const long long n = c.opt.quick ? 1024 : 4096;
  const int total = c.opt.quick ? 100 : 1000, every = c.opt.quick ? 20 : 50;
  const Bodies initial = make_plummer(n, c.opt.seed);
  const double e0 = total_energy(initial, c.params.G, c.params.eps);
  for (Integrator integ : {Integrator::ExplicitEuler, Integrator::SymplecticEuler, Integrator::Leapfrog}) {
    const std::string tag = std::string("integrator=") + integrator_name(integ);
    if (!c.gpu) {
      ResultRow r = base_row(c, best, n, "drift", tag);
      r.verdict = common::no_gpu_verdict();
      rows.push_back(r);
      continue;
    }
    Params p = c.params;
    p.integrator = integ;
    p.steps = every;
    ResultRow failed = base_row(c, best, n, "drift", tag);
    const bool done = common::run_guarded(failed, true, [&] {
      DeviceSystem sys;
      Bodies b = initial;
      sys.upload(b, nullptr);
      for (int step = every; step <= total; step += every) {
        gpu_simulate(sys, p, best.gpu, nullptr);
        sys.download(b, nullptr);
        ResultRow r = base_row(c, best, n, "drift", tag + " step=" + std::to_string(step));
        const double drift = std::fabs((total_energy(b, c.params.G, c.params.eps) - e0) / e0);
        r.metric = drift;
        r.metric_unit = "|dE/E0|";
        r.verdict = common::Verdict::pass_if(std::isfinite(drift), "energy not finite");
        rows.push_back(r);
      }
    });
    if (!done) rows.push_back(failed);
  }
}

int run(const common::CliOptions& opt) {
  Context c;
  c.opt = opt;
  if (c.opt.list) return common::list_versions(versions(), c.opt.csv);
  if (!c.opt.input.empty()) throw common::UsageError("nbody reads snapshot directories: use --batch-dir DIR");
  for (const Version* v : common::select_versions(versions(), c.opt.versions))
    if (!c.opt.versions.empty()) c.selected.push_back(v->name);
  for (long long n : c.opt.sizes)
    if (n < 1 || n > (std::int64_t{1} << 31) - 1)
      throw common::UsageError("--n: " + std::to_string(n) + " bodies is out of range (allowed: 1 to 2^31-1)");
  try {
    c.params.integrator = parse_integrator(c.opt.extra["integrator"]);
    c.params.eps = c.opt.extra_double("eps", 0, 1e30);
    c.params.dt = c.opt.extra_double("dt", 1e-30, 1e30);
  } catch (const std::invalid_argument& e) {
    throw common::UsageError(e.what());
  }
  if (!(c.params.eps > 0)) throw common::UsageError("--eps must be > 0");
  if (!(c.params.dt > 0)) throw common::UsageError("--dt must be > 0");
  std::vector<std::string> modes = common::split(c.opt.extra["mode"], ',');
  if (std::find(modes.begin(), modes.end(), "all") != modes.end())
    modes = {"step", "batch", "table", "scaling", "drift"};
  for (const auto& m : modes)
    if (m != "step" && m != "batch" && m != "table" && m != "scaling" && m != "drift" && m != "tune")
      throw common::UsageError("--mode: unknown mode '" + m + "' (step, batch, table, scaling, drift, tune, all)");
  if (!c.selected.empty()) {
    // --version picks the modes that measure a selected version; a mode asked for by name must
    // measure one
    auto measures_selected = [&](const std::string& m) {
      if (m != "step" && m != "table") return is_selected(c, mode_version(m));
      return std::any_of(versions().begin(), versions().end(),
                         [&](const Version& v) { return v.mode == Mode::Step && is_selected(c, v); });
    };
    std::vector<std::string> kept;
    for (const auto& m : modes) {
      if (measures_selected(m))
        kept.push_back(m);
      else if (c.opt.was_given("mode") && c.opt.extra["mode"] != "all")
        throw common::UsageError(
            "--mode " + m + " measures " +
            (m == "step" || m == "table" ? std::string("the per-step versions") : mode_version(m).name) +
            ", which --version leaves out");
    }
    if (kept.empty()) throw common::UsageError("--version: no mode of this run measures the versions given");
    modes = kept;
  }
  check_flags_used(c.opt, modes);
  if (std::find(modes.begin(), modes.end(), "batch") != modes.end())  // outputs checked before the run
    for (const char* d : {"results", "results/scratch", kBatchOutputDir}) common::make_output_dir(d, "batch");
  if (std::find(modes.begin(), modes.end(), "table") != modes.end())
    for (const char* d : {"results", "results/scratch", kTableOutputDir}) common::make_output_dir(d, "table");

  static_cast<common::Environment&>(c) = common::detect_environment();
  // the issue ceiling of the best kernel: one instruction per FP32 lane per clock over its
  // measured instructions per interaction
  const double best_ipi = best_version().instructions_per_interaction;
  if (c.gpu) c.issue_ceiling_ips = double(c.device.sm_count) * 128.0 * c.device.sm_clock_khz * 1e3 / best_ipi;
  if (c.opt.quick) {
    c.bench.max_seconds = 0.1;
    c.bench.max_samples = 10;
  }
  if (c.opt.reps > 0) c.bench.min_samples = c.bench.max_samples = c.opt.reps;
  if (c.opt.warmup >= 0) c.bench.warmup = c.opt.warmup;
  std::cout << "nbody: G = " << c.params.G << ", eps = " << c.params.eps << ", dt = " << c.params.dt << ", seed "
            << c.opt.seed << " (Plummer spheres)\n";
  if (c.gpu) {
    std::cout << "device: " << common::describe(c.device) << "\nmeasured FP32 FMA peak " << c.ceilings.fma_gflops
              << " GFLOP/s = " << c.ceilings.fma_gflops / kFlopsPerInteraction
              << " Ginter/s at 20 FLOP/interaction; issue ceiling " << c.issue_ceiling_ips / 1e9 << " Ginter/s ("
              << best_ipi << " instructions per interaction at " << c.device.sm_clock_khz / 1000 << " MHz)\n\n";
  } else {
    std::cout << "device: " << common::gpu_unavailable_reason()
              << ": CPU versions run, GPU versions are listed as skipped\n\n";
  }
  common::RowList rows;
  rows.push_back(common::meta_row("nbody", c));
  rows.back()
      .add_metric("G", c.params.G, "")
      .add_metric("eps", c.params.eps, "")
      .add_metric("dt", c.params.dt, "")
      .add_metric("flops_per_interaction", kFlopsPerInteraction, "FLOP")
      .add_metric("instructions_per_interaction", best_ipi, "");
  rows.back().params = "seed=" + std::to_string(c.opt.seed);  // exact: a 64-bit seed is not a double
  if (c.gpu) rows.back().add_metric("issue_ceiling", c.issue_ceiling_ips / 1e9, "Ginter/s");
  for (const auto& m : modes) {
    common::NvtxRange range(m.c_str());
    if (m == "step") step_mode(c, rows);
    if (m == "batch") batch_mode(c, rows);
    if (m == "table") table_mode(c, rows);
    if (m == "scaling") scaling_mode(c, rows);
    if (m == "drift") drift_mode(c, rows);
    if (m == "tune") tune_mode(c, rows);
  }
  std::vector<ResultRow> shown;
  for (const auto& r : rows)
    if (r.kind != "batch_file" && r.kind != "drift" && r.kind != "table_file") shown.push_back(r);
  common::print_table(std::cout, shown);
  std::vector<ResultRow> drift_last;
  for (const auto& r : rows)
    if (r.kind == "drift" && r.params.find("step=") != std::string::npos &&
        r.params.substr(r.params.find("step=") + 5) == std::to_string(c.opt.quick ? 100 : 1000))
      drift_last.push_back(r);
  if (!drift_last.empty()) {
    std::cout << "\nenergy drift |dE/E0| after " << (c.opt.quick ? 100 : 1000) << " steps (dt " << c.params.dt
              << "):\n";
    for (const auto& r : drift_last) std::cout << "  " << r.params << ": " << r.metric << "\n";
  }
  return common::finish_run(std::cout, "nbody", rows, c.opt.csv);
}

}  // namespace

int main(int argc, char** argv) {
  common::DriverSpec spec{"nbody", kSummary, kExtraFlags, {"cold"}};
  // --profile: the per-step versions on one step of 2^16 bodies (a kernel of milliseconds); the
  // streamed batch and the multi-GPU version in the modes that run them, at small sizes
  spec.profile = common::profile_mode<Version>("nbody", versions(), [](const Version& v) -> std::vector<std::string> {
    if (v.mode == Mode::Batch) return {"--mode", "batch", "--files", "2", "--batch-n", "16384", "--steps", "2"};
    if (v.mode == Mode::MultiGpu) return {"--mode", "scaling", "--scaling-n", "2^16"};
    return {"--mode", "step", "--n", "65536", "--reps", "1"};
  });
  return common::driver_main(argc, argv, spec, run);
}
