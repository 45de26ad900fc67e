// v5 streamed: frames are independent, so several are kept in flight — one v4 engine (its own
// buffers, pinned staging, graph and stream) per stream, frames dealt round-robin. While one
// frame's upload crosses PCIe another's kernels run and a third's labels come back. Prediction:
// throughput approaches 1 / max(copy time, kernel time) per frame instead of 1 / their sum,
// >= 10,000 frames/s for 124k-point frames. The frames come from pinned memory (a sensor driver
// writes there), so the host copy into it is not part of the loop.
#include <algorithm>
#include <memory>
#include <vector>

#include "common/bench.hpp"
#include "common/cuda_check.hpp"
#include "ground_seg/engine.hpp"
#include "ground_seg/gpu.hpp"

namespace ground_seg {

StreamedRun segment_gpu_streamed(const common::PointCloud& pc, const Params& p, int streams, int frames,
                                 std::vector<std::uint8_t>* last_labels) {
  if (streams < 1 || frames < 1) throw std::invalid_argument("segment_gpu_streamed: streams and frames must be >= 1");
  // EXERCISE BEGIN body
  std::vector<std::unique_ptr<FrameEngine>> engines;
  for (int s = 0; s < streams; ++s) {
    engines.push_back(std::make_unique<FrameEngine>());
    engines.back()->prepare({&pc, p, Outputs::labels});  // stages the input, captures the graph
    engines.back()->enqueue();                           // warm-up
  }
  for (auto& e : engines) e->wait();
  std::vector<double> latency;
  const common::WallTimer clock;
  for (int f = 0; f < frames; ++f) {
    auto& e = *engines[f % streams];
    if (f >= streams) {  // this engine's previous frame: done before its buffers are reused
      e.wait();
      latency.push_back(e.frame_ms());
    }
    e.enqueue();
  }
  for (auto& e : engines) {
    e->wait();
    latency.push_back(e->frame_ms());
  }
  const double total = clock.elapsed_ms();
  const auto& last = *engines[(frames - 1) % streams];
  if (last_labels) last_labels->assign(last.labels(), last.labels() + pc.size());
  StreamedRun r;
  r.total_ms = total;
  r.frames_per_second = frames / (total * 1e-3);
  r.median_latency_ms = common::summarize(latency).median_ms;
  return r;
  // EXERCISE END
}

}  // namespace ground_seg
