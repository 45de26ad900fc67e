#include "common/cuda_check.hpp"

#include <sstream>

namespace common {

std::string format_cuda_error(cudaError_t code, const char* expr, const char* file, int line) {
  std::ostringstream os;
  os << "CUDA error " << cudaGetErrorName(code) << " (" << cudaGetErrorString(code) << ") in `" << expr << "` at "
     << file << ":" << line;
  return os.str();
}

}  // namespace common
