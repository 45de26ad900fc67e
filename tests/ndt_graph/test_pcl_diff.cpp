// The differential test against PCL itself (ndt_graph/pcl_diff.hpp): its recording format and its
// divergence locator everywhere; where PCL is built (CI installs it), the filters and maps bit for
// bit against PCL's and a seeded subset of the random cases (the GPU check runs the full set with
// every version, replaying a recording).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>

#include "common/lidar_sim.hpp"
#include "ndt_graph/pcl_diff.hpp"

using namespace ndt;
using namespace ndt::pcl_diff;

namespace {

AlignResult path_of(const std::vector<std::array<double, 6>>& poses) {
  AlignResult r;
  for (const auto& p : poses) {
    TraceRow row{};
    std::copy(p.begin(), p.end(), row.pose);
    r.trace.push_back(row);
  }
  r.iterations = static_cast<int>(poses.size()) - 1;
  return r;
}

PclAlignment pcl_path_of(const std::vector<std::array<double, 6>>& poses) {
  PclAlignment a;
  for (std::size_t k = 1; k < poses.size(); ++k) {  // PCL's trace: the transform after each iteration
    double p[6];
    std::copy(poses[k].begin(), poses[k].end(), p);
    float T[12];
    float_transform(p, T);
    std::array<float, 12> row;
    std::copy(T, T + 12, row.begin());
    a.trace.push_back(row);
  }
  a.iterations = static_cast<int>(poses.size()) - 1;
  return a;
}

}  // namespace

TEST(PclDifferential, FirstDivergenceNamesTheIterationAndTellsRoundingFromAFault) {
  const std::vector<std::array<double, 6>> path = {{0, 0, 0, 0, 0, 0},
                                                   {0.1, 0.02, 0, 0.001, 0, 0.01},
                                                   {0.2, 0.03, 0.01, 0.002, 0.001, 0.02},
                                                   {0.25, 0.03, 0.01, 0.002, 0.001, 0.025}};
  const AlignResult ours = path_of(path);
  Divergence d = first_divergence(ours, pcl_path_of(path));
  EXPECT_EQ(d.iteration, 4) << d.text;  // the same transforms throughout
  EXPECT_FALSE(d.rounding);
  PclAlignment one_ulp = pcl_path_of(path);
  one_ulp.trace[1][3] = std::nextafter(one_ulp.trace[1][3], 1.0f);  // iteration 2's x, one float step
  d = first_divergence(ours, one_ulp);
  EXPECT_EQ(d.iteration, 2) << d.text;
  EXPECT_TRUE(d.rounding) << d.text;
  PclAlignment fault = pcl_path_of(path);
  fault.trace[1][3] += 1e-3f;  // a millimetre: another step, not rounding
  d = first_divergence(ours, fault);
  EXPECT_EQ(d.iteration, 2) << d.text;
  EXPECT_FALSE(d.rounding) << d.text;
  PclAlignment longer = pcl_path_of(path);
  longer.trace.push_back(longer.trace.back());
  d = first_divergence(ours, longer);
  EXPECT_FALSE(d.rounding);
  EXPECT_NE(d.text.find("this version stops and PCL goes on"), std::string::npos) << d.text;
}

TEST(PclDifferential, RecordingsRoundTripAndBadOnesAreNamedByLine) {
  const std::string path = ::testing::TempDir() + "/ndt_pcl_recording.txt";
  Recorded r;
  r.pair = "koide_vg02_both";
  r.setting = "recorded";
  r.index = 3;
  r.seed = 42;
  r.pcl.iterations = 7;
  r.pcl.likelihood = 1.25;
  r.pcl.source_points = 8061;
  r.pcl.T[0][3] = 0.5;
  r.pcl.T[3][3] = 1;
  r.truth[1][3] = -0.25;
  r.pcl.trace.push_back({1, 0, 0, 0.125f, 0, 1, 0, 0, 0, 0, 1, 0});
  write_recording({r, r}, path);
  const std::vector<Recorded> back = read_recording(path);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[1].pair, r.pair);
  EXPECT_EQ(back[1].index, 3);
  EXPECT_EQ(back[1].seed, 42u);
  EXPECT_EQ(back[1].pcl.source_points, 8061u);
  EXPECT_EQ(back[1].pcl.T[0][3], 0.5);
  EXPECT_EQ(back[1].truth[1][3], -0.25);
  ASSERT_EQ(back[1].pcl.trace.size(), 1u);
  EXPECT_EQ(back[1].pcl.trace[0][3], 0.125f);
  {  // recorded with one trig, replayed with the other: the guesses would differ, so it is refused
    struct Restore {
      ~Restore() { float_trig() = FloatTrig::rounded; }
    } restore;
    float_trig() = FloatTrig::libm;
    try {
      read_recording(path);
      ADD_FAILURE() << "a rounded-trig recording replayed with --trig libm";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("recorded with --trig rounded, replayed with --trig libm"),
                std::string::npos)
          << e.what();
    }
  }
  std::string text;
  {
    std::ifstream f(path);
    while (std::getline(f, text) && text.rfind('#', 0) == 0) {  // the header lines
    }
  }
  for (const auto& [bad, why] :
       std::vector<std::pair<std::string, std::string>>{{"CASE a b", ":2: not a recording line"},
                                                        {text.substr(0, text.size() - 4), ":2: the trace is cut short"},
                                                        {text + " 7", ":2: unexpected '7'"}}) {
    {
      std::ofstream f(path);
      f << "# header\n" << bad << "\n";
    }
    try {
      read_recording(path);
      ADD_FAILURE() << "accepted: " << bad;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(path + why), std::string::npos) << e.what();
    }
  }
  std::remove(path.c_str());
  EXPECT_THROW(read_recording(path), InputError);
}

