// stream_compaction_multi_gpu: the multi-GPU sample sort (multi_gpu_sort.hpp), one process per
// GPU. Every rank generates the same n keys, sorts all of them alone (the one-GPU baseline, timed,
// and the reference), then the ranks sort them together, each starting from its own slice; every
// rank compares the slice it ends with against the same slice of the one-GPU result. Rank 0
// prints the table and writes the CSV.
//
//   stream_compaction_multi_gpu --launch 2 --n 2^30           # 2 processes on this machine's GPUs 0 and 1
//   mpirun -np 2 stream_compaction_multi_gpu --n 2^30         # any launcher that sets a rank ...
//   srun -n 16 --gpus-per-task 1 stream_compaction_multi_gpu  # ... with NCCL_COMM_ID=host:port on every rank
//
// A row is not a registry version: a version of the main driver runs inside one process, and this
// sort is several processes. Its rows sit next to the registry's one-GPU sorts, named from there.
#include <cuda_runtime.h>
#include <nccl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "common/bench.hpp"
#include "common/cli.hpp"
#include "common/cuda_check.hpp"
#include "common/device_buffer.hpp"
#include "common/device_info.hpp"
#include "common/environment.hpp"
#include "common/gpu_resources.hpp"
#include "common/results.hpp"
#include "stream_compaction/multi_gpu_sorter.hpp"
#include "stream_compaction/registry.hpp"

namespace sc = StreamCompaction;
namespace mg = StreamCompaction::MultiGpu;

namespace {

const char* const kProgram = "stream_compaction_multi_gpu";
const char* const kMultiName = "sort_multi_gpu";  // the rows of this program, beside the registry's sorts
constexpr int kSkipped = 77;                      // too few GPUs: ctest's SKIP_RETURN_CODE

std::vector<std::string> g_args;  // argv, for the launcher to start its ranks with

// --launch P: start P copies of this program on this machine's GPUs 0..P-1, each told its rank
// and the NCCL unique id through the environment; wait for all; if one fails, stop the others
// (they would wait for it in NCCL forever) and return its status.
int launch(int ranks) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess) devices = 0;
  if (devices < ranks) {
    std::cout << kProgram << ": skipped: " << ranks << " GPUs asked for, " << devices << " present\n";
    return kSkipped;
  }
  ncclUniqueId id;
  mg::nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  const std::string id_hex = mg::to_hex(&id, sizeof(id));
  std::vector<pid_t> pids;
  for (int r = 0; r < ranks; ++r) {
    std::vector<std::string> args = {g_args[0]};
    for (std::size_t i = 1; i < g_args.size(); ++i) {
      const std::string& a = g_args[i];
      if (a == "--launch") {
        ++i;
        continue;
      }
      if (a.rfind("--launch=", 0) == 0) continue;
      if (r > 0 && a == "--csv") {
        ++i;
        continue;
      }  // rank 0 writes the CSV
      if (r > 0 && a.rfind("--csv=", 0) == 0) continue;
      args.push_back(a);
    }
    std::fflush(nullptr);
    const pid_t pid = fork();
    if (pid < 0) throw std::runtime_error("--launch: fork failed");
    if (pid == 0) {
      setenv("RANK", std::to_string(r).c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(ranks).c_str(), 1);
      setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
      setenv(mg::kUniqueIdVariable, id_hex.c_str(), 1);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv("/proc/self/exe", argv.data());
      std::perror("--launch: execv /proc/self/exe");
      _exit(127);
    }
    pids.push_back(pid);
  }
  int result = 0, alive = ranks;
  while (alive > 0) {
    int status = 0;
    const pid_t done = wait(&status);
    if (done < 0) break;
    --alive;
    const int rank = static_cast<int>(std::find(pids.begin(), pids.end(), done) - pids.begin());
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (code != 0 && result == 0) {
      result = code;
      std::cerr << kProgram << ": rank " << rank << " ended with status " << code << "; stopping the other ranks\n";
      for (pid_t p : pids)
        if (p != done) kill(p, SIGTERM);
    }
  }
  return result;
}

