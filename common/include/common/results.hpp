// One row per (sub-project, version, size, params). The console table and the CSV are printed
// from the same rows; the CSV is written atomically (temp file + rename).
#pragma once
#include <cstdint>
#include <iosfwd>
#include <limits>
#include <string>
#include <vector>

#include "common/bench.hpp"

namespace common {

constexpr double kNoValue = std::numeric_limits<double>::quiet_NaN();

struct ResultRow {
  std::string subproject, version, idea;
  std::int64_t n = 0;
  std::string params;
  BenchStats stats;
  double metric = kNoValue;
  std::string metric_unit;
  double pct_of_ceiling = kNoValue;
  double speedup_vs_cpu = kNoValue, speedup_vs_prev = kNoValue, speedup_vs_library = kNoValue;
  double predicted_ms = kNoValue;
  std::string passed;  // "PASS", "FAIL: reason" or "skipped: reason"
  std::string device, cuda, git_sha;
};

const std::vector<std::string>& csv_columns();
std::string csv_escape(const std::string& field);
std::string to_csv_line(const ResultRow& r);
void write_csv_atomic(const std::string& path, const std::vector<ResultRow>& rows);
// Parses a CSV written by write_csv_atomic (used by tests and to merge runs).
std::vector<std::vector<std::string>> read_csv(const std::string& path);
void print_table(std::ostream& os, const std::vector<ResultRow>& rows);
// A row with the identity columns filled (device, CUDA version, $COURSE_GIT_SHA).
ResultRow make_row(const std::string& subproject, const std::string& version, const std::string& idea,
                   std::int64_t n, const std::string& params, const std::string& device);
// Writes the CSV (when a path is given), prints "<name>: P PASS, F FAIL, S skipped" and returns
// the driver's exit status: 1 on any FAIL.
int finish_run(std::ostream& os, const std::string& name, const std::vector<ResultRow>& rows,
               const std::string& csv_path);
bool is_pass(const ResultRow& r);
bool is_fail(const ResultRow& r);
std::string git_sha();  // $COURSE_GIT_SHA or "unknown"

}  // namespace common
