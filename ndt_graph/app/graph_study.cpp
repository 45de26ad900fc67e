// ndt_graph --graph-study: what the CUDA-graph plan is about, measured (the README's "The
// CUDA-graph plan, measured"). Four parts, each its kinds of row:
//   1. unroll, unroll_baseline   the evaluations per graph launch swept (1 to 16), next to the
//                                host-synced version the plan's 1.4x claim is measured against;
//   2. graph_build, graph_update v4's graph by stream capture and by the node API, then changed
//                                for a scan of another size three ways, each timed on the host;
//   3. kernel_split, limit,      where an evaluation's time goes per GPU version (evaluation,
//      cost_model                reduction, solve, bookkeeping, outside the kernels), and the
//                                fastest version's parts next to their limits on this GPU;
//   4. coop, coop_case           how many points one cooperative grid covers, here (measured) and
//                                on the plan's GPUs (computed), and the plan's 326,867-point cloud.
// Every timed configuration is checked against the CPU reference first.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>

#include "common/nvtx.hpp"
#include "common/progress.hpp"
#include "driver.hpp"
#include "ndt_graph/graph_study.hpp"
#include "ndt_graph/registry_detail.hpp"

namespace ndt::driver {
namespace {

double median_or_nan(const std::vector<double>& samples) {
  return samples.empty() ? common::kNoValue : common::summarize(samples).median_ms;
}

// The case a single-case part runs on: room_tutorial (the plan's and the targets' case) where its
// data is at hand, else the first case.
Case& study_case(Context& x) {
  for (auto& c : x.cases)
    if (c.name == "room_tutorial") return c;
  return x.cases.front();
}

// Timing of a graph API call (tens to hundreds of microseconds on the host): many samples.
common::BenchOptions graph_api_bench(const Context& x) {
  common::BenchOptions b;
  b.warmup = 3;
  b.min_samples = 50;
  b.max_samples = 2000;
  b.max_seconds = x.opt.quick ? 0.1 : 0.5;
  if (x.opt.reps > 0) b.min_samples = b.max_samples = x.opt.reps;
  return b;
}

// A study row of version v on case c (params "case=NAME" and `more`), of `kind`.
ResultRow case_row(const Context& x, const Case& c, const Version& v, const std::string& kind,
                   const std::string& more = "") {
  return common::make_row("ndt_graph", v.name, v.idea, static_cast<std::int64_t>(c.source.size()),
                          "case=" + c.name + more, x.env.device_label, common::role_name(v.role), kind);
}

// Prepares `runner` for case c as version v gets it, runs it once and checks the result (into
// `res`): the row's verdict, and whether it passed (a version that fails its check is not timed).
bool run_checked(const Case& c, const Version& v, Runner& runner, AlignResult& res, ResultRow& r) {
  const Problem p = problem_for(c, v);
  runner.prepare(p);
  runner.run();
  res = runner.result();
  r.verdict = check_version(c, v, p, res, r);
  return r.verdict.ok();
}

// 1. One row of the unroll sweep: version v with `unrolled` evaluations per graph launch (0: v as it
// is, the host-synced baseline of the plan's claim), checked, timed; its launches counted.
// `baseline_ms` and `first_ms` (the count-1 graph of the same version): the speed-ups, where timed.
ResultRow unroll_row(Context& x, const Case& c, const Version& v, int unrolled, double baseline_ms, double first_ms) {
  const bool baseline = unrolled == 0;
  ResultRow r = case_row(x, c, v, baseline ? "unroll_baseline" : "unroll",
                         baseline ? std::string() : " unroll=" + std::to_string(unrolled));
  common::run_guarded(
      r, true,
      [&] {
        const std::unique_ptr<Runner> runner = baseline ? v.make() : v.make_unrolled(unrolled);
        AlignResult res;
        if (!run_checked(c, v, *runner, res, r)) return;
        const common::Verdict repeat = time_version(x, v, *runner, res, r);
        r.predicted_ms = common::kNoValue;  // the registry's model is of the version's own count
        const int e = std::max(1, res.evaluations);
        const double kernel_us = r.metric_named("kernel_per_iteration") * std::max(1, res.iterations);
        r.add_metric("kernel_per_evaluation", kernel_us / e, "us")
            .add_metric("other_per_evaluation", (1e3 * r.stats.median_ms - kernel_us) / e, "us");
        const UnrollCount u = baseline ? UnrollCount{0, e, 0} : unroll_count(e, unrolled);
        r.add_metric("graph_launches", u.graphs, "")
            .add_metric("evaluations_launched", u.launched, "")
            .add_metric("noop_evaluations", u.noop, "")
            .add_metric("host_syncs", baseline ? e : u.graphs, "");  // in the loop; the final wait not counted
        if (std::isfinite(baseline_ms)) r.add_metric("x_baseline", baseline_ms / r.stats.median_ms, "");
        if (std::isfinite(first_ms)) r.add_metric("x_unroll1", first_ms / r.stats.median_ms, "");
        if (v.claimed_speedup > 0) r.add_metric("claimed_speedup", v.claimed_speedup, "");
        r.verdict = repeat;
      },
      v.needs);
  x.any_fail = x.any_fail || common::is_fail(r);
  std::cout << "  " << v.name << (baseline ? std::string(" (baseline)") : " x" + std::to_string(unrolled)) << ": "
            << (r.stats.samples ? fmt(r.stats.median_ms, 3) + " ms" : std::string("not timed")) << "  " << r.verdict
            << "\n";
  return r;
}

// 1. The evaluations one graph launch unrolls, swept for every version that unrolls them, on every
// case (the study's case under --quick), next to the version the plan's claim is measured against.
void unroll_rows(Context& x, common::RowList& rows) {
  std::vector<const Version*> graphs;
  const Version* baseline = nullptr;
  for (const auto& v : versions())
    if (v.make_unrolled) {
      graphs.push_back(&v);
      if (!baseline && v.claimed_speedup > 0) baseline = common::find_version(versions(), v.claimed_over);
    }
  const std::vector<int> counts =
      x.opt.quick ? std::vector<int>{1, kGraphBatchUnrolled} : std::vector<int>{1, 2, 4, 8, 16};
  std::vector<Case*> cases;
  if (x.opt.quick)
    cases.push_back(&study_case(x));
  else
    for (auto& c : x.cases) cases.push_back(&c);
  common::Progress progress(static_cast<int>(cases.size() * (1 + graphs.size() * counts.size())),
                            "graph study: evaluations per graph launch");
  for (Case* c : cases) {
    std::cout << "\n-- evaluations per graph launch, " << c->name << " (" << c->source.size() << " points)\n";
    double baseline_ms = common::kNoValue;
    if (baseline) {
      const ResultRow r = unroll_row(x, *c, *baseline, 0, common::kNoValue, common::kNoValue);
      if (r.verdict.ok()) baseline_ms = r.stats.median_ms;
      rows.push_back(r);
      progress.step(c->name + " " + baseline->name);
    }
    for (const Version* v : graphs) {
      double first_ms = common::kNoValue;
      for (int k : counts) {
        const ResultRow r = unroll_row(x, *c, *v, k, baseline_ms, first_ms);
        if (k == counts.front() && r.verdict.ok()) first_ms = r.stats.median_ms;
        rows.push_back(r);
        progress.step(c->name + " " + v->name + " x" + std::to_string(k));
      }
    }
  }
}

// 2. v4's graph built by stream capture and by the explicit node API, then changed for a scan of
// another size (the case's source thinned to every other point: another evaluation grid, and its
// own device buffers) three ways. Each way is checked before it is timed: the graph it leaves
// aligns each scan as the CPU reference does. Timed on the host over many samples.
void graph_build_rows(Context& x, const Case& c, common::RowList& rows) {
  const Version* v = nullptr;
  for (const auto& e : versions())
    if (e.make_unrolled && !v) v = &e;
  if (!v || c.source.size() < 2) return;  // (a command-line case of one point has no thinner scan)
  if (!graph_builds_available()) {        // a handout: the study's own v4 graph is the exercise's solution
    ResultRow r = common::make_row("ndt_graph", v->name, "the graph built and changed for another scan",
                                   static_cast<std::int64_t>(c.source.size()), "case=" + c.name, x.env.device_label,
                                   common::role_name(v->role), "graph_build");
    r.verdict = common::Verdict::skip(kGraphBuildsMissing);
    x.record(rows, r);
    std::cout << "\n-- " << v->name << "'s graph: skipped: " << kGraphBuildsMissing << "\n";
    return;
  }
  std::cout << "\n-- " << v->name << "'s graph (" << kGraphBatchUnrolled << " evaluations): built, instantiated, "
            << "changed for another scan, " << c.name << "\n";
  const common::PointCloud thinned = evenly_spaced(c.source, c.source.size() / 2);
  const AlignResult thinned_ref = align_cpu(c.map, thinned, c.params, c.guess);
  const Problem whole = problem_for(c, *v);
  Problem other = whole;
  other.source = &thinned;
  // What a graph captured for each scan from scratch gives it. A graph built another way or changed
  // for the scan must give exactly that (the device sums are deterministic), not merely a pose near
  // the reference: a graph still reading the other scan's points would land near it too (the
  // thinned scan converges close to the whole one), with other iterations, evaluations or pairs.
  std::optional<AlignResult> fresh_whole, fresh_other;
  const auto fresh = [&](const Problem& p) {
    GraphBuilds g(kGraphBatchUnrolled);
    g.load(p);
    g.capture();
    g.instantiate();
    return g.run();
  };
  // the graph's alignment of the scan loaded last, against that scan's reference and fresh graph
  const auto check = [&](GraphBuilds& g, const Problem& p) {
    const bool is_whole = p.source == whole.source;
    const AlignResult got = g.run();
    common::Verdict v =
        within_tolerance(got, is_whole ? c.reference : thinned_ref,
                         is_whole ? "the CPU reference" : "the CPU reference on the thinned scan", false);
    if (!v.ok()) return v;
    std::optional<AlignResult>& own = is_whole ? fresh_whole : fresh_other;
    if (!own) own = fresh(p);
    if (got.iterations != own->iterations || got.evaluations != own->evaluations || got.pairs != own->pairs ||
        std::memcmp(got.T, own->T, sizeof got.T) != 0)
      return common::Verdict::fail(std::string("not the alignment a graph captured for the ") +
                                   (is_whole ? "whole" : "thinned") + " scan gives (" + std::to_string(got.iterations) +
                                   " vs " + std::to_string(own->iterations) + " iterations, " + fmt(got.pairs, 0) +
                                   " vs " + fmt(own->pairs, 0) + " pairs)");
    return v;
  };
  const common::BenchOptions api = graph_api_bench(x);
  const std::string base = "case=" + c.name;
  const std::int64_t n = static_cast<std::int64_t>(c.source.size());
  for (const bool node_api : {false, true}) {
    ResultRow r = common::make_row(
        "ndt_graph", v->name,
        node_api ? "the graph node by node (cudaGraphAddKernelNode, cudaGraphAddMemcpyNode1D), then instantiated"
                 : "the graph by stream capture of its launches, then instantiated",
        n, base + " method=" + (node_api ? "explicit_nodes" : "stream_capture"), x.env.device_label,
        common::role_name(v->role), "graph_build");
    common::run_guarded(r, true, [&] {
      GraphBuilds g(kGraphBatchUnrolled);
      g.load(whole);
      const auto build = [&] { return node_api ? g.build_explicit() : g.capture(); };
      build();
      g.instantiate();
      r.verdict = check(g, whole);
      if (!r.verdict.ok()) return;
      std::vector<double> built, instantiated;
      r.stats = common::bench_loop(
          [&](bool recording) {
            const double b = build(), i = g.instantiate();
            if (recording) {
              built.push_back(b);
              instantiated.push_back(i);
            }
            return b + i;
          },
          api);
      r.metric = 1e3 * r.stats.median_ms;
      r.metric_unit = "us";
      r.add_metric("build_us", 1e3 * median_or_nan(built), "us")
          .add_metric("instantiate_us", 1e3 * median_or_nan(instantiated), "us")
          .add_metric("nodes", g.nodes(), "")
          .add_metric("blocks", g.blocks(), "");
    });
    x.record(rows, r);
    std::cout << "  " << (node_api ? "explicit nodes" : "stream capture") << " + instantiate: " << fmt(r.metric, 1)
              << " us  " << r.verdict << "\n";
  }
  // The ways to point the live graph at the other scan: each starts from a graph of the whole
  // scan, built its way.
  struct Way {
    const char* name;
    const char* idea;
    bool node_api;
    std::function<double(GraphBuilds&)> change;
  };
  const std::vector<Way> ways = {
      {"recapture_instantiate", "a new capture, instantiated in place of the live graph", false,
       [](GraphBuilds& g) { return g.capture() + g.instantiate(); }},
      {"recapture_exec_update", "a new capture, its parameters copied into the live graph (cudaGraphExecUpdate)", false,
       [](GraphBuilds& g) { return g.capture() + g.update_from_staged(); }},
      {"exec_node_set_params",
       "each node's new parameters set in the live graph (cudaGraphExecKernelNodeSetParams, "
       "cudaGraphExecMemcpyNodeSetParams1D)",
       true, [](GraphBuilds& g) { return g.set_node_params(); }},
  };
  for (const Way& w : ways) {
    ResultRow r = common::make_row("ndt_graph", v->name, w.idea, n,
                                   base + " method=" + w.name + " points=" + std::to_string(c.source.size()) + "," +
                                       std::to_string(thinned.size()),
                                   x.env.device_label, common::role_name(v->role), "graph_update");
    common::run_guarded(r, true, [&] {
      GraphBuilds g(kGraphBatchUnrolled);
      g.load(whole);
      if (w.node_api)
        g.build_explicit();
      else
        g.capture();
      g.instantiate();
      const int blocks = g.blocks();
      g.load(other);
      w.change(g);
      r.verdict = check(g, other);
      const int other_blocks = g.blocks();
      g.load(whole);
      w.change(g);
      if (r.verdict.ok()) r.verdict = check(g, whole);
      if (!r.verdict.ok()) return;
      bool to_other = true;
      r.stats = common::bench_loop(
          [&](bool) {
            g.load(to_other ? other : whole);
            to_other = !to_other;
            return w.change(g);
          },
          api);
      r.metric = 1e3 * r.stats.median_ms;
      r.metric_unit = "us";
      r.add_metric("blocks", blocks, "").add_metric("blocks_other", other_blocks, "");
      r.add_metric("points_other", static_cast<double>(thinned.size()), "");
    });
    x.record(rows, r);
    std::cout << "  " << w.name << ": " << fmt(r.metric, 1) << " us  " << r.verdict << "\n";
  }
}

// 3. Where an evaluation's time goes, per GPU version, as one version's row.
struct SplitSummary {
  const Version* version = nullptr;
  double ms = 0;  // per alignment
  int iterations = 0, evaluations = 0;
  double eval_us = 0, reduce_us = 0, solve_us = 0, bookkeeping_us = 0, outside_us = 0;  // per evaluation
};

// 3. Every single-alignment GPU version on the study's case, checked, then timed with the kernels'
// device clock split into evaluation, reduction, solve and bookkeeping (medians over the timed
// runs), and the rest of each evaluation's time outside the kernels. The versions with the whole
// split come back for the cost model.
std::vector<SplitSummary> kernel_split_rows(Context& x, const Case& c, common::RowList& rows) {
  std::cout << "\n-- where an evaluation's time goes, " << c.name << "\n";
  std::vector<SplitSummary> full;
  for (const auto& v : versions()) {
    if (!v.needs_gpu || !v.make || v.batched) continue;
    ResultRow r = case_row(x, c, v, "kernel_split");
    SplitSummary s;
    common::run_guarded(
        r, true,
        [&] {
          const std::unique_ptr<Runner> runner = v.make();
          AlignResult res;
          if (!run_checked(c, v, *runner, res, r)) return;
          std::vector<double> kernel, eval, reduce, solve, bookkeeping;
          const auto keep = [](std::vector<double>& to, double ms) {
            if (std::isfinite(ms)) to.push_back(ms);
          };
          r.stats = common::bench_loop(
              [&](bool recording) {
                const common::WallTimer t;
                runner->run();
                const double ms = t.elapsed_ms();
                if (recording) {
                  const KernelSplit k = runner->kernel_split();
                  keep(kernel, runner->kernel_ms());
                  keep(eval, k.eval_ms);
                  keep(reduce, k.reduce_ms);
                  keep(solve, k.solve_ms);
                  keep(bookkeeping, k.bookkeeping_ms);
                }
                return ms;
              },
              x.bench);
          const double e = std::max(1, res.evaluations);
          const auto per_eval = [&](const std::vector<double>& ms) { return 1e3 * median_or_nan(ms) / e; };
          s = {&v,
               r.stats.median_ms,
               res.iterations,
               res.evaluations,
               per_eval(eval),
               per_eval(reduce),
               per_eval(solve),
               per_eval(bookkeeping),
               (1e3 * r.stats.median_ms - 1e3 * median_or_nan(kernel)) / e};
          r.metric = 1e3 * r.stats.median_ms / e;
          r.metric_unit = "us/evaluation";
          r.add_metric("iterations", res.iterations, "").add_metric("evaluations", res.evaluations, "");
          r.add_metric("kernel_us", per_eval(kernel), "us").add_metric("outside_us", s.outside_us, "us");
          r.add_metric("eval_us", s.eval_us, "us").add_metric("reduce_us", s.reduce_us, "us");
          r.add_metric("solve_us", s.solve_us, "us").add_metric("bookkeeping_us", s.bookkeeping_us, "us");
          // No device clock at all: the version whose solve runs on the host (v1). Its solve, replayed
          // on the host with its parameters; the rest of its time is its kernels, copies and syncs.
          if (kernel.empty())
            r.add_metric("host_solve_us", host_solve_us(c.map, c.source, v.params_for(c.params), c.guess, 5), "us");
        },
        v.needs);
    x.record(rows, r);
    if (r.verdict.ok() && std::isfinite(s.eval_us)) full.push_back(s);
    std::cout << "  " << v.name << ": " << fmt(r.metric, 2) << " us per evaluation (eval " << fmt(s.eval_us, 2)
              << ", reduce " << fmt(s.reduce_us, 2) << ", solve " << fmt(s.solve_us, 2) << ", bookkeeping "
              << fmt(s.bookkeeping_us, 2) << ", outside " << fmt(s.outside_us, 2) << ")  " << r.verdict << "\n";
  }
  return full;
}

// 3. The limits the cost model compares each part with, measured on this GPU: a dependent L2 load,
// the bandwidth from L2 into one SM (one block reading the step's partials), one thread's
// Newton-step arithmetic, and a kernel node of a graph with nothing to do.
struct Limits {
  double load_ns = 0, one_sm_gbs = 0, newton_us = 0, node_us = 0;
  bool complete = true;  // every probe measured (a failed one is its own FAIL row)
};

Limits measure_limits(Context& x, const Case& c, common::RowList& rows) {
  Limits l;
  // a buffer a quarter of L2 (the hash table and the partials live there), 256 KB to 4 MB
  const std::size_t bytes = std::clamp<std::size_t>(x.env.device.l2_bytes / 4, 256 << 10, 4 << 20);
  double g[6];
  for (int i = 0; i < 6; ++i) {  // the gradient of a step of 1 mm / 1 mrad along every axis
    g[i] = 0;
    for (int j = 0; j < 6; ++j) g[i] -= c.reference.hessian[i][j] * 1e-3;
  }
  const struct {
    const char* name;
    const char* idea;
    std::function<double()> measure;
    double* into;
    const char* unit;
    std::string params;
  } probes[] = {
      {"dependent_l2_load", "one thread chasing pointers through a random cycle of 128-byte lines (ld.global.cg)",
       [&] { return dependent_load_ns(bytes); }, &l.load_ns, "ns/load", "bytes=" + std::to_string(bytes)},
      {"one_block_l2_read",
       "one block of the step's threads reading a buffer resident in L2, 64 loads in flight per thread (the "
       "bandwidth from L2 into one SM)",
       [&] { return one_block_read_gbs(bytes); }, &l.one_sm_gbs, "GB/s", "bytes=" + std::to_string(bytes)},
      {"newton_step_one_thread",
       "one thread: the pivoted 6x6 solve of the reference's last Hessian and the float transform of the pose it "
       "leads to, each repetition waiting for the last",
       [&] { return one_thread_solve_us(c.reference.hessian, g, c.reference.pose); }, &l.newton_us, "us",
       "case=" + c.name},
      {"graph_kernel_node", "an empty kernel node of an unrolled graph (the launch bench's graph_x8, per kernel)",
       [&] {
         const auto launch = launch_strategy_benchmark(x.opt.quick ? 256 : 2048, 7);
         const auto unrolled = std::find_if(launch.begin(), launch.end(),
                                            [](const LaunchStrategyResult& s) { return s.name == "graph_x8"; });
         if (unrolled == launch.end()) throw std::runtime_error("the launch bench ran no graph_x8 strategy");
         return unrolled->us_per_iteration / unrolled->kernels_per_iteration;
       },
       &l.node_us, "us", ""},
  };
  for (const auto& probe : probes) {
    ResultRow r =
        common::make_row("ndt_graph", probe.name, probe.idea, 1, probe.params, x.env.device_label, "", "limit");
    const bool measured = common::run_guarded(r, true, [&] {
      r.metric = *probe.into = probe.measure();
      r.metric_unit = probe.unit;
      r.verdict = common::Verdict::pass();
    });
    l.complete = l.complete && measured;
    x.record(rows, r);
    std::cout << "  limit " << probe.name << ": " << fmt(r.metric, 3) << " " << probe.unit << "  " << r.verdict << "\n";
  }
  return l;
}

// 3. The cost model of one evaluation of the fastest version with the whole split: each part, per
// evaluation, next to its limit on this GPU; and the alignment, measured and at the limits.
void cost_model_rows(Context& x, const Case& c, const std::vector<SplitSummary>& split, common::RowList& rows) {
  if (split.empty()) return;
  const SplitSummary& best =
      *std::min_element(split.begin(), split.end(), [](const auto& a, const auto& b) { return a.ms < b.ms; });
  std::cout << "\n-- the cost model of " << best.version->name << "'s evaluation, " << c.name << "\n";
  const Limits lim = measure_limits(x, c, rows);
  const common::Verdict verdict =
      lim.complete ? common::Verdict::pass() : common::Verdict::skip("a limit was not measured (see the limit rows)");
  const EvalLayout l = eval_layout(static_cast<int>(c.source.size()), c.params.search);
  const int chunk_rounds = (l.chunks + l.blocks - 1) / l.blocks;
  const double n = static_cast<double>(c.source.size());
  // Bytes an evaluation must move: the points, one grid cell per probe, a voxel per (point, voxel)
  // pair at the final pose, the blocks' partial sums.
  const double bytes = n * 3 * sizeof(float) + n * l.cells_per_point * sizeof(GridCell) +
                       c.reference.pairs * sizeof(Voxel) + static_cast<double>(l.blocks) * kSums * sizeof(double);
  const double bytes_us = bytes / (x.env.ceilings.copy_gbs * 1e3);
  const double partial_bytes = static_cast<double>(l.blocks) * kSums * sizeof(double);
  const double partial_us = lim.one_sm_gbs > 0 ? partial_bytes / (lim.one_sm_gbs * 1e3) : 0.0;
  // A chunk's loads one after another: its points, then every round's grid cell at once, then the
  // pairs' voxels.
  constexpr int kDependentLoadsPerChunk = 3;
  const double probe_us = chunk_rounds * kDependentLoadsPerChunk * lim.load_ns / 1e3;
  const struct {
    const char* part;
    double measured_us, limit_us;
    std::string basis;
  } parts[] = {
      {"evaluation", best.eval_us, std::max(bytes_us, probe_us),
       "the larger of its bytes (" + fmt(bytes / 1e6, 2) + " MB at the copy ceiling, " + fmt(bytes_us, 2) +
           " us) and its loads that wait on one another (" + std::to_string(chunk_rounds * kDependentLoadsPerChunk) +
           " per block: a chunk's points, then its " + std::to_string(l.probe_rounds_per_chunk) +
           " rounds of grid cells together, then its voxels; one dependent L2 load each: " + fmt(probe_us, 2) + " us)"},
      {"reduction", best.reduce_us, std::max(l.partial_load_batches * lim.load_ns / 1e3, partial_us),
       "the larger of its rounds of loads (" + std::to_string(l.partial_load_batches) + " of the " +
           std::to_string(l.blocks) + " blocks' partials, one dependent L2 load each: " +
           fmt(l.partial_load_batches * lim.load_ns / 1e3, 2) + " us) and their bytes into the step's one SM (" +
           fmt(partial_bytes / 1e3, 1) + " KB at " + fmt(lim.one_sm_gbs, 1) + " GB/s: " + fmt(partial_us, 2) + " us)"},
      {"solve", best.solve_us, lim.newton_us,
       "one thread's Newton-step arithmetic (pivoted 6x6 solve + float transform)"},
      {"bookkeeping", best.bookkeeping_us, lim.load_ns / 1e3, "the solver state read once (one dependent L2 load)"},
      {"outside", best.outside_us, 2 * lim.node_us, "two kernel nodes of an unrolled graph with nothing to do"},
  };
  double measured = 0, limit = 0;
  for (const auto& part : parts) {
    ResultRow r = common::make_row("ndt_graph", best.version->name, part.basis, static_cast<std::int64_t>(n),
                                   "case=" + c.name + " part=" + part.part, x.env.device_label,
                                   common::role_name(best.version->role), "cost_model");
    r.metric = part.measured_us;
    r.metric_unit = "us/evaluation";
    r.add_metric("measured_us", part.measured_us, "us").add_metric("limit_us", part.limit_us, "us");
    r.verdict = verdict;
    x.record(rows, r);
    measured += part.measured_us;
    limit += part.limit_us;
    std::cout << "  " << part.part << ": " << fmt(part.measured_us, 2) << " us, limit " << fmt(part.limit_us, 2)
              << " us (" << part.basis << ")\n";
  }
  ResultRow r = common::make_row("ndt_graph", best.version->name,
                                 "one evaluation, and the alignment of " + std::to_string(best.evaluations) +
                                     " evaluations, measured and at the limits",
                                 static_cast<std::int64_t>(n), "case=" + c.name + " part=total", x.env.device_label,
                                 common::role_name(best.version->role), "cost_model");
  r.metric = measured;
  r.metric_unit = "us/evaluation";
  r.add_metric("measured_us", measured, "us").add_metric("limit_us", limit, "us");
  // one Newton iteration: the alignment's evaluations (a line search may take several) over its iterations
  const double per_iteration = static_cast<double>(best.evaluations) / std::max(1, best.iterations);
  r.add_metric("evaluations", best.evaluations, "").add_metric("iterations", best.iterations, "");
  r.add_metric("iteration_us", 1e3 * best.ms / std::max(1, best.iterations), "us")
      .add_metric("iteration_limit_us", limit * per_iteration, "us");
  r.add_metric("alignment_ms", best.ms, "ms").add_metric("alignment_limit_ms", limit * best.evaluations / 1e3, "ms");
  r.verdict = verdict;
  x.record(rows, r);
  std::cout << "  total: " << fmt(measured, 2) << " us per evaluation, limit " << fmt(limit, 2) << " us; alignment "
            << fmt(best.ms, 3) << " ms, at the limits " << fmt(limit * best.evaluations / 1e3, 3) << " ms\n";
}

// 4. How many blocks one cooperative grid may have, and the points they cover at one point per
// thread: this GPU measured (the runtime's occupancy query, which CUDA's calculator must
// reproduce from this GPU's limits), and computed for the published GPUs from their limits.
void cooperative_rows(Context& x, common::RowList& rows) {
  std::cout << "\n-- cooperative grids: co-resident blocks and the points they cover\n";
  const GpuLimits here = current_gpu_limits();
  const KernelResources eval = eval_kernel_resources();
  const int own = eval_kernel_block_threads();
  // `blocks` < 0: per_sm on every SM; a clustered grid (v9) gives its own count, which need not be
  // a whole number per SM (its clusters fill the GPCs, not the SMs).
  const auto row = [&](const GpuLimits& g, const std::string& kernel, const std::string& idea, int threads, int per_sm,
                       bool measured, const common::Verdict& verdict, long long blocks = -1) {
    const bool whole = blocks < 0;
    if (whole) blocks = static_cast<long long>(per_sm) * g.multiProcessorCount;
    ResultRow r = common::make_row(
        "ndt_graph", kernel, idea, blocks * threads,
        "gpu=" + g.name + " threads=" + std::to_string(threads) + " source=" + (measured ? "measured" : "computed"),
        x.env.device_label, "", "coop");
    r.metric = static_cast<double>(blocks * threads);
    r.metric_unit = "points";
    r.add_metric("sms", g.multiProcessorCount, "")
        .add_metric("blocks_per_sm", static_cast<double>(blocks) / g.multiProcessorCount, "");
    r.add_metric("coresident_blocks", static_cast<double>(blocks), "");
    r.verdict = verdict;
    x.record(rows, r);
    std::cout << "  " << g.name << ", " << kernel << ", " << threads << " threads: "
              << (whole ? std::to_string(per_sm) + " x " + std::to_string(g.multiProcessorCount) + " = " : "") << blocks
              << " blocks, " << blocks * threads << " points (" << (measured ? "measured" : "computed") << ")  "
              << r.verdict << "\n";
  };
  const auto eval_idea = [&](const Residency& res) {
    return "the evaluation kernel, " + std::to_string(eval.regs_per_thread) + " registers per thread and " +
           std::to_string(eval.static_smem) + " B of shared memory per block; limited by " + res.limited_by;
  };
  const int runtime = eval_kernel_blocks_per_sm_runtime();
  const Residency calc = resident_blocks(here, eval, own);
  row(here, "eval_kernel", eval_idea(calc), own, runtime, true,
      common::Verdict::pass_if(calc.blocks_per_sm == runtime,
                               "CUDA's occupancy calculator says " + std::to_string(calc.blocks_per_sm) +
                                   " blocks per SM from this GPU's limits, the runtime " + std::to_string(runtime)));
  for (const auto& v : versions())
    if (v.resident_blocks && v.make) {
      ResultRow r = common::make_row("ndt_graph", v.name, v.idea, 0, "gpu=" + here.name, x.env.device_label,
                                     common::role_name(v.role), "coop");
      int blocks = 0;  // a version this GPU cannot run is a skipped row
      if (common::run_guarded(r, true, [&] { blocks = v.resident_blocks(); }, v.needs))
        row(here, v.name, v.idea, own, 0, true, common::Verdict::pass(), blocks);
      else
        x.record(rows, r);
    }
  std::vector<GpuLimits> gpus = {here};
  for (const auto& g : published_gpu_limits()) gpus.push_back(g);
  for (const auto& g : gpus)
    for (int threads : {own, 256}) {
      if (&g == &gpus.front() && threads == own) continue;  // measured above
      const Residency res = resident_blocks(g, eval, threads);
      row(g, "eval_kernel", eval_idea(res), threads, res.blocks_per_sm, false, common::Verdict::pass());
    }
}

// 4. The plan's cloud: a simulated scan of 326,867 points (the plan's size), aligned by the
// cooperative version and by the graph versions, each checked against the CPU reference; the
// cooperative grid's coverage of it at one point per thread, and the rounds its blocks loop.
void large_cloud_rows(Context& x, common::RowList& rows) {
  constexpr std::size_t kPlanPoints = 326867;
  Case big = simulated_case("sim_street_326867", x.opt.seed, kStreetSensor, kStreetPerturb, kPlanPoints);
  big.params = x.base;
  build_case_map(big);
  std::cout << "  the CPU reference aligns " << big.source.size() << " points (seconds)\n";
  big.reference = align_cpu(big.map, big.source, big.params, big.guess);
  for (const auto& v : versions()) {
    if (!v.make || !(v.needs.cooperative || v.make_unrolled)) continue;
    ResultRow r = case_row(x, big, v, "coop_case");
    common::run_guarded(
        r, true,
        [&] {
          const std::unique_ptr<Runner> runner = v.make();
          AlignResult res;
          if (!run_checked(big, v, *runner, res, r)) return;
          r.verdict = time_version(x, v, *runner, res, r);
          if (v.resident_blocks) {
            const int resident = v.resident_blocks(), threads = eval_kernel_block_threads();
            const EvalLayout l = eval_layout(static_cast<int>(big.source.size()), big.params.search);
            const int grid = std::min(l.blocks, resident);
            r.add_metric("coresident_blocks", resident, "").add_metric("grid_blocks", grid, "");
            r.add_metric("points_one_per_thread", static_cast<double>(resident) * threads, "points");
            r.add_metric("fits_one_point_per_thread", static_cast<double>(resident) * threads >= big.source.size(), "");
            r.add_metric("chunk_rounds_per_block", (l.chunks + grid - 1) / grid, "");
          }
        },
        v.needs);
    x.record(rows, r);
    std::cout << "  " << v.name << ": "
              << (r.stats.samples ? fmt(r.stats.median_ms, 3) + " ms" : std::string("not timed")) << "  " << r.verdict
              << "\n";
  }
}

}  // namespace

// --graph-study: the four parts above, on the default cases (or the pair given) of this GPU.
int graph_study_mode(const common::CliOptions& o) {
  reject_flags_outside_graph_study(o);
  if (!common::has_cuda_device()) {
    const common::Environment env = common::detect_environment();
    common::RowList rows;
    rows.push_back(common::meta_row("ndt_graph", env));
    ResultRow r = common::make_row("ndt_graph", "graph_study", "the CUDA-graph plan, measured", 0, "", env.device_label,
                                   "", "graph_study");
    r.verdict = common::no_gpu_verdict();
    rows.push_back(r);
    return common::finish_run(std::cout, "ndt_graph", rows, o.csv);
  }
  Context x(o);
  set_up(x);
  if (!o.quick && o.reps == 0) x.bench.max_seconds = 0.5;  // many configurations: half a second each
  common::RowList rows;
  start_rows(x, rows);
  rows.back().add_metric("graph_batch_unrolled", kGraphBatchUnrolled, "");  // the registered versions' count
  for (auto& c : x.cases) {
    build_case_map(c);
    c.reference = align_cpu(c.map, c.source, c.params, c.guess);
    std::cout << "reference: " << c.reference.iterations << " iterations, " << c.reference.evaluations
              << " evaluations, " << c.reference.reason() << "\n";
  }
  Case& sc = study_case(x);
  {
    const common::NvtxRange range("graph study: evaluations per graph launch");
    unroll_rows(x, rows);
  }
  {
    const common::NvtxRange range("graph study: graph builds and updates");
    graph_build_rows(x, sc, rows);
  }
  {
    const common::NvtxRange range("graph study: kernel split and cost model");
    cost_model_rows(x, sc, kernel_split_rows(x, sc, rows), rows);
  }
  const common::NvtxRange range("graph study: cooperative grids");
  cooperative_rows(x, rows);
  if (o.quick)
    std::cout << "\n(--quick: the 326,867-point cloud is left out)\n";
  else
    large_cloud_rows(x, rows);
  if (x.any_fail) std::cout << "\nsome rows FAILED (see above)";
  std::cout << "\n";
  return common::finish_run(std::cout, "ndt_graph", rows, o.csv);
}

}  // namespace ndt::driver
