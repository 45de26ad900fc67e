// Device-pointer entry points: no allocation of user buffers, no host<->device copies, no
// synchronization (except where a version's algorithm needs the host, which it then says).
// Everything runs on `stream`; temporary storage comes from `scratch`, which grows only on the
// first call at a given size, so a checked first run leaves timed runs allocation-free.
// Scans are exclusive over int32 in wrap-around arithmetic; `out` must not alias `in`.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "common/device_buffer.hpp"

namespace StreamCompaction {
namespace Device {

using common::Scratch;

class ScratchTree {
 public:
  Scratch& here() { return here_; }
  ScratchTree& nested();  // storage for a callee (the scan inside a compaction, a recursion level)
  ~ScratchTree();

 private:
  Scratch here_;
  ScratchTree* nested_ = nullptr;
};

// block: threads per block for the versions whose idea includes a block size (v1-v3); the tuned
// versions ignore it.
using ScanFn = void (*)(std::int64_t n, int* out, const int* in, ScratchTree& scratch, cudaStream_t stream, int block);

void scan_naive(std::int64_t n, int* out, const int* in, ScratchTree& scratch, cudaStream_t stream, int block = 256);
void scan_work_efficient(std::int64_t n, int* out, const int* in, ScratchTree& scratch, cudaStream_t stream,
                         int block = 256);
void scan_shared_mem(std::int64_t n, int* out, const int* in, ScratchTree& scratch, cudaStream_t stream,
                     int block = 256);
void scan_warp_shuffle(std::int64_t n, int* out, const int* in, ScratchTree& scratch, cudaStream_t stream,
                       int block = 0);
void scan_lookback(std::int64_t n, int* out, const int* in, ScratchTree& scratch, cudaStream_t stream, int block = 0);
// The same single-pass scan over unsigned counts (e.g. points per cell into cell offsets).
void scan_lookback(std::int64_t n, unsigned* out, const unsigned* in, ScratchTree& scratch, cudaStream_t stream);
// v6 (sm_90+; common::Unsupported elsewhere): look-back scan fed by the bulk-copy engine.
void scan_tma(std::int64_t n, int* out, const int* in, ScratchTree& scratch, cudaStream_t stream, int block = 0);
void scan_thrust(std::int64_t n, int* out, const int* in, ScratchTree& scratch, cudaStream_t stream, int block = 0);
void scan_cub(std::int64_t n, int* out, const int* in, ScratchTree& scratch, cudaStream_t stream, int block = 0);

// Events recorded between the stages of map -> scan -> scatter, for sub-timings.
struct CompactStageEvents {
  cudaEvent_t start, after_map, after_scan, after_scatter;
};

// Stream compaction keeping the nonzero elements in order; the kept count is written to the
// device location `count`.
void compact_map_scan_scatter(ScanFn scan, std::int64_t n, int* out, std::int64_t* count, const int* in,
                              ScratchTree& scratch, cudaStream_t stream, int block = 256,
                              const CompactStageEvents* stages = nullptr);
void compact_fused(std::int64_t n, int* out, std::int64_t* count, const int* in, ScratchTree& scratch,
                   cudaStream_t stream);
void compact_tma(std::int64_t n, int* out, std::int64_t* count, const int* in, ScratchTree& scratch,
                 cudaStream_t stream);
void compact_cub(std::int64_t n, int* out, std::int64_t* count, const int* in, ScratchTree& scratch,
                 cudaStream_t stream);

// Ascending sort of int32 keys (negative keys included), n < 2^31.
// One bit per pass, each pass a split over scan_work_efficient (GPU Gems 3 ch. 39).
void sort_split(std::int64_t n, int* out, const int* in, ScratchTree& scratch, cudaStream_t stream);
void sort_radix(std::int64_t n, int* out, const int* in, ScratchTree& scratch, cudaStream_t stream);
void sort_cub(std::int64_t n, int* out, const int* in, ScratchTree& scratch, cudaStream_t stream);
// One-sweep radix sort (common/onesweep_sort.cuh), n < 2^32.
void sort_onesweep(std::int64_t n, int* out, const int* in, ScratchTree& scratch, cudaStream_t stream);
// (key, value) pairs with values = keys: `out` receives the sorted values.
void sort_pairs_onesweep(std::int64_t n, int* out, const int* in, ScratchTree& scratch, cudaStream_t stream);
void sort_pairs_cub(std::int64_t n, int* out, const int* in, ScratchTree& scratch, cudaStream_t stream);

}  // namespace Device
}  // namespace StreamCompaction
