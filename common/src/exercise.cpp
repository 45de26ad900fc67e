#include "common/exercise.hpp"

#include <cstring>

namespace common {

void not_implemented(const char* file, int line) {
  // __FILE__ is absolute in CMake builds: keep the part from the sub-project's folder on
  std::string f = file ? file : "?";
  for (const char* dir : {"/stream_compaction/", "/nbody/", "/ground_seg/", "/ndt_graph/", "/common/"}) {
    const auto at = f.rfind(dir);
    if (at != std::string::npos) {
      f = f.substr(at + 1);
      break;
    }
  }
  throw NotImplemented("this exercise is not written yet (the stub in " + f + ":" + std::to_string(line) + ")");
}

std::string not_implemented_status(const NotImplemented& e) { return std::string("NOT IMPLEMENTED: ") + e.what(); }

bool is_not_implemented_status(const std::string& passed) { return passed.rfind("NOT IMPLEMENTED", 0) == 0; }

}  // namespace common
