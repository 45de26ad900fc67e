// --fresh-inputs (stream_compaction/fresh_inputs.hpp): the grader's defence against a version that
// remembers its last input and replays its output. The host side (inputs, checks, the CPU hooks)
// is tested without a GPU; the device side, the replaying versions the bench must reject and the
// honest ones it must pass need one (skipped, saying why, without).
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "../common/exercise_support.hpp"
#include "common/bench.hpp"
#include "common/cuda_check.hpp"
#include "common/device_buffer.hpp"
#include "common/requirements.hpp"
#include "stream_compaction/check.hpp"
#include "stream_compaction/fresh_inputs.hpp"
#include "stream_compaction/registry.hpp"

namespace sc = StreamCompaction;
namespace fresh = StreamCompaction::Fresh;

namespace {

constexpr sc::Op kOps[] = {sc::Op::Scan, sc::Op::Compact, sc::Op::Sort, sc::Op::SortPairs};

// The reference output of op for in, sized for a compaction's count too.
std::vector<int> reference(sc::Op op, const std::vector<int>& in, std::int64_t& kept) {
  std::vector<int> out(std::max<std::size_t>(in.size(), 1));
  kept = sc::reference_output(op, static_cast<std::int64_t>(in.size()), out.data(), in.data());
  return out;
}

std::vector<int> fresh_input(sc::Op op, std::uint64_t key, std::int64_t n) {
  std::vector<int> v(n);
  fresh::fill(op, key, n, v.data());
  return v;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

// ---- host: no GPU needed ------------------------------------------------------------------------

TEST(FreshInputsHost, KeepTheOpsDistributionAndDifferPerKey) {
  const std::int64_t n = 1 << 16;
  const auto scan = fresh_input(sc::Op::Scan, 1, n), compact = fresh_input(sc::Op::Compact, 1, n);
  const auto sort = fresh_input(sc::Op::Sort, 1, n), other = fresh_input(sc::Op::Scan, 2, n);
  EXPECT_TRUE(std::all_of(scan.begin(), scan.end(), [](int x) { return x >= 0 && x < 50; }));
  EXPECT_TRUE(std::all_of(compact.begin(), compact.end(), [](int x) { return x >= 0 && x < 4; }));
  const auto zeros = std::count(compact.begin(), compact.end(), 0);
  EXPECT_NEAR(static_cast<double>(zeros) / n, 0.25, 0.02);  // compaction keeps about 3/4
  EXPECT_TRUE(std::any_of(sort.begin(), sort.end(), [](int x) { return x < -(1 << 30); }));  // the whole range
  EXPECT_TRUE(std::any_of(sort.begin(), sort.end(), [](int x) { return x > (1 << 30); }));
  std::int64_t same = 0;
  for (std::int64_t i = 0; i < n; ++i) same += scan[i] == other[i];
  EXPECT_LT(same, n / 20) << "two keys gave nearly the same input";
  EXPECT_NE(fresh::new_key(), fresh::new_key());
  EXPECT_EQ(fresh::value(sc::Op::Sort, 7, 12345), fresh_input(sc::Op::Sort, 7, 12346)[12345]);
}

// An edge case's fresh inputs are that edge again: every timed run of "fill=zeros" is on zeros (a
// compaction that keeps nothing passes each of them), of "fill=nonzero" on inputs without a 0.
TEST(FreshInputsHost, EdgeFillsDrawTheirEdge) {
  const std::int64_t n = (std::int64_t{1} << 18) + 3;  // the threaded fill too
  for (sc::Op op : kOps) {
    std::vector<int> zeros(n, 5), nonzero(n, 0);
    fresh::fill(op, 11, n, zeros.data(), fresh::Fill::zeros);
    fresh::fill(op, 11, n, nonzero.data(), fresh::Fill::nonzero);
    EXPECT_TRUE(std::all_of(zeros.begin(), zeros.end(), [](int x) { return x == 0; })) << sc::op_name(op);
    EXPECT_TRUE(std::none_of(nonzero.begin(), nonzero.end(), [](int x) { return x == 0; })) << sc::op_name(op);
    const auto random = fresh_input(op, 11, n);
    for (std::int64_t i = 0; i < n; i += 997) EXPECT_EQ(nonzero[i], random[i] == 0 ? 1 : random[i]);
  }
  // a compaction body that keeps nothing, timed on fresh inputs of the zeros edge: every sample checks
  std::vector<int> in(1000), out(1000, 0);
  std::int64_t count = 0;
  common::BenchOptions o;
  o.warmup = 0;
  o.min_samples = o.max_samples = 5;
  const common::FreshInputs zeros_hooks =
      fresh::host_hooks(sc::Op::Compact, 1000, in.data(), out.data(), &count, fresh::Fill::zeros);
  EXPECT_NO_THROW(common::bench_cpu([&] { count = 0; }, o, &zeros_hooks));
  const common::FreshInputs random_hooks = fresh::host_hooks(sc::Op::Compact, 1000, in.data(), out.data(), &count);
  EXPECT_THROW(common::bench_cpu([&] { count = 0; }, o, &random_hooks), common::FreshInputMismatch);
}

// From 2^18 elements the host's fill and check are split over threads: a wrong output is still
// named at its first difference, wherever the chunks fall.
TEST(FreshInputsHost, ThreadedChecksNameTheFirstDifference) {
  const std::int64_t n = (std::int64_t{1} << 18) + 7;
  for (sc::Op op : kOps) {
    const auto in = fresh_input(op, 77, n);
    EXPECT_EQ(fresh::value(op, 77, n - 1), in[n - 1]);
    std::int64_t kept = 0;
    auto out = reference(op, in, kept);
    EXPECT_EQ(fresh::check(op, n, in.data(), out.data(), kept), "") << sc::op_name(op);
    if (op == sc::Op::Sort || op == sc::Op::SortPairs) {
      std::swap(out[n - 3], out[n - 2]);  // a late chunk's order
      if (out[n - 3] != out[n - 2])
        EXPECT_TRUE(starts_with(fresh::check(op, n, in.data(), out.data(), kept),
                                "output is not sorted at index " + std::to_string(n - 2)));
      continue;
    }
    const std::int64_t last = op == sc::Op::Compact ? kept - 1 : n - 1;
    out[last] += 1;
    out[1000] += 1;  // the first chunk's, named first
    const std::string word = op == sc::Op::Scan ? "output differs from the input's exclusive scan at index 1000"
                                                : "output differs from the input's compaction at index 1000";
    EXPECT_TRUE(starts_with(fresh::check(op, n, in.data(), out.data(), kept), word))
        << fresh::check(op, n, in.data(), out.data(), kept);
    out[1000] -= 1;
    EXPECT_TRUE(starts_with(fresh::check(op, n, in.data(), out.data(), kept),
                            word.substr(0, word.size() - 4) + std::to_string(last)));
  }
}

TEST(FreshInputsHost, AcceptsTheReferenceOutputOfEveryFreshInput) {
  for (sc::Op op : kOps)
    for (std::int64_t n : {0, 1, 2, 33, 4097, (1 << 16) + 1}) {
      const auto in = fresh_input(op, 1000 + n, n);
      std::int64_t kept = 0;
      const auto out = reference(op, in, kept);
      EXPECT_EQ(fresh::check(op, n, in.data(), out.data(), kept), "") << sc::op_name(op) << " n=" << n;
    }
}

TEST(FreshInputsHost, RejectsAWrongScanAtItsFirstWrongIndex) {
  const auto in = fresh_input(sc::Op::Scan, 5, 1000);
  std::int64_t kept = 0;
  auto out = reference(sc::Op::Scan, in, kept);
  out[17] += 1;
  EXPECT_EQ(fresh::check(sc::Op::Scan, 1000, in.data(), out.data(), 0),
            "output differs from the input's exclusive scan at index 17: " + std::to_string(out[17]) + ", expected " +
                std::to_string(out[17] - 1));
  out[17] -= 1;
  out[0] = 3;  // an inclusive-looking start
  EXPECT_TRUE(starts_with(fresh::check(sc::Op::Scan, 1000, in.data(), out.data(), 0),
                          "output differs from the input's exclusive scan at index 0"));
}

TEST(FreshInputsHost, RejectsAWrongCompactionCountOrElement) {
  const auto in = fresh_input(sc::Op::Compact, 6, 5000);
  std::int64_t kept = 0;
  auto out = reference(sc::Op::Compact, in, kept);
  EXPECT_EQ(fresh::check(sc::Op::Compact, 5000, in.data(), out.data(), kept + 1),
            "kept count " + std::to_string(kept + 1) + ", the input has " + std::to_string(kept) + " nonzeros");
  std::size_t other = 41;
  while (out[other] == out[40]) ++other;
  std::swap(out[40], out[other]);  // two different values out of order
  EXPECT_TRUE(starts_with(fresh::check(sc::Op::Compact, 5000, in.data(), out.data(), kept),
                          "output differs from the input's compaction at index 40"));
}

TEST(FreshInputsHost, RejectsAnUnsortedOrForeignSort) {
  for (sc::Op op : {sc::Op::Sort, sc::Op::SortPairs}) {
    const auto in = fresh_input(op, 8, 4097);
    std::int64_t kept = 0;
    auto out = reference(op, in, kept);
    auto unsorted = out;
    std::swap(unsorted[100], unsorted[200]);
    EXPECT_TRUE(starts_with(fresh::check(op, 4097, in.data(), unsorted.data(), 0), "output is not sorted at index"));
    out[100] = out[101];  // still sorted, one key lost and another doubled
    EXPECT_EQ(fresh::check(op, 4097, in.data(), out.data(), 0), fresh::not_a_permutation());
    // the output of another input: sorted, and a different multiset
    const auto other = fresh_input(op, 9, 4097);
    EXPECT_EQ(fresh::check(op, 4097, in.data(), reference(op, other, kept).data(), 0), fresh::not_a_permutation());
  }
}

// The filed attack on a CPU version: it remembers its last input (address, size and a sample) and
// replays. Without fresh inputs every timed run is a replay; with them none is.
TEST(FreshInputsHost, ACachingCpuVersionNeverReplaysUnderFreshInputs) {
  const std::int64_t n = 10000;
  std::vector<int> in = fresh_input(sc::Op::Scan, 3, n), out(n);
  struct Cache {
    const int* at = nullptr;
    int sample[8] = {};
    std::vector<int> out;
    int hits = 0;
  } cache;
  auto replaying_scan = [&] {
    bool same = cache.at == in.data() && !cache.out.empty();
    for (int k = 0; k < 8 && same; ++k) same = cache.sample[k] == in[k * (n / 8)];
    if (same) {
      ++cache.hits;
      std::copy(cache.out.begin(), cache.out.end(), out.begin());
      return;
    }
    sc::reference_output(sc::Op::Scan, n, out.data(), in.data());
    cache.at = in.data();
    for (int k = 0; k < 8; ++k) cache.sample[k] = in[k * (n / 8)];
    cache.out = out;
  };
  common::BenchOptions o;
  o.warmup = 2;
  o.min_samples = o.max_samples = 5;
  replaying_scan();  // the driver's check run
  common::bench_cpu(replaying_scan, o);
  EXPECT_EQ(cache.hits, 7);  // checked once, then every run replayed
  cache.hits = 0;
  const common::FreshInputs hooks = fresh::host_hooks(sc::Op::Scan, n, in.data(), out.data(), nullptr);
  EXPECT_EQ(common::bench_cpu(replaying_scan, o, &hooks).samples, 5);
  EXPECT_EQ(cache.hits, 0);  // every run did the work
}

// A CPU version that replays whatever it computed first (keyed on nothing the refresh changes).
TEST(FreshInputsHost, ACpuReplayIsRejectedNamingTheRun) {
  const std::int64_t n = 1000;
  std::vector<int> in = fresh_input(sc::Op::Compact, 4, n), out(n), first;
  std::int64_t count = 0, first_count = 0;
  auto replay = [&] {
    if (first.empty()) {
      count = sc::reference_output(sc::Op::Compact, n, out.data(), in.data());
      first = out;
      first_count = count;
    } else {
      std::copy(first.begin(), first.end(), out.begin());
      count = first_count;
    }
  };
  replay();
  common::BenchOptions o;
  o.warmup = 0;
  o.min_samples = o.max_samples = 10;
  const common::FreshInputs hooks = fresh::host_hooks(sc::Op::Compact, n, in.data(), out.data(), &count);
  try {
    common::bench_cpu(replay, o, &hooks);
    FAIL() << "a replayed compaction was timed";
  } catch (const common::FreshInputMismatch& e) {
    EXPECT_TRUE(starts_with(e.what(), "timed sample 1 of 10: ")) << e.what();
    EXPECT_NE(std::string(e.what()).find("(the version may replay an earlier result)"), std::string::npos);
  }
}

// ---- device ---------------------------------------------------------------------------------------

namespace {

// Device buffers of one size and the driver's timing of a GPU version (app/main.cpp time_version):
// a check run on `input` (the driver's own check), then 2 warm-ups and `reps` samples, with fresh
// inputs or without. Throws FreshInputMismatch as the driver's row would fail.
struct DeviceCase {
  sc::Op op;
  std::int64_t n;
  common::DeviceBuffer<int> in, out;
  common::DeviceBuffer<std::int64_t> count{1};
  sc::Device::ScratchTree scratch;
  fresh::DeviceChecker checker;
  cudaStream_t stream = nullptr;

  DeviceCase(sc::Op o, const std::vector<int>& input) : op(o), n(static_cast<std::int64_t>(input.size())) {
    in.resize(std::max<std::int64_t>(n, 1));
    out.resize(std::max<std::int64_t>(n, 1));
    CUDA_CHECK(cudaMemcpy(in.get(), input.data(), n * sizeof(int), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaStreamCreate(&stream));
  }
  ~DeviceCase() { cudaStreamDestroy(stream); }
  sc::RunArgs args() {
    sc::RunArgs a;
    a.n = n;
    a.out = out.get();
    a.in = in.get();
    a.count = count.get();
    a.scratch = &scratch;
    a.stream = stream;
    return a;
  }
  common::BenchStats time(const std::function<void(const sc::RunArgs&)>& run, bool fresh_inputs, int reps = 5) {
    sc::RunArgs a = args();
    run(a);  // the check run
    CUDA_CHECK(cudaStreamSynchronize(stream));
    common::BenchOptions o;
    o.warmup = 2;
    o.min_samples = o.max_samples = reps;
    const common::FreshInputs hooks = fresh::device_hooks(checker, op, n, in.get(), out.get(), count.get(), stream);
    return common::bench_gpu([&](cudaStream_t) { run(a); }, stream, o, nullptr, fresh_inputs ? &hooks : nullptr);
  }
  std::string check(const std::vector<int>& input, const std::vector<int>& output, std::int64_t kept) {
    CUDA_CHECK(cudaMemcpy(in.get(), input.data(), n * sizeof(int), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(out.get(), output.data(), n * sizeof(int), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(count.get(), &kept, sizeof kept, cudaMemcpyHostToDevice));
    return checker.check(op, n, in.get(), out.get(), count.get(), stream);
  }
};

// The attack of issue 37 as a version: it remembers its last input and replays the output it
// computed then (a device-to-device copy) while the key matches. `sampled`: the key is the input's
// address, its size and 64 elements of it (the filed attack); else the address and size alone (a
// replay that never looks at the data). A miss runs the honest version and remembers its output.
class ReplayCache {
 public:
  ReplayCache(const sc::Version& honest, bool sampled) : honest_(honest), sampled_(sampled) {}
  void run(const sc::RunArgs& a) {
    const std::vector<int> key = key_of(a);
    const std::size_t bytes = std::max<std::int64_t>(a.n, 1) * sizeof(int);
    if (!cached_.size() || key != key_) {
      honest_.run(a);
      cached_.resize(std::max<std::int64_t>(a.n, 1));
      CUDA_CHECK(cudaMemcpyAsync(cached_.get(), a.out, bytes, cudaMemcpyDeviceToDevice, a.stream));
      CUDA_CHECK(
          cudaMemcpyAsync(cached_count_.get(), a.count, sizeof(std::int64_t), cudaMemcpyDeviceToDevice, a.stream));
      key_ = key;
      ++misses;
      return;
    }
    ++hits;
    CUDA_CHECK(cudaMemcpyAsync(a.out, cached_.get(), bytes, cudaMemcpyDeviceToDevice, a.stream));
    CUDA_CHECK(cudaMemcpyAsync(a.count, cached_count_.get(), sizeof(std::int64_t), cudaMemcpyDeviceToDevice, a.stream));
  }
  int hits = 0, misses = 0;

 private:
  std::vector<int> key_of(const sc::RunArgs& a) const {
    const auto at = reinterpret_cast<std::uintptr_t>(a.in);
    std::vector<int> key = {static_cast<int>(at), static_cast<int>(at >> 32), static_cast<int>(a.n)};
    if (!sampled_ || a.n == 0) return key;
    const std::int64_t count = std::min<std::int64_t>(64, a.n), stride = a.n / count;
    std::vector<int> sample(count);
    CUDA_CHECK(cudaMemcpy2DAsync(sample.data(), sizeof(int), a.in, stride * sizeof(int), sizeof(int), count,
                                 cudaMemcpyDeviceToHost, a.stream));
    CUDA_CHECK(cudaStreamSynchronize(a.stream));
    key.insert(key.end(), sample.begin(), sample.end());
    return key;
  }
  const sc::Version& honest_;
  bool sampled_;
  std::vector<int> key_;
  common::DeviceBuffer<int> cached_;
  common::DeviceBuffer<std::int64_t> cached_count_{1};
};

// The library version of op (CUB): runs on every GPU, never a handout's starter body.
const sc::Version& library_version(sc::Op op) {
  for (const auto& v : sc::versions())
    if (v.op == op && v.role == common::Role::library) return v;
  throw std::logic_error(std::string("no library version of ") + sc::op_name(op));
}

std::vector<int> driver_like_input(sc::Op op, std::int64_t n) { return fresh_input(op, 20261121 + n, n); }

}  // namespace

// Without --fresh-inputs the attack works: checked once, then every run a copy (what was graded
// 5/5 at 36.7x the reference's speed).
TEST(FreshInputsDevice, WithoutFreshInputsEveryTimedRunIsAReplay) {
  REQUIRE_GPU();
  for (bool sampled : {false, true}) {
    DeviceCase c(sc::Op::Scan, driver_like_input(sc::Op::Scan, (1 << 20) + 3));
    ReplayCache replay(library_version(sc::Op::Scan), sampled);
    EXPECT_EQ(c.time([&](const sc::RunArgs& a) { replay.run(a); }, false).samples, 5);
    EXPECT_EQ(replay.misses, 1);
    EXPECT_EQ(replay.hits, 7);
  }
}

// A replay keyed on the input's address and size: its first fresh run gets the old output, and the
// bench fails naming that run, for every op.
TEST(FreshInputsDevice, AReplayIsRejectedAtItsFirstFreshRun) {
  REQUIRE_GPU();
  for (sc::Op op : kOps)
    for (std::int64_t n : {std::int64_t{4097}, std::int64_t{(1 << 20) + 3}}) {
      DeviceCase c(op, driver_like_input(op, n));
      ReplayCache replay(library_version(op), false);
      try {
        c.time([&](const sc::RunArgs& a) { replay.run(a); }, true);
        ADD_FAILURE() << sc::op_name(op) << " n=" << n << ": a replayed output was timed";
      } catch (const common::FreshInputMismatch& e) {
        const std::string what = e.what();
        EXPECT_TRUE(starts_with(what, "warm-up run 1 of 2: ")) << what;
        EXPECT_NE(what.find("(the version may replay an earlier result)"), std::string::npos) << what;
        const bool named = op == sc::Op::Scan ? what.find("exclusive scan at index") != std::string::npos
                           : op == sc::Op::Compact
                               ? what.find("kept count") != std::string::npos ||  // the old count, mostly
                                     what.find("the input's compaction at index") != std::string::npos
                               : what.find("not a permutation of the input") != std::string::npos;
        EXPECT_TRUE(named) << what;
      }
      EXPECT_EQ(replay.hits, 1) << sc::op_name(op);  // it replayed once, and that was the end
    }
}

// The filed attack (keyed on a sample of the data too) never hits under fresh inputs: every timed
// run does the work, and passes.
TEST(FreshInputsDevice, ASampleKeyedReplayDoesTheWorkEveryRun) {
  REQUIRE_GPU();
  for (sc::Op op : kOps) {
    DeviceCase c(op, driver_like_input(op, (1 << 20) + 3));
    ReplayCache replay(library_version(op), true);
    EXPECT_EQ(c.time([&](const sc::RunArgs& a) { replay.run(a); }, true).samples, 5) << sc::op_name(op);
    EXPECT_EQ(replay.hits, 0) << sc::op_name(op);
    EXPECT_EQ(replay.misses, 8) << sc::op_name(op);
  }
}

// Every GPU version of the registry passes the fresh-input bench at the awkward sizes: the checks
// reject no correct output (a false failure would cost an honest student the version's points).
TEST(FreshInputsDevice, EveryHonestVersionPasses) {
  REQUIRE_GPU();
  for (const auto& v : sc::versions()) {
    if (!v.needs_gpu || !common::unmet(v.needs).empty()) continue;
    for (std::int64_t n : {0, 1, 2, 31, 33, 4097, 6017, (1 << 16) + 5, (1 << 20) + 3}) {
      DeviceCase c(v.op, driver_like_input(v.op, n));
      course_test::implemented(v.name, [&] {
        try {
          EXPECT_EQ(c.time(v.run, true, 3).samples, 3) << v.name << " n=" << n;
        } catch (const common::FreshInputMismatch& e) {
          ADD_FAILURE() << v.name << " n=" << n << ": " << e.what();
        }
      });
    }
  }
  COURSE_SKIP_NOTED();
}

// The device checks agree with the host's: the same fresh input from a key, the same verdicts and
// words on right and wrong outputs.
TEST(FreshInputsDevice, DeviceChecksAgreeWithTheHostChecks) {
  REQUIRE_GPU();
  for (sc::Op op : kOps)
    for (std::int64_t n : {1, 2, 4095, 4096, 4097, (1 << 16) + 5}) {
      const std::vector<int> in = fresh_input(op, 99 + n, n);
      DeviceCase c(op, in);
      std::vector<int> filled(n);
      c.checker.fill(op, 99 + n, n, c.in.get(), c.stream);
      CUDA_CHECK(cudaStreamSynchronize(c.stream));
      CUDA_CHECK(cudaMemcpy(filled.data(), c.in.get(), n * sizeof(int), cudaMemcpyDeviceToHost));
      EXPECT_EQ(filled, in) << sc::op_name(op) << " n=" << n;
      std::int64_t kept = 0;
      std::vector<int> out = reference(op, in, kept);
      out.resize(n);
      EXPECT_EQ(c.check(in, out, kept), "") << sc::op_name(op) << " n=" << n;
      std::vector<std::vector<int>> wrong;  // outputs the host check rejects
      auto bad = out;
      bad[n / 2] ^= 1;
      wrong.push_back(bad);
      if (n > 1) {
        bad = out;
        std::reverse(bad.begin(), bad.end());
        wrong.push_back(bad);
      }
      for (const auto& w : wrong) {
        const std::string host = fresh::check(op, n, in.data(), w.data(), kept);
        if (host.empty()) continue;  // e.g. a reversed run of equal values
        EXPECT_EQ(c.check(in, w, kept), host) << sc::op_name(op) << " n=" << n;
      }
      if (op == sc::Op::Compact) {
        EXPECT_EQ(c.check(in, out, kept - 1), fresh::kept_count_differs(kept - 1, kept));
      }
    }
}
