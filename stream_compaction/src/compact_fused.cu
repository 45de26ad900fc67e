// Fused single-pass compaction: the v5 look-back scan applied to the keep-flags, computed on the
// fly, with the kept elements packed in shared memory and written out as one contiguous,
// coalesced run per tile. No flags or positions ever reach global memory, so the traffic is the
// minimum: 4n bytes read + 4k written. Prediction: within ~10% of CUB's DeviceSelect::If (same
// design), ~4x the map -> scan -> scatter pipeline.
#include "common/block_primitives.cuh"
#include "common/cuda_check.hpp"
#include "launch.hpp"
#include "stream_compaction/device.hpp"
#include "stream_compaction/tuning.hpp"
#include "tile_io.cuh"

namespace StreamCompaction {
namespace Device {
namespace {
// EXERCISE BEGIN

// Default shape and look-back delays, chosen with stream_compaction_tune on an H200 at 2^28
// (table in the README): 128 threads x 47 items, sleep 1245 ns before the first poll and 648 ns
// between polls.
constexpr int kDefaultBlock = 128;
constexpr int kDefaultItems = 47;
static_assert(kDefaultBlock * kDefaultItems == tiles::kLookback,
              "the tests' tile sizes (tuning.hpp) follow this shape");
constexpr int kDefaultFirstDelay = 1245;
constexpr int kDefaultPollDelay = 648;

template <int kBlock, int kItems, int kFirstDelay, int kPollDelay>
__global__ void __launch_bounds__(kBlock)
    fused_compact_kernel(std::int64_t n, int* __restrict__ out, std::int64_t* __restrict__ count,
                         const int* __restrict__ in, unsigned long long* status, unsigned* tile_counter,
                         unsigned tiles) {
  using IO = TileIO<kBlock, kItems>;
  __shared__ int tile[IO::kTile];
  __shared__ int scan_tmp[kBlock / 32 + 1];
  __shared__ unsigned s_tile;
  __shared__ int s_prefix;
  if (threadIdx.x == 0) s_tile = atomicAdd(tile_counter, 1u);
  __syncthreads();
  const std::int64_t tile_index = s_tile;
  const std::int64_t base = tile_index * IO::kTile;
  int v[kItems];
  IO::load(in, base, n, tile, v);  // zeros past n are never kept
  int kept = 0;
#pragma unroll
  for (int k = 0; k < kItems; ++k) kept += v[k] != 0;
  int tile_kept;
  int local = common::block_exclusive_scan<kBlock>(kept, tile_kept, scan_tmp);
  const int prefix = lookback_exclusive_prefix<kFirstDelay, kPollDelay>(status, tile_index, tile_kept, &s_prefix);
#pragma unroll
  for (int k = 0; k < kItems; ++k)
    if (v[k] != 0) tile[local++] = v[k];
  __syncthreads();
  const std::int64_t out_base = static_cast<unsigned>(prefix);
  for (int j = threadIdx.x; j < tile_kept; j += kBlock) out[out_base + j] = tile[j];
  if (tile_index == tiles - 1 && threadIdx.x == 0) *count = out_base + tile_kept;
}

template <int kBlock, int kItems, int kFirstDelay = 0, int kPollDelay = 0>
void launch_fused_compact(std::int64_t n, int* out, std::int64_t* count, const int* in, ScratchTree& scratch,
                          cudaStream_t stream) {
  check_n(n, "compact_fused");
  if (n >= (std::int64_t{1} << 32)) throw std::invalid_argument("compact_fused: n must be < 2^32");
  if (n == 0) {
    CUDA_CHECK(cudaMemsetAsync(count, 0, sizeof(std::int64_t), stream));
    return;
  }
  const unsigned tiles = grid_for(n, kBlock * kItems);
  const LookbackState lb = prepare_lookback(scratch, tiles, stream);
  fused_compact_kernel<kBlock, kItems, kFirstDelay, kPollDelay>
      <<<tiles, kBlock, 0, stream>>>(n, out, count, in, lb.status, lb.tile_counter, tiles);
  CUDA_CHECK_LAST();
}

// EXERCISE END
}  // namespace

const std::vector<CompactVariant>& fused_compact_variants() {
  // EXERCISE BEGIN body
  static const std::vector<CompactVariant> v = [] {
    std::vector<CompactVariant> out;
    for_each_tuning_shape([&](auto shape) {
      using S = decltype(shape);
      out.push_back({S::block, S::items, S::first_delay, S::poll_delay,
                     launch_fused_compact<S::block, S::items, S::first_delay, S::poll_delay>});
    });
    return out;
  }();
  return v;
  // EXERCISE END
}

void compact_fused(std::int64_t n, int* out, std::int64_t* count, const int* in, ScratchTree& scratch,
                   cudaStream_t stream) {
  // EXERCISE BEGIN body
  launch_fused_compact<kDefaultBlock, kDefaultItems, kDefaultFirstDelay, kDefaultPollDelay>(n, out, count, in, scratch,
                                                                                            stream);
  // EXERCISE END
}

}  // namespace Device
}  // namespace StreamCompaction
