#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "common/results.hpp"

namespace {
common::ResultRow sample_row() {
  common::ResultRow r;
  r.subproject = "stream_compaction";
  r.version = "scan_cub";
  r.idea = "library, with a comma";
  r.n = 1024;
  r.params = "op=scan";
  r.stats = common::summarize({1.0, 2.0, 3.0});
  r.metric = 12.5;
  r.metric_unit = "GB/s";
  r.verdict = common::Verdict::pass();
  r.device = "NVIDIA H100 \"SXM\"";
  r.add_metric("precision", 97.5, "%").add_metric("latency", 0.125, "ms");
  return r;
}

std::size_t col(const std::string& name) {
  const auto& c = common::csv_columns();
  const auto it = std::find(c.begin(), c.end(), name);
  EXPECT_NE(it, c.end()) << "no column " << name;
  return static_cast<std::size_t>(it - c.begin());
}
}  // namespace

TEST(Results, ColumnsAreTheDesignedOnes) {
  const auto& c = common::csv_columns();
  ASSERT_EQ(c.size(), 26u);
  EXPECT_EQ(c.front(), "subproject");
  EXPECT_EQ(c[1], "kind");
  EXPECT_EQ(c.back(), "git_sha");
  for (const char* name : {"version", "role", "params", "median_ms", "samples", "metric", "metric_unit",
                           "pct_of_ceiling", "ceiling", "speedup_vs_cpu", "speedup_vs_prev", "speedup_vs_library",
                           "predicted_ms", "metrics", "status", "detail", "device"})
    EXPECT_NE(std::find(c.begin(), c.end(), name), c.end()) << name;
}

TEST(Results, EscapesCommasAndQuotes) {
  EXPECT_EQ(common::csv_escape("a,b"), "\"a,b\"");
  EXPECT_EQ(common::csv_escape("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(common::csv_escape("plain"), "plain");
}

TEST(Results, WritesAtomicallyAndReadsBack) {
  const std::string path = ::testing::TempDir() + "results_test.csv";
  common::write_csv_atomic(path, {sample_row()});
  std::ifstream tmp(path + ".tmp");
  EXPECT_FALSE(tmp.good()) << "temporary file left behind";
  const auto rows = common::read_csv(path);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0], common::csv_columns());
  ASSERT_EQ(rows[1].size(), common::csv_columns().size());
  EXPECT_EQ(rows[1][col("idea")], "library, with a comma");
  EXPECT_EQ(rows[1][col("kind")], "version");
  EXPECT_EQ(rows[1][col("median_ms")], "2");
  EXPECT_EQ(rows[1][col("samples")], "3");
  EXPECT_EQ(rows[1][col("pct_of_ceiling")], "");  // unknown: empty, not "nan"
  EXPECT_EQ(rows[1][col("device")], "NVIDIA H100 \"SXM\"");
  EXPECT_EQ(rows[1][col("metrics")], "precision[%]=97.5;latency[ms]=0.125");
  EXPECT_EQ(rows[1][col("status")], "pass");
  EXPECT_EQ(rows[1][col("detail")], "");
  std::remove(path.c_str());
}

TEST(Results, UnwritablePathThrowsWithItsName) {
  EXPECT_THROW(common::write_csv_atomic("/nonexistent-dir/x.csv", {sample_row()}), std::runtime_error);
}

TEST(Results, TableShowsEveryRowAndItsStatus) {
  common::ResultRow skipped = sample_row();
  skipped.stats = {};
  skipped.verdict = common::Verdict::skip("no CUDA device");
  std::ostringstream os;
  common::print_table(os, {sample_row(), skipped});
  const std::string t = os.str();
  EXPECT_NE(t.find("PASS"), std::string::npos);
  EXPECT_NE(t.find("skipped: no CUDA device"), std::string::npos);
  EXPECT_NE(t.find("2^10"), std::string::npos);
}

// A version that throws becomes a FAIL row with its message; the driver goes on.
TEST(Results, GuardedVersionThatThrowsIsAFailRow) {
  common::ResultRow r = sample_row();
  r.stats = common::summarize({1.0});
  const bool done = common::run_guarded(r, false, [&] { throw std::runtime_error("out of bounds at 7"); });
  EXPECT_FALSE(done);
  EXPECT_EQ(r.verdict.status, common::Status::fail);
  EXPECT_EQ(r.verdict.detail, "out of bounds at 7");
  EXPECT_EQ(r.verdict.text(), "FAIL: out of bounds at 7");
  EXPECT_EQ(r.stats.samples, 0);  // no timing survives a failure
  common::ResultRow ok = sample_row();
  EXPECT_TRUE(common::run_guarded(ok, false, [&] { ok.verdict = common::Verdict::pass(); }));
  EXPECT_TRUE(ok.verdict.ok());
  EXPECT_TRUE(common::gpu_unusable_reason().empty());
}

