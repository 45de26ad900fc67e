// Every GPU version against the CPU reference: labels equal (float summation order may flip a
// threshold tie: at most 0.01% of points, and the test says how many), cell statistics within
// float tolerance. Skipped without a GPU.
#include <gtest/gtest.h>
#include "../common/exercise_support.hpp"

#include <cmath>

#include "common/device_info.hpp"
#include "common/lidar_sim.hpp"
#include "ground_seg/registry.hpp"

using namespace ground_seg;

namespace {

void expect_same(const common::PointCloud& pc, const Params& p, const Version& v, const std::string& what) {
  const Result ref = segment_cpu(pc, p);
  Result got;
  if (!course_test::implemented(v.name, [&] { got = run_once(v, pc, p, Outputs::labels_and_cells); })) return;
  EXPECT_EQ(check_invariants(pc, p, got), "") << v.name << " " << what;
  EXPECT_EQ(compare_to_reference(ref, got), "") << v.name << " " << what;
  // what the timed runs download: the same labels, no cell statistics
  const Result labels = run_once(v, pc, p, Outputs::labels);
  EXPECT_EQ(labels.is_ground, got.is_ground) << v.name << " " << what;
  EXPECT_TRUE(labels.cells.count.empty()) << v.name << " " << what;
}

}  // namespace

COURSE_TEST(GroundSegGpu, EveryVersionMatchesTheCpuOnSimulatedScans) {
  REQUIRE_GPU();
  for (const auto& v : versions()) {
    if (!v.needs_gpu || !v.make) continue;
    for (std::uint64_t seed : {11, 12})
      for (bool improved : {false, true}) {
        Params p;
        p.improved = improved;
        expect_same(common::simulate_lidar_scan({}, seed).cloud, p, v, "sim " + std::to_string(seed));
      }
  }
}

COURSE_TEST(GroundSegGpu, EveryVersionMatchesTheCpuOnTheRealScan) {
  REQUIRE_GPU();
  const std::string bin = common::data_dir() + "/semantickitti_04_000056/000056.bin";
  if (!common::file_exists(bin)) GTEST_SKIP() << "real data not found: " << bin << " (set COURSE_DATA_DIR)";
  const auto pc = common::read_kitti_bin(bin);
  for (const auto& v : versions())
    if (v.needs_gpu && v.make) expect_same(pc, Params{}, v, "04/000056");
}

COURSE_TEST(GroundSegGpu, EdgeCasesEmptyOutsideOnePointNonSquare) {
  REQUIRE_GPU();
  common::PointCloud empty, outside, one;
  outside.x = {60.f, 0.f};
  outside.y = {0.f, -51.f};
  outside.z = {-1.7f, -1.7f};
  one.x = {3.f};
  one.y = {3.f};
  one.z = {-1.7f};
  Params narrow;
  narrow.x_min = 0;
  narrow.x_max = 30;
  narrow.y_min = -5;
  narrow.y_max = 5;
  for (const auto& v : versions()) {
    if (!v.needs_gpu || !v.make) continue;
    expect_same(empty, Params{}, v, "empty");
    expect_same(outside, Params{}, v, "all outside");
    expect_same(one, Params{}, v, "one point");
    expect_same(common::simulate_lidar_scan({}, 5).cloud, narrow, v, "non-square region");
  }
}

COURSE_TEST(GroundSegGpu, StreamedEnginesLabelLikeTheCpu) {
  REQUIRE_GPU();
  const auto scan = common::simulate_lidar_scan({}, 21);
  for (bool improved : {false, true}) {
    Params p;
    p.improved = improved;
    std::vector<std::uint8_t> labels;
    const StreamedRun r = segment_gpu_streamed(scan.cloud, p, 3, 10, &labels);
    EXPECT_EQ(labels, segment_cpu(scan.cloud, p).is_ground);
    EXPECT_GT(r.frames_per_second, 0);
  }
  EXPECT_THROW(segment_gpu_streamed(scan.cloud, Params{}, 0, 1), std::invalid_argument);
}

// The two-phase runner of v4: one engine prepared for frame after frame (smaller, larger, other
// parameters, then the first again) reuses or rebuilds its buffers and graph and labels each frame
// like the CPU; restage() after the caller's points change picks the new points up.
COURSE_TEST(GroundSegGpu, FrameEngineIsPreparedForFrameAfterFrame) {
  REQUIRE_GPU();
  const auto big = common::simulate_lidar_scan({}, 31).cloud;
  common::PointCloud small = big;
  small.x.resize(big.size() / 3);
  small.y.resize(big.size() / 3);
  small.z.resize(big.size() / 3);
  Params improved;
  improved.improved = true;
  FrameEngine engine;
  EXPECT_THROW(engine.enqueue(), std::logic_error);
  struct Case {
    const common::PointCloud* pc;
    Params p;
    Outputs out;
  };
  for (const Case& c : {Case{&small, Params{}, Outputs::labels}, Case{&big, Params{}, Outputs::labels_and_cells},
                        Case{&small, improved, Outputs::labels_and_cells}, Case{&small, Params{}, Outputs::labels}}) {
    engine.prepare({c.pc, c.p, c.out});
    for (int run = 0; run < 2; ++run) {  // a replay gives the same frame
      engine.run();
      const Result got = engine.result();
      const Result ref = segment_cpu(*c.pc, c.p);
      EXPECT_EQ(got.is_ground, ref.is_ground) << c.pc->size() << " points, run " << run;
      EXPECT_EQ(got.cells.count.empty(), c.out == Outputs::labels);
      if (c.out == Outputs::labels_and_cells) EXPECT_EQ(compare_to_reference(ref, got), "");
    }
    EXPECT_GT(engine.kernel_ms(), 0);
  }
  common::PointCloud moved = small;  // the caller's buffer changes: restage picks it up
  engine.prepare({&moved, Params{}, Outputs::labels});
  engine.run();
  const auto before = engine.result().is_ground;
  for (std::size_t i = 0; i < moved.size(); ++i) moved.z[i] += (i % 2) ? 1.f : -1.f;  // no flat cell is left
  engine.restage();
  engine.run();
  const auto after = engine.result().is_ground;
  EXPECT_EQ(after, segment_cpu(moved, Params{}).is_ground);
  EXPECT_NE(after, before);
}
