// The one point-cloud reader of the project (ground_seg now, ndt_graph later): KITTI .bin,
// SemanticKITTI .label, PCD v0.7 (DATA ascii, binary, binary_compressed/LZF, organized clouds).
// Malformed files are rejected with the file name and the reason; points with a NaN or infinite
// coordinate are dropped and counted (organized clouds mark missing returns that way), and so are
// points of an organized cloud lying exactly at the origin (some drivers, Ouster's among them,
// write a missing return as 0, 0, 0 instead of NaN).
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace common {

class PointCloudError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct PointCloud {
  std::vector<float> x, y, z, intensity;    // intensity empty when the file has none
  std::size_t dropped_nonfinite = 0;        // points removed for NaN/inf coordinates
  std::size_t dropped_no_return = 0;        // organized clouds: points exactly at the origin
  std::size_t width = 0, height = 1;        // as stored (height > 1: organized)
  std::vector<std::uint32_t> source_index;  // index in the file of each kept point
  std::size_t size() const { return x.size(); }
};

// `COURSE_DATA_DIR`, or "data" when unset.
std::string data_dir();
bool file_exists(const std::string& path);

PointCloud read_kitti_bin(const std::string& path);
// uint32 per point; `expected_points` is the number of points in the matching .bin file.
std::vector<std::uint32_t> read_semantickitti_labels(const std::string& path, std::size_t expected_points);
PointCloud read_pcd(const std::string& path);
// Reads .bin or .pcd by extension.
PointCloud read_point_cloud(const std::string& path);

// LZF (liblzf format, as PCD's binary_compressed uses); throws on malformed input.
std::vector<unsigned char> lzf_decompress(const unsigned char* in, std::size_t in_len, std::size_t out_len,
                                          const std::string& name);

}  // namespace common
