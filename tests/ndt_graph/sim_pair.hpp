// The simulated registration pair the GPU tests align: one street scene scanned from two sensor
// poses (seed 11), both VoxelGrid-filtered at 0.2 m, and a guess a few centimetres and a few
// hundredths of a radian off the truth.
#pragma once
#include <algorithm>

#include "common/lidar_sim.hpp"
#include "ndt_graph/ndt.hpp"

namespace ndt_test {

struct Pair {
  common::PointCloud target, source;
  double guess[6];
};

inline Pair sim_pair() {
  common::LidarSimParams a, b;
  b.sensor_x = 1.0f;
  b.sensor_y = -0.4f;
  b.sensor_yaw = 0.06f;
  Pair p;
  p.target = ndt::voxel_grid_filter(common::simulate_lidar_scan(a, 11).cloud, 0.2f);
  p.source = ndt::voxel_grid_filter(common::simulate_lidar_scan(b, 11).cloud, 0.2f);
  const double g[6] = {1.15, -0.3, 0.03, 0.0, 0.01, 0.09};
  std::copy(g, g + 6, p.guess);
  return p;
}

}  // namespace ndt_test
