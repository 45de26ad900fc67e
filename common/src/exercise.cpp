#include "common/exercise.hpp"

#include <cuda_runtime.h>

#include <cstring>
#include <utility>
#include <vector>

namespace common {

namespace {

// __FILE__ is absolute in CMake builds: keep the part from the sub-project's (or common's) folder on
std::string repo_relative(const char* file) {
  std::string f = file ? file : "?";
  for (const char* dir : {"/common/include/", "/common/src/", "/common/app/", "/stream_compaction/", "/nbody/",
                          "/ground_seg/", "/ndt_graph/"}) {
    const auto at = f.rfind(dir);
    if (at != std::string::npos) return f.substr(at + 1);
  }
  return f;
}

std::vector<std::pair<std::string, int (*)()>>& device_stubs() {
  static std::vector<std::pair<std::string, int (*)()>> stubs;
  return stubs;
}

}  // namespace

void not_implemented(const char* file, int line) {
  throw NotImplemented("this exercise is not written yet (the stub in " + repo_relative(file) + ":" +
                       std::to_string(line) + ")");
}

bool register_device_stub(const char* file, int (*take_hit_line)()) {
  device_stubs().emplace_back(repo_relative(file), take_hit_line);
  return true;
}

std::string device_stub_hit() {
  if (device_stubs().empty()) return {};
  (void)cudaDeviceSynchronize();  // the kernels that may have reached a stub have finished
  std::string hit;
  for (const auto& [file, take] : device_stubs())
    if (const int line = take(); line != 0 && hit.empty()) hit = file + ":" + std::to_string(line);
  return hit;
}

void check_device_stubs() {
  if (const std::string hit = device_stub_hit(); !hit.empty())
    throw NotImplemented("it calls a device function that is not written yet (the stub in " + hit + ")");
}

Verdict not_implemented_verdict(const NotImplemented& e) { return Verdict::not_implemented(e.what()); }

}  // namespace common
