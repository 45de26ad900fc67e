// NVTX range for one pipeline stage, so nsys/ncu timelines show the driver's structure.
#pragma once
#include <nvtx3/nvToolsExt.h>

namespace common {

class NvtxRange {
 public:
  explicit NvtxRange(const char* name) { nvtxRangePushA(name); }
  ~NvtxRange() { nvtxRangePop(); }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace common
