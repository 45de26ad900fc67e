// KITTI .bin and SemanticKITTI .label readers: the first 8 bytes of the input pick the label
// count the .label reader expects; the rest is the file. Either a result or PointCloudError.
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "common/pointcloud.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string bin = fuzz::temp_file(".bin"), label = fuzz::temp_file(".label");
  std::uint64_t expected = 0;
  if (size >= 8) {
    std::memcpy(&expected, data, 8);
    data += 8;
    size -= 8;
  }
  fuzz::write(bin, data, size);
  fuzz::write(label, data, size);
  try {
    const common::PointCloud pc = common::read_kitti_bin(bin);
    if (pc.size() + pc.dropped_nonfinite != size / 16) std::abort();
    for (std::size_t i = 0; i < pc.size(); ++i)
      if (!std::isfinite(pc.x[i]) || !std::isfinite(pc.y[i]) || !std::isfinite(pc.z[i])) std::abort();
  } catch (const common::PointCloudError&) {}
  try {
    const auto labels = common::read_semantickitti_labels(label, static_cast<std::size_t>(expected));
    if (labels.size() != expected) std::abort();
  } catch (const common::PointCloudError&) {}
  return 0;
}