// All ranks: one value each, gathered everywhere.
template <typename T>
std::vector<T> all_gather(T v, ncclComm_t comm, cudaStream_t s, int world) {
  static_assert(sizeof(T) == 8, "8-byte values");
  common::DeviceBuffer<T> one(1), all(world);
  CUDA_CHECK(cudaMemcpyAsync(one.get(), &v, sizeof(T), cudaMemcpyHostToDevice, s));
  mg::nccl_check(ncclAllGather(one.get(), all.get(), 1, ncclUint64, comm, s), "ncclAllGather");
  std::vector<T> h(world);
  CUDA_CHECK(cudaMemcpyAsync(h.data(), all.get(), world * sizeof(T), cudaMemcpyDeviceToHost, s));
  CUDA_CHECK(cudaStreamSynchronize(s));
  return h;
}

int run(const common::CliOptions& opt) {
  const int launch_ranks = static_cast<int>(opt.extra_int("launch", 0, 256));
  if (launch_ranks > 0) {
    common::close_row_journal(true);  // rank 0 keeps the journal
    return launch(launch_ranks);
  }
  const mg::LaunchEnv env = mg::launch_env([](const char* name) { return std::getenv(name); });
  const bool lead = env.rank == 0;
  if (!lead) common::close_row_journal(false);
  const std::string who = "rank " + std::to_string(env.rank) + " of " + std::to_string(env.world);
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::cout << kProgram << ": skipped: no CUDA device (" << who << ")\n";
    return env.world > 1 ? 1 : kSkipped;  // a rank without a GPU would leave the others waiting
  }
  if (env.local_rank >= devices)
    throw std::runtime_error(who + " wants GPU " + std::to_string(env.local_rank) + " of this machine (" + env.source +
                             "), which has " + std::to_string(devices));
  CUDA_CHECK(cudaSetDevice(env.local_rank));

  const mg::Dist dist = mg::parse_dist(opt.extra.at("dist"));
  const mg::Partition partition = mg::parse_partition(opt.extra.at("partition"));
  std::vector<mg::LocalSort> locals;
  const std::string local = opt.extra.at("local");
  if (local == "both" || local == "cub") locals.push_back(mg::LocalSort::cub);
  if (local == "both" || local == "onesweep") locals.push_back(mg::LocalSort::onesweep);
  if (locals.empty()) throw common::UsageError("--local: '" + local + "' is not one of cub, onesweep, both");
  if (opt.sizes.size() > 1) throw common::UsageError("--n: one size (the total over all ranks)");
  const std::int64_t n = opt.sizes.empty() ? (std::int64_t{1} << 30) : opt.sizes.front();
  if (n < 0 || n >= (std::int64_t{1} << 32))
    throw common::UsageError("--n: " + std::to_string(n) + " keys (0 to 2^32 - 1)");

  // Environment (and ceilings) before NCCL: rank 0 measures them while the others wait in init.
  const common::Environment envinfo = lead ? common::detect_environment() : common::Environment{};
  ncclUniqueId id;
  if (const char* hex = std::getenv(mg::kUniqueIdVariable)) {
    mg::from_hex(hex, &id, sizeof(id));
  } else if (env.world == 1 || std::getenv("NCCL_COMM_ID")) {
    mg::nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");  // with NCCL_COMM_ID: the same id on every rank
  } else {
    throw std::runtime_error(who + " (" + env.source +
                             "): no NCCL unique id. Start the ranks with --launch P, or set " +
                             "NCCL_COMM_ID=<host of rank 0>:<free port> on every rank");
  }
  ncclComm_t comm;
  mg::nccl_check(ncclCommInitRank(&comm, env.world, id, env.rank), "ncclCommInitRank");
  common::Stream stream;
  cudaStream_t s = stream.get();
  common::DeviceBuffer<float> token(1);
  auto barrier = [&] {
    mg::nccl_check(ncclAllReduce(token.get(), token.get(), 1, ncclFloat, ncclSum, comm, s), "ncclAllReduce (barrier)");
    CUDA_CHECK(cudaStreamSynchronize(s));
  };
  auto say = [&](const std::string& m) {
    if (lead) std::cerr << "[" << kProgram << "] " << m << std::endl;
  };

  // The whole input on every rank: the one-GPU baseline and the reference
  std::int64_t begin = 0, end = 0;
  mg::owned_range(n, env.world, env.rank, begin, end);
  common::DeviceBuffer<std::uint32_t> all(std::max<std::int64_t>(n, 1)), mine(std::max<std::int64_t>(end - begin, 1));
  std::vector<common::DeviceBuffer<std::uint32_t>> ref(locals.size());
  mg::generate_keys(all.get(), 0, n, dist, opt.seed, n, s);
  mg::generate_keys(mine.get(), begin, end - begin, dist, opt.seed, n, s);
  common::Scratch scratch;
  common::BenchOptions bo;
  bo.max_seconds = 2.0;
  if (opt.reps) bo.min_samples = bo.max_samples = opt.reps;
  std::vector<common::ResultRow> rows;
  if (lead) {
    common::ResultRow meta = common::meta_row("stream_compaction", envinfo);
    meta.add_metric("gpus", env.world, "");
    rows.push_back(meta);
  }
  const std::string params = std::string("dist=") + mg::dist_name(dist);
  std::vector<double> one_gpu_ms(locals.size());
  for (std::size_t k = 0; k < locals.size(); ++k) {
    const sc::Version* v = sc::find_version(std::string("sort_") + mg::local_sort_name(locals[k]));
    say("one GPU: " + v->name + " of " + std::to_string(n) + " keys");
    ref[k].resize(std::max<std::int64_t>(n, 1));
    mg::local_sort(locals[k], all.get(), ref[k].get(), n, scratch, s);
    common::Verdict verdict = common::Verdict::pass();
    if (k > 0) {  // two independent sorts of the same keys must agree
      const std::uint64_t bad = mg::count_mismatches(ref[0].get(), ref[k].get(), n, s);
      if (bad)
        verdict = common::Verdict::fail(std::to_string(bad) + " keys differ from " + mg::local_sort_name(locals[0]) +
                                        "'s sort");
    }
    if (n <= (std::int64_t{1} << 26)) {  // and against the host where that is quick
      std::vector<std::uint32_t> h(n), g(n);
      CUDA_CHECK(cudaMemcpyAsync(h.data(), all.get(), n * 4, cudaMemcpyDeviceToHost, s));
      CUDA_CHECK(cudaMemcpyAsync(g.data(), ref[k].get(), n * 4, cudaMemcpyDeviceToHost, s));
      CUDA_CHECK(cudaStreamSynchronize(s));
      std::sort(h.begin(), h.end());
      if (h != g) verdict = common::Verdict::fail("differs from std::sort");
    }
    common::ResultRow r =
        common::make_row("stream_compaction", v->name, v->idea, n, params + " gpus=1", envinfo.device.name,
                         v->role == common::Role::library ? "library" : "version");
    r.verdict = verdict;
    r.stats = common::bench_gpu(
        [&](cudaStream_t st) { mg::local_sort(locals[k], all.get(), ref[k].get(), n, scratch, st); }, s, bo);
    one_gpu_ms[k] = r.stats.median_ms;
    r.metric = n / (r.stats.median_ms * 1e-3) / 1e9;
    r.metric_unit = "Gkeys/s";
    if (lead) rows.push_back(r);
  }
  barrier();

  // Together
  bool all_pass = true;
  for (std::size_t k = 0; k < locals.size(); ++k) {
    say(std::string(kMultiName) + " on " + std::to_string(env.world) + " GPUs, local sort " +
        mg::local_sort_name(locals[k]));
    mg::Sorter sorter(comm, env.rank, env.world, partition);
    const std::int64_t held = sorter.sort(mine.get(), end - begin, locals[k]);
    const std::vector<std::int64_t> helds = all_gather<std::int64_t>(held, comm, s, env.world);
    std::int64_t offset = 0, total = 0, most = 0;
    for (int q = 0; q < env.world; ++q) {
      if (q < env.rank) offset += helds[q];
      total += helds[q];
      most = std::max(most, helds[q]);
    }
    std::uint64_t bad = total == n ? mg::count_mismatches(sorter.out(), ref[0].get() + offset, held, s) : 1;
    const std::vector<std::uint64_t> bads = all_gather<std::uint64_t>(bad, comm, s, env.world);
    std::uint64_t bad_total = 0;
    for (auto b : bads) bad_total += b;
    common::Verdict verdict = common::Verdict::pass();
    if (total != n)
      verdict = common::Verdict::fail("the ranks hold " + std::to_string(total) + " keys, not " + std::to_string(n));
    else if (bad_total)
      verdict = common::Verdict::fail(std::to_string(bad_total) + " keys differ from the one-GPU sort");
    all_pass = all_pass && verdict.ok();

    // Timed: after a barrier, CUDA events from the first kernel to the merge, the slowest rank's
    std::vector<double> totals;
    std::vector<mg::Phases> phases;
    for (int rep = 0; rep < 2 + (opt.reps ? opt.reps : 10); ++rep) {
      barrier();
      mg::Phases p;
      sorter.sort(mine.get(), end - begin, locals[k], &p);
      const double mine_ms = p.splitters + p.partition + p.sort_kept + p.exchange_wait + p.sort_received + p.merge;
      double slowest = 0;
      for (double t : all_gather<double>(mine_ms, comm, s, env.world)) slowest = std::max(slowest, t);
      if (rep >= 2) {
        totals.push_back(slowest);
        phases.push_back(p);
      }
    }
    // The exchange alone (the link's ceiling for this traffic): the same all-to-all, nothing beside it
    std::vector<double> alone;
    {
      const mg::Phases& p = phases.back();  // the same input every rep: the same bucket sizes
      common::DeviceBuffer<std::uint32_t> a(std::max<std::int64_t>(p.sent, 1)),
          b(std::max<std::int64_t>(p.received, 1));
      const std::vector<std::int64_t> sends = all_gather<std::int64_t>(p.sent, comm, s, env.world);
      common::Event e0, e1;
      for (int rep = 0; rep < 6 && env.world == 2; ++rep) {
        barrier();
        e0.record(s);
        const int peer = 1 - env.rank;
        mg::nccl_check(ncclGroupStart(), "ncclGroupStart");
        if (p.sent) mg::nccl_check(ncclSend(a.get(), p.sent, ncclUint32, peer, comm, s), "ncclSend");
        if (sends[peer]) mg::nccl_check(ncclRecv(b.get(), sends[peer], ncclUint32, peer, comm, s), "ncclRecv");
        mg::nccl_check(ncclGroupEnd(), "ncclGroupEnd");
        e1.record(s);
        CUDA_CHECK(cudaEventSynchronize(e1.get()));
        if (rep >= 1) alone.push_back(e1.since(e0));
      }
    }
    if (!lead) continue;
    auto median_of = [](const std::vector<double>& x) {
      return x.empty() ? common::kNoValue : common::summarize(x).median_ms;
    };
    common::ResultRow r = common::make_row(
        "stream_compaction", kMultiName,
        "sample sort over NCCL, one process per GPU: splitters from all-gathered samples, bucket scatter, all-to-all "
        "overlapped with sorting the kept bucket, sort what arrived, merge",
        n,
        params + " gpus=" + std::to_string(env.world) + " local=" + mg::local_sort_name(locals[k]) +
            (partition == mg::Partition::automatic ? "" : " partition=" + opt.extra.at("partition")),
        envinfo.device.name, "version");
    r.verdict = verdict;
    r.stats = common::summarize(totals);
    r.metric = n / (r.stats.median_ms * 1e-3) / 1e9;
    r.metric_unit = "Gkeys/s";
    r.speedup_vs_prev = one_gpu_ms[k] / r.stats.median_ms;  // x its own local sort on one GPU
    r.ceiling = "linear_scaling";
    r.pct_of_ceiling = 100.0 * r.speedup_vs_prev / env.world;
    auto phase = [&](double mg::Phases::* f) {
      std::vector<double> x;
      for (const auto& p : phases) x.push_back(p.*f);
      return median_of(x);
    };
    r.add_metric("x_one_gpu", r.speedup_vs_prev, "x");
    r.add_metric("splitters", phase(&mg::Phases::splitters), "ms");
    r.add_metric("partition", phase(&mg::Phases::partition), "ms");
    r.add_metric("sort_kept", phase(&mg::Phases::sort_kept), "ms");
    r.add_metric("exchange_wait", phase(&mg::Phases::exchange_wait), "ms");
    r.add_metric("sort_received", phase(&mg::Phases::sort_received), "ms");
    r.add_metric("merge", phase(&mg::Phases::merge), "ms");
    r.add_metric("exchange_overlapped", phase(&mg::Phases::exchange), "ms");
    const double alone_ms = median_of(alone);
    r.add_metric("exchange_alone", alone_ms, "ms");
    if (!phases.empty() && alone_ms > 0)
      r.add_metric("link_bandwidth", 4.0 * phases.back().sent / (alone_ms * 1e-3) / 1e9, "GB/s");
    r.add_metric("imbalance", static_cast<double>(most) * env.world / std::max<std::int64_t>(n, 1), "x");
    rows.push_back(r);
  }
  ncclCommDestroy(comm);
  if (!lead) return all_pass ? 0 : 1;
  // x lib: every row against CUB's one-GPU sort
  double cub_ms = common::kNoValue;
  for (const auto& r : rows)
    if (r.role == "library") cub_ms = r.stats.median_ms;
  for (auto& r : rows)
    if (r.kind == "version" && r.stats.samples) r.speedup_vs_library = cub_ms / r.stats.median_ms;
  common::print_table(std::cout, rows);
  for (const auto& r : rows)
    if (r.version == kMultiName) {
      std::printf("%s %s: %.3f ms (%.2fx one GPU); phases (ms, rank 0):", r.version.c_str(), r.params.c_str(),
                  r.stats.median_ms, r.speedup_vs_prev);
      for (const auto& m : r.metrics)
        std::printf(" %s=%.3f%s", m.name.c_str(), m.value, m.unit == "ms" ? "" : m.unit.c_str());
      std::printf("\n");
    }
  return common::finish_run(std::cout, kProgram, rows, opt.csv);
}

}  // namespace

int main(int argc, char** argv) {
  g_args.assign(argv, argv + argc);
  return common::driver_main(
      argc, argv,
      {kProgram,
       "The multi-GPU sample sort, one process per GPU, timed against one GPU sorting everything, each rank's slice "
       "checked against the one-GPU result.",
       {{"launch",
         "start P ranks on this machine's GPUs 0..P-1 (else: one rank, or the rank a launcher's environment names)",
         true, "0"},
        {"dist", "keys: uniform, few (4 values), sorted, reversed", true, "uniform"},
        {"local", "the sort each GPU runs: cub, onesweep or both", true, "both"},
        {"partition",
         "auto or matched: rank keys within a bucket by ballots (up to 8 ranks) or by a warp match (above)", true,
         "auto"}},
       {"sweep", "cold", "input", "version"}},
      run);
}
