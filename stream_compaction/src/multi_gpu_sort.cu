// The multi-GPU sample sort over NCCL (algorithm and prediction: multi_gpu_sort.hpp, README).
// Prediction for 2^30 uniform keys on 2 H200s (2^29 per GPU): splitters ~0.1 ms, count + scatter
// passes 3 x 2 GiB of traffic ~1.6 ms, the kept half sorted (2^28 keys, ~5.5 ms with CUB) while
// the other half crosses NVLink (1 GiB each way, ~3 ms at ~350 GB/s), then the received half
// sorted (~5.5 ms) and the two runs merged (4 GiB of traffic, ~1.2 ms): ~14 ms against ~22 ms for
// one GPU sorting all 2^30: ~1.6x. The two local sorts are the whole single-GPU sort split in
// two; what is added is the partition and the merge (~3 ms), and the exchange hides behind the
// first sort.
#include <cub/version.cuh>
#if CUB_VERSION >= 200800  // cub::DeviceMerge arrived with CCCL 2.8 (CUDA 12.8)
#include <cub/device/device_merge.cuh>
#else
#include <thrust/execution_policy.h>
#include <thrust/merge.h>
#endif
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <numeric>
#include <stdexcept>
#include <vector>

#include "common/block_primitives.cuh"
#include "common/cuda_check.hpp"
#include "common/device_info.hpp"
#include "common/onesweep_sort.cuh"
#include "stream_compaction/multi_gpu_sorter.hpp"

