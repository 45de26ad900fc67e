// The batch pipelines' shared pieces (src/batch_detail.hpp), the snapshot writer, and the per-GPU
// pipeline (the streamed one, once per GPU). Harness code: the exercise is src/v5_streams.cpp.
#include <algorithm>
#include <charconv>
#include <exception>
#include <stdexcept>
#include <thread>

#include "batch_detail.hpp"
#include "common/cuda_check.hpp"
#include "common/output_file.hpp"
#include "nbody/io.hpp"
#include "nbody/pipeline.hpp"

namespace nbody {

std::string output_path(const std::string& out_dir, const std::string& in) {
  const auto slash = in.find_last_of('/');
  return out_dir + "/" + (slash == std::string::npos ? in : in.substr(slash + 1));
}

void pack(const Bodies& b, Pinned& h) {
  h.reserve(std::max<std::size_t>(b.size(), 1));
  pack_bodies(b, h.pos.get(), h.vel.get());
}

void unpack(const Pinned& h, Bodies& b) { unpack_bodies(h.pos.get(), h.vel.get(), b); }

void enqueue_snapshot(DeviceSystem& sys, Pinned& in, Pinned& out, int n, const Params& p, AccelLauncher accel,
                      cudaStream_t s) {
  sys.resize(n);
  CUDA_CHECK(cudaMemcpyAsync(sys.pos(), in.pos.get(), n * sizeof(float4), cudaMemcpyHostToDevice, s));
  CUDA_CHECK(cudaMemcpyAsync(sys.vel(), in.vel.get(), n * sizeof(float4), cudaMemcpyHostToDevice, s));
  gpu_simulate(sys, p, accel, s);
  out.reserve(std::max(n, 1));
  CUDA_CHECK(cudaMemcpyAsync(out.pos.get(), sys.pos(), n * sizeof(float4), cudaMemcpyDeviceToHost, s));
  CUDA_CHECK(cudaMemcpyAsync(out.vel.get(), sys.vel(), n * sizeof(float4), cudaMemcpyDeviceToHost, s));
}

void write_snapshot_fast(const std::string& path, const Bodies& b) {
  std::string text = "x,y,z,vx,vy,vz,m,id\n";
  text.reserve(b.size() * 100 + 32);
  char buf[32];
  auto put = [&](float v, char sep) {
    auto r = std::to_chars(buf, buf + sizeof(buf), v);
    text.append(buf, r.ptr);
    text += sep;
  };
  for (std::size_t i = 0; i < b.size(); ++i) {
    put(b.x[i], ',');
    put(b.y[i], ',');
    put(b.z[i], ',');
    put(b.vx[i], ',');
    put(b.vy[i], ',');
    put(b.vz[i], ',');
    put(b.m[i], ',');
    auto r = std::to_chars(buf, buf + sizeof(buf), static_cast<long long>(b.id[i]));
    text.append(buf, r.ptr);
    text += '\n';
  }
  common::write_file_atomic(path, text);  // a unique temporary, fsync, rename
}

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

BatchResult run_batch_per_gpu(const std::vector<std::string>& files, const Params& p, AccelLauncher accel,
                              const std::string& out_dir, int gpus) {
  if (gpus < 1 || gpus > device_count())
    throw std::invalid_argument("run_batch_per_gpu: " + std::to_string(gpus) + " GPUs asked, " +
                                std::to_string(device_count()) + " present");
  std::vector<std::vector<std::string>> share(gpus);
  for (std::size_t k = 0; k < files.size(); ++k) share[k % gpus].push_back(files[k]);
  std::vector<BatchResult> parts(gpus);
  const auto t0 = Clock::now();
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(gpus);
  for (int g = 0; g < gpus; ++g)
    threads.emplace_back([&, g] {
      try {
        CUDA_CHECK(cudaSetDevice(g));
        parts[g] = run_batch_streamed(share[g], p, accel, out_dir);
      } catch (...) {
        errors[g] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  BatchResult r;
  r.total_ms = ms_since(t0);
  for (std::size_t k = 0; k < files.size(); ++k) r.file_ms.push_back(parts[k % gpus].file_ms[k / gpus]);
  CUDA_CHECK(cudaSetDevice(0));
  return r;
}

}  // namespace nbody
