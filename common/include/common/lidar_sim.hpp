// A simulated multi-beam LiDAR (KITTI-like geometry: 64 beams from +2 to -24.8 degrees, sensor
// 1.73 m above the road) ray-cast into a procedural street scene — a sloped road with curbs,
// sidewalks, terrain, parked and moving cars, building walls, poles and trees — that labels every
// point with a SemanticKITTI class id, so accuracy is measurable without downloads. Deterministic
// from the seed. Coordinates are in the sensor frame (x forward, y left, z up); the sensor may
// stand anywhere on the road plane (sensor_x, sensor_y, sensor_yaw).
#pragma once
#include <cstdint>
#include <vector>

#include "common/pointcloud.hpp"

namespace common {

struct LidarSimParams {
  int beams = 64;
  int azimuth_steps = 1875;  // 64 x 1875 = 120,000 rays (HDL-64E: ~0.19 degrees apart)
  float fov_up_deg = 2.0f, fov_down_deg = -24.8f;
  float sensor_height = 1.73f;
  float max_range = 100.f;
  float range_noise = 0.01f;  // m, gaussian
  float road_slope = 0.03f;   // rise per metre along x
  float road_half_width = 5.0f;
  float curb_height = 0.15f;
  float sidewalk_width = 3.0f;
  int cars = 14, poles = 10, trees = 12, walls = 6;
  // Where the sensor stands in the scene (the scene itself depends only on the seed): scanning the
  // same seed from two poses gives a registration pair with a known relative transform.
  float sensor_x = 0.f, sensor_y = 0.f, sensor_yaw = 0.f;
};

struct SimulatedScan {
  PointCloud cloud;
  std::vector<std::uint32_t> labels;  // SemanticKITTI ids: 40 road, 48 sidewalk, 72 terrain,
                                      // 10 car, 50 building, 80 pole, 70 vegetation, 71 trunk
};

SimulatedScan simulate_lidar_scan(const LidarSimParams& p, std::uint64_t seed);

}  // namespace common
