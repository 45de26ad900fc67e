// A profile of every GPU version (--profile, every driver): Nsight Compute's view of the version's own
// kernels on a small fixed case, one row per version, beside the timings.
//
// How: the driver runs itself again, one process per version, under `ncu` on the case the driver
// chose for it (profile_mode's case_of), with `--version NAME --reps 1` and $COURSE_CEILINGS set to
// the ceilings measured once here (the child launches no ceiling kernel). ncu keeps only the kernels
// inside the NVTX range the driver pushes with the version's name (`--nvtx-include "NAME/"`), takes
// each kernel of a CUDA graph on its own (`--graph-profiling node`), at most kProfileLaunches of
// them, at the card's own clocks (`--clock-control none`, as the benchmarks run), and writes a
// report that is then read back as raw CSV (`--import ... --csv --page raw`), so nothing the
// program prints can mix into it. ncu flushes the caches before each kernel it measures: DRAM
// traffic is that of a cold cache, where the timed runs may find their inputs in L2.
//
// What is collected (kept small: every metric group is another replay pass of every kernel):
// gpu__time_duration.sum, dram__bytes_read.sum and dram__bytes_write.sum,
// sm__warps_active.avg.pct_of_peak_sustained_active (achieved occupancy),
// sm__maximum_warps_per_active_cycle_pct (theoretical occupancy), launch__registers_per_thread,
// launch__shared_mem_per_block_static and _dynamic, sass__inst_executed_register_spilling, and the
// stall reasons smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio through ncu's
// WarpStateStats section, which holds the reasons the GPU at hand has (Hopper adds gmma): a
// reason named in --metrics that the GPU lacks would stop ncu on every older GPU.
//
// The row (kind "profile"; params "launches=<cap> args=<the case>"):
//   metric, metric_unit, pct_of_ceiling: the kernels' DRAM bytes (read + written) over their summed
//     time in GB/s, and that as a share of the measured copy bandwidth (ceiling "copy_bandwidth",
//     which counts read + written bytes too)
//   metrics: kernels[] (profiled), duration[ms] (their summed time), dram[MB],
//     achieved_occupancy[%] and theoretical_occupancy[%] (averages weighted by each kernel's time),
//     registers[reg/thread] (the most any kernel uses), spill_instructions[inst] (summed),
//     shared_memory[B] (the most a block asks for, static + dynamic), stall.<reason>[cycles/issue]
//     for the two largest stall reasons (time-weighted averages of cycles a warp waits per issued
//     instruction; "selected" and "not_selected" are not stalls), heaviest.<kernel>[%] (the longest
//     kernel, by its share of the time)
//   status: pass; skipped with the reason (no GPU, ncu not found, no permission to read the GPU's
//     counters, a version this GPU cannot run, no kernel inside its range); fail with the reason (the
//     profiled run failed or did not finish, ncu failed).
#pragma once
#include <functional>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include "common/cli.hpp"
#include "common/registry.hpp"
#include "common/results.hpp"

