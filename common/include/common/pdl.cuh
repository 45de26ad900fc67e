// Programmatic dependent launch (Hopper, sm_90+): a kernel launched as a programmatic dependent
// of the previous kernel in its stream (or graph) may be scheduled while that kernel still runs,
// once every block of it has called pdl_trigger() (or exited); it must call pdl_wait() before it
// reads anything the previous kernel wrote: that waits for the previous grid's completion and
// memory flush. Below sm_90 both are no-ops and the launch attribute is not set.
#pragma once
#include <cuda_runtime.h>

#include <utility>

#include "common/cuda_check.hpp"
#include "common/device_info.hpp"

namespace common {

__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// kernel<<<grid, block, 0, stream>>>(args...), as a programmatic dependent of the stream's
// previous kernel when `programmatic` (and supported).
template <typename... KArgs, typename... Args>
void launch_maybe_programmatic(void (*kernel)(KArgs...), dim3 grid, dim3 block, cudaStream_t stream, bool programmatic,
                               Args&&... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = 0;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = programmatic && pdl_supported(reinterpret_cast<const void*>(kernel)) ? 1 : 0;
  CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...));
}

}  // namespace common
