// The CPU reference on hand-built clouds, the scoring convention, and the real labelled scan.
#include <gtest/gtest.h>
#include "../common/exercise_support.hpp"

#include <array>
#include <limits>
#include <cmath>
#include <fstream>
#include <iterator>

#include "common/lidar_sim.hpp"
#include "common/pointcloud.hpp"
#include "ground_seg/ground_seg.hpp"

using namespace ground_seg;

namespace {

common::PointCloud cloud(const std::vector<std::array<float, 3>>& pts) {
  common::PointCloud pc;
  for (const auto& p : pts) {
    pc.x.push_back(p[0]);
    pc.y.push_back(p[1]);
    pc.z.push_back(p[2]);
  }
  return pc;
}

// n points within 0.1 m of (cx, cy), which must be a cell centre: -50 + (i + 0.5) * 0.3
template <typename F>
void add_cell(std::vector<std::array<float, 3>>& pts, float cx, float cy, int n, F zf) {
  for (int k = 0; k < n; ++k) pts.push_back({cx + 0.1f * std::sin(k * 1.3f), cy + 0.1f * std::cos(k * 0.7f), zf(k)});
}

Result run(const std::vector<std::array<float, 3>>& pts, bool improved = false, Params p = {}) {
  p.improved = improved;
  const auto pc = cloud(pts);
  Result r = segment_cpu(pc, p);
  EXPECT_EQ(check_invariants(pc, p, r), "");
  return r;
}

std::size_t count(const std::vector<std::uint8_t>& v) {
  std::size_t n = 0;
  for (auto x : v) n += x;
  return n;
}

}  // namespace

COURSE_TEST(GroundSegCpu, FlatPlaneIsAllGround) {
  std::vector<std::array<float, 3>> pts;
  for (int i = -20; i <= 20; ++i)
    for (int j = -20; j <= 20; ++j) pts.push_back({0.1f * i, 0.1f * j, -1.7f + 0.001f * ((i * 7 + j) % 5)});
  const auto r = run(pts);
  EXPECT_EQ(count(r.is_ground), pts.size());
}

COURSE_TEST(GroundSegCpu, PlanePlusBoxKeepsTheBoxSidesOff) {
  std::vector<std::array<float, 3>> pts;
  for (int i = -20; i <= 20; ++i)
    for (int j = -20; j <= 20; ++j) pts.push_back({0.1f * i + 10, 0.1f * j, -1.7f});
  const std::size_t plane = pts.size();
  for (int k = 0; k < 40; ++k) pts.push_back({10.6f, 0.05f, -1.7f + 0.05f * k});  // a vertical face: high variance
  const auto r = run(pts);
  for (std::size_t i = plane; i < pts.size(); ++i) EXPECT_FALSE(r.is_ground[i]) << i;
}

COURSE_TEST(GroundSegCpu, SlopeIsGround) {
  std::vector<std::array<float, 3>> pts;
  for (int i = 0; i < 200; ++i)
    for (int j = -10; j <= 10; ++j) pts.push_back({5 + 0.05f * i, 0.1f * j, -1.7f + 0.05f * (5 + 0.05f * i)});
  EXPECT_EQ(count(run(pts).is_ground), pts.size());  // 5% slope: variance inside a cell ~ 2e-5
}

COURSE_TEST(GroundSegCpu, CarRoofFoolsTheVarianceRuleButNotTheImprovedOne) {
  std::vector<std::array<float, 3>> pts;
  for (float x = 5; x < 15; x += 0.1f)
    for (float y = -4; y < 4; y += 0.1f) {
      const bool roof = x > 9 && x < 11 && y > -0.8f && y < 0.8f;
      pts.push_back({x, y, roof ? -0.2f : -1.7f});  // a flat roof 1.5 m above the road
    }
  const auto pc = cloud(pts);
  Params p;
  const auto var_rule = segment_cpu(pc, p);
  p.improved = true;
  const auto improved = segment_cpu(pc, p);
  std::size_t roof_variance = 0, roof_improved = 0, road_lost = 0;
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const bool roof = pts[i][2] > -1.f;
    roof_variance += roof && var_rule.is_ground[i];
    roof_improved += roof && improved.is_ground[i];
    road_lost += !roof && var_rule.is_ground[i] && !improved.is_ground[i];
  }
  EXPECT_GT(roof_variance, 100u);  // the known failure
  EXPECT_EQ(roof_improved, 0u);    // fixed
  EXPECT_EQ(road_lost, 0u);        // without losing road
}

