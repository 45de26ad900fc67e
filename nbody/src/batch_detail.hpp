// The batch pipelines' shared pieces (src/batch.cpp): the staging buffers, one snapshot's
// upload-simulate-download, the output paths. The sequential pipeline (the reference, in
// src/reference.cpp) and the streamed one (the v5 exercise, src/v5_streams.cpp) both build on them.
#pragma once
#include <chrono>
#include <string>

#include <cuda_runtime.h>

#include "common/gpu_resources.hpp"
#include "nbody/pipeline.hpp"

namespace nbody {

using Clock = std::chrono::steady_clock;
inline double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// out_dir/<the file name of in>
std::string output_path(const std::string& out_dir, const std::string& in);

// Pinned float4 staging for one snapshot (grows, never shrinks; freed with it).
struct Pinned {
  common::PinnedBuffer<float4> pos, vel;
  void reserve(std::size_t n) {
    pos.resize(n);
    vel.resize(n);
  }
};

void pack(const Bodies& b, Pinned& h);
void unpack(const Pinned& h, Bodies& b);
// Upload `in` (n bodies), simulate p.steps steps with accel, download into `out`, all on stream s.
void enqueue_snapshot(DeviceSystem& sys, Pinned& in, Pinned& out, int n, const Params& p, AccelLauncher accel,
                      cudaStream_t s);

}  // namespace nbody
