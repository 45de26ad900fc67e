// v4's frame engine: every buffer allocated once for up to `capacity` points, pinned host
// staging, and the whole frame — upload, counts, the scan of the counts (the project's own
// look-back scan), grouping, scatter, statistics, classification, labels, download — captured as
// one CUDA graph, replayed per frame. v5 runs several engines on several streams.
#pragma once
#include <cuda_runtime.h>

#include <memory>

#include "common/device_buffer.hpp"
#include "common/gpu_resources.hpp"
#include "gpu_common.cuh"
#include "stream_compaction/device.hpp"

namespace ground_seg {
namespace gpu {

class Engine {  // the implementation behind ground_seg::FrameEngine
 public:
  Engine(const Params& p, int capacity);
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  void stage(const common::PointCloud& pc);  // the points into pinned memory (after the last frame)
  void capture(int n);                       // the frame's graph for n points (kept while n stays the same)
  void launch(int n);                        // the graph of n staged points, asynchronously
  void wait();
  int capacity() const { return cap_; }
  const std::uint8_t* labels() const { return h_labels_.get(); }
  float kernel_ms() const;  // between the upload and the download, recorded inside the graph
  float frame_ms() const;   // the whole graph
  Result result(int n, Outputs out = Outputs::labels_and_cells);  // copies, for checks
  cudaStream_t stream() const { return stream_.get(); }

 private:
  void enqueue_frame(int n);  // the stream work of one frame (captured)
  Grid g_;
  int cap_, cells_, graph_n_ = -1;
  // owned through RAII, so a constructor that throws half-way releases what it had
  common::Stream stream_;
  common::GraphExec exec_;
  common::Event ev_start_, ev_k0_, ev_k1_, ev_end_;
  common::PinnedBuffer<float> h_xyz_;  // x[cap], y[cap], z[cap]
  common::PinnedBuffer<std::uint8_t> h_labels_;
  common::DeviceBuffer<float> xyz_, zs_, mean_, var_, mn_, mx_;
  common::DeviceBuffer<int> cell_of_, lists_;
  common::DeviceBuffer<unsigned> row_of_, count_, offset_, lens_, outside_;
  common::DeviceBuffer<std::uint8_t> variance_ground_, ground_, labels_;
  StreamCompaction::Device::ScratchTree scan_scratch_;
};

}  // namespace gpu
}  // namespace ground_seg
