// v4's frame engine, host-side interface: every buffer allocated once for up to `capacity`
// points, pinned host staging, and the whole frame (upload, counts, the scan of the counts with
// the project's own look-back scan, grouping, scatter, statistics, classification, labels,
// download) captured as one CUDA graph and replayed per frame. v5 runs one engine per stream.
#pragma once
#include <cstdint>
#include <memory>

#include "ground_seg/ground_seg.hpp"

namespace ground_seg {

class FrameEngine {
 public:
  FrameEngine(const Params& p, int capacity);
  ~FrameEngine();
  FrameEngine(const FrameEngine&) = delete;
  FrameEngine& operator=(const FrameEngine&) = delete;

  // Copies the points into pinned memory (after the engine's previous frame is done) and
  // launches the frame's graph, re-capturing it when the point count changes. Asynchronous.
  void launch(const common::PointCloud& pc);
  // The same frame again from the pinned input as it stands (a driver that writes there directly).
  void launch_pinned(int n);
  void wait();
  const std::uint8_t* labels() const;  // valid after wait()
  float kernel_ms() const;             // between upload and download, recorded inside the graph
  float frame_ms() const;              // the whole graph
  Result result(int n, Outputs out = Outputs::labels_and_cells);  // copies, for checks

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ground_seg
