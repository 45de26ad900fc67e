// The one-sweep radix sort (common/onesweep_sort.cuh) as this sub-project's versions, next to
// the CUB calls they stand against: keys only, and (key, value) pairs whose values are copies of
// the keys, so the checker, which reads the sorted values, sees whether every value travelled
// with its key (stability is tested separately, with values = input index).
// Prediction at 2^28 on an H200: 36 bytes per key instead of sort_radix's 48 and one kernel per
// pass instead of three; the ranking (8 ballots per key) and the look-back keep it compute- and
// latency-bound like CUB's (49.6 Gkeys/s = 1.8 TB/s, 42% of copy): ~1.0x CUB, ~1.6x sort_radix.
#include <cub/device/device_radix_sort.cuh>

#include "common/cuda_check.hpp"
#include "common/onesweep_sort.cuh"
#include "launch.hpp"
#include "stream_compaction/device.hpp"

namespace StreamCompaction {
namespace Device {

void sort_onesweep(std::int64_t n, int* out, const int* in, ScratchTree& scratch, cudaStream_t stream) {
  check_n(n, "sort_onesweep");
  common::Onesweep<int>::sort(n, in, out, nullptr, nullptr, 0, 32, scratch.here(), stream);
}

void sort_pairs_onesweep(std::int64_t n, int* out, const int* in, ScratchTree& scratch, cudaStream_t stream) {
  check_n(n, "sort_pairs_onesweep");
  if (n == 0) return;
  int* keys_out = scratch.nested().here().as<int>(n);
  common::Onesweep<int, int>::sort(n, in, keys_out, in, out, 0, 32, scratch.here(), stream);
}

void sort_pairs_cub(std::int64_t n, int* out, const int* in, ScratchTree& scratch, cudaStream_t stream) {
  check_n(n, "sort_pairs_cub");
  if (n == 0) return;
  int* keys_out = scratch.nested().here().as<int>(n);
  std::size_t bytes = 0;
  CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, in, keys_out, in, out, n, 0, 32, stream));
  CUDA_CHECK(
      cub::DeviceRadixSort::SortPairs(scratch.here().get(bytes), bytes, in, keys_out, in, out, n, 0, 32, stream));
}

}  // namespace Device
}  // namespace StreamCompaction
