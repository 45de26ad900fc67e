// onesweep_tune: the one-sweep sort's tile shapes and rankings against CUB's DeviceRadixSort, in
// one run, on uniformly random keys: uint32 keys, (uint32, uint32) pairs, uint64 keys and
// (uint64, uint32) pairs. Every shape's output is compared with CUB's, key by key (and value by
// value: stable sorts of the same input agree exactly), before it is timed. Reports ms, x CUB, Gkeys/s and the fraction of the
// copy bandwidth the sort's minimum traffic would take (the histogram's read + read and write per
// pass). `--only SHAPE` runs one shape (and CUB) a few times, for ncu.
#include <cub/device/device_radix_sort.cuh>
#include <cuda_runtime.h>

#include <cstdio>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "common/bench.hpp"
#include "common/ceilings.hpp"
#include "common/cli.hpp"
#include "common/device_buffer.hpp"
#include "common/device_info.hpp"
#include "common/environment.hpp"
#include "common/onesweep_sort.cuh"
#include "common/results.hpp"

namespace {

using common::onesweep::Policy;
using common::onesweep::Rank;

template <typename Key>
__global__ void fill_keys(std::int64_t n, Key* keys, unsigned* values, std::uint64_t seed) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    std::uint64_t z = seed + 0x9e3779b97f4a7c15ull * static_cast<std::uint64_t>(i + 1);  // splitmix64
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    keys[i] = static_cast<Key>(z);
    if (values) values[i] = static_cast<unsigned>(i);
  }
}

template <typename T>
__global__ void count_differences(std::int64_t n, const T* a, const T* b, unsigned long long* diff) {
  unsigned long long mine = 0;
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x)
    mine += a[i] != b[i];
  if (mine) atomicAdd(diff, mine);
}

template <typename T>
unsigned long long differences(std::int64_t n, const T* a, const T* b) {
  common::DeviceBuffer<unsigned long long> d(1);
  CUDA_CHECK(cudaMemset(d.get(), 0, sizeof(unsigned long long)));
  count_differences<<<1024, 256>>>(n, a, b, d.get());
  CUDA_CHECK_LAST();
  unsigned long long h = 0;
  CUDA_CHECK(cudaMemcpy(&h, d.get(), sizeof h, cudaMemcpyDeviceToHost));
  return h;
}

std::string rank_name(Rank r) {
  return r == Rank::ballot ? "ballot" : r == Rank::match_any ? "match_any" : "atomic_or";
}

template <typename P>
std::string shape_name() {
  return std::to_string(P::kThreads) + "x" + std::to_string(P::kItems) + "/" + std::to_string(P::kMinBlocks) + "/" +
         rank_name(P::kRank) + (P::kEarly ? "/early" : "");
}

// One problem (key type, pairs or not) at size n: CUB's result and time, then each shape's.
template <typename Key, bool kPairs>
struct Problem {
  using Value = typename std::conditional<kPairs, unsigned, void>::type;
  std::int64_t n;
  std::string label;
  const common::Environment& env;
  double copy_gbs;
  std::vector<common::ResultRow>& rows;
  std::string only;
  common::BenchOptions bench;
  common::DeviceBuffer<Key> keys_in, keys_ref, keys_out;
  common::DeviceBuffer<unsigned> values_in, values_ref, values_out;
  cudaStream_t stream = nullptr;
  double cub_ms = 0;

  Problem(std::int64_t n_, std::string label_, const common::Environment& env_, double copy,
          std::vector<common::ResultRow>& rows_, std::string only_, common::BenchOptions bench_)
      : n(n_),
        label(std::move(label_)),
        env(env_),
        copy_gbs(copy),
        rows(rows_),
        only(std::move(only_)),
        bench(bench_),
        keys_in(n),
        keys_ref(n),
        keys_out(n),
        values_in(kPairs ? n : 0),
        values_ref(kPairs ? n : 0),
        values_out(kPairs ? n : 0) {
    CUDA_CHECK(cudaStreamCreate(&stream));
    fill_keys<<<1024, 256>>>(n, keys_in.get(), kPairs ? values_in.get() : nullptr, 20261124);
    CUDA_CHECK_LAST();
  }
  ~Problem() { cudaStreamDestroy(stream); }

