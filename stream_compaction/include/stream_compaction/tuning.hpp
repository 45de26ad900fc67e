// Tile shapes of the single-pass kernels (v5 scan and the fused compaction). The registry's
// versions use the shape marked default; the tuning tool (stream_compaction_tune) times them all
// next to CUB so the choice is measured, not guessed.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "stream_compaction/device.hpp"

namespace StreamCompaction {
namespace Device {

struct ScanVariant {
  int block, items;
  int first_delay_ns;  // sleep before the first look-back poll (0: none)
  int poll_delay_ns;   // sleep between polls (0: spin)
  void (*scan)(std::int64_t n, int* out, const int* in, ScratchTree& scratch, cudaStream_t stream);
};
struct CompactVariant {
  int block, items;
  int first_delay_ns;
  int poll_delay_ns;
  void (*compact)(std::int64_t n, int* out, std::int64_t* count, const int* in, ScratchTree& scratch,
                  cudaStream_t stream);
};

const std::vector<ScanVariant>& lookback_scan_variants();
const std::vector<CompactVariant>& fused_compact_variants();

}  // namespace Device
}  // namespace StreamCompaction
