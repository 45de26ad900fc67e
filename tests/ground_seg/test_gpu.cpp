// Every GPU version against the CPU reference: labels equal (float summation order may flip a
// threshold tie: at most 0.01% of points, and the test says how many), cell statistics within
// float tolerance. Skipped without a GPU.
#include <gtest/gtest.h>

#include <cmath>

#include "common/device_info.hpp"
#include "common/lidar_sim.hpp"
#include "ground_seg/registry.hpp"

using namespace ground_seg;

namespace {

void expect_same(const common::PointCloud& pc, const Params& p, const Version& v, const std::string& what) {
  const Result ref = segment_cpu(pc, p);
  const Result got = v.run(pc, p);
  EXPECT_EQ(check_invariants(pc, p, got), "") << v.name << " " << what;
  ASSERT_EQ(got.is_ground.size(), ref.is_ground.size());
  std::size_t flips = 0;
  for (std::size_t i = 0; i < ref.is_ground.size(); ++i) flips += got.is_ground[i] != ref.is_ground[i];
  EXPECT_LE(flips, ref.is_ground.size() / 10000) << v.name << " " << what << ": " << flips << " labels differ";
  EXPECT_EQ(got.outside, ref.outside) << v.name << " " << what;
  EXPECT_EQ(got.cells.count, ref.cells.count) << v.name << " " << what;
  for (std::size_t k = 0; k < ref.cells.count.size(); ++k) {
    if (!ref.cells.count[k]) continue;
    ASSERT_NEAR(got.cells.mean[k], ref.cells.mean[k], 1e-6f * (1 + std::fabs(ref.cells.mean[k]))) << v.name << " cell " << k;
    ASSERT_NEAR(got.cells.var[k], ref.cells.var[k], 1e-6f * ref.cells.var[k] + 1e-9f) << v.name << " cell " << k;
    ASSERT_EQ(got.cells.min[k], ref.cells.min[k]) << v.name << " cell " << k;
    ASSERT_EQ(got.cells.max[k], ref.cells.max[k]) << v.name << " cell " << k;
  }
}

}  // namespace

TEST(GroundSegGpu, EveryVersionMatchesTheCpuOnSimulatedScans) {
  if (!common::has_cuda_device()) GTEST_SKIP() << "no CUDA device";
  for (const auto& v : versions()) {
    if (!v.needs_gpu) continue;
    for (std::uint64_t seed : {11, 12})
      for (bool improved : {false, true}) {
        Params p;
        p.improved = improved;
        expect_same(common::simulate_lidar_scan({}, seed).cloud, p, v, "sim " + std::to_string(seed));
      }
  }
}

TEST(GroundSegGpu, EveryVersionMatchesTheCpuOnTheRealScan) {
  if (!common::has_cuda_device()) GTEST_SKIP() << "no CUDA device";
  const std::string bin = common::data_dir() + "/semantickitti_04_000056/000056.bin";
  if (!common::file_exists(bin)) GTEST_SKIP() << "real data not found: " << bin << " (set COURSE_DATA_DIR)";
  const auto pc = common::read_kitti_bin(bin);
  for (const auto& v : versions())
    if (v.needs_gpu) expect_same(pc, Params{}, v, "04/000056");
}

TEST(GroundSegGpu, EdgeCasesEmptyOutsideOnePointNonSquare) {
  if (!common::has_cuda_device()) GTEST_SKIP() << "no CUDA device";
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
    if (!v.needs_gpu) continue;
    expect_same(empty, Params{}, v, "empty");
    expect_same(outside, Params{}, v, "all outside");
    expect_same(one, Params{}, v, "one point");
    expect_same(common::simulate_lidar_scan({}, 5).cloud, narrow, v, "non-square region");
  }
}

TEST(GroundSegGpu, StreamedEnginesLabelLikeTheCpu) {
  if (!common::has_cuda_device()) GTEST_SKIP() << "no CUDA device";
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
