// Error checking for every CUDA runtime call and kernel launch.
// A failing call becomes a common::CudaError carrying the expression text, file, line and the
// CUDA error name, so a driver can catch it at top level and print one clear line.
#pragma once
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace common {

class CudaError : public std::runtime_error {
 public:
  CudaError(cudaError_t code, const std::string& what) : std::runtime_error(what), code_(code) {}
  cudaError_t code() const { return code_; }

 private:
  cudaError_t code_;
};

std::string format_cuda_error(cudaError_t code, const char* expr, const char* file, int line);

inline void cuda_check(cudaError_t code, const char* expr, const char* file, int line) {
  if (code != cudaSuccess) throw CudaError(code, format_cuda_error(code, expr, file, line));
}

}  // namespace common

#define CUDA_CHECK(expr) ::common::cuda_check((expr), #expr, __FILE__, __LINE__)
// After every <<<>>> launch: catches bad configurations (grid, shared memory) at the launch site.
#define CUDA_CHECK_LAST() ::common::cuda_check(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)
