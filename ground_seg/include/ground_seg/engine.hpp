// The two-phase interface of ground_seg's versions (common::Runner): a Frame is the problem
// (points, parameters, which outputs to hand back); every version is a FrameRunner. v4's
// FrameEngine owns resources: every buffer allocated once for the frame's point count, pinned
// host staging, and the whole frame (upload, counts, the scan of the counts with the project's own
// look-back scan, grouping, scatter, statistics, classification, labels, download) captured as one
// CUDA graph in prepare() and replayed by each enqueue(). v5 runs one engine per stream.
#pragma once
#include <cstdint>
#include <memory>

#include "common/runner.hpp"
#include "ground_seg/ground_seg.hpp"

namespace ground_seg {

struct Frame {
  const common::PointCloud* cloud = nullptr;
  Params params;
  Outputs outputs = Outputs::labels_and_cells;
};
using FrameRunner = common::Runner<Frame, Result>;

class FrameEngine final : public FrameRunner {
 public:
  FrameEngine();
  ~FrameEngine() override;
  FrameEngine(const FrameEngine&) = delete;
  FrameEngine& operator=(const FrameEngine&) = delete;

  // Sizes the engine for the frame (the buffers and graph of an earlier frame are kept when the
  // parameters are the same and the points fit), stages its points into pinned memory and
  // captures the frame's graph.
  void prepare(const Frame& f) override;
  void enqueue() override;  // the graph of the staged frame, asynchronously
  void wait() override;
  // The labels the graph already brought back into pinned memory, plus the cell statistics when
  // the frame asks for them (downloaded then, for checks).
  Result result() override;
  bool stages_input() const override { return true; }
  void restage() override;             // the frame's points into pinned memory again (after the last run)
  double kernel_ms() const override;   // between upload and download, recorded inside the graph
  float frame_ms() const;              // the whole graph
  const std::uint8_t* labels() const;  // valid after wait()

 private:
  struct Impl;
  Impl& impl() const;  // throws when used before prepare()
  std::unique_ptr<Impl> impl_;
  Frame frame_;
};

}  // namespace ground_seg
