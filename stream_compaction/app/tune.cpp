// stream_compaction_tune: times every tile shape of the single-pass kernels (v5 look-back scan,
// fused compaction) and the radix sort next to CUB at one size, each checked first. This is how
// the default shapes in v5_lookback.cu and compact_fused.cu were chosen.
#include <cuda_runtime.h>

#include <cstdio>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "common/exercise.hpp"
#include "common/bench.hpp"
#include "common/ceilings.hpp"
#include "common/cli.hpp"
#include "common/cuda_check.hpp"
#include "common/device_buffer.hpp"
#include "common/device_info.hpp"
#include "common/environment.hpp"
#include "common/results.hpp"
#include "stream_compaction/check.hpp"
#include "stream_compaction/registry.hpp"
#include "stream_compaction/tuning.hpp"

namespace sc = StreamCompaction;
namespace dev = StreamCompaction::Device;

namespace {

struct Candidate {
  std::string name;
  sc::Op op;
  bool library;  // the operation's baseline (x lib)
  std::function<void(std::int64_t n, int* out, std::int64_t* count, const int* in, dev::ScratchTree&, cudaStream_t)>
      run;
};

template <typename V>
std::string shape(const V& v) {
  const std::string s = std::to_string(v.block) + "x" + std::to_string(v.items);
  if (v.stages) return s + " s" + std::to_string(v.stages) + " d" + std::to_string(v.first_delay_ns);  // v6
  return s + " d" + std::to_string(v.first_delay_ns) + "/" + std::to_string(v.poll_delay_ns);
}

// From the registry: every GPU version with a fixed shape (not block-tunable, not staged), the
// versions with tile variants once per variant, and the library baseline of each operation.
std::vector<Candidate> candidates() {
  std::vector<Candidate> c;
  // A handout's stub has no variants: the version is then run once, and reports NOT IMPLEMENTED
  auto listed = [](auto list) -> decltype(list()) {
    try {
      return list();
    } catch (const common::NotImplemented&) {
      return {};
    }
  };
  for (const auto& v : sc::versions()) {
    if (!v.needs_gpu || v.block_tunable || v.has_stages) continue;
    const auto scan_variants =
        listed([&] { return v.scan_variants ? v.scan_variants() : std::vector<dev::ScanVariant>{}; });
    const auto compact_variants =
        listed([&] { return v.compact_variants ? v.compact_variants() : std::vector<dev::CompactVariant>{}; });
    if (!scan_variants.empty()) {
      for (const auto& t : scan_variants)
        c.push_back({v.name + "[" + shape(t) + "]", v.op, false,
                     [f = t.scan](auto n, int* o, auto*, const int* i, auto& s, auto st) { f(n, o, i, s, st); }});
    } else if (!compact_variants.empty()) {
      for (const auto& t : compact_variants)
        c.push_back(
            {v.name + "[" + shape(t) + "]", v.op, false,
             [f = t.compact](auto n, int* o, auto* k, const int* i, auto& s, auto st) { f(n, o, k, i, s, st); }});
    } else {
      c.push_back(
          {v.name, v.op, v.role == common::Role::library,
           [run = v.run](std::int64_t n, int* o, std::int64_t* k, const int* i, dev::ScratchTree& s, cudaStream_t st) {
             sc::RunArgs a;
             a.n = n;
             a.out = o;
             a.in = i;
             a.count = k;
             a.scratch = &s;
             a.stream = st;
             run(a);
           }});
    }
  }
  return c;
}

int run(const common::CliOptions& opt) {
  if (!common::has_cuda_device()) {
    std::cout << "stream_compaction_tune: " << common::no_gpu_verdict() << "\n";
    return 0;
  }
  // input, output and the tile-status scratch on the GPU (the same 24 B per element the driver
  // budgets), the host copies and the reference
  std::string left_out;
  const std::vector<std::int64_t> fitted =
      opt.sizes.empty() ? common::fit_default_sizes({std::int64_t{1} << 28}, 24.0, 24.0, left_out) : opt.sizes;
  if (fitted.empty()) throw common::UsageError("no tuning size fits this machine: " + left_out);
  const std::int64_t n = fitted.front();
  common::check_fits_in_memory("--n " + std::to_string(n), 24.0 * static_cast<double>(n),
                               24.0 * static_cast<double>(n));
  if (!left_out.empty()) std::cout << "size: " << left_out << "\n";
  const common::Environment env = common::detect_environment();
  const auto& device = env.device;
  const auto& ceil = env.ceilings;
  std::printf("tuning at n = %lld on %s, copy %.0f GB/s\n\n", static_cast<long long>(n), device.name.c_str(),
              ceil.copy_gbs);
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreate(&stream));
  common::DeviceBuffer<int> d_in(n), d_out(n);
  common::DeviceBuffer<std::int64_t> d_count(1);
  std::vector<common::ResultRow> rows = {common::meta_row("stream_compaction", env)};
  double library_ms = common::kNoValue;
  for (sc::Op op : {sc::Op::Scan, sc::Op::Compact, sc::Op::Sort, sc::Op::SortPairs}) {
    std::vector<int> in(n), ref(n), got(n);
    std::uint64_t s = opt.seed + static_cast<int>(op);
    for (auto& x : in) {
      s = s * 6364136223846793005ULL + 1442695040888963407ULL;
      const auto r = static_cast<std::uint32_t>(s >> 32);
      x = op == sc::Op::Scan      ? static_cast<int>(r % 50)
          : op == sc::Op::Compact ? static_cast<int>(r % 4)
                                  : static_cast<int>(r);
    }
    const std::int64_t kept = sc::reference_output(op, n, ref.data(), in.data());
    CUDA_CHECK(cudaMemcpy(d_in.get(), in.data(), n * sizeof(int), cudaMemcpyHostToDevice));
    const std::size_t first = rows.size();
    library_ms = common::kNoValue;
    for (const auto& c : candidates()) {
      if (c.op != op) continue;
      dev::ScratchTree scratch;
      common::ResultRow r =
          common::make_row("stream_compaction", c.name, "tile-shape tuning", n, std::string("op=") + sc::op_name(op),
                           device.name, c.library ? "library" : "version", "tune");
      r.ceiling = "copy_bandwidth";
      // an unwritten handout exercise, a GPU without the version's hardware (v6 below sm_90) or a failure: its own row status
      common::run_guarded(r, true, [&] {
        CUDA_CHECK(cudaMemset(d_out.get(), 0xAB, d_out.bytes()));
        c.run(n, d_out.get(), d_count.get(), d_in.get(), scratch, stream);
        CUDA_CHECK(cudaStreamSynchronize(stream));
        std::int64_t count = 0;
        CUDA_CHECK(cudaMemcpy(got.data(), d_out.get(), n * sizeof(int), cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaMemcpy(&count, d_count.get(), sizeof(count), cudaMemcpyDeviceToHost));
        const auto cr = sc::check_output(op, n, ref.data(), kept, got.data(), count);
        r.verdict = common::Verdict::pass_if(cr.ok, cr.message);
        if (!cr.ok) return;
        r.stats =
            common::bench_gpu([&](cudaStream_t st) { c.run(n, d_out.get(), d_count.get(), d_in.get(), scratch, st); },
                              stream, common::BenchOptions{});
        const double bytes = op == sc::Op::Scan      ? 8.0 * n
                             : op == sc::Op::Compact ? 4.0 * (n + kept)
                             : op == sc::Op::Sort    ? 32.0 * n
                                                     : 64.0 * n;
        r.metric = bytes / (r.stats.median_ms * 1e-3) / 1e9;
        r.metric_unit = "GB/s";
        r.pct_of_ceiling = 100 * r.metric / ceil.copy_gbs;
        if (c.library) library_ms = r.stats.median_ms;
      });
      rows.push_back(r);
    }
    for (std::size_t i = first; i < rows.size(); ++i)  // x lib: against this operation's library row
      if (rows[i].stats.samples) rows[i].speedup_vs_library = library_ms / rows[i].stats.median_ms;
  }
  common::print_table(std::cout, rows);
  // writes the CSV and removes the row journal driver_main opened for it; 1 on any FAIL
  return common::finish_run(std::cout, "stream_compaction_tune", rows, opt.csv);
}

}  // namespace

int main(int argc, char** argv) {
  return common::driver_main(
      argc, argv, {"stream_compaction_tune", "Times every tile shape of the single-pass kernels next to CUB.", {}},
      run);
}
