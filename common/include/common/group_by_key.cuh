// Group by key on the device, the route every sub-project that buckets by a key uses (ground_seg
// v2's cells, ndt_graph's map voxels and VoxelGrid leaves): a stable radix sort of (key, value)
// pairs, then the runs of equal keys with their lengths and offsets, all enqueued on one stream
// with no host round trip (the run count stays on the device).
//
// The sort is the course's one-sweep radix sort (common/onesweep_sort.cuh) or CUB's
// DeviceRadixSort::SortPairs, whichever is measured faster at the key's width: GroupSort::automatic
// (the default) takes the one-sweep sort for 4-byte keys and CUB's for 8-byte keys.
// group_by_key_bench times both on the sub-projects' key shapes from 124,668 (a LiDAR scan) to 2^24
// pairs (H200, results/nvidia-h200/group_by_key_crossover.txt): on ground_seg's 16-bit cell keys
// the one-sweep sort is 1.03-1.27x CUB's at every size, on ndt_graph's 64-bit voxel keys 0.82-0.96x
// (its 64-bit tile, sized for 2^27 keys, is 1.00x CUB's there and leaves few tiles at a scan's
// size). GroupSort::onesweep / GroupSort::cub, or COURSE_GROUP_SORT=onesweep / cub in the
// environment, force one sort.
//
//   GroupByKey<std::uint64_t, int> g;
//   g.resize(n);
//   fill g.keys() and g.values() (n entries each) on stream s;
//   g.group(n, s);
//   run r: key g.unique()[r], g.counts()[r] entries, sorted entries [g.offsets()[r], g.offsets()[r + 1])
//   of g.sorted_keys() / g.sorted_values(); *g.num_runs() (device) runs.
//
// counts() and offsets() have n + 1 entries: counts past the last run are 0, so offsets()[runs]
// is n and offsets() / offsets() + 1 serve directly as the begin / end arrays of a segmented
// reduction. Equal keys keep their input order (the sort is stable), so per-run sums taken in
// order are deterministic. keys() and values() are left as they were (the sort writes separate
// buffers), so a caller may keep reading its inputs there.
#pragma once
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cstddef>
#include <cstdio>

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "common/cuda_check.hpp"
#include "common/device_buffer.hpp"
#include "common/exercise.hpp"
#include "common/onesweep_sort.cuh"

namespace common {

enum class GroupSort { automatic, onesweep, cub };
inline const char* group_sort_name(GroupSort s) {
  return s == GroupSort::cub ? "cub" : s == GroupSort::onesweep ? "onesweep" : "auto";
}
// The sort a grouping of keys of key_bytes bytes runs with (the measured choice, see above).
inline GroupSort sort_for(GroupSort s, int key_bytes) {
  if (s != GroupSort::automatic) return s;
  return key_bytes <= 4 ? GroupSort::onesweep : GroupSort::cub;
}
// COURSE_GROUP_SORT: unset or "auto" -> automatic, "onesweep" or "cub" -> that sort; anything else
// throws, naming it.
inline GroupSort default_group_sort() {
  const char* v = std::getenv("COURSE_GROUP_SORT");
  if (!v || std::string(v) == "auto") return GroupSort::automatic;
  if (std::string(v) == "onesweep") return GroupSort::onesweep;
  if (std::string(v) == "cub") return GroupSort::cub;
  throw std::invalid_argument(std::string("COURSE_GROUP_SORT='") + v + "' is not auto, onesweep or cub");
}

template <class Key, class Value>
class GroupByKey {
 public:
  // The sort COURSE_GROUP_SORT picks; where that is the one-sweep sort and the tree holds only its
  // stub (a handout of a sub-project that groups but does not teach the sort), CUB's, said once.
  GroupByKey() : sort_(default_group_sort()), may_fall_back_(true) {}
  explicit GroupByKey(GroupSort sort) : sort_(sort) {}
  GroupSort sort() const { return sort_; }
  // The sort group(...) runs with (automatic resolved for Key).
  GroupSort sort_for() const { return common::sort_for(sort_, static_cast<int>(sizeof(Key))); }
  // Capacity for n entries (buffers grow, never shrink).
  void resize(int n) {
    const std::size_t m = static_cast<std::size_t>(std::max(n, 1));
    if (m <= capacity_) return;
    for (auto* b : {&keys_, &sorted_keys_, &unique_}) b->resize(m);
    for (auto* b : {&values_, &sorted_values_}) b->resize(m);
    counts_.resize(m + 1);
    offsets_.resize(m + 1);
    num_runs_.resize(1);
    capacity_ = m;
  }
  Key* keys() { return keys_.get(); }
  Value* values() { return values_.get(); }
  const Key* sorted_keys() const { return sorted_keys_.get(); }
  const Value* sorted_values() const { return sorted_values_.get(); }
  const Key* unique() const { return unique_.get(); }
  const int* counts() const { return counts_.get(); }
  const int* offsets() const { return offsets_.get(); }
  const int* num_runs() const { return num_runs_.get(); }
  std::size_t capacity() const { return capacity_; }

