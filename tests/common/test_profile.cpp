// --profile (common/profile.hpp) without a GPU: Nsight Compute's raw CSV as captured on an H200
// (trimmed excerpts in tests/common/data/, the columns the profile reads), the kernels summed into
// a row, what ncu's output says when it cannot read the counters, and the run of one version
// under a stand-in `ncu` (a shell script that plays ncu and the profiled program): its verdicts,
// its timeout, the environment and the command line it is given.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/profile.hpp"

#ifndef COURSE_TEST_DATA_DIR
#error "COURSE_TEST_DATA_DIR names tests/common/data (tests/CMakeLists.txt)"
#endif

namespace {

std::string fixture(const std::string& name) {
  std::ifstream is(std::string(COURSE_TEST_DATA_DIR) + "/" + name, std::ios::binary);
  EXPECT_TRUE(is.good()) << name;
  std::ostringstream os;
  os << is.rdbuf();
  return os.str();
}

// scan_shared_mem at 2^20 on an H200, `ncu --nvtx --nvtx-include "scan_shared_mem/"`: the driver's
// own output first, then six kernels (block_scan_kernel x4, add_block_offsets_kernel x2)
const char* const kScan = "ncu_scan_nvtx_raw.csv";
// a driver's run profiled without a range: the ceilings' kernels (fma_peak_kernel x8, empty_kernel x4)
const char* const kCeilings = "ncu_ceilings_raw.csv";

// The fixture with every occurrence of `from` replaced by `to`.
std::string edited(const std::string& text, const std::string& from, const std::string& to) {
  std::string out = text;
  for (std::size_t p = out.find(from); p != std::string::npos; p = out.find(from, p + to.size()))
    out.replace(p, from.size(), to);
  return out;
}

}  // namespace

TEST(Profile, ReadsNcuRawCsvAfterTheProgramsOwnOutput) {
  const common::NcuTable t = common::parse_ncu_raw_csv(fixture(kScan));
  ASSERT_EQ(t.kernels.size(), 6u);
  EXPECT_EQ(t.lines_left_out, 0);
  const common::KernelProfile& k = t.kernels[0];
  EXPECT_EQ(k.name, "block_scan_kernel");
  EXPECT_EQ(t.kernels[3].name, "add_block_offsets_kernel");
  EXPECT_DOUBLE_EQ(k.duration_ns, 10240);  // "10,240": the thousands separator dropped
  // no byte count in this capture: its DRAM rate (410,050,000,000 byte/s) times its time
  EXPECT_NEAR(k.dram_bytes, 410.05e9 * 10240e-9, 1.0);
  EXPECT_DOUBLE_EQ(k.achieved_occupancy, 84.52);
  EXPECT_DOUBLE_EQ(k.theoretical_occupancy, 100);
  EXPECT_DOUBLE_EQ(k.registers, 20);
  EXPECT_DOUBLE_EQ(k.shared_bytes, 2116);  // dynamic "2,116" + static 0
  EXPECT_DOUBLE_EQ(k.spill_instructions, 0);
  // 19 reasons in the H200's table, less "selected" and "not_selected" (issuing is no stall)
  EXPECT_EQ(k.stalls.size(), 17u);
  for (const auto& [reason, v] : k.stalls) {
    EXPECT_NE(reason, "selected");
    EXPECT_NE(reason, "not_selected");
    if (reason == "barrier") EXPECT_DOUBLE_EQ(v, 6.38);
  }
}

