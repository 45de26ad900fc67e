// CIS 565 Project 2 compatible API: the course's own test driver (src/main.cpp and
// testing_helpers.hpp) compiles and runs against these headers unchanged.
#pragma once
#include <chrono>

namespace StreamCompaction {
namespace Common {

// Times one operation on the CPU (steady clock) or GPU (CUDA events on the default stream), in
// milliseconds. Starting a timer that is already running, or stopping one that is not, throws
// std::runtime_error: that is how a nested, double-counted timing is caught. Events are created
// on first GPU use, so CPU-only programs never touch the CUDA runtime.
class PerformanceTimer {
 public:
  PerformanceTimer() = default;
  ~PerformanceTimer();
  PerformanceTimer(const PerformanceTimer&) = delete;
  PerformanceTimer(PerformanceTimer&&) = delete;
  PerformanceTimer& operator=(const PerformanceTimer&) = delete;
  PerformanceTimer& operator=(PerformanceTimer&&) = delete;

  void startCpuTimer();
  void endCpuTimer();
  void startGpuTimer();
  void endGpuTimer();
  float getCpuElapsedTimeForPreviousOperation() const { return cpu_ms_; }
  float getGpuElapsedTimeForPreviousOperation() const { return gpu_ms_; }

 private:
  void* start_event_ = nullptr;  // cudaEvent_t, kept opaque so this header needs no CUDA
  void* stop_event_ = nullptr;
  std::chrono::steady_clock::time_point cpu_start_;
  bool cpu_running_ = false, gpu_running_ = false;
  float cpu_ms_ = 0.f, gpu_ms_ = 0.f;
};

}  // namespace Common
}  // namespace StreamCompaction

inline int ilog2(int x) {
  int lg = 0;
  while (x >>= 1) ++lg;
  return lg;
}
inline int ilog2ceil(int x) { return x <= 1 ? 0 : ilog2(x - 1) + 1; }
