// The differential test's PCL side where CMake did not find PCL: the tool replays a recording made
// where PCL is (ndt_pcl_diff --record), and the live comparisons say why they cannot run.
#include "ndt_graph/pcl_diff.hpp"

namespace ndt::pcl_diff {

namespace {
[[noreturn]] void no_pcl() {
  throw InputError(
      "PCL is not built here (CMake did not find it; apt install libpcl-dev): compare with a recording "
      "made where it is (ndt_pcl_diff --record FILE there, --replay FILE here)");
}
}  // namespace

bool pcl_built() { return false; }
CloudDiff compare_filter(const common::PointCloud&, Filter, float) { no_pcl(); }
MapDiff compare_map(const common::PointCloud&, float) { no_pcl(); }
PclAlignment pcl_align(const common::PointCloud&, const common::PointCloud&, const double (&)[6]) { no_pcl(); }
std::string pcl_derivatives_at(const VoxelMap&, const common::PointCloud&, const common::PointCloud&,
                               const double (&)[6]) {
  no_pcl();
}

}  // namespace ndt::pcl_diff