  // the minimum traffic of a one-sweep sort: one read for the histogram, a read and a write per pass
  double floor_ms() const {
    const double per_key = sizeof(Key) * (1 + 2.0 * sizeof(Key)) + (kPairs ? 2.0 * sizeof(Key) * sizeof(unsigned) : 0);
    return n * per_key / (copy_gbs * 1e9) * 1e3;
  }

  common::ResultRow row(const std::string& version, const std::string& idea, const std::string& role) const {
    common::ResultRow r = common::make_row("common", version, idea, n, "problem=" + label, env.device.name, role);
    return r;
  }

  void finish(common::ResultRow& r) {
    r.metric = n / (r.stats.median_ms * 1e-3) / 1e9;
    r.metric_unit = "Gkeys/s";
    r.add_metric("floor_fraction", floor_ms() / r.stats.median_ms, "");
    r.pct_of_ceiling = 100 * floor_ms() / r.stats.median_ms;
    r.ceiling = "copy_gbs";
    if (cub_ms > 0) r.speedup_vs_library = cub_ms / r.stats.median_ms;
    rows.push_back(r);
  }

  void cub() {
    std::size_t bytes = 0;
    auto call = [&](void* tmp, cudaStream_t s) {
      if constexpr (kPairs)
        CUDA_CHECK(cub::DeviceRadixSort::SortPairs(tmp, bytes, keys_in.get(), keys_ref.get(), values_in.get(),
                                                   values_ref.get(), n, 0, 8 * static_cast<int>(sizeof(Key)), s));
      else
        CUDA_CHECK(cub::DeviceRadixSort::SortKeys(tmp, bytes, keys_in.get(), keys_ref.get(), n, 0,
                                                  8 * static_cast<int>(sizeof(Key)), s));
    };
    call(nullptr, stream);
    common::DeviceBuffer<unsigned char> tmp(bytes);
    call(tmp.get(), stream);
    CUDA_CHECK(cudaStreamSynchronize(stream));
    common::ResultRow r =
        row("cub", kPairs ? "cub::DeviceRadixSort::SortPairs" : "cub::DeviceRadixSort::SortKeys", "library");
    r.verdict = common::Verdict::pass();
    if (!only.empty()) {
      for (int i = 0; i < 3; ++i) call(tmp.get(), stream);
      CUDA_CHECK(cudaStreamSynchronize(stream));
      return;
    }
    r.stats = common::bench_gpu([&](cudaStream_t s) { call(tmp.get(), s); }, stream, bench);
    cub_ms = r.stats.median_ms;
    finish(r);
  }

  template <typename P>
  void shape() {
    const std::string name = shape_name<P>();
    if (!only.empty() && only != name) return;
    common::Scratch scratch;
    using Sort = common::Onesweep<Key, Value, P>;
    auto call = [&](cudaStream_t s) {
      constexpr int bits = 8 * static_cast<int>(sizeof(Key));
      if constexpr (kPairs)
        Sort::sort(n, keys_in.get(), keys_out.get(), values_in.get(), values_out.get(), 0, bits, scratch, s);
      else
        Sort::sort(n, keys_in.get(), keys_out.get(), nullptr, nullptr, 0, bits, scratch, s);
    };
    CUDA_CHECK(cudaMemset(keys_out.get(), 0xab, n * sizeof(Key)));
    call(stream);
    CUDA_CHECK(cudaStreamSynchronize(stream));
    common::ResultRow r = row("onesweep_" + name, "the course's one-sweep sort, tile " + name, "version");
    const unsigned long long dk = differences(n, keys_out.get(), keys_ref.get());
    const unsigned long long dv = kPairs ? differences(n, values_out.get(), values_ref.get()) : 0;
    r.verdict = dk   ? common::Verdict::fail(std::to_string(dk) + " keys differ from CUB's")
                : dv ? common::Verdict::fail(std::to_string(dv) + " values differ from CUB's (stability)")
                     : common::Verdict::pass();
    if (!only.empty()) {
      for (int i = 0; i < 3; ++i) call(stream);
      CUDA_CHECK(cudaStreamSynchronize(stream));
      std::cout << name << ": " << r.verdict << "\n";
      return;
    }
    r.stats = common::bench_gpu(call, stream, bench);
    finish(r);
  }
};