TEST(Profile, SumsTheKernelsWeightingByTime) {
  const common::ProfileSummary s = common::summarize_profile(common::parse_ncu_raw_csv(fixture(kScan)).kernels);
  EXPECT_EQ(s.kernels, 6);
  EXPECT_NEAR(s.duration_ms, 0.036896, 1e-12);  // 10240 + 4128 + 3872 + 3104 + 5184 + 10368 ns
  EXPECT_NEAR(s.dram_bytes, 12632064.0, 2.0);
  // sum(occupancy x time) / sum(time): the long kernels at 84%, the short ones at 12%
  EXPECT_NEAR(s.achieved_occupancy, 62.0303, 1e-3);
  EXPECT_DOUBLE_EQ(s.theoretical_occupancy, 100);
  EXPECT_DOUBLE_EQ(s.registers, 20);
  EXPECT_DOUBLE_EQ(s.shared_bytes, 2116);
  EXPECT_DOUBLE_EQ(s.spill_instructions, 0);
  ASSERT_EQ(s.top_stalls.size(), 2u);
  // add_block_offsets_kernel waits on memory (23.55, 24.50) for 22% of the time; block_scan_kernel
  // at its barriers for the rest
  EXPECT_EQ(s.top_stalls[0].first, "long_scoreboard");
  EXPECT_NEAR(s.top_stalls[0].second, 6.6136, 1e-3);
  EXPECT_EQ(s.top_stalls[1].first, "barrier");
  EXPECT_NEAR(s.top_stalls[1].second, 4.6104, 1e-3);
  EXPECT_EQ(s.heaviest, "block_scan_kernel");
  EXPECT_NEAR(s.heaviest_share, 77.537, 1e-3);
}

TEST(Profile, TheoreticalOccupancyAndTheHeaviestKernelFollowTheTime) {
  // fma_peak_kernel (100% theoretical, 361 us each) and empty_kernel (50%, 1.7 us each)
  const common::ProfileSummary s = common::summarize_profile(common::parse_ncu_raw_csv(fixture(kCeilings)).kernels);
  EXPECT_EQ(s.kernels, 12);
  EXPECT_NEAR(s.theoretical_occupancy, 99.881, 1e-3);
  EXPECT_NEAR(s.achieved_occupancy, 84.364, 1e-3);
  EXPECT_EQ(s.heaviest, "fma_peak_kernel");
  EXPECT_NEAR(s.heaviest_share, 99.762, 1e-3);
  EXPECT_DOUBLE_EQ(s.registers, 21);
  ASSERT_FALSE(s.top_stalls.empty());
  EXPECT_EQ(s.top_stalls[0].first, "math_pipe_throttle");
}

TEST(Profile, ScalesByTheUnitsRowAndReadsByteCounts) {
  // what `ncu --import ... --page raw` writes without --print-units base: prefixed units
  const std::string text =
      "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\",\"dram__bytes_read.sum\",\"dram__bytes_write.sum\","
      "\"launch__shared_mem_per_block_static\",\"launch__shared_mem_per_block_dynamic\"\n"
      "\"\",\"\",\"usecond\",\"Mbyte\",\"Kbyte\",\"Kbyte/block\",\"byte/block\"\n"
      "\"0\",\"void cub::DeviceScanKernel<Policy, int *>(int *, int)\",\"1,250.5\",\"2.5\",\"1,000\",\"1\",\"16\"\n";
  const common::NcuTable t = common::parse_ncu_raw_csv(text);
  ASSERT_EQ(t.kernels.size(), 1u);
  EXPECT_EQ(t.kernels[0].name, "DeviceScanKernel");
  EXPECT_DOUBLE_EQ(t.kernels[0].duration_ns, 1250500);
  EXPECT_DOUBLE_EQ(t.kernels[0].dram_bytes, 2.5e6 + 1e6);
  EXPECT_DOUBLE_EQ(t.kernels[0].shared_bytes, 1016);
  EXPECT_TRUE(std::isnan(t.kernels[0].achieved_occupancy));  // no such column
  EXPECT_THROW(common::parse_ncu_raw_csv(edited(text, "usecond", "furlong")), std::runtime_error);
}