COURSE_TEST(GroundSegCpu, EmptyCloudAllOutsideAndOnePoint) {
  EXPECT_TRUE(run({}).is_ground.empty());
  const auto out = run({{60.f, 0.f, -1.7f}, {0.f, -51.f, -1.7f}});
  EXPECT_EQ(out.outside, 2u);
  EXPECT_EQ(count(out.is_ground), 0u);
  const auto one = run({{3.f, 3.f, -1.7f}});  // a lone sparse cell: nothing contradicts flatness
  EXPECT_EQ(count(one.is_ground), 1u);
}

COURSE_TEST(GroundSegCpu, CellsWith1_2_32_33_AndOver1024Points) {
  for (int n : {1, 2, 32, 33, 1500}) {
    std::vector<std::array<float, 3>> pts;
    add_cell(pts, 2.35f, 2.35f, n, [](int k) { return -1.7f + 0.02f * (k % 2); });  // variance 1e-4: flat
    const auto r = run(pts);
    EXPECT_EQ(count(r.is_ground), static_cast<std::size_t>(n)) << n;
    std::size_t cells = 0;
    for (auto c : r.cells.count) cells += c == static_cast<unsigned>(n);
    EXPECT_EQ(cells, 1u) << n;
    std::vector<std::array<float, 3>> rough;
    add_cell(rough, 2.35f, 2.35f, n, [](int k) { return -1.7f + 0.5f * (k % 2); });  // variance 0.0625
    const auto rr = run(rough);
    if (n >= 3) EXPECT_EQ(count(rr.is_ground), 0u) << n;
  }
}

COURSE_TEST(GroundSegCpu, CellStatisticsMatchFloat64) {
  std::vector<std::array<float, 3>> pts;
  add_cell(pts, 1.15f, -0.95f, 1000, [](int k) { return -1.7f + 0.001f * (k % 17); });
  const auto r = run(pts);
  double s = 0, q = 0;
  for (const auto& p : pts) s += p[2];
  const double mean = s / pts.size();
  for (const auto& p : pts) q += (p[2] - mean) * (p[2] - mean);
  for (std::size_t k = 0; k < r.cells.count.size(); ++k)
    if (r.cells.count[k]) {
      EXPECT_NEAR(r.cells.mean[k], mean, 1e-6);
      EXPECT_NEAR(r.cells.var[k], q / pts.size(), 1e-9);
    }
}

COURSE_TEST(GroundSegCpu, NonSquareRegionAndBadParameters) {
  Params p;
  p.x_min = 0;
  p.x_max = 30;
  p.y_min = -5;
  p.y_max = 5;
  EXPECT_EQ(p.nx(), 100);
  EXPECT_EQ(p.ny(), 34);
  const auto r = run({{29.9f, 4.9f, -1.7f}, {-1.f, 0.f, -1.7f}, {10.f, 6.f, -1.7f}}, false, p);
  EXPECT_EQ(r.outside, 2u);
  Params bad;
  bad.cell = 0;
  EXPECT_THROW(bad.validate(), std::invalid_argument);
  bad = Params{};
  bad.x_max = bad.x_min;
  EXPECT_THROW(bad.validate(), std::invalid_argument);
  // a cell larger than the region (zero cells once cast), a grid that overflows the int counts
  bad = Params{};
  bad.cell = 1e7f;
  EXPECT_THROW(bad.validate(), std::invalid_argument);
  bad = Params{};
  bad.x_min = -1e30f;
  bad.x_max = 1e30f;
  EXPECT_THROW(bad.validate(), std::invalid_argument);
  bad = Params{};
  bad.cell = std::numeric_limits<float>::infinity();
  EXPECT_THROW(bad.validate(), std::invalid_argument);
}

