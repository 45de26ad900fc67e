// One row per (sub-project, version, size, params). The console table and the CSV are printed
// from the same rows; the CSV is written atomically (temp file + rename).
//
// CSV columns (README, "CSV format"):
//  - kind: what the row measures. "meta" is the run's metadata record (first row: the device,
//    its measured ceilings and the parameters the plots need, as metrics); "version" is a
//    version's headline timing; the rest are sub-project kinds ("stage", "phase", "batch", ...).
//  - role: reference / version / library (the registry's role; empty outside the ladder).
//  - params: what was run (input, rule, mode, shape); never results.
//  - median_ms over `samples` samples (always a median), metric/metric_unit the headline rate,
//    pct_of_ceiling a percentage of the meta row's metric named in `ceiling`.
//  - metrics: further named results with units, "name[unit]=value" joined by ';'.
//  - status, detail: the row's verdict (status.hpp): pass / fail / skipped / not_implemented and why.
#pragma once
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <limits>
#include <string>
#include <vector>

#include "common/bench.hpp"
#include "common/requirements.hpp"
#include "common/status.hpp"

namespace common {

constexpr double kNoValue = std::numeric_limits<double>::quiet_NaN();

struct Metric {
  std::string name;
  double value = kNoValue;
  std::string unit;
};

struct ResultRow {
  std::string subproject, kind = "version", version, role, idea;
  std::int64_t n = 0;
  std::string params;
  BenchStats stats;
  double metric = kNoValue;
  std::string metric_unit;
  double pct_of_ceiling = kNoValue;
  std::string ceiling;  // the meta row's metric that pct_of_ceiling divides by
  std::vector<Metric> metrics;
  double speedup_vs_cpu = kNoValue, speedup_vs_prev = kNoValue, speedup_vs_library = kNoValue;
  double predicted_ms = kNoValue;
  Verdict verdict;
  std::string device, cuda, git_sha;

  ResultRow& add_metric(const std::string& name, double value, const std::string& unit);
  double metric_named(const std::string& name) const;  // kNoValue when absent
};

// "name[unit]=value;..." and back (the CSV's metrics column). Names and units must not hold
// '[', ']', '=' or ';' (checked: std::invalid_argument).
std::string format_metrics(const std::vector<Metric>& m);
std::vector<Metric> parse_metrics(const std::string& s);

// Fills speedup_vs_cpu, speedup_vs_library and speedup_vs_prev of one comparison group (rows of
// the same input and size, in ladder order): x CPU and x lib divide the time of the group's
// reference and library rows by each row's; x prev divides the time of the step before (the
// version named by builds_on(version) when that returns a name present in the group). The
// library row is a baseline, not a step: it gets no x prev and is nobody's previous step. Rows
// without samples are left alone.
void fill_ratios(const std::vector<ResultRow*>& group,
                 const std::function<std::string(const std::string& version)>& builds_on = nullptr);

// The rows of one run, in the order a driver produces them. push_back also appends the row to the
// run's journal when one is open (see open_row_journal), so a run that crashes or is killed keeps
// every row it finished; finish_run writes the final CSV (with the ratios filled in afterwards)
// atomically and removes the journal.
class RowList {
 public:
  void push_back(const ResultRow& r);
  ResultRow& operator[](std::size_t i) { return rows_[i]; }
  const ResultRow& operator[](std::size_t i) const { return rows_[i]; }
  ResultRow& back() { return rows_.back(); }
  std::size_t size() const { return rows_.size(); }
  bool empty() const { return rows_.empty(); }
  std::vector<ResultRow>::iterator begin() { return rows_.begin(); }
  std::vector<ResultRow>::iterator end() { return rows_.end(); }
  std::vector<ResultRow>::const_iterator begin() const { return rows_.begin(); }
  std::vector<ResultRow>::const_iterator end() const { return rows_.end(); }
  const std::vector<ResultRow>& all() const { return rows_; }

 private:
  std::vector<ResultRow> rows_;
};

// The journal of the rows a run has finished: "<csv_path>.partial", created (header first) next to
// the final CSV, one line appended and flushed per row. driver_main opens it when --csv is given;
// finish_run removes it once the CSV is in place. Throws std::runtime_error with strerror.
std::string journal_path(const std::string& csv_path);
void open_row_journal(const std::string& csv_path);
void close_row_journal(bool remove_file);

// Runs one version's work (its check, then its timing) for row `r`. An exception becomes
// a failure with that message in r.verdict and the driver goes on with the next version. After a CUDA error
// that leaves the device unusable (an illegal address or a trap is sticky), later GPU work is not
// attempted: gpu_unusable_reason() says why and guarded GPU rows are skipped with that reason.
// Returns false when the body did not complete.
// Fault injection for tests and graders: COURSE_FAIL_VERSION=name makes the body of that version
// throw; COURSE_FAIL_VERSION=name:trap launches a kernel that traps (a sticky device error);
// COURSE_FAIL_VERSION=name:abort ends the process as a crash would.
// `needs` (the version's registry entry): checked first; a GPU or a build that cannot run it makes
// the row skipped, saying why (requirements.hpp), and the body is not run.
bool run_guarded(ResultRow& r, bool needs_gpu, const std::function<void()>& body, const Needs& needs = {});
const std::string& gpu_unusable_reason();  // empty while the device is usable

const std::vector<std::string>& csv_columns();
std::string csv_escape(const std::string& field);
std::string to_csv_line(const ResultRow& r);
void write_csv_atomic(const std::string& path, const std::vector<ResultRow>& rows);
// Parses a CSV written by write_csv_atomic (used by tests and to merge runs).
std::vector<std::vector<std::string>> read_csv(const std::string& path);
// The same parser on text in memory (quoted fields, doubled quotes, commas and newlines inside
// quotes, CRLF): every line one row of fields. Also what reads Nsight Compute's CSV (profile.hpp).
std::vector<std::vector<std::string>> parse_csv(const std::string& text);
void print_table(std::ostream& os, const std::vector<ResultRow>& rows);
// A number in a console table: `prec` decimals, "-" for kNoValue.
std::string format_fixed(double v, int prec);
// A row with the identity columns filled (device, CUDA version, $COURSE_GIT_SHA).
ResultRow make_row(const std::string& subproject, const std::string& version, const std::string& idea, std::int64_t n,
                   const std::string& params, const std::string& device, const std::string& role = "",
                   const std::string& kind = "version");
// Writes the CSV (when a path is given), prints "<name>: P PASS, F FAIL, S skipped" (and the
// NOT IMPLEMENTED count when there are any) and returns
// the driver's exit status: 1 on any FAIL.
int finish_run(std::ostream& os, const std::string& name, const std::vector<ResultRow>& rows,
               const std::string& csv_path);
int finish_run(std::ostream& os, const std::string& name, const RowList& rows, const std::string& csv_path);
bool is_pass(const ResultRow& r);
bool is_fail(const ResultRow& r);
std::string git_sha();  // $COURSE_GIT_SHA or "unknown"

}  // namespace common