TEST(Profile, NoDataCellsAndMissingColumnsWeighNothing) {
  std::string text = fixture(kScan);
  // block_scan_kernel's first row without an occupancy, every DRAM figure gone
  text = edited(text, "\"84.52\"", "\"n/a\"");
  text = edited(text, "\"dram__bytes.sum.per_second\"", "\"dram__something_else\"");
  const common::ProfileSummary s = common::summarize_profile(common::parse_ncu_raw_csv(text).kernels);
  EXPECT_EQ(s.kernels, 6);
  EXPECT_TRUE(std::isnan(s.dram_bytes));
  // the average over the five kernels that have one, by their time (36896 - 10240 ns)
  const double expected = (12.65 * 4128 + 12.35 * 3872 + 12.37 * 3104 + 79.79 * 5184 + 84.02 * 10368) / 26656.0;
  EXPECT_NEAR(s.achieved_occupancy, expected, 1e-9);
  common::ResultRow r;
  common::set_profile_metrics(r, s, 4213);
  EXPECT_TRUE(std::isnan(r.metric)) << "no DRAM bytes: no GB/s";
  EXPECT_TRUE(r.ceiling.empty());
  EXPECT_NE(common::format_metrics(r.metrics).find("dram[MB]=;"), std::string::npos)
      << common::format_metrics(r.metrics);
}

TEST(Profile, LinesThatAreNoKernelsRowAreLeftOut) {
  // the program's output interleaved with the table (ncu printing while the program runs)
  std::string text = fixture(kScan);
  const std::size_t second = text.find("\n\"1\",");
  ASSERT_NE(second, std::string::npos);
  text.insert(second + 1, "scan_shared_mem  2^20  op=scan block=256  0.4219  PASS\n[stream_compaction 1/1, 0 s]\n");
  const common::NcuTable t = common::parse_ncu_raw_csv(text);
  EXPECT_EQ(t.kernels.size(), 6u);
  EXPECT_EQ(t.lines_left_out, 2);
}

TEST(Profile, TextWithoutATableIsAnError) {
  for (const std::string& text :
       {std::string(), std::string("==PROF== Connected to process 1\n==WARNING== No kernels were profiled.\n"),
        std::string("\"ID\",\"Kernel Name\"\n\"\",\"\"\n\"0\",\"k()\"\n")}) {
    try {
      common::parse_ncu_raw_csv(text);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const std::runtime_error& e) {
      const std::string m = e.what();
      EXPECT_TRUE(m.find("no table") != std::string::npos || m.find("gpu__time_duration") != std::string::npos) << m;
    }
  }
  // a header and units but no kernel: an empty table, not an error (the caller says "no kernel")
  EXPECT_TRUE(common::parse_ncu_raw_csv("\"ID\",\"gpu__time_duration.sum\"\n\"\",\"ns\"\n").kernels.empty());
}

TEST(Profile, SaysWhenNcuCannotReadTheCounters) {
  const std::string denied =
      "==PROF== Connected to process 4242 (/work/build/release/nbody/nbody)\n"
      "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters on "
      "the target device 0. For instructions on enabling permissions and to get more information see "
      "https://developer.nvidia.com/ERR_NVGPUCTRPERM\n"
      "==PROF== Disconnected from process 4242\n";
  EXPECT_EQ(common::ncu_refusal(denied), common::kNoCounterPermission);
  EXPECT_NE(std::string(common::kNoCounterPermission).find("NVreg_RestrictProfilingToAdminUsers"), std::string::npos);
  EXPECT_EQ(common::ncu_refusal(fixture(kScan)), "");
  const std::string unsupported = common::ncu_refusal("==ERROR== Profiling is not supported on this device\n");
  EXPECT_NE(unsupported.find("ncu cannot profile this GPU"), std::string::npos) << unsupported;
}

TEST(Profile, KernelNamesAreShort) {
  EXPECT_EQ(common::short_kernel_name("unnamed>::block_scan_kernel(long, int *, const int *, int *)"),
            "block_scan_kernel");
  EXPECT_EQ(common::short_kernel_name("void cub::CUB_300000_SM_900::DeviceRadixSortOnesweepKernel<Policy, "
                                      "(bool)0, unsigned int>(int *, int *)"),
            "DeviceRadixSortOnesweepKernel");
  EXPECT_EQ(common::short_kernel_name("(anonymous namespace)::tile_kernel<256, 4>(Params)"), "tile_kernel");
  EXPECT_EQ(common::short_kernel_name("plain_kernel"), "plain_kernel");
  EXPECT_EQ(common::short_kernel_name(""), "kernel");
}