namespace StreamCompaction {
namespace MultiGpu {
namespace {

constexpr int kBlock = 256;
constexpr int kItems = 16;
constexpr int kTile = kBlock * kItems;
constexpr int kSamples = 2048;  // per rank: bucket sizes within ~1-2% of n / P for shuffled input
constexpr int kMaxWorld = 256;  // the scatter keeps one shared counter per bucket

// Warp-aggregated claim of one slot per lane in the shared counter of its bucket (b < 0: none).
__device__ __forceinline__ unsigned claim(int b, unsigned* counters) {
  const unsigned peers = __match_any_sync(0xffffffffu, b);
  const int leader = __ffs(peers) - 1;
  unsigned base = 0;
  if (b >= 0 && static_cast<int>(common::lane_id()) == leader) base = atomicAdd(&counters[b], __popc(peers));
  base = __shfl_sync(0xffffffffu, base, leader);
  return base + __popc(peers & common::lanemask_lt());
}

__global__ void sample_kernel(const std::uint32_t* keys, std::int64_t n, int rank, int world, std::uint64_t* out) {
  const std::int64_t count = n < kSamples ? n : kSamples;
  for (std::int64_t k = blockIdx.x * blockDim.x + threadIdx.x; k < kSamples + 1; k += gridDim.x * blockDim.x) {
    if (k == 0) {
      out[0] = static_cast<std::uint64_t>(count);
    } else if (k - 1 < count) {
      const std::int64_t i = (k - 1) * n / count;
      out[k] = composite(keys[i], static_cast<std::uint64_t>(i) * world + rank);
    } else {
      out[k] = 0;
    }
  }
}

// Pass 1 (count) and pass 2 (scatter) share the bucket computation and the ranking of a tile's
// keys within each bucket. Pass 1 writes the tile's count of every bucket (bucket-major:
// tile_counts[b * tiles + t]); one exclusive scan over that array gives every (bucket, tile) its
// first slot in the bucket-major output; pass 2 writes each key there, with no atomics. Up to
// kFewBuckets buckets a key's slot comes from one ballot per bucket (counts warp-uniform, in
// registers), in input order: the split is then stable. Above, from a warp match and shared
// atomics (any order within a bucket, which is sorted next anyway).
// (A first version claimed each tile's slots with one global atomic per bucket, in one pass: every
// tile then waited on two contended atomics, and the split took 4.2-4.7 ms for 2^29 keys where
// this one takes 3.6 ms, against ~1.6 predicted: see the README.)
constexpr int kFewBuckets = 8;
constexpr int kWarps = kBlock / 32;

template <bool kScatter>
__global__ void __launch_bounds__(kBlock)
    partition_kernel(const std::uint32_t* __restrict__ keys, std::int64_t n,
                     const std::uint64_t* __restrict__ splitters, int rank, int world, bool few,
                     unsigned* __restrict__ tile_counts, std::uint32_t* __restrict__ out) {
  __shared__ std::uint64_t s_split[kMaxWorld];
  __shared__ unsigned s_count[kMaxWorld];
  __shared__ unsigned s_warp[kWarps][kFewBuckets];
  __shared__ std::uint64_t s_base[kMaxWorld];
  const std::int64_t tiles = (n + kTile - 1) / kTile;
  const std::int64_t t = blockIdx.x;
  const std::int64_t tile = t * kTile;
  const int warp = static_cast<int>(common::warp_id());
  const unsigned lt = common::lanemask_lt();
  for (int i = threadIdx.x; i < world - 1; i += kBlock) s_split[i] = splitters[i];
  if (!few)
    for (int i = threadIdx.x; i < world; i += kBlock) s_count[i] = 0;
  __syncthreads();
  std::uint32_t key[kItems];
  int bucket[kItems];
  unsigned slot[kItems];
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    const std::int64_t i = tile + j * kBlock + threadIdx.x;
    key[j] = i < n ? keys[i] : 0u;
  }
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    const std::int64_t i = tile + j * kBlock + threadIdx.x;
    bucket[j] = i < n ? bucket_of(composite(key[j], static_cast<std::uint64_t>(i) * world + rank), s_split, world) : -1;
  }
  if (few) {
    unsigned running[kFewBuckets];  // this warp's keys per bucket so far (the same in every lane)
#pragma unroll
    for (int b = 0; b < kFewBuckets; ++b) running[b] = 0;
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
#pragma unroll
      for (int b = 0; b < kFewBuckets; ++b) {
        if (b < world) {  // uniform: every lane takes the same branch
          const unsigned m = __ballot_sync(0xffffffffu, bucket[j] == b);
          if (bucket[j] == b) slot[j] = running[b] + __popc(m & lt);
          running[b] += __popc(m);
        }
      }
    }
    if (common::lane_id() == 0)
#pragma unroll
      for (int b = 0; b < kFewBuckets; ++b) s_warp[warp][b] = running[b];
    __syncthreads();
    if (threadIdx.x < world) {  // per bucket: each warp's first slot in the tile, and the tile's count
      const int b = threadIdx.x;
      unsigned total = 0;
      for (int w = 0; w < kWarps; ++w) {
        const unsigned c = s_warp[w][b];
        s_warp[w][b] = total;
        total += c;
      }
      s_count[b] = total;
    }
  } else {
#pragma unroll
    for (int j = 0; j < kItems; ++j) slot[j] = claim(bucket[j], s_count);
  }
  __syncthreads();
  if constexpr (!kScatter) {
    for (int b = threadIdx.x; b < world; b += kBlock) tile_counts[b * tiles + t] = s_count[b];
  } else {
    for (int b = threadIdx.x; b < world; b += kBlock) s_base[b] = tile_counts[b * tiles + t];  // scanned: first slot
    __syncthreads();
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      if (bucket[j] < 0) continue;
      out[s_base[bucket[j]] + slot[j] + (few ? s_warp[warp][bucket[j]] : 0u)] = key[j];
    }
  }
}

// Bucket sizes from the scanned per-tile counts.
__global__ void bucket_sizes_kernel(const unsigned* scanned, std::int64_t tiles, std::int64_t n, int world,
                                    std::uint64_t* sizes) {
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= world) return;
  const std::uint64_t first = tiles ? scanned[b * tiles] : 0;
  const std::uint64_t next = b + 1 < world && tiles ? scanned[(b + 1) * tiles] : static_cast<std::uint64_t>(n);
  sizes[b] = next - first;
}

__global__ void generate_kernel(std::uint32_t* out, std::int64_t begin, std::int64_t count, Dist d, std::uint64_t seed,
                                std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    out[i] = make_key(d, seed, static_cast<std::uint64_t>(begin + i), static_cast<std::uint64_t>(n));
}

