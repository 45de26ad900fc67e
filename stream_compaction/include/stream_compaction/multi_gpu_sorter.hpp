// The device side of the multi-GPU sort (the algorithm: multi_gpu_sort.hpp). Built only with NCCL.
#pragma once
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdint>
#include <string>

#include "common/device_buffer.hpp"
#include "common/gpu_resources.hpp"
#include "stream_compaction/multi_gpu_sort.hpp"

namespace StreamCompaction {
namespace MultiGpu {

void nccl_check(ncclResult_t r, const char* what);

// The single-GPU sort a rank runs on its buckets (and the one-GPU baseline it is compared with).
enum class LocalSort { cub, onesweep };
const char* local_sort_name(LocalSort s);
void local_sort(LocalSort how, const std::uint32_t* in, std::uint32_t* out, std::int64_t n, common::Scratch& scratch,
                cudaStream_t stream);

// How a rank ranks its keys within a bucket: automatic: by ballots up to 8 buckets (stable), by a
// warp match above; matched forces the match (to test and time that path on 2 GPUs).
enum class Partition { automatic, matched };
Partition parse_partition(const std::string& text);  // "auto", "matched"

// The driver's keys on the device (make_key of positions [begin, begin + count) of n), and how
// many of n keys of a and b differ (synchronises the stream).
void generate_keys(std::uint32_t* out, std::int64_t begin, std::int64_t count, Dist d, std::uint64_t seed,
                   std::int64_t n, cudaStream_t stream);
std::uint64_t count_mismatches(const std::uint32_t* a, const std::uint32_t* b, std::int64_t n, cudaStream_t stream);

// Where one multi-GPU sort spent its time on this rank (ms, CUDA events), and what it moved.
struct Phases {
  double splitters = 0, partition = 0, sort_kept = 0, exchange_wait = 0, sort_received = 0, merge = 0;
  double exchange = 0;  // the all-to-all on its own stream, overlapped with sort_kept
  std::int64_t kept = 0, sent = 0, received = 0;
};

class Sorter {
 public:
  // `comm` is this rank's communicator (rank `rank` of `world`) on the current device.
  Sorter(ncclComm_t comm, int rank, int world, Partition partition = Partition::automatic);
  Sorter(const Sorter&) = delete;
  Sorter& operator=(const Sorter&) = delete;
  // Sorts this rank's n keys (device pointer, left unchanged) together with every other rank's:
  // afterwards this rank holds out()[0, returned count), the rank-th slice of the sorted whole.
  // Collective: every rank of the communicator calls it. Enqueued on stream(), synchronised on
  // return (the bucket sizes come back to the host twice).
  std::int64_t sort(const std::uint32_t* keys, std::int64_t n, LocalSort how, Phases* phases = nullptr);
  const std::uint32_t* out() const { return out_.get(); }
  cudaStream_t stream() const { return stream_.get(); }

 private:
  ncclComm_t comm_;
  int rank_, world_;
  Partition partition_;
  common::Stream stream_, exchange_stream_;
  // phase boundaries on stream_, then the all-to-all's start and end on exchange_stream_
  common::Event start_, splitters_done_, partition_done_, kept_sorted_done_, exchange_joined_, received_sorted_done_,
      merged_, exchange_start_, exchange_end_;
  common::DeviceBuffer<std::uint64_t> samples_, all_samples_, splitters_, counts_, matrix_;
  common::DeviceBuffer<unsigned> tile_counts_, tile_first_;
  common::DeviceBuffer<std::uint32_t> part_, kept_sorted_, received_, received_sorted_, out_;
  common::Scratch scratch_;
};

}  // namespace MultiGpu
}  // namespace StreamCompaction