TEST(Profile, TheRowCarriesTheSummaryAsNamedMetrics) {
  const common::ProfileSummary s = common::summarize_profile(common::parse_ncu_raw_csv(fixture(kScan)).kernels);
  common::ResultRow r = common::make_row("stream_compaction", "scan_shared_mem", "idea", 0,
                                         "launches=40 args=--n 2^20 --reps 1", "NVIDIA H200", "version", "profile");
  r.verdict = common::Verdict::pass();
  common::set_profile_metrics(r, s, 4213);
  EXPECT_NEAR(r.metric, 12632064.0 / 36896e-9 / 1e9, 1e-6);  // GB/s
  EXPECT_EQ(r.metric_unit, "GB/s");
  EXPECT_NEAR(r.pct_of_ceiling, 100 * r.metric / 4213, 1e-9);
  EXPECT_EQ(r.ceiling, "copy_bandwidth");
  const auto back = common::parse_metrics(common::format_metrics(r.metrics));  // the CSV's column and back
  auto named = [&](const std::string& name) {
    for (const auto& m : back)
      if (m.name == name) return m;
    ADD_FAILURE() << "no metric " << name << " in " << common::format_metrics(r.metrics);
    return common::Metric{};
  };
  EXPECT_EQ(named("kernels").value, 6);
  EXPECT_NEAR(named("duration").value, 0.036896, 1e-6);
  EXPECT_EQ(named("duration").unit, "ms");
  EXPECT_NEAR(named("achieved_occupancy").value, 62.0303, 1e-3);
  EXPECT_EQ(named("registers").value, 20);
  EXPECT_EQ(named("shared_memory").value, 2116);
  EXPECT_NEAR(named("stall.long_scoreboard").value, 6.6136, 1e-3);
  EXPECT_EQ(named("stall.long_scoreboard").unit, "cycles/issue");
  EXPECT_NEAR(named("heaviest.block_scan_kernel").value, 77.54, 1e-2);
  std::ostringstream table;
  common::print_profile_table(table, {r});
  EXPECT_NE(table.str().find("long_scoreboard 6.61, barrier 4.61"), std::string::npos) << table.str();
  EXPECT_NE(table.str().find("block_scan_kernel 78%"), std::string::npos) << table.str();
}

// ---- one version under a stand-in ncu

namespace {

// A shell script in the place of ncu: given a report to export, it plays the profiled program too
// (writes the child's CSV, as the driver would) in the way $FAKE_NCU_MODE says; given --import, it
// prints $FAKE_NCU_TABLE. It records its command line and $COURSE_CEILINGS in $FAKE_NCU_SEEN.
class FakeNcu : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "fake_ncu_" + std::to_string(::getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::create_directories(dir_);
    ncu_ = dir_ + "/ncu";
    std::ofstream(ncu_) << R"SH(#!/bin/sh
echo "$*" >> "$FAKE_NCU_SEEN"; echo "ceilings=$COURSE_CEILINGS" >> "$FAKE_NCU_SEEN"
report=""; csv=""; version=""; import=""; graphs=""
while [ $# -gt 0 ]; do
  case "$1" in
    --graph-profiling) graphs="$2"; shift ;;
    --export) report="$2"; shift ;;
    --csv) [ -z "$import" ] && csv="$2"; shift ;;
    --version) version="$2"; shift ;;
    --import) import="$2"; shift ;;
  esac
  shift
done
if [ -n "$import" ]; then cat "$FAKE_NCU_TABLE"; exit 0; fi
echo "==PROF== Connected to process 1 (the driver)"
row() { printf 'subproject,kind,version,status,detail\nsc,meta,,pass,\nsc,version,%s,%s,%s\n' "$version" "$1" "$2" > "$csv"; }
case "$FAKE_NCU_MODE" in
  pass) row pass ""; : > "$report.ncu-rep" ;;
  denied) echo "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters on the target device 0."; exit 1 ;;
  fail) row fail "12 of 1048576 elements differ"; : > "$report.ncu-rep"; exit 1 ;;
  skipped) row skipped "needs sm_90 (TMA bulk copy); this GPU is sm_86" ;;
  nokernel) row pass ""; echo "==WARNING== No kernels were profiled." ;;
  whilegraph) row pass ""; if [ "$graphs" = graph ]; then : > "$report.ncu-rep"; else echo "==WARNING== No kernels were profiled."; fi ;;
  crash) echo "Segmentation fault (core dumped)"; exit 139 ;;
  crashlate) row fail "element 7 differs"; mv "$csv" "$csv.partial"; echo "Segmentation fault (core dumped)"; exit 139 ;;
  usage) printf 'nbody: --mode step measures the per-step versions\n\nusage: nbody [flags]\n  --list  list\n'; exit 2 ;;
  hang) sleep 30 ;;
