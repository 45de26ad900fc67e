#include "common/lidar_sim.hpp"

#include <cmath>
#include <limits>
#include <random>

namespace common {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
enum Label : std::uint32_t {
  kRoad = 40,
  kSidewalk = 48,
  kTerrain = 72,
  kCar = 10,
  kBuilding = 50,
  kPole = 80,
  kVegetation = 70,
  kTrunk = 71
};

struct Box {
  float x0, x1, y0, y1, z0, z1;
  std::uint32_t label;
};
struct Cylinder {
  float x, y, r, z0, z1;
  std::uint32_t label;
};
struct Sphere {
  float x, y, z, r;
  std::uint32_t label;
};

struct Ray {
  float ox, oy, oz, dx, dy, dz;
};

// Slab test: entry distance of the ray into the box, or inf.
float hit_box(const Ray& r, const Box& b) {
  float t0 = 0.f, t1 = kInf;
  const float o[3] = {r.ox, r.oy, r.oz}, d[3] = {r.dx, r.dy, r.dz};
  const float lo[3] = {b.x0, b.y0, b.z0}, hi[3] = {b.x1, b.y1, b.z1};
  for (int a = 0; a < 3; ++a) {
    if (std::fabs(d[a]) < 1e-12f) {
      if (o[a] < lo[a] || o[a] > hi[a]) return kInf;
      continue;
    }
    float ta = (lo[a] - o[a]) / d[a], tb = (hi[a] - o[a]) / d[a];
    if (ta > tb) std::swap(ta, tb);
    t0 = std::max(t0, ta);
    t1 = std::min(t1, tb);
    if (t0 > t1) return kInf;
  }
  return t0 > 1e-4f ? t0 : kInf;
}

float hit_cylinder(const Ray& r, const Cylinder& c) {
  const float px = r.ox - c.x, py = r.oy - c.y;
  const float a = r.dx * r.dx + r.dy * r.dy, b = 2 * (px * r.dx + py * r.dy), cc = px * px + py * py - c.r * c.r;
  const float disc = b * b - 4 * a * cc;
  if (a < 1e-12f || disc < 0) return kInf;
  const float t = (-b - std::sqrt(disc)) / (2 * a);
  if (t <= 1e-4f) return kInf;
  const float z = r.oz + t * r.dz;
  return z >= c.z0 && z <= c.z1 ? t : kInf;
}

float hit_sphere(const Ray& r, const Sphere& s) {
  const float px = r.ox - s.x, py = r.oy - s.y, pz = r.oz - s.z;
  const float b = px * r.dx + py * r.dy + pz * r.dz, c = px * px + py * py + pz * pz - s.r * s.r;
  const float disc = b * b - c;
  if (disc < 0) return kInf;
  const float t = -b - std::sqrt(disc);
  return t > 1e-4f ? t : kInf;
}

}  // namespace

