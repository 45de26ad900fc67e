// group_by_key_bench: common::GroupByKey with the course's one-sweep sort, with the CUB SortPairs
// call it replaced, and with its default (the one measured faster at the size), on the key shapes
// of the sub-projects that group:
//  - ground_seg v2: int cell keys (a 200 x 200 grid plus the outside key, 16 bits), float z values;
//  - ndt_graph's map / VoxelGrid: 64-bit (x, y, z) voxel keys (21 bits per axis, all 64 bits
//    sorted), int point indices, points clustered into a few thousand voxels.
// At the real frame size (~124k points) and larger. Every result is compared with CUB's entry by
// entry (sorted keys and values, runs, counts, offsets) before any is timed.
#include <cuda_runtime.h>

#include <cstdio>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "common/bench.hpp"
#include "common/cli.hpp"
#include "common/device_info.hpp"
#include "common/environment.hpp"
#include "common/group_by_key.cuh"
#include "common/results.hpp"

namespace {

template <class Key, class Value>
struct Shape {
  std::string name;
  int end_bit;
  std::function<void(std::vector<Key>&, std::vector<Value>&, std::mt19937_64&)> fill;
};

template <class T>
std::vector<T> download(const T* d, std::size_t n) {
  std::vector<T> h(n);
  if (n) CUDA_CHECK(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
  return h;
}

template <class Key, class Value>
void run_shape(const Shape<Key, Value>& shape, const std::vector<int>& sizes, std::uint64_t seed,
               const common::Environment& env, std::vector<common::ResultRow>& rows) {
  for (int n : sizes) {
    std::mt19937_64 rng(seed + n);
    std::vector<Key> keys(n);
    std::vector<Value> values(n);
    shape.fill(keys, values, rng);
    common::GroupByKey<Key, Value> g[3] = {common::GroupByKey<Key, Value>(common::GroupSort::cub),
                                           common::GroupByKey<Key, Value>(common::GroupSort::onesweep),
                                           common::GroupByKey<Key, Value>(common::GroupSort::automatic)};
    cudaStream_t s;
    CUDA_CHECK(cudaStreamCreate(&s));
    for (auto& x : g) {
      x.resize(n);
      CUDA_CHECK(cudaMemcpy(x.keys(), keys.data(), n * sizeof(Key), cudaMemcpyHostToDevice));
      CUDA_CHECK(cudaMemcpy(x.values(), values.data(), n * sizeof(Value), cudaMemcpyHostToDevice));
      x.group(n, s, shape.end_bit);
    }
    CUDA_CHECK(cudaStreamSynchronize(s));
    int runs[3];
    for (int i = 0; i < 3; ++i) CUDA_CHECK(cudaMemcpy(&runs[i], g[i].num_runs(), sizeof(int), cudaMemcpyDeviceToHost));
    // each grouping against CUB's, entry by entry
    auto check = [&](int i) {
      if (runs[0] != runs[i])
        return common::Verdict::fail(std::to_string(runs[i]) + " runs, CUB finds " + std::to_string(runs[0]));
      if (download(g[0].sorted_keys(), n) != download(g[i].sorted_keys(), n))
        return common::Verdict::fail("sorted keys differ");
      if (download(g[0].sorted_values(), n) != download(g[i].sorted_values(), n))
        return common::Verdict::fail("sorted values differ (stability)");
      if (download(g[0].unique(), runs[0]) != download(g[i].unique(), runs[0]) ||
          download(g[0].counts(), runs[0]) != download(g[i].counts(), runs[0]) ||
          download(g[0].offsets(), runs[0] + 1) != download(g[i].offsets(), runs[0] + 1))
        return common::Verdict::fail("runs differ");
      return common::Verdict::pass();
    };
    const char* ideas[3] = {"GroupByKey with cub::DeviceRadixSort::SortPairs (what it replaced)",
                            "GroupByKey with the course's one-sweep radix sort",
                            "GroupByKey's default: the sort measured faster at the key's width (one-sweep "
                            "for 4-byte keys, CUB's for 8-byte keys)"};
    double cub_ms = 0;
    for (int i = 0; i < 3; ++i) {
      std::string params = "shape=" + shape.name + " runs=" + std::to_string(runs[0]);
      if (i == 2) params += std::string(" picks=") + common::group_sort_name(g[i].sort_for());
      common::ResultRow r =
          common::make_row("common", std::string("group_by_key_") + common::group_sort_name(g[i].sort()), ideas[i], n,
                           params, env.device.name, i == 0 ? "library" : "version");
      r.verdict = i == 0 ? common::Verdict::pass() : check(i);
      r.stats =
          common::bench_gpu([&](cudaStream_t st) { g[i].group(n, st, shape.end_bit); }, s, common::BenchOptions{});
      r.metric = n / (r.stats.median_ms * 1e-3) / 1e6;
      r.metric_unit = "Mpairs/s";
      if (i == 0) cub_ms = r.stats.median_ms;
      r.speedup_vs_library = cub_ms / r.stats.median_ms;
      rows.push_back(r);
    }
    CUDA_CHECK(cudaStreamDestroy(s));
  }
}

int run(const common::CliOptions& opt) {
  if (!common::has_cuda_device()) {
    std::cout << "group_by_key_bench: skipped: no CUDA device\n";
    return 0;
  }
  const common::Environment env = common::detect_environment();
  std::vector<int> sizes = {124668, 1 << 18, 1 << 20, 1 << 24};
  if (!opt.sizes.empty()) {
    sizes.clear();
    for (auto n : opt.sizes) {
      if (n < 0 || n > (1 << 30)) throw common::UsageError("--n: " + std::to_string(n) + " (0 to 2^30)");
      sizes.push_back(static_cast<int>(n));
    }
  }
  std::vector<common::ResultRow> rows = {common::meta_row("common", env)};
  const int cells = 200 * 200;
  run_shape<int, float>({"ground_seg_cells", 16,
                         [&](std::vector<int>& k, std::vector<float>& v, std::mt19937_64& rng) {
                           // a LiDAR scan's cells: dense near the sensor (small radius), some outside the grid
                           std::exponential_distribution<double> radius(1.0 / 25.0);
                           std::uniform_real_distribution<double> angle(0, 6.283185307179586);
                           for (std::size_t i = 0; i < k.size(); ++i) {
                             const double r = radius(rng), a = angle(rng);
                             const int cx = static_cast<int>(100 + r * std::cos(a) / 0.5);
                             const int cy = static_cast<int>(100 + r * std::sin(a) / 0.5);
                             k[i] = cx < 0 || cy < 0 || cx >= 200 || cy >= 200 ? cells : cy * 200 + cx;
                             v[i] = static_cast<float>(i % 977) * 0.01f;
                           }
                         }},
                        sizes, opt.seed, env, rows);
  run_shape<std::uint64_t, int>(
      {"ndt_graph_voxels", 64,
       [&](std::vector<std::uint64_t>& k, std::vector<int>& v, std::mt19937_64& rng) {
         // points on surfaces of a room: a few thousand 1 m voxels, biased coordinates
         std::normal_distribution<double> coord(0.0, 6.0);
         const std::uint64_t bias = 1u << 20;
         for (std::size_t i = 0; i < k.size(); ++i) {
           const auto x = static_cast<std::uint64_t>(static_cast<long long>(coord(rng)) + bias);
           const auto y = static_cast<std::uint64_t>(static_cast<long long>(coord(rng)) + bias);
           const auto z = static_cast<std::uint64_t>(static_cast<long long>(coord(rng) / 4) + bias);
           k[i] = (z << 42) | (y << 21) | x;
           v[i] = static_cast<int>(i);
         }
       }},
      sizes, opt.seed, env, rows);
  common::print_table(std::cout, rows);
  return common::finish_run(std::cout, "group_by_key_bench", rows, opt.csv);
}

}  // namespace

int main(int argc, char** argv) {
  return common::driver_main(argc, argv,
                             {"group_by_key_bench",
                              "common::GroupByKey with the one-sweep sort, CUB's SortPairs and its default choice, on "
                              "the sub-projects' key shapes.",
                              {},
                              {"sweep", "cold", "input", "version"}},
                             run);
}