esac
)SH";
    chmod(ncu_.c_str(), 0755);
    setenv("FAKE_NCU_SEEN", (dir_ + "/seen.txt").c_str(), 1);
    setenv("FAKE_NCU_TABLE", (std::string(COURSE_TEST_DATA_DIR) + "/" + kScan).c_str(), 1);
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    for (const char* v : {"FAKE_NCU_SEEN", "FAKE_NCU_TABLE", "FAKE_NCU_MODE"}) unsetenv(v);
  }
  common::ProfileOutcome profile(const char* mode, double timeout_s = 60) {
    setenv("FAKE_NCU_MODE", mode, 1);
    common::ProfileRun run{ncu_, "/bin/true", {"--n", "2^20", "--reps", "1"}, dir_ + "/work", "copy_bandwidth=4213"};
    run.timeout_s = timeout_s;
    return common::profile_version(run, "scan_shared_mem");
  }
  std::string seen() const {
    std::ifstream is(dir_ + "/seen.txt");
    std::ostringstream os;
    os << is.rdbuf();
    return os.str();
  }
  std::string dir_, ncu_;
};

}  // namespace

TEST_F(FakeNcu, AProfiledRunGivesItsKernelsSummary) {
  const common::ProfileOutcome got = profile("pass");
  ASSERT_TRUE(got.verdict.ok()) << got.verdict.text();
  EXPECT_EQ(got.summary.kernels, 6);
  EXPECT_EQ(got.summary.heaviest, "block_scan_kernel");
  // the last ncu call was the import; the profile's call is checked through the command line below
  const std::vector<std::string> cmd = common::ncu_command(
      common::ProfileRun{ncu_, "/bin/true", {"--n", "2^20", "--reps", "1"}, dir_, ""}, "scan_shared_mem", "R", "C");
  std::string joined;
  for (const auto& a : cmd) joined += a + " ";
  for (const char* want : {"--nvtx --nvtx-include scan_shared_mem/ ", "--graph-profiling node ", "--launch-count 40 ",
                           "--clock-control none ", "--section WarpStateStats ", "gpu__time_duration.sum,",
                           "--export R ", "/bin/true --n 2^20 --reps 1 --version scan_shared_mem --csv C "})
    EXPECT_NE(joined.find(want), std::string::npos) << want << " not in: " << joined;
}

TEST_F(FakeNcu, TheChildGetsTheMeasuredCeilings) {
  ASSERT_TRUE(profile("skipped").verdict.status == common::Status::skipped);
  EXPECT_NE(seen().find("ceilings=copy_bandwidth=4213"), std::string::npos) << seen();
  EXPECT_NE(seen().find("--nvtx-include scan_shared_mem/"), std::string::npos) << seen();
}

TEST_F(FakeNcu, NoPermissionIsASkipThatSaysSo) {
  const common::ProfileOutcome got = profile("denied");
  EXPECT_EQ(got.verdict.status, common::Status::skipped);
  EXPECT_EQ(got.verdict.detail, common::kNoCounterPermission);
  EXPECT_TRUE(got.no_permission);
}

TEST_F(FakeNcu, TheRunsOwnVerdictStands) {
  common::ProfileOutcome got = profile("fail");
  EXPECT_EQ(got.verdict.status, common::Status::fail);
  EXPECT_EQ(got.verdict.detail, "the profiled run failed: 12 of 1048576 elements differ");
  got = profile("skipped");
  EXPECT_EQ(got.verdict.status, common::Status::skipped);
  EXPECT_EQ(got.verdict.detail, "needs sm_90 (TMA bulk copy); this GPU is sm_86");
  EXPECT_FALSE(got.no_permission);
}