SimulatedScan simulate_lidar_scan(const LidarSimParams& p, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> U(0.f, 1.f);
  std::normal_distribution<float> noise(0.f, p.range_noise);
  const float h = p.sensor_height, slope = p.road_slope, rw = p.road_half_width;
  const float side_end = rw + p.sidewalk_width;
  auto ground_z = [&](float x, float y) {  // surface height under (x, y)
    return -h + slope * x + (std::fabs(y) > rw ? p.curb_height : 0.f);
  };
  std::vector<Box> boxes;
  std::vector<Cylinder> cylinders;
  std::vector<Sphere> spheres;
  for (int i = 0; i < p.cars; ++i) {  // parked along both curbs, a few in the lanes
    const bool parked = i < p.cars - 3;
    const float x = -60.f + 120.f * U(rng);
    if (std::fabs(x) < 6.f) continue;  // not on top of the sensor
    const float side = U(rng) < 0.5f ? -1.f : 1.f;
    const float yc = parked ? side * (rw - 1.1f) : side * (1.8f + 0.4f * U(rng));
    const float len = 4.2f + 0.6f * U(rng), wid = 1.75f + 0.15f * U(rng);
    const float base = ground_z(x, 0.f);
    boxes.push_back({x - len / 2, x + len / 2, yc - wid / 2, yc + wid / 2, base + 0.25f, base + 1.0f, kCar});
    boxes.push_back({x - len / 4, x + len / 5, yc - wid / 2 + 0.1f, yc + wid / 2 - 0.1f, base + 1.0f,
                     base + 1.45f + 0.1f * U(rng), kCar});  // cabin: the flat roof the seed rule calls ground
  }
  for (int i = 0; i < p.walls; ++i) {  // building fronts behind the sidewalks
    const float x0 = -90.f + 180.f * i / p.walls + 4.f * U(rng), len = 12.f + 14.f * U(rng);
    const float side = i % 2 ? 1.f : -1.f, y = side * (side_end + 0.5f + 2.f * U(rng));
    boxes.push_back({x0, x0 + len, std::min(y, y + side * 6.f), std::max(y, y + side * 6.f), -h - 5.f, 8.f, kBuilding});
  }
  for (int i = 0; i < p.poles; ++i) {
    const float x = -70.f + 140.f * (i + U(rng)) / p.poles, y = (i % 2 ? 1.f : -1.f) * (rw + 0.5f);
    cylinders.push_back({x, y, 0.12f, ground_z(x, y), ground_z(x, y) + 6.5f, kPole});
  }
  for (int i = 0; i < p.trees; ++i) {
    const float x = -80.f + 160.f * U(rng), y = (i % 2 ? 1.f : -1.f) * (side_end + 1.5f + 10.f * U(rng));
    const float g = ground_z(x, y);
    cylinders.push_back({x, y, 0.2f, g, g + 2.5f, kTrunk});
    spheres.push_back({x, y, g + 3.5f, 1.5f + 1.0f * U(rng), kVegetation});
    spheres.push_back({x + 2.f, y + 1.f, g + 0.2f, 0.6f + 0.3f * U(rng), kVegetation});  // a bush: a mixed cell
  }
  SimulatedScan scan;
  const double pi = 3.14159265358979323846;
  std::uint32_t index = 0;
  for (int b = 0; b < p.beams; ++b) {
    const double el = (p.fov_up_deg + (p.fov_down_deg - p.fov_up_deg) * b / (p.beams - 1)) * pi / 180.0;
    for (int a = 0; a < p.azimuth_steps; ++a, ++index) {
      const double az = 2 * pi * a / p.azimuth_steps;
      const double world_az = az + p.sensor_yaw;
      const Ray r{p.sensor_x,
                  p.sensor_y,
                  0.f,
                  float(std::cos(el) * std::cos(world_az)),
                  float(std::cos(el) * std::sin(world_az)),
                  float(std::sin(el))};
      float best = kInf;
      std::uint32_t label = 0;
      // ground: the road plane, the raised sidewalk/terrain plane, and the curb faces
      const float denom = r.dz - slope * r.dx;
      if (denom < -1e-6f) {
        const float t = (-h + slope * r.ox) / denom;  // z = -h + slope x on the road
        const float y = r.oy + t * r.dy;
        if (t > 0 && std::fabs(y) <= rw && t < best) {
          best = t;
          label = kRoad;
        }
        const float t2 = (-h + p.curb_height + slope * r.ox) / denom;
        const float y2 = r.oy + t2 * r.dy;
        if (t2 > 0 && std::fabs(y2) > rw && t2 < best) {
          best = t2;
          label = std::fabs(y2) <= side_end ? kSidewalk : kTerrain;
        }
      }
      if (std::fabs(r.dy) > 1e-6f)
        for (float side : {-1.f, 1.f}) {  // vertical curb faces at |y| = rw
          const float t = (side * rw - r.oy) / r.dy;
          if (t <= 0 || t >= best) continue;
          const float x = r.ox + t * r.dx, z = t * r.dz, g = -h + slope * x;
          if (z >= g && z <= g + p.curb_height) {
            best = t;
            label = kSidewalk;
          }
        }
      for (const auto& bx : boxes) {
        const float t = hit_box(r, bx);
        if (t < best) {
          best = t;
          label = bx.label;
        }
      }
      for (const auto& c : cylinders) {
        const float t = hit_cylinder(r, c);
        if (t < best) {
          best = t;
          label = c.label;
        }
      }
      for (const auto& s : spheres) {
        const float t = hit_sphere(r, s);
        if (t < best) {
          best = t;
          label = s.label;
        }
      }
      if (!(best < p.max_range)) continue;  // no return
      const float range = best + noise(rng);
      // back into the sensor frame: the beam direction before the sensor's yaw
      const float lx = float(std::cos(el) * std::cos(az)), ly = float(std::cos(el) * std::sin(az));
      scan.cloud.x.push_back(range * lx);
      scan.cloud.y.push_back(range * ly);
      scan.cloud.z.push_back(range * r.dz);
      scan.cloud.intensity.push_back(label == kRoad ? 0.2f : 0.5f);
      scan.cloud.source_index.push_back(static_cast<std::uint32_t>(scan.labels.size()));
      scan.labels.push_back(label);
    }
  }
  return scan;
}

}  // namespace common