COURSE_TEST(GroundSegScore, PatchworkConvention) {
  EXPECT_EQ(semantic_class(40), GroundTruth::Ground);
  EXPECT_EQ(semantic_class(72 | (5u << 16)), GroundTruth::Ground);  // instance bits ignored
  EXPECT_EQ(semantic_class(70), GroundTruth::Ignored);
  EXPECT_EQ(semantic_class(10), GroundTruth::NonGround);
  const auto pc = cloud({{0, 0, 0}, {1, 0, 0}, {2, 0, 0}, {3, 0, 0}, {4, 0, 0}});
  const auto a = score(pc, {1, 1, 0, 0, 1}, {40, 10, 48, 50, 70});
  EXPECT_EQ(a.tp, 1u);
  EXPECT_EQ(a.fp, 1u);
  EXPECT_EQ(a.fn, 1u);
  EXPECT_EQ(a.tn, 1u);
  EXPECT_EQ(a.scored, 4u);
  EXPECT_DOUBLE_EQ(a.f1(), 0.5);
  EXPECT_DOUBLE_EQ(a.iou(), 1.0 / 3.0);
}

COURSE_TEST(GroundSegReal, VarianceRuleReproducesTheCrossCheckOn04_000056) {
  const std::string base = common::data_dir() + "/semantickitti_04_000056/000056";
  if (!common::file_exists(base + ".bin"))
    GTEST_SKIP() << "real data not found: " << base << ".bin (set COURSE_DATA_DIR)";
  const auto pc = common::read_kitti_bin(base + ".bin");
  const auto labels = common::read_semantickitti_labels(base + ".label", pc.size());
  Params p;  // variance 0.01, height 0.2, point threshold 3
  const auto var_rule = score(pc, segment_cpu(pc, p).is_ground, labels);
  EXPECT_EQ(var_rule.gt_ground, 59328u);  // the data README's counts
  EXPECT_EQ(var_rule.scored, 78776u);
  EXPECT_NEAR(100 * var_rule.f1(), 97.3, 0.1);  // independent implementation: F1 97.3, P 99.6, R 95.0
  EXPECT_NEAR(100 * var_rule.precision(), 99.6, 0.1);
  EXPECT_NEAR(100 * var_rule.recall(), 95.0, 0.1);
  p.improved = true;
  const auto improved = score(pc, segment_cpu(pc, p).is_ground, labels);
  EXPECT_GE(improved.recall(), var_rule.recall());  // the improvement must not cost recall
  EXPECT_LT(improved.fp, var_rule.fp);
}

COURSE_TEST(GroundSegSim, ImprovedRuleRemovesRaisedFlatSurfacesWithoutLosingRecall) {
  for (std::uint64_t s : {1, 2}) {
    const auto scan = common::simulate_lidar_scan({}, s);
    Params p;
    const auto var_rule = score(scan.cloud, segment_cpu(scan.cloud, p).is_ground, scan.labels);
    p.improved = true;
    const auto improved = score(scan.cloud, segment_cpu(scan.cloud, p).is_ground, scan.labels);
    EXPECT_GT(var_rule.fp, 50u) << s;  // car roofs and one-beam wall cells are there to fail on
    EXPECT_LT(improved.fp, var_rule.fp / 4) << s;
    EXPECT_GE(improved.recall(), var_rule.recall() - 1e-9) << s;
  }
}

COURSE_TEST(GroundSegCpu, OpenMpVersionMatchesTheReference) {
  for (std::uint64_t seed : {31, 32})
    for (bool improved : {false, true}) {
      const auto scan = common::simulate_lidar_scan({}, seed);
      Params p;
      p.improved = improved;
      const Result ref = segment_cpu(scan.cloud, p), omp = segment_cpu_openmp(scan.cloud, p);
      EXPECT_EQ(check_invariants(scan.cloud, p, omp), "");
      EXPECT_EQ(omp.cells.count, ref.cells.count);
      EXPECT_EQ(omp.outside, ref.outside);
      std::size_t flips = 0;
      for (std::size_t i = 0; i < ref.is_ground.size(); ++i) flips += omp.is_ground[i] != ref.is_ground[i];
      EXPECT_LE(flips, ref.is_ground.size() / 10000) << flips << " labels differ (float64 summation order)";
      for (std::size_t k = 0; k < ref.cells.count.size(); ++k)
        if (ref.cells.count[k]) ASSERT_NEAR(omp.cells.var[k], ref.cells.var[k], 1e-6f * ref.cells.var[k] + 1e-9f) << k;
    }
}

