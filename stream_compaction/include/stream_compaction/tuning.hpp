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
  int stages = 0;  // v6: shared-memory stages of the bulk-copy ring (0: not pipelined)
};
struct CompactVariant {
  int block, items;
  int first_delay_ns;
  int poll_delay_ns;
  void (*compact)(std::int64_t n, int* out, std::int64_t* count, const int* in, ScratchTree& scratch,
                  cudaStream_t stream);
  int stages = 0;
};

// Elements per tile of the tiled kernels as the registry's versions run them. The kernels
// static_assert their shapes against these, and the tests take their tile-boundary sizes from
// here (t - 1, t, t + 1, 2t + 1), so the two cannot drift apart.
namespace tiles {
constexpr int kWarpShuffle = 256 * 15;  // v4 scan and compaction: 3840
constexpr int kLookback = 128 * 47;     // v5 scan and the fused compaction (default shape): 6016
constexpr int kTma = 8 * 8 * 128;       // v6 scan and compaction: 8 consumer warps x 8 chunks of 128: 8192
constexpr int kRadix = 256 * 16;        // sort_radix: 4096
constexpr int kSharedMem = 2 * 256;     // v3 at the default --block 256: two elements per thread
}  // namespace tiles

const std::vector<ScanVariant>& lookback_scan_variants();
const std::vector<CompactVariant>& fused_compact_variants();
const std::vector<ScanVariant>& tma_scan_variants();  // v6: block = consumer threads, items per consumer thread
const std::vector<CompactVariant>& tma_compact_variants();

}  // namespace Device
}  // namespace StreamCompaction