  // Sorts the first n (key, value) pairs by the key's bits [0, end_bit) and finds the runs.
  void group(int n, cudaStream_t s, int end_bit = static_cast<int>(8 * sizeof(Key))) {
    if (n < 0 || static_cast<std::size_t>(n) > capacity_)
      throw std::invalid_argument("GroupByKey: " + std::to_string(n) + " entries, capacity " +
                                  std::to_string(capacity_));
    CUDA_CHECK(cudaMemsetAsync(counts_.get(), 0, (static_cast<std::size_t>(n) + 1) * sizeof(int), s));
    if (n == 0) {
      CUDA_CHECK(cudaMemsetAsync(offsets_.get(), 0, sizeof(int), s));
      CUDA_CHECK(cudaMemsetAsync(num_runs_.get(), 0, sizeof(int), s));
      return;
    }
    // one temporary allocation for the sort, the run-length encoding and the scan (sized first:
    // a grouping built per frame then allocates once, not once per step)
    std::size_t b1 = 0, b2 = 0, b3 = 0;
    const GroupSort use = sort_for();
    if (use == GroupSort::onesweep)
      b1 = Onesweep<Key, Value>::scratch_bytes(n, 0, end_bit);
    else
      CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, b1, keys_.get(), sorted_keys_.get(), values_.get(),
                                                 sorted_values_.get(), n, 0, end_bit, s));
    CUDA_CHECK(cub::DeviceRunLengthEncode::Encode(nullptr, b2, sorted_keys_.get(), unique_.get(), counts_.get(),
                                                  num_runs_.get(), n, s));
    CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, b3, counts_.get(), offsets_.get(), n + 1, s));
    void* tmp = scratch_.get(std::max({b1, b2, b3}));
    if (use == GroupSort::onesweep) {
      try {
        Onesweep<Key, Value>::sort(n, keys_.get(), sorted_keys_.get(), values_.get(), sorted_values_.get(), 0, end_bit,
                                   scratch_, s);
      } catch (const NotImplemented& e) {
        if (!may_fall_back_) throw;
        static bool said = false;  // once per process
        if (!said)
          std::fprintf(stderr, "GroupByKey: the one-sweep sort is a stub in this tree (%s); grouping with CUB's sort\n",
                       e.what());
        said = true;
        sort_ = GroupSort::cub;
        group(n, s, end_bit);
        return;
      }
    } else
      CUDA_CHECK(cub::DeviceRadixSort::SortPairs(tmp, b1, keys_.get(), sorted_keys_.get(), values_.get(),
                                                 sorted_values_.get(), n, 0, end_bit, s));
    CUDA_CHECK(cub::DeviceRunLengthEncode::Encode(tmp, b2, sorted_keys_.get(), unique_.get(), counts_.get(),
                                                  num_runs_.get(), n, s));
    CUDA_CHECK(cub::DeviceScan::ExclusiveSum(tmp, b3, counts_.get(), offsets_.get(), n + 1, s));
  }

 private:
  GroupSort sort_;
  bool may_fall_back_ = false;
  std::size_t capacity_ = 0;
  DeviceBuffer<Key> keys_, sorted_keys_, unique_;
  DeviceBuffer<Value> values_, sorted_values_;
  DeviceBuffer<int> counts_, offsets_, num_runs_;
  Scratch scratch_;
};

}  // namespace common
