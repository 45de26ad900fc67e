#include <cuda_runtime.h>

#include <stdexcept>

#include "common/cuda_check.hpp"
#include "stream_compaction/common.h"

namespace StreamCompaction {
namespace Common {

PerformanceTimer::~PerformanceTimer() {
  if (start_event_) cudaEventDestroy(static_cast<cudaEvent_t>(start_event_));
  if (stop_event_) cudaEventDestroy(static_cast<cudaEvent_t>(stop_event_));
}

void PerformanceTimer::startCpuTimer() {
  if (cpu_running_) throw std::runtime_error("CPU timer already started");
  cpu_running_ = true;
  cpu_start_ = std::chrono::steady_clock::now();
}

void PerformanceTimer::endCpuTimer() {
  const auto end = std::chrono::steady_clock::now();
  if (!cpu_running_) throw std::runtime_error("CPU timer not started");
  cpu_ms_ = std::chrono::duration<float, std::milli>(end - cpu_start_).count();
  cpu_running_ = false;
}

void PerformanceTimer::startGpuTimer() {
  if (gpu_running_) throw std::runtime_error("GPU timer already started");
  if (!start_event_) {
    cudaEvent_t a, b;
    CUDA_CHECK(cudaEventCreate(&a));
    CUDA_CHECK(cudaEventCreate(&b));
    start_event_ = a;
    stop_event_ = b;
  }
  gpu_running_ = true;
  CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(start_event_)));
}

void PerformanceTimer::endGpuTimer() {
  if (!gpu_running_) throw std::runtime_error("GPU timer not started");
  gpu_running_ = false;
  CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(stop_event_)));
  CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(stop_event_)));
  CUDA_CHECK(
      cudaEventElapsedTime(&gpu_ms_, static_cast<cudaEvent_t>(start_event_), static_cast<cudaEvent_t>(stop_event_)));
}

}  // namespace Common
}  // namespace StreamCompaction