// Rows reach the journal as they are produced, so a crash keeps them; finish_run replaces the
// journal by the CSV.
TEST(Results, RowsAreJournalledAsTheyFinish) {
  const std::string csv = ::testing::TempDir() + "journal_test.csv";
  std::remove(csv.c_str());
  common::open_row_journal(csv);
  common::RowList rows;
  rows.push_back(sample_row());
  rows.push_back(sample_row());
  const auto partial = common::read_csv(common::journal_path(csv));
  ASSERT_EQ(partial.size(), 3u);  // header + two rows, readable while the run goes on
  EXPECT_EQ(partial[1][col("version")], "scan_cub");
  std::ostringstream os;
  EXPECT_EQ(common::finish_run(os, "test", rows, csv), 0);
  EXPECT_EQ(common::read_csv(csv).size(), 3u);
  std::ifstream gone(common::journal_path(csv));
  EXPECT_FALSE(gone.good());
  std::remove(csv.c_str());
}

TEST(Results, MetricsRoundTripAndRejectSeparators) {
  const std::vector<common::Metric> m = {{"recall", 98.25, "%"}, {"gpus", 2, ""}, {"missing", common::kNoValue, "ms"}};
  const auto back = common::parse_metrics(common::format_metrics(m));
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(back[0].name, "recall");
  EXPECT_EQ(back[0].unit, "%");
  EXPECT_DOUBLE_EQ(back[0].value, 98.25);
  EXPECT_EQ(back[1].unit, "");
  EXPECT_TRUE(std::isnan(back[2].value));
  EXPECT_TRUE(common::parse_metrics("").empty());
  common::ResultRow r;
  EXPECT_THROW(r.add_metric("a;b", 1, ""), std::invalid_argument);
  EXPECT_THROW(r.add_metric("a", 1, "m]"), std::invalid_argument);
  EXPECT_THROW(common::parse_metrics("novalue"), std::invalid_argument);
  EXPECT_THROW(common::parse_metrics("x[ms]=abc"), std::invalid_argument);
  EXPECT_DOUBLE_EQ(r.add_metric("x", 4, "ms").metric_named("x"), 4);
  EXPECT_TRUE(std::isnan(r.metric_named("y")));
}

// One place computes the ratios: x CPU and x lib against the group's reference and library, x
// prev along the ladder with the library left out of it, or from the version named by builds_on.
TEST(Results, RatiosComeFromRolesAndTheLadder) {
  auto row = [](const std::string& name, const std::string& role, double ms) {
    common::ResultRow r;
    r.version = name;
    r.role = role;
    r.stats = common::summarize({ms});
    return r;
  };
  std::vector<common::ResultRow> rows = {row("cpu", "reference", 100), row("v1", "version", 50),
                                         row("lib", "library", 20), row("v2", "version", 10), row("v3", "version", 25)};
  common::ResultRow untimed = row("v4", "version", 1);
  untimed.stats = {};
  rows.push_back(untimed);
  std::vector<common::ResultRow*> group;
  for (auto& r : rows) group.push_back(&r);
  common::fill_ratios(group, [](const std::string& v) { return v == "v3" ? std::string("v1") : std::string(); });
  EXPECT_DOUBLE_EQ(rows[0].speedup_vs_cpu, 1);
  EXPECT_TRUE(std::isnan(rows[0].speedup_vs_prev));
  EXPECT_DOUBLE_EQ(rows[1].speedup_vs_prev, 2);
  EXPECT_DOUBLE_EQ(rows[2].speedup_vs_cpu, 5);
  EXPECT_TRUE(std::isnan(rows[2].speedup_vs_prev));  // the library is not a step
  EXPECT_DOUBLE_EQ(rows[3].speedup_vs_prev, 5);      // v1 -> v2, the library skipped
  EXPECT_DOUBLE_EQ(rows[3].speedup_vs_library, 2);
  EXPECT_DOUBLE_EQ(rows[4].speedup_vs_prev, 2);     // builds on v1
  EXPECT_TRUE(std::isnan(rows[5].speedup_vs_cpu));  // untimed rows are left alone
}

// The four states have one CSV word each and read back; the console text keeps the detail; a row
// nobody judged is not a pass.
TEST(Results, StatusWordsRoundTripAndAnUnjudgedRowIsNotAPass) {
  for (common::Status st :
       {common::Status::pass, common::Status::fail, common::Status::skipped, common::Status::not_implemented})
    EXPECT_EQ(common::parse_status(common::status_name(st)), st);
  EXPECT_THROW(common::parse_status("PASS"), std::invalid_argument);
  EXPECT_THROW(common::parse_status(""), std::invalid_argument);
  EXPECT_EQ(common::Verdict::skip("no CUDA device").text(), "skipped: no CUDA device");
  EXPECT_EQ(common::Verdict::not_implemented("stub at x.cu:3").text(), "NOT IMPLEMENTED: stub at x.cu:3");
  EXPECT_EQ(common::Verdict::pass_if(false, "3 keys differ").text(), "FAIL: 3 keys differ");
  EXPECT_TRUE(common::Verdict::pass_if(true, "unused").ok());
  const common::ResultRow fresh;
  EXPECT_FALSE(fresh.verdict.ok());
  EXPECT_FALSE(fresh.verdict.failed());
  std::ostringstream os;
  common::RowList rows;
  rows.push_back(fresh);
  rows.push_back(sample_row());
  common::ResultRow stub = sample_row();
  stub.verdict = common::Verdict::not_implemented("stub");
  rows.push_back(stub);
  EXPECT_EQ(common::finish_run(os, "t", rows, ""), 0);
  EXPECT_NE(os.str().find("t: 1 PASS, 0 FAIL, 1 NOT IMPLEMENTED, 1 skipped"), std::string::npos) << os.str();
}