__global__ void mismatch_kernel(const std::uint32_t* a, const std::uint32_t* b, std::int64_t n,
                                unsigned long long* mismatches) {
  unsigned long long local = 0;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    local += a[i] != b[i];
  if (local) atomicAdd(mismatches, local);  // a correct sort has none: the atomics cost nothing
}

int grid_for(std::int64_t tiles) {
  return static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(tiles, 8LL * common::current_sm_count())));
}

}  // namespace

void nccl_check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw std::runtime_error(std::string("NCCL error in ") + what + ": " + ncclGetErrorString(r));
}

Partition parse_partition(const std::string& text) {
  if (text == "auto") return Partition::automatic;
  if (text == "matched") return Partition::matched;
  throw std::invalid_argument("--partition: '" + text + "' is not one of auto, matched");
}

const char* local_sort_name(LocalSort s) { return s == LocalSort::cub ? "cub" : "onesweep"; }

void local_sort(LocalSort how, const std::uint32_t* in, std::uint32_t* out, std::int64_t n, common::Scratch& scratch,
                cudaStream_t stream) {
  if (n <= 0) return;
  if (how == LocalSort::onesweep) {
    common::Onesweep<unsigned>::sort(n, in, out, nullptr, nullptr, 0, 32, scratch, stream);
    return;
  }
  std::size_t bytes = 0;
  CUDA_CHECK(cub::DeviceRadixSort::SortKeys(nullptr, bytes, in, out, n, 0, 32, stream));
  CUDA_CHECK(cub::DeviceRadixSort::SortKeys(scratch.get(bytes), bytes, in, out, n, 0, 32, stream));
}

void generate_keys(std::uint32_t* out, std::int64_t begin, std::int64_t count, Dist d, std::uint64_t seed,
                   std::int64_t n, cudaStream_t stream) {
  if (count <= 0) return;
  generate_kernel<<<grid_for((count + kTile - 1) / kTile), kBlock, 0, stream>>>(out, begin, count, d, seed, n);
  CUDA_CHECK(cudaGetLastError());
}

