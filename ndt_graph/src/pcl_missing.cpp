// Built instead of pcl_version.cpp when CMake does not find PCL: the registry then lists the
// `pcl` version as skipped with the reason.
#include "ndt_graph/registry_detail.hpp"

namespace ndt {

bool pcl_available() { return false; }
std::unique_ptr<Runner> make_pcl() { return nullptr; }

}  // namespace ndt
