// The launch-strategy micro-benchmark: what one Newton iteration's worth of control costs when the
// work itself is nothing, i.e. the floor under v2-v5. An "iteration" is five dependent tiny
// kernels (one block of 32 threads each, like the design's K1..K5 with no work), driven:
//   stream_sync    - from a stream, with a 4-byte flag copied back and a host sync every iteration;
//   stream_nosync  - from a stream, one sync at the end;
//   graph_x8       - a CUDA graph of 8 unrolled iterations, flag copy + host sync between graphs;
//   graph_while    - one graph whose conditional WHILE node loops on the device until done;
//   cooperative_N  - one cooperative kernel of N blocks, five grid-wide syncs per iteration.
#include <cooperative_groups.h>

#include <algorithm>

#include "common/bench.hpp"
#include "common/device_info.hpp"
#include "gpu_kernels.cuh"

namespace ndt {
namespace gpu {
namespace {

constexpr int kKernels = 5;  // dependent kernels per iteration (the design's K1..K5)

__global__ void tiny_kernel(int* counter) {
  if (threadIdx.x == 0) counter[0] += 1;
}

// The last kernel of an iteration: counts the iteration down and ends the WHILE loop at zero.
__global__ void tiny_last_kernel(int* counter, int* remaining, cudaGraphConditionalHandle handle) {
  if (threadIdx.x == 0) {
    counter[0] += 1;
    if (--remaining[0] <= 0) cudaGraphSetConditional(handle, 0);
  }
}

__global__ void set_kernel(int* value, int to) {
  if (threadIdx.x == 0) value[0] = to;
}

__global__ void cooperative_tiny_kernel(int* counter, int iterations) {
  namespace cg = cooperative_groups;
  cg::grid_group grid = cg::this_grid();
  for (int it = 0; it < iterations; ++it)
    for (int k = 0; k < kKernels; ++k) {
      if (blockIdx.x == 0 && threadIdx.x == 0) counter[0] += 1;
      grid.sync();
    }
}

}  // namespace
}  // namespace gpu

std::vector<LaunchStrategyResult> launch_strategy_benchmark(int iterations, int repeats) {
  using namespace gpu;
  if (iterations < 8 || iterations % 8 != 0)
    throw std::invalid_argument("launch benchmark: iterations must be a multiple of 8");
  common::Stream stream;
  cudaStream_t s = stream.get();
  common::DeviceBuffer<int> counter(1), remaining(1);
  common::PinnedBuffer<int> flag;
  flag.resize(1);
  std::vector<LaunchStrategyResult> out;
  // Each sample: the whole run from the host, ending in a sync; the counter proves every kernel ran.
  auto measure = [&](const std::string& name, const std::string& idea, int blocks, const std::function<void()>& run) {
    std::vector<double> samples;
    for (int r = 0; r < repeats + 1; ++r) {
      CUDA_CHECK(cudaMemsetAsync(counter.get(), 0, sizeof(int), s));
      stream.sync();
      const common::WallTimer t;
      run();
      stream.sync();
      const double ms = t.elapsed_ms();
      int count = 0;
      CUDA_CHECK(cudaMemcpy(&count, counter.get(), sizeof(int), cudaMemcpyDeviceToHost));
      if (count != kKernels * iterations)
        throw std::runtime_error("launch benchmark " + name + ": " + std::to_string(count) +
                                 " kernel steps ran, expected " + std::to_string(kKernels * iterations));
      if (r > 0) samples.push_back(ms);  // the first run warms up (module load, graph upload)
    }
    LaunchStrategyResult res;
    res.name = name;
    res.idea = idea;
    res.blocks = blocks;
    res.kernels_per_iteration = kKernels;
    res.stats = common::summarize(samples);
    res.us_per_iteration = 1e3 * res.stats.median_ms / iterations;
    out.push_back(res);
  };
  measure("stream_sync", "5 stream launches + 4-byte flag copy + host sync per iteration", 1, [&] {
    for (int it = 0; it < iterations; ++it) {
      for (int k = 0; k < kKernels; ++k) tiny_kernel<<<1, 32, 0, s>>>(counter.get());
      CUDA_CHECK(cudaMemcpyAsync(flag.get(), counter.get(), sizeof(int), cudaMemcpyDeviceToHost, s));
      stream.sync();
    }
  });
  measure("stream_nosync", "5 stream launches per iteration, one sync at the end", 1, [&] {
    for (int it = 0; it < iterations; ++it)
      for (int k = 0; k < kKernels; ++k) tiny_kernel<<<1, 32, 0, s>>>(counter.get());
  });
  common::GraphExec unrolled;
  unrolled.capture(s, [&](cudaStream_t cs) {
    for (int it = 0; it < 8; ++it)
      for (int k = 0; k < kKernels; ++k) tiny_kernel<<<1, 32, 0, cs>>>(counter.get());
    CUDA_CHECK(cudaMemcpyAsync(flag.get(), counter.get(), sizeof(int), cudaMemcpyDeviceToHost, cs));
  });
  measure("graph_x8", "graph of 8 unrolled iterations, flag copy + host sync between graphs", 1, [&] {
    for (int g = 0; g < iterations / 8; ++g) {
      unrolled.launch(s);
      stream.sync();
    }
  });
  common::GraphExec loop;
  common::build_device_while_graph(
      loop, s,
      [&](cudaStream_t cs, cudaGraphConditionalHandle) { set_kernel<<<1, 32, 0, cs>>>(remaining.get(), iterations); },
      [&](cudaStream_t cs, cudaGraphConditionalHandle h) {
        for (int k = 0; k < kKernels - 1; ++k) tiny_kernel<<<1, 32, 0, cs>>>(counter.get());
        tiny_last_kernel<<<1, 32, 0, cs>>>(counter.get(), remaining.get(), h);
      });
  measure("graph_while", "conditional WHILE node: the loop ends on the device, one launch + one sync (+1 set kernel)",
          1, [&] { loop.launch(s); });
  int dev = 0, sms = 0, per_sm = 0, coop = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  sms = common::current_sm_count();
  CUDA_CHECK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, cooperative_tiny_kernel, 128, 0));
  if (coop)
    for (int blocks : {std::min(48, per_sm * sms), per_sm * sms}) {
      measure(
          "cooperative_" + std::to_string(blocks), "one cooperative kernel, 5 grid syncs per iteration", blocks, [&] {
            int* c = counter.get();
            int n = iterations;
            void* args[] = {&c, &n};
            CUDA_CHECK(
                cudaLaunchCooperativeKernel(reinterpret_cast<void*>(cooperative_tiny_kernel), blocks, 128, args, 0, s));
          });
    }
  return out;
}

}  // namespace ndt
