// RAII owners for the CUDA objects a stateful version keeps between runs: a stream, an event, a
// pinned host buffer and an instantiated graph, plus the helper that builds a graph whose body
// repeats on the device until a kernel clears the loop flag (a conditional WHILE node, CUDA 12.4+).
// Nothing here leaks when a constructor in between throws.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <functional>
#include <utility>

#include "common/cuda_check.hpp"

namespace common {

class Stream {
 public:
  Stream() { CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() {
    if (s_) cudaStreamDestroy(s_);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }
  void sync() const { CUDA_CHECK(cudaStreamSynchronize(s_)); }

 private:
  cudaStream_t s_ = nullptr;
};

class Event {
 public:
  Event() { CUDA_CHECK(cudaEventCreate(&e_)); }
  ~Event() {
    if (e_) cudaEventDestroy(e_);
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return e_; }
  void record(cudaStream_t s) { CUDA_CHECK(cudaEventRecord(e_, s)); }
  // Milliseconds from `start` to this event (both recorded and complete).
  float since(const Event& start) const {
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start.e_, e_));
    return ms;
  }

 private:
  cudaEvent_t e_ = nullptr;
};

template <typename T>
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(std::size_t count) { resize(count); }
  ~PinnedBuffer() { release(); }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  PinnedBuffer(PinnedBuffer&& o) noexcept : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  // Reallocates only when growing; contents are not preserved.
  void resize(std::size_t count) {
    if (count <= n_) return;
    release();
    CUDA_CHECK(cudaMallocHost(&p_, count * sizeof(T)));
    n_ = count;
  }
  void release() {
    if (p_) cudaFreeHost(p_);
    p_ = nullptr;
    n_ = 0;
  }
  T* get() const { return p_; }
  T& operator[](std::size_t i) const { return p_[i]; }
  std::size_t size() const { return n_; }

 private:
  T* p_ = nullptr;
  std::size_t n_ = 0;
};

class GraphExec {
 public:
  GraphExec() = default;
  ~GraphExec() { reset(); }
  GraphExec(const GraphExec&) = delete;
  GraphExec& operator=(const GraphExec&) = delete;
  // Instantiates `graph` (which stays the caller's) and owns the result.
  void instantiate(cudaGraph_t graph) {
    reset();
    CUDA_CHECK(cudaGraphInstantiate(&exec_, graph, 0));
  }
  // Captures what `enqueue` puts on `stream` into a graph and instantiates it.
  void capture(cudaStream_t stream, const std::function<void(cudaStream_t)>& enqueue);
  void launch(cudaStream_t s) const { CUDA_CHECK(cudaGraphLaunch(exec_, s)); }
  bool ready() const { return exec_ != nullptr; }
  void reset() {
    if (exec_) cudaGraphExecDestroy(exec_);
    exec_ = nullptr;
  }

 private:
  cudaGraphExec_t exec_ = nullptr;
};

// Owns a cudaGraph_t while it is being built.
class Graph {
 public:
  Graph() { CUDA_CHECK(cudaGraphCreate(&g_, 0)); }
  ~Graph() {
    if (g_) cudaGraphDestroy(g_);
  }
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  cudaGraph_t get() const { return g_; }

 private:
  cudaGraph_t g_ = nullptr;
};

// Builds and instantiates into `exec` the graph
//     prologue ; while (flag) { body }
// where the loop runs on the device: `body` (captured from what it enqueues on `stream`) must
// launch a kernel that calls cudaGraphSetConditional(handle, 0) to end the loop; the flag starts
// at 1. `prologue` may be empty. The handle is passed to both so their kernels can use it.
void build_device_while_graph(GraphExec& exec, cudaStream_t stream,
                              const std::function<void(cudaStream_t, cudaGraphConditionalHandle)>& prologue,
                              const std::function<void(cudaStream_t, cudaGraphConditionalHandle)>& body);

}  // namespace common