std::uint64_t count_mismatches(const std::uint32_t* a, const std::uint32_t* b, std::int64_t n, cudaStream_t stream) {
  common::DeviceBuffer<unsigned long long> d(1);
  CUDA_CHECK(cudaMemsetAsync(d.get(), 0, sizeof(unsigned long long), stream));
  if (n > 0) {
    mismatch_kernel<<<grid_for((n + kTile - 1) / kTile), kBlock, 0, stream>>>(a, b, n, d.get());
    CUDA_CHECK(cudaGetLastError());
  }
  unsigned long long h = 0;
  CUDA_CHECK(cudaMemcpyAsync(&h, d.get(), sizeof(h), cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return h;
}

Sorter::Sorter(ncclComm_t comm, int rank, int world, Partition partition)
    : comm_(comm), rank_(rank), world_(world), partition_(partition) {
  if (world < 1 || world > kMaxWorld || rank < 0 || rank >= world)
    throw std::invalid_argument("multi-GPU sort: rank " + std::to_string(rank) + " of " + std::to_string(world) +
                                " (1 to " + std::to_string(kMaxWorld) + " ranks)");
  samples_.resize(kSamples + 1);
  all_samples_.resize(static_cast<std::size_t>(world) * (kSamples + 1));
  splitters_.resize(world);
  counts_.resize(world);
  matrix_.resize(static_cast<std::size_t>(world) * world);
}

std::int64_t Sorter::sort(const std::uint32_t* keys, std::int64_t n, LocalSort how, Phases* phases) {
  if (n < 0) throw std::invalid_argument("multi-GPU sort: n = " + std::to_string(n));
  if (n > 0 && !keys) throw std::invalid_argument("multi-GPU sort: null keys");
  const std::size_t W = static_cast<std::size_t>(world_);
  cudaStream_t s = stream_.get(), xs = exchange_stream_.get();
  start_.record(s);

  // 1. splitters: all ranks' samples, the same choice everywhere
  sample_kernel<<<(kSamples + kBlock) / kBlock, kBlock, 0, s>>>(keys, n, rank_, world_, samples_.get());
  CUDA_CHECK(cudaGetLastError());
  nccl_check(ncclAllGather(samples_.get(), all_samples_.get(), kSamples + 1, ncclUint64, comm_, s),
             "ncclAllGather (samples)");
  std::vector<std::uint64_t> gathered(W * (kSamples + 1)), pool;
  CUDA_CHECK(cudaMemcpyAsync(gathered.data(), all_samples_.get(), gathered.size() * sizeof(std::uint64_t),
                             cudaMemcpyDeviceToHost, s));
  CUDA_CHECK(cudaStreamSynchronize(s));
  for (std::size_t q = 0; q < W; ++q) {
    const std::uint64_t* block = gathered.data() + q * (kSamples + 1);
    if (block[0] > static_cast<std::uint64_t>(kSamples))
      throw std::runtime_error("multi-GPU sort: rank " + std::to_string(q) + " sent " + std::to_string(block[0]) +
                               " samples");
    pool.insert(pool.end(), block + 1, block + 1 + block[0]);
  }
  const std::vector<std::uint64_t> split = choose_splitters(std::move(pool), world_);
  if (!split.empty())
    CUDA_CHECK(cudaMemcpyAsync(splitters_.get(), split.data(), split.size() * sizeof(std::uint64_t),
                               cudaMemcpyHostToDevice, s));
  splitters_done_.record(s);

  // 2. buckets: per-tile counts, scanned into first slots, bucket sizes exchanged:
  // matrix[q * W + r] = keys rank q sends to rank r
  const std::int64_t tiles = (n + kTile - 1) / kTile;
  const bool few = world_ <= kFewBuckets && partition_ != Partition::matched;
  part_.resize(std::max<std::int64_t>(n, 1));
  tile_counts_.resize(std::max<std::int64_t>(tiles * world_, 1));
  tile_first_.resize(std::max<std::int64_t>(tiles * world_, 1));
  if (n > 0) {
    partition_kernel<false><<<static_cast<unsigned>(tiles), kBlock, 0, s>>>(keys, n, splitters_.get(), rank_, world_,
                                                                            few, tile_counts_.get(), nullptr);
    CUDA_CHECK(cudaGetLastError());
    std::size_t bytes = 0;
    CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, bytes, tile_counts_.get(), tile_first_.get(), tiles * world_, s));
    CUDA_CHECK(cub::DeviceScan::ExclusiveSum(scratch_.get(bytes), bytes, tile_counts_.get(), tile_first_.get(),
                                             tiles * world_, s));
  }
  bucket_sizes_kernel<<<(world_ + 255) / 256, 256, 0, s>>>(tile_first_.get(), tiles, n, world_, counts_.get());
  CUDA_CHECK(cudaGetLastError());
  nccl_check(ncclAllGather(counts_.get(), matrix_.get(), W, ncclUint64, comm_, s), "ncclAllGather (bucket sizes)");
  std::vector<std::uint64_t> m(W * W);
  CUDA_CHECK(cudaMemcpyAsync(m.data(), matrix_.get(), m.size() * sizeof(std::uint64_t), cudaMemcpyDeviceToHost, s));
  CUDA_CHECK(cudaStreamSynchronize(s));
  std::vector<std::uint64_t> send_off(W), recv_off(W);
  std::uint64_t sent = 0, received = 0, total_sent = 0;
  for (std::size_t q = 0; q < W; ++q) {
    send_off[q] = total_sent;
    total_sent += m[rank_ * W + q];
    if (q == static_cast<std::size_t>(rank_)) continue;
    sent += m[rank_ * W + q];
    recv_off[q] = received;
    received += m[q * W + rank_];
  }
  if (total_sent != static_cast<std::uint64_t>(n))
    throw std::runtime_error("multi-GPU sort: the buckets hold " + std::to_string(total_sent) + " of " +
                             std::to_string(n) + " keys");
  const std::uint64_t kept = m[rank_ * W + rank_];
  const std::uint64_t held = kept + received;

  // 3. scatter into buckets, then the all-to-all on its own stream
  if (n > 0) {
    partition_kernel<true><<<static_cast<unsigned>(tiles), kBlock, 0, s>>>(keys, n, splitters_.get(), rank_, world_,
                                                                           few, tile_first_.get(), part_.get());
    CUDA_CHECK(cudaGetLastError());
  }
  partition_done_.record(s);
  received_.resize(std::max<std::uint64_t>(received, 1));
  CUDA_CHECK(cudaStreamWaitEvent(xs, partition_done_.get()));
  exchange_start_.record(xs);
  nccl_check(ncclGroupStart(), "ncclGroupStart");
  for (std::size_t q = 0; q < W; ++q) {
    if (q == static_cast<std::size_t>(rank_)) continue;
    if (m[rank_ * W + q])
      nccl_check(ncclSend(part_.get() + send_off[q], m[rank_ * W + q], ncclUint32, static_cast<int>(q), comm_, xs),
                 "ncclSend");
    if (m[q * W + rank_])
      nccl_check(ncclRecv(received_.get() + recv_off[q], m[q * W + rank_], ncclUint32, static_cast<int>(q), comm_, xs),
                 "ncclRecv");
  }
  nccl_check(ncclGroupEnd(), "ncclGroupEnd");
  exchange_end_.record(xs);

  // 4. sort the kept bucket meanwhile, then what arrived, then merge the two runs
  out_.resize(std::max<std::uint64_t>(held, 1));
  const std::uint32_t* kept_in = part_.get() + send_off[rank_];
  if (received == 0) {
    local_sort(how, kept_in, out_.get(), static_cast<std::int64_t>(kept), scratch_, s);
    kept_sorted_done_.record(s);
    CUDA_CHECK(cudaStreamWaitEvent(s, exchange_end_.get()));  // the sends read part_: done before it is reused
    exchange_joined_.record(s);
    received_sorted_done_.record(s);
  } else {
    kept_sorted_.resize(std::max<std::uint64_t>(kept, 1));
    received_sorted_.resize(received);
    local_sort(how, kept_in, kept_sorted_.get(), static_cast<std::int64_t>(kept), scratch_, s);
    kept_sorted_done_.record(s);
    CUDA_CHECK(cudaStreamWaitEvent(s, exchange_end_.get()));
    exchange_joined_.record(s);
    local_sort(how, received_.get(), received_sorted_.get(), static_cast<std::int64_t>(received), scratch_, s);
    received_sorted_done_.record(s);
    if (kept == 0) {
      CUDA_CHECK(cudaMemcpyAsync(out_.get(), received_sorted_.get(), received * sizeof(std::uint32_t),
                                 cudaMemcpyDeviceToDevice, s));
    } else {
#if CUB_VERSION >= 200800
      std::size_t bytes = 0;
      CUDA_CHECK(cub::DeviceMerge::MergeKeys(nullptr, bytes, kept_sorted_.get(), static_cast<std::int64_t>(kept),
                                             received_sorted_.get(), static_cast<std::int64_t>(received), out_.get(),
                                             ::cuda::std::less<>{}, s));
      CUDA_CHECK(cub::DeviceMerge::MergeKeys(
          scratch_.get(bytes), bytes, kept_sorted_.get(), static_cast<std::int64_t>(kept), received_sorted_.get(),
          static_cast<std::int64_t>(received), out_.get(), ::cuda::std::less<>{}, s));
#else
      thrust::merge(thrust::cuda::par_nosync.on(s), kept_sorted_.get(), kept_sorted_.get() + kept,
                    received_sorted_.get(), received_sorted_.get() + received, out_.get());
#endif
    }
  }
  merged_.record(s);
  CUDA_CHECK(cudaStreamSynchronize(s));
  if (phases) {
    phases->splitters = splitters_done_.since(start_);
    phases->partition = partition_done_.since(splitters_done_);
    phases->sort_kept = kept_sorted_done_.since(partition_done_);
    phases->exchange_wait = exchange_joined_.since(kept_sorted_done_);
    phases->sort_received = received_sorted_done_.since(exchange_joined_);
    phases->merge = merged_.since(received_sorted_done_);
    phases->exchange = exchange_end_.since(exchange_start_);
    phases->kept = static_cast<std::int64_t>(kept);
    phases->sent = static_cast<std::int64_t>(sent);
    phases->received = static_cast<std::int64_t>(received);
  }
  return static_cast<std::int64_t>(held);
}

}  // namespace MultiGpu
}  // namespace StreamCompaction
