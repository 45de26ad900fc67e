// PCD reader (ascii, binary, binary_compressed/LZF, organized): any bytes either parse into a
// consistent cloud or throw PointCloudError; nothing else (no crash, no other exception, no read
// past a buffer, no allocation the file's size does not justify: -malloc_limit_mb catches those).
#include <cmath>
#include <cstdlib>

#include "common/pointcloud.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = fuzz::temp_file(".pcd");
  fuzz::write(path, data, size);
  try {
    const common::PointCloud pc = common::read_pcd(path);
    // what the readers promise about what they return
    if (pc.y.size() != pc.size() || pc.z.size() != pc.size()) std::abort();
    if (!pc.intensity.empty() && pc.intensity.size() != pc.size()) std::abort();
    if (pc.source_index.size() != pc.size()) std::abort();
    for (std::size_t i = 0; i < pc.size(); ++i)
      if (!std::isfinite(pc.x[i]) || !std::isfinite(pc.y[i]) || !std::isfinite(pc.z[i])) std::abort();
  } catch (const common::PointCloudError&) {}
  return 0;
}