TEST_F(FakeNcu, NoKernelInTheRangeIsASkip) {
  const common::ProfileOutcome got = profile("nokernel");
  EXPECT_EQ(got.verdict.status, common::Status::skipped);
  EXPECT_NE(got.verdict.detail.find("no kernel inside its NVTX range 'scan_shared_mem'"), std::string::npos)
      << got.verdict.detail;
}

TEST_F(FakeNcu, KernelsOnlyInsideConditionalNodesAreProfiledAsWholeGraphs) {
  common::ProfileOutcome got = profile("whilegraph");
  ASSERT_TRUE(got.verdict.ok()) << got.verdict.text();
  EXPECT_TRUE(got.summary.whole_graphs);
  EXPECT_NE(seen().find("--graph-profiling graph "), std::string::npos) << seen();  // the second try
  got = profile("pass");
  EXPECT_FALSE(got.summary.whole_graphs);
}

TEST_F(FakeNcu, TheReportIsReadWithThePlainKernelNames) {
  ASSERT_TRUE(profile("pass").verdict.ok());
  EXPECT_NE(seen().find("--import "), std::string::npos) << seen();
  EXPECT_NE(seen().find("--print-kernel-base function"), std::string::npos) << seen();
}

TEST_F(FakeNcu, ACrashAfterTheVersionsRowFailsWithThatRowsReason) {
  // the run's row journal (the CSV's .partial) holds the row written before the crash
  const common::ProfileOutcome got = profile("crashlate");
  EXPECT_EQ(got.verdict.status, common::Status::fail);
  EXPECT_EQ(got.verdict.detail, "the profiled run failed: element 7 differs");
}

TEST_F(FakeNcu, ACrashFailsWithWhatItPrinted) {
  const common::ProfileOutcome got = profile("crash");
  EXPECT_EQ(got.verdict.status, common::Status::fail);
  EXPECT_NE(got.verdict.detail.find("exit status 139"), std::string::npos) << got.verdict.detail;
  EXPECT_NE(got.verdict.detail.find("Segmentation fault"), std::string::npos) << got.verdict.detail;
}

TEST_F(FakeNcu, ARefusedCaseSaysWhyNotTheUsage) {
  const common::ProfileOutcome got = profile("usage");
  EXPECT_EQ(got.verdict.status, common::Status::fail);
  EXPECT_NE(got.verdict.detail.find("(exit status 2): nbody: --mode step measures the per-step versions"),
            std::string::npos)
      << got.verdict.detail;
}

TEST_F(FakeNcu, ARunPastItsTimeIsKilled) {
  const auto t0 = std::chrono::steady_clock::now();
  const common::ProfileOutcome got = profile("hang", 1.0);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(got.verdict.status, common::Status::fail);
  EXPECT_NE(got.verdict.detail.find("did not finish in 1 s"), std::string::npos) << got.verdict.detail;
  EXPECT_LT(took, 10.0) << "the stand-in sleeps 30 s: it was not killed";
}

TEST_F(FakeNcu, NcuIsFoundThroughCourseNcuOrPath) {
  const char* old_path = std::getenv("PATH");
  const std::string keep = old_path ? old_path : "";
  setenv("COURSE_NCU", ncu_.c_str(), 1);
  EXPECT_EQ(common::find_ncu(), ncu_);
  setenv("COURSE_NCU", (dir_ + "/nothing_here").c_str(), 1);
  EXPECT_EQ(common::find_ncu(), "");
  unsetenv("COURSE_NCU");
  setenv("PATH", ("/nonexistent:" + dir_).c_str(), 1);
  EXPECT_EQ(common::find_ncu(), ncu_);
  setenv("PATH", "/nonexistent", 1);
  EXPECT_EQ(common::find_ncu(), "");
  setenv("PATH", keep.c_str(), 1);
}