namespace common {

constexpr int kProfileLaunches = 40;            // kernels profiled per version (ncu --launch-count)
constexpr double kProfileTimeoutS = 300;        // one version's profiled run, killed after this
constexpr double kProfileImportTimeoutS = 120;  // reading its report back

// Said for every version when ncu cannot read the GPU's counters (ERR_NVGPUCTRPERM).
extern const char* const kNoCounterPermission;
// Said for every version when neither $COURSE_NCU nor PATH has ncu.
extern const char* const kNcuNotFound;

// One kernel of ncu's raw CSV; kNoValue where its cell is empty, "n/a" or the column is absent.
struct KernelProfile {
  std::string name;  // short: no namespace, template arguments or parameter list
  double duration_ns = kNoValue;
  double dram_bytes = kNoValue;             // read + written
  double achieved_occupancy = kNoValue;     // % of the SM's warp slots, while active
  double theoretical_occupancy = kNoValue;  // % the launch's shape allows
  double registers = kNoValue;              // per thread
  double spill_instructions = kNoValue;
  double shared_bytes = kNoValue;                      // per block, static + dynamic
  std::vector<std::pair<std::string, double>> stalls;  // reason -> cycles per issued instruction
};

struct NcuTable {
  std::vector<KernelProfile> kernels;
  int lines_left_out = 0;  // lines after the header that are no kernel's row (a program's own output)
};

// Parses `ncu --csv --page raw` output: the header row (its first cell "ID"), the units row, then
// a row per kernel, numbers with thousands separators ("361,440"), values scaled to base units by
// the units row (ns, bytes). Text before the header (the program's own output) and lines after it
// that are not a kernel's row are left out. Throws std::runtime_error saying what is missing: no
// header, no gpu__time_duration.sum column, a unit it cannot scale.
NcuTable parse_ncu_raw_csv(const std::string& text);

// "(anonymous namespace)::block_scan_kernel<256>(long, int *)" -> "block_scan_kernel"; only
// letters, digits and '_' are kept (the name goes into a metric's name).
std::string short_kernel_name(const std::string& demangled);

// Why ncu profiled nothing, read from its output: no permission to read the counters
// (kNoCounterPermission), a GPU it does not support; "" when neither.
std::string ncu_refusal(const std::string& output);

struct ProfileSummary {
  int kernels = 0;
  double duration_ms = 0;
  double dram_bytes = kNoValue;
  double achieved_occupancy = kNoValue, theoretical_occupancy = kNoValue;
  double registers = kNoValue, spill_instructions = kNoValue, shared_bytes = kNoValue;
  std::string heaviest;                                    // the kernel with the largest summed time
  double heaviest_share = kNoValue;                        // its % of the time
  std::vector<std::pair<std::string, double>> top_stalls;  // at most two, largest first
  // profiled as whole graph launches (--graph-profiling graph): the version's kernels run only
  // inside conditional (WHILE) graph nodes, which ncu does not profile node by node
  bool whole_graphs = false;
};

// The version's kernels as one: times summed, occupancies and stalls weighted by each kernel's
// time, the largest register count and block shared memory, spills summed. Kernels without a time
// weigh nothing. Metrics no kernel has stay kNoValue.
ProfileSummary summarize_profile(const std::vector<KernelProfile>& kernels);

// Puts a summary into a profile row (see the top of this file); copy_gbs: the measured copy
// bandwidth (0: no share of it).
void set_profile_metrics(ResultRow& r, const ProfileSummary& s, double copy_gbs);

// The console's table of profile rows (the others are left out).
void print_profile_table(std::ostream& os, const std::vector<ResultRow>& rows);

// One version's profiled run.
struct ProfileRun {
  std::string ncu;                // the ncu executable
  std::string program;            // the driver itself
  std::vector<std::string> args;  // the driver's profile case (without --version, --reps, --csv)
  std::string work_dir;           // where the report and the child's CSV and log go (created)
  std::string ceilings;           // $COURSE_CEILINGS of the child ("" leaves the environment's)
  double timeout_s = kProfileTimeoutS;
};

struct ProfileOutcome {
  Verdict verdict;
  ProfileSummary summary;      // when it passed
  bool no_permission = false;  // ncu cannot read the counters: the same for every later version
  bool no_kernel = false;      // ncu profiled nothing inside the version's range
};

// The ncu command line of one version (what profile_version runs).
// `graphs`: ncu's --graph-profiling, "node" (each kernel of a graph on its own) or "graph".
std::vector<std::string> ncu_command(const ProfileRun& run, const std::string& version, const std::string& report,
                                     const std::string& child_csv, const std::string& graphs = "node");

// Runs one version under ncu and reads its report back. The verdict: the child's own when its row
// of the version did not pass (a FAIL is "the profiled run failed: ..."), a skip when ncu says it
// cannot read the counters or profiled no kernel, a failure when the run did not finish or ncu
// wrote nothing readable (with the tail of what it printed).
ProfileOutcome profile_version(const ProfileRun& run, const std::string& version);

// The ncu to run: $COURSE_NCU when set (the grader names the one it binds into the sandbox), else
// the first `ncu` on PATH; "" when there is none.
std::string find_ncu();

// A registry entry and the driver arguments of its profile case.
struct ProfileTarget {
  Entry entry;
  std::vector<std::string> args;
};

// --profile: the meta row (the device and its ceilings, measured once), then one profile row per
// target; prints the table, writes --csv, returns the exit status (1 when a row failed).
int run_profile(const CliOptions& o, const std::string& subproject, const std::vector<ProfileTarget>& targets);

// What a driver puts in DriverSpec::profile: the GPU versions --version selects (all of them
// without it; a CPU version named there gets a skipped row saying why), each on the case
// case_of(version) gives, profiled by run_profile.
// (case_of's type names V through std::vector<V>::value_type, where V is not deduced: V comes from
// `all`, and case_of can be a lambda.)
template <class V>
std::function<int(const CliOptions&)> profile_mode(
    const std::string& subproject, const std::vector<V>& all,
    std::function<std::vector<std::string>(const typename std::vector<V>::value_type&)> case_of) {
  return [subproject, &all, case_of](const CliOptions& o) {
    std::vector<ProfileTarget> targets;
    for (const V* v : select_versions(all, o.versions))
      if (v->needs_gpu)
        targets.push_back({static_cast<const Entry&>(*v), case_of(*v)});
      else if (!o.versions.empty())
        targets.push_back({static_cast<const Entry&>(*v), {}});
    return run_profile(o, subproject, targets);
  };
}

// The same, every version on one case.
template <class V>
std::function<int(const CliOptions&)> profile_mode(const std::string& subproject, const std::vector<V>& all,
                                                   const std::vector<std::string>& args) {
  return profile_mode<V>(subproject, all, [args](const V&) { return args; });
}

}  // namespace common