int run(const common::CliOptions& opt) {
  if (!common::has_cuda_device()) {
    std::cout << "onesweep_tune: skipped: no CUDA device\n";
    return 0;
  }
  const common::Environment env = common::detect_environment();
  const std::int64_t n = opt.sizes.empty() ? (std::int64_t{1} << 28) : opt.sizes.front();
  if (n < 1 || n >= (std::int64_t{1} << 30)) throw common::UsageError("--n: " + std::to_string(n) + " (1 to 2^30 - 1)");
  const std::string only = opt.extra.at("only");
  const std::string problems = opt.extra.at("problems");
  common::BenchOptions bench;
  bench.min_samples = 10;
  bench.max_seconds = 2.0;
  const double copy = common::measure_ceilings(env.device).copy_gbs;
  std::vector<common::ResultRow> rows = {common::meta_row("common", env)};
  rows.front().add_metric("copy_gbs", copy, "GB/s");
  std::cout << "onesweep_tune: n = " << n << ", copy " << copy << " GB/s on " << env.device.name << "\n";
  // per problem: the earlier default, then the rankings and tile shapes around the default
  if (problems.find("keys32") != std::string::npos) {
    Problem<unsigned, false> p(n, "uint32_keys", env, copy, rows, only, bench);
    p.cub();
    p.template shape<Policy<512, 12, 2, Rank::atomic_or>>();  // the earlier default: counts after the ranking
    p.template shape<Policy<512, 15, 2, Rank::ballot>>();
    p.template shape<Policy<512, 15, 2, Rank::match_any>>();
    p.template shape<Policy<384, 20, 3, Rank::ballot, true>>();
    p.template shape<Policy<384, 16, 3, Rank::atomic_or, true>>();
    p.template shape<Policy<384, 20, 3, Rank::atomic_or, true>>();
    p.template shape<Policy<384, 22, 3, Rank::atomic_or, true>>();
    p.template shape<Policy<384, 24, 3, Rank::atomic_or, true>>();
    p.template shape<Policy<512, 18, 2, Rank::atomic_or, true>>();
    p.template shape<Policy<256, 32, 4, Rank::atomic_or, true>>();
  }
  if (problems.find("pairs32") != std::string::npos) {
    Problem<unsigned, true> p(n, "uint32_pairs", env, copy, rows, only, bench);
    p.cub();
    p.template shape<Policy<512, 15, 2, Rank::ballot>>();  // the earlier default
    p.template shape<Policy<384, 22, 3, Rank::atomic_or, true>>();
    p.template shape<Policy<384, 23, 2, Rank::atomic_or, true>>();
    p.template shape<Policy<384, 30, 2, Rank::atomic_or, true>>();
    p.template shape<Policy<512, 22, 2, Rank::atomic_or, true>>();
  }
  if (problems.find("keys64") != std::string::npos) {
    Problem<std::uint64_t, false> p(n / 2, "uint64_keys", env, copy, rows, only, bench);
    p.cub();
    p.template shape<Policy<384, 8, 3, Rank::ballot, true>>();  // the earlier default
    p.template shape<Policy<384, 12, 2, Rank::atomic_or, true>>();
    p.template shape<Policy<256, 20, 3, Rank::atomic_or, true>>();
    p.template shape<Policy<256, 22, 3, Rank::atomic_or, true>>();
  }
  if (problems.find("pairs64") != std::string::npos) {
    Problem<std::uint64_t, true> p(n / 2, "uint64_pairs", env, copy, rows, only, bench);
    p.cub();
    p.template shape<Policy<384, 8, 3, Rank::ballot, true>>();  // the earlier default
    p.template shape<Policy<384, 12, 2, Rank::atomic_or, true>>();
    p.template shape<Policy<256, 16, 3, Rank::atomic_or, true>>();
    p.template shape<Policy<256, 22, 2, Rank::atomic_or, true>>();
  }
  if (!only.empty()) return 0;
  common::print_table(std::cout, rows);
  return common::finish_run(std::cout, "onesweep_tune", rows, opt.csv);
}

}  // namespace

int main(int argc, char** argv) {
  return common::driver_main(
      argc, argv,
      {"onesweep_tune",
       "The one-sweep sort's tile shapes and rankings against CUB's radix sort, each checked "
       "against CUB's output before it is timed.",
       {{"only", "run one shape (e.g. 512x15/2/ballot) and CUB, three times each, untimed (for ncu)", true, ""},
        {"problems", "which of keys32,pairs32,keys64,pairs64 to run", true, "keys32,pairs32,keys64,pairs64"}},
       {"sweep", "cold", "input", "version"}},
      run);
}