TEST(PclDifferential, WithoutPclTheLiveComparisonSaysHowToReplay) {
  if (pcl_built()) GTEST_SKIP() << "PCL is built here: the live comparison runs (the tests below)";
  Options o;
  o.cases = 1;
  try {
    run(o);
    ADD_FAILURE() << "a live run without PCL went on";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--replay"), std::string::npos) << e.what();
  }
}

#ifdef COURSE_HAVE_PCL  // built only where PCL was found (tests/CMakeLists.txt)
TEST(PclDifferential, FiltersAndMapsAreBitForBitPclsOnASimulatedScan) {
  const auto scan = common::simulate_lidar_scan({}, 7).cloud;
  for (float leaf : {0.2f, 0.5f}) {
    const CloudDiff v = compare_filter(scan, Filter::voxel, leaf);
    if (voxel_grid_matches_pcl_bitwise())
      EXPECT_TRUE(v.same()) << "VoxelGrid " << leaf << ": " << v.first;
    else
      EXPECT_EQ(v.ours, v.pcl) << "VoxelGrid " << leaf;  // without Boost's spreadsort: the last bit may differ
    const CloudDiff a = compare_filter(scan, Filter::approx, leaf);
    EXPECT_TRUE(a.same()) << "ApproximateVoxelGrid " << leaf << ": " << a.first;
  }
  for (float res : {0.5f, 1.0f, 2.0f}) {
    const MapDiff m = compare_map(scan, res);
    EXPECT_TRUE(m.same()) << "resolution " << res << ": " << m.first << " (inverse covariances within "
                          << m.max_icov_rel << ")";
  }
}

TEST(PclDifferential, SeededRandomCasesAgreeWithPclOrSeparateOnlyByRounding) {
  Options o;
  o.pairs = {"cupcl_identity", "koide_vg02_both"};
  o.settings = {"recorded"};
  o.cases = 6;
  o.seed = 20261124;
  const Report r = run(o);
  if (r.rows.empty())
    GTEST_SKIP() << "no data: the pairs are not in " << common::data_dir() << " (set COURSE_DATA_DIR)";
  EXPECT_TRUE(r.filters_and_maps_agree) << (r.filter_lines.empty() ? "" : r.filter_lines.front());
  if (!voxel_grid_matches_pcl_bitwise())
    GTEST_SKIP() << "no Boost spreadsort here: the VoxelGrid is not PCL's to the bit";
  int agree = 0;
  for (const Row& row : r.rows) {
    EXPECT_NE(row.verdict, Verdict::differs) << row.pair << " case " << row.case_index << ": " << row.detail;
    EXPECT_NE(row.verdict, Verdict::both_fail) << row.pair << " case " << row.case_index << ": " << row.detail;
    agree += row.verdict == Verdict::agrees;
  }
  EXPECT_GE(agree * 4, static_cast<int>(r.rows.size()) * 3) << summary_markdown(r);
  ASSERT_EQ(r.recorded.size(), r.rows.size());  // one version (the reference): one PCL run per case
  // a replay of that recording reproduces every verdict
  const std::string path = ::testing::TempDir() + "/ndt_pcl_replay.txt";
  write_recording(r.recorded, path);
  o.replay = path;
  const Report again = run(o);
  ASSERT_EQ(again.rows.size(), r.rows.size());
  for (std::size_t i = 0; i < r.rows.size(); ++i) {
    EXPECT_EQ(again.rows[i].verdict, r.rows[i].verdict) << i;
    EXPECT_EQ(again.rows[i].cm_to_pcl, r.rows[i].cm_to_pcl) << i;
  }
  o.seed = 1;
  EXPECT_THROW(run(o), InputError);  // recorded with another seed
  std::remove(path.c_str());
}
#endif

// The float angles' sine and cosine: the reference's (the double value rounded to float, the same on
// every machine) or this C library's sinf/cosf (what PCL's Eigen calls, --trig libm). The rotation
// entries of the transform are those values; where this C library's sinf rounds an angle otherwise
// (glibc before 2.41 does for about 2.5% of small angles), the two transforms differ there.
TEST(PclDifferential, TheFloatTrigOfTheTransformIsTheReferencesOrThisLibrarys) {
  struct Restore {
    ~Restore() { float_trig() = FloatTrig::rounded; }
  } restore;
  ASSERT_EQ(float_trig(), FloatTrig::rounded);  // the reference's default
  int differ = 0;
  for (int i = 1; i < 4000; ++i) {
    const float a = static_cast<float>(i) * 8.7e-5f;   // 0 .. 0.35 rad, past PCL's 1e-4 cut-off
    const double p[6] = {0.5, -0.25, 0.125, 0, 0, a};  // yaw only: T[1] = -sin, T[0] = cos
    float T[12];
    float_trig() = FloatTrig::rounded;
    float_transform(p, T);
    EXPECT_EQ(T[1], -static_cast<float>(std::sin(static_cast<double>(a)))) << a;
    EXPECT_EQ(T[0], static_cast<float>(std::cos(static_cast<double>(a)))) << a;
    EXPECT_EQ(T[3], 0.5f);
    float L[12];
    float_trig() = FloatTrig::libm;
    float_transform(p, L);
    EXPECT_EQ(L[1], -sinf(a)) << a;
    EXPECT_EQ(L[0], cosf(a)) << a;
    differ += T[1] != L[1] || T[0] != L[0];
  }
  std::printf("this C library's sinf/cosf round %d of 3999 angles otherwise than the reference\n", differ);
}