COURSE_TEST(GroundSegCpu, NanCoordinatesGivenDirectlyAreOutsideAndNonGround) {
  const auto r = run({{NAN, 1.f, -1.7f}, {1.f, NAN, -1.7f}, {2.f, 2.f, -1.7f}});
  EXPECT_EQ(r.outside, 2u);  // a NaN fails every region comparison
  EXPECT_FALSE(r.is_ground[0]);
  EXPECT_FALSE(r.is_ground[1]);
  EXPECT_TRUE(r.is_ground[2]);
}

COURSE_TEST(GroundSegOutputs, LabelsAndCellStatisticsFiles) {
  auto scan = common::simulate_lidar_scan({}, 8);
  const Params p;
  const Result r = segment_cpu(scan.cloud, p);
  const std::string labels = ::testing::TempDir() + "labels.bin", cells = ::testing::TempDir() + "cells.csv";
  write_labels(labels, scan.cloud, r.is_ground);
  write_cell_stats_csv(cells, r.cells, p);
  std::ifstream lb(labels, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(lb)), std::istreambuf_iterator<char>());
  ASSERT_EQ(bytes.size(), scan.cloud.size());
  std::size_t ground = 0;
  for (char b : bytes) ground += b == 1;
  std::size_t expect = 0;
  for (auto g : r.is_ground) expect += g;
  EXPECT_EQ(ground, expect);
  std::ifstream cs(cells);
  std::string line;
  std::size_t lines = 0, nonempty = 0;
  while (std::getline(cs, line)) ++lines;
  for (auto c : r.cells.count) nonempty += c > 0;
  EXPECT_EQ(lines, nonempty + 1);  // header + one row per non-empty cell
}

// The driver's check of every version against the reference finds what it must.
COURSE_TEST(GroundSegCpu, CompareToReferenceFindsEveryKindOfDifference) {
  const auto scan = common::simulate_lidar_scan({}, 3);
  const Params p;
  const Result ref = segment_cpu(scan.cloud, p);
  EXPECT_EQ(compare_to_reference(ref, ref), "");
  Result one_flip = ref;  // a threshold tie: tolerated up to 0.01% of the points
  one_flip.is_ground[0] ^= 1;
  EXPECT_EQ(compare_to_reference(ref, one_flip), "");
  Result flips = ref;
  for (std::size_t i = 0; i < flips.is_ground.size(); i += 1000) flips.is_ground[i] ^= 1;
  EXPECT_NE(compare_to_reference(ref, flips).find("labels differ"), std::string::npos);
  Result outside = ref;
  outside.outside += 1;
  EXPECT_NE(compare_to_reference(ref, outside).find("outside"), std::string::npos);
  Result labels_only = ref;
  labels_only.cells = {};
  EXPECT_EQ(compare_to_reference(ref, labels_only), "");
  std::size_t k = 0;
  while (ref.cells.count[k] == 0) ++k;
  Result count = ref;
  count.cells.count[k] += 1;
  EXPECT_NE(compare_to_reference(ref, count).find("points"), std::string::npos);
  Result mean = ref;
  mean.cells.mean[k] += 0.01f;
  EXPECT_NE(compare_to_reference(ref, mean).find("mean"), std::string::npos);
  Result mx = ref;
  mx.cells.max[k] = std::nextafter(mx.cells.max[k], 1e9f);
  EXPECT_NE(compare_to_reference(ref, mx).find("max"), std::string::npos);
  Result shorter = ref;
  shorter.is_ground.pop_back();
  EXPECT_NE(compare_to_reference(ref, shorter).find("labels"), std::string::npos);
}
