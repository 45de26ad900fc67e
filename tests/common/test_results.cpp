#include <gtest/gtest.h>

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
  r.passed = "PASS";
  r.device = "NVIDIA H100 \"SXM\"";
  return r;
}
}  // namespace

TEST(Results, ColumnsAreTheDesignedOnes) {
  const auto& c = common::csv_columns();
  ASSERT_EQ(c.size(), 21u);
  EXPECT_EQ(c.front(), "subproject");
  EXPECT_EQ(c[5], "median_ms");
  EXPECT_EQ(c.back(), "git_sha");
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
  ASSERT_EQ(rows[1].size(), 21u);
  EXPECT_EQ(rows[1][2], "library, with a comma");
  EXPECT_EQ(rows[1][5], "2");         // median
  EXPECT_EQ(rows[1][12], "");         // pct_of_ceiling unknown: empty, not "nan"
  EXPECT_EQ(rows[1][18], "NVIDIA H100 \"SXM\"");
  std::remove(path.c_str());
}

TEST(Results, UnwritablePathThrowsWithItsName) {
  EXPECT_THROW(common::write_csv_atomic("/nonexistent-dir/x.csv", {sample_row()}), std::runtime_error);
}

TEST(Results, TableShowsEveryRowAndItsStatus) {
  common::ResultRow skipped = sample_row();
  skipped.stats = {};
  skipped.passed = "skipped: no CUDA device";
  std::ostringstream os;
  common::print_table(os, {sample_row(), skipped});
  const std::string t = os.str();
  EXPECT_NE(t.find("PASS"), std::string::npos);
  EXPECT_NE(t.find("skipped: no CUDA device"), std::string::npos);
  EXPECT_NE(t.find("2^10"), std::string::npos);
}

// A version that throws becomes a FAIL row with its message; the driver goes on (issue 8).
TEST(Results, GuardedVersionThatThrowsIsAFailRow) {
  common::ResultRow r = sample_row();
  r.stats = common::summarize({1.0});
  const bool done = common::run_guarded(r, false, [&] { throw std::runtime_error("out of bounds at 7"); });
  EXPECT_FALSE(done);
  EXPECT_EQ(r.passed, "FAIL: out of bounds at 7");
  EXPECT_EQ(r.stats.samples, 0);  // no timing survives a failure
  common::ResultRow ok = sample_row();
  EXPECT_TRUE(common::run_guarded(ok, false, [&] { ok.passed = "PASS"; }));
  EXPECT_EQ(ok.passed, "PASS");
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
  EXPECT_EQ(partial[1][1], "scan_cub");
  std::ostringstream os;
  EXPECT_EQ(common::finish_run(os, "test", rows, csv), 0);
  EXPECT_EQ(common::read_csv(csv).size(), 3u);
  std::ifstream gone(common::journal_path(csv));
  EXPECT_FALSE(gone.good());
  std::remove(csv.c_str());
}
