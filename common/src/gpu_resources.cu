#include "common/gpu_resources.hpp"

#include <vector>

namespace common {

void GraphExec::capture(cudaStream_t stream, const std::function<void(cudaStream_t)>& enqueue) {
  cudaGraph_t graph = nullptr;
  CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  try {
    enqueue(stream);
  } catch (...) {
    cudaStreamEndCapture(stream, &graph);
    if (graph) cudaGraphDestroy(graph);
    throw;
  }
  CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  try {
    instantiate(graph);
  } catch (...) {
    cudaGraphDestroy(graph);
    throw;
  }
  cudaGraphDestroy(graph);
}

namespace {

// Captures `enqueue` into the (empty or not) graph `into`, after `deps`.
void capture_into(cudaStream_t stream, cudaGraph_t into, const cudaGraphNode_t* deps, std::size_t n_deps,
                  const std::function<void(cudaStream_t)>& enqueue) {
  CUDA_CHECK(cudaStreamBeginCaptureToGraph(stream, into, deps, nullptr, n_deps, cudaStreamCaptureModeThreadLocal));
  cudaGraph_t same = nullptr;
  try {
    enqueue(stream);
  } catch (...) {
    cudaStreamEndCapture(stream, &same);
    throw;
  }
  CUDA_CHECK(cudaStreamEndCapture(stream, &same));
}

}  // namespace

void build_device_while_graph(GraphExec& exec, cudaStream_t stream,
                              const std::function<void(cudaStream_t, cudaGraphConditionalHandle)>& prologue,
                              const std::function<void(cudaStream_t, cudaGraphConditionalHandle)>& body) {
  Graph graph;
  cudaGraphConditionalHandle handle;
  CUDA_CHECK(cudaGraphConditionalHandleCreate(&handle, graph.get(), 1, cudaGraphCondAssignDefault));
  std::size_t n_deps = 0;
  cudaGraphNode_t last = nullptr;
  if (prologue) {
    capture_into(stream, graph.get(), nullptr, 0, [&](cudaStream_t s) { prologue(s, handle); });
    std::size_t n_nodes = 0;
    CUDA_CHECK(cudaGraphGetNodes(graph.get(), nullptr, &n_nodes));
    if (n_nodes > 0) {  // the loop depends on every sink of the prologue: join them in an empty node
      CUDA_CHECK(cudaGraphAddEmptyNode(&last, graph.get(), nullptr, 0));
      std::vector<cudaGraphNode_t> nodes(n_nodes);
      CUDA_CHECK(cudaGraphGetNodes(graph.get(), nodes.data(), &n_nodes));
      for (cudaGraphNode_t n : nodes) {
        if (n == last) continue;
        std::size_t out = 0;
#if CUDART_VERSION >= 13000  // CUDA 13 added the edge-data arguments to these two
        CUDA_CHECK(cudaGraphNodeGetDependentNodes(n, nullptr, nullptr, &out));
        if (out == 0) CUDA_CHECK(cudaGraphAddDependencies(graph.get(), &n, &last, nullptr, 1));
#else
        CUDA_CHECK(cudaGraphNodeGetDependentNodes(n, nullptr, &out));
        if (out == 0) CUDA_CHECK(cudaGraphAddDependencies(graph.get(), &n, &last, 1));
#endif
      }
      n_deps = 1;
    }
  }
  cudaGraphNodeParams params{};
  params.type = cudaGraphNodeTypeConditional;
  params.conditional.handle = handle;
  params.conditional.type = cudaGraphCondTypeWhile;
  params.conditional.size = 1;
  cudaGraphNode_t loop;
#if CUDART_VERSION >= 13000
  CUDA_CHECK(cudaGraphAddNode(&loop, graph.get(), n_deps ? &last : nullptr, nullptr, n_deps, &params));
#else
  CUDA_CHECK(cudaGraphAddNode(&loop, graph.get(), n_deps ? &last : nullptr, n_deps, &params));
#endif
  cudaGraph_t loop_body = params.conditional.phGraph_out[0];
  capture_into(stream, loop_body, nullptr, 0, [&](cudaStream_t s) { body(s, handle); });
  exec.instantiate(graph.get());
}

}  // namespace common
