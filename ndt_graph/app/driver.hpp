// What the ndt_graph driver's two files share (main.cpp: the default run, --launch-bench and the
// helpers; graph_study.cpp: --graph-study): a case, the run's context, and the helpers both use to
// build cases, check results and time them.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "common/bench.hpp"
#include "common/cli.hpp"
#include "common/environment.hpp"
#include "common/results.hpp"
#include "ndt_graph/versions.hpp"

namespace ndt::driver {

using common::ResultRow;

struct Case {
  std::string name;
  std::string target_file, source_file;
  common::PointCloud target, source;  // filtered
  std::size_t target_raw = 0, source_raw = 0;
  NdtParams params;
  double guess[6] = {};
  bool have_truth = false;
  double truth[4][4] = {};  // ground truth (simulated pairs)
  bool have_pcl = false;
  PclRecord pcl{};        // PCL's recorded result (reference README)
  VoxelMap map;           // built once per case
  AlignResult reference;  // the CPU reference's result
};

// Everything a mode needs: the options, the machine, the timing policy, the cases and the outputs
// that are written whole at the end.
struct Context {
  const common::CliOptions& opt;
  common::Environment env;
  common::BenchOptions bench;
  NdtParams base;
  bool single = false;  // one pair from --target/--source instead of the default set
  std::vector<const Version*> chosen;
  std::vector<Case> cases;
  std::string images;
  std::ostringstream pose_out, trace_csv;
  double launch_us = common::kNoValue;
  bool any_fail = false;

  explicit Context(const common::CliOptions& o) : opt(o) {}
  bool selected(const Version& v) const { return std::find(chosen.begin(), chosen.end(), &v) != chosen.end(); }
  // Whether the CPU reference and the map builds are timed: in every run but one whose --version
  // leaves the reference out (a grader's run of one GPU version, a student's of theirs), where the
  // reference still aligns each case once, checked, as the versions' yardstick. Its timed runs were
  // most of such a run: each a whole CPU alignment on a moved map (--fresh-inputs), 1.5 s of the
  // 2.7 s a graded GPU version took on an H200.
  bool times_reference() const {
    return opt.versions.empty() ||
           std::any_of(chosen.begin(), chosen.end(), [](const Version* v) { return v->role == Role::reference; });
  }
  void record(common::RowList& rows, const ResultRow& r) {
    any_fail = any_fail || common::is_fail(r);
    rows.push_back(r);
  }
};

// sim_street: the source's sensor pose (x, y, yaw) and the guess's offset from the truth
constexpr double kStreetSensor[3] = {1.2, 0.3, 0.05}, kStreetPerturb[6] = {0.15, -0.1, 0.05, 0.01, -0.01, 0.03};

std::string fmt(double v, int prec = 3);
// `points` evenly spread points of `in` (which holds at least that many), in their order.
common::PointCloud evenly_spaced(const common::PointCloud& in, std::size_t points);
// A pair simulated from one seed at two sensor poses, the target VoxelGrid-filtered at 0.2 m. The
// source likewise, or with `source_points` > 0 unfiltered: a denser scan (more azimuth steps)
// thinned evenly to exactly that many points.
Case simulated_case(const std::string& name, std::uint64_t seed, const double (&sensor)[3], const double (&perturb)[6],
                    std::size_t source_points = 0);
void build_case_map(Case& c);  // a case's target map (printed with its inputs)
// The problem version `v` gets for case `c` (its own solver options on the case's parameters).
Problem problem_for(const Case& c, const Version& v);
// A result judged against `own` (the result it should have, named `own_name`): the library within
// PCL's tolerances of the reference, a version within the course's.
common::Verdict within_tolerance(const AlignResult& res, const AlignResult& own, const std::string& own_name,
                                 bool library);
// A version's result judged against the CPU reference (or, with its own line search, against the
// CPU running that line search); its distance from PCL's path (the reference) is reported too.
common::Verdict check_version(const Case& c, const Version& v, const Problem& p, const AlignResult& res, ResultRow& r);
// Times a checked runner and fills the row: per alignment, per iteration, the kernel's share and
// the launch-latency floor. With `fresh`, every run is on a moved problem and checked.
common::Verdict time_version(const Context& x, const Version& v, Runner& runner, const AlignResult& res, ResultRow& r,
                             const common::FreshInputs* fresh = nullptr);
void set_up(Context& x);  // flags, cases, timing policy, outputs: checked before anything runs
// The run's metadata record (the device, its ceilings, the alignment parameters) and its console header.
void start_rows(const Context& x, common::RowList& rows);

// --graph-study (graph_study.cpp)
int graph_study_mode(const common::CliOptions& o);

}  // namespace ndt::driver
