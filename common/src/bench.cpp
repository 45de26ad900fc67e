#include "common/bench.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <string>

#include "common/cuda_check.hpp"

namespace common {

BenchStats summarize(std::vector<double> s) {
  BenchStats r;
  if (s.empty()) return r;
  std::sort(s.begin(), s.end());
  const std::size_t n = s.size();
  r.samples = static_cast<int>(n);
  r.min_ms = s.front();
  r.max_ms = s.back();
  r.median_ms = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  const double mean = std::accumulate(s.begin(), s.end(), 0.0) / n;
  double var = 0;
  for (double x : s) var += (x - mean) * (x - mean);
  var = n > 1 ? var / (n - 1) : 0.0;
  r.noise = mean > 0 ? std::sqrt(var) / mean : 0.0;
  return r;
}

bool should_stop(const std::vector<double>& s, double elapsed_s, const BenchOptions& o) {
  const int n = static_cast<int>(s.size());
  if (n >= o.max_samples) return true;
  if (n < o.min_samples) return n >= 1 && elapsed_s > 4 * o.max_seconds;  // very slow work
  if (elapsed_s >= o.max_seconds) return true;
  const BenchStats st = summarize(s);
  return st.noise / std::sqrt(static_cast<double>(n)) <= o.noise_target;
}

void L2Flusher::flush(cudaStream_t s) { CUDA_CHECK(cudaMemsetAsync(buffer_.get(), 0x5a, buffer_.bytes(), s)); }

BenchStats bench_gpu(const std::function<void(cudaStream_t)>& work, cudaStream_t stream, const BenchOptions& o,
                     L2Flusher* flusher, const FreshInputs* fresh) {
  EventTimer timer;
  FreshInputs idle_after;  // the caller's hooks, the refresh followed by a wait for the stream
  if (fresh) {
    idle_after = *fresh;
    idle_after.refresh = [&] {
      if (fresh->refresh) fresh->refresh();
      CUDA_CHECK(cudaStreamSynchronize(stream));
    };
  }
  return bench_loop(
      [&](bool recording) -> double {
        if (!recording) {
          work(stream);
          CUDA_CHECK(cudaStreamSynchronize(stream));
          return 0;
        }
        if (flusher && o.flush_l2) flusher->flush(stream);
        timer.start(stream);
        work(stream);
        return timer.stop_ms(stream);
      },
      o, fresh ? &idle_after : nullptr);
}

namespace {

// "timed sample 3 of 10", "timed sample 3" (the count is not fixed), "warm-up run 1 of 2".
std::string run_name(bool recording, int index, const BenchOptions& o) {
  if (!recording) return "warm-up run " + std::to_string(index) + " of " + std::to_string(o.warmup);
  std::string s = "timed sample " + std::to_string(index);
  if (o.min_samples == o.max_samples) s += " of " + std::to_string(o.max_samples);
  return s;
}

}  // namespace

BenchStats bench_loop(const std::function<double(bool)>& sample, const BenchOptions& o, const FreshInputs* fresh) {
  double hooks_ms = 0;  // spent in refresh and verify: not the work's, so not the budget's
  auto run = [&](bool recording, int index) {
    if (fresh && fresh->refresh) {
      const WallTimer t;
      fresh->refresh();
      hooks_ms += t.elapsed_ms();
    }
    const double ms = sample(recording);
    if (fresh && fresh->verify) {
      const WallTimer t;
      const std::string wrong = fresh->verify();
      hooks_ms += t.elapsed_ms();
      if (!wrong.empty())
        throw FreshInputMismatch(run_name(recording, index, o) + ": " + wrong +
                                 " (the version may replay an earlier result)");
    }
    return ms;
  };
  for (int i = 0; i < o.warmup; ++i) (void)run(false, i + 1);
  std::vector<double> samples;
  hooks_ms = 0;
  const WallTimer total;
  for (;;) {
    samples.push_back(run(true, static_cast<int>(samples.size()) + 1));
    if (should_stop(samples, (total.elapsed_ms() - hooks_ms) * 1e-3, o)) break;
  }
  return summarize(samples);
}

BenchStats bench_cpu(const std::function<void()>& work, const BenchOptions& o, const FreshInputs* fresh) {
  return bench_loop(
      [&](bool) {
        const WallTimer t;
        work();
        return t.elapsed_ms();
      },
      o, fresh);
}

void StageTimes::add(const std::string& stage, double ms) {
  for (auto& [name, samples] : stages_)
    if (name == stage) {
      samples.push_back(ms);
      return;
    }
  stages_.push_back({stage, {ms}});
}

std::vector<std::pair<std::string, BenchStats>> StageTimes::summary() const {
  std::vector<std::pair<std::string, BenchStats>> out;
  for (const auto& [name, samples] : stages_) out.push_back({name, summarize(samples)});
  return out;
}

void record_timing_node(cudaEvent_t event, cudaStream_t stream) {
  CUDA_CHECK(cudaEventRecordWithFlags(event, stream, cudaEventRecordExternal));
}

EventTimer::EventTimer() {
  CUDA_CHECK(cudaEventCreate(&start_));
  CUDA_CHECK(cudaEventCreate(&stop_));
}
EventTimer::~EventTimer() {
  cudaEventDestroy(start_);
  cudaEventDestroy(stop_);
}
void EventTimer::start(cudaStream_t s) { CUDA_CHECK(cudaEventRecord(start_, s)); }
float EventTimer::stop_ms(cudaStream_t s) {
  CUDA_CHECK(cudaEventRecord(stop_, s));
  CUDA_CHECK(cudaEventSynchronize(stop_));
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
  return ms;
}

}  // namespace common
