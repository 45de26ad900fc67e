// Fresh inputs (`--fresh-inputs`, what the grader passes): every run the bench makes of a version
// gets an input no earlier run saw, written by the harness outside the timed region, and the run's
// output is checked against that input. Without it, a version that remembers its last input (a
// pointer, the size and a checksum of a sample) and replays the output it computed then is checked
// once and timed doing a copy: a scan_naive doing that was graded 5/5 at 36.7x the reference's
// speed on an H100.
//
// The inputs keep the op's distribution (the driver's ranges: scan values in [0, 50), compaction
// values in [0, 4), sort keys over the whole int32 range), drawn from a 64-bit key that
// std::random_device picks for every run: nothing a version sees in its untimed check run tells it
// the next one. The checks are the harness's own, O(n), and need no reference output:
//   scan     out[0] == 0 and out[i+1] - out[i] == in[i] (32-bit wrap-around, as the reference)
//   compact  the kept count, and every nonzero in[i] at out[number of nonzeros before i]
//   sort     non-decreasing, and the same multiset as the input: a 64-bit hash sum whose salt is
//            drawn after the run, so no output can be made to match it (sort-pairs returns the
//            values, copies of the keys: the same check)
// The device checks are plain kernels in a harness file (no library kernels, which the grader's
// kernel record would count against the version, and none of the exercises' primitives, which a
// handout leaves unwritten).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "common/bench.hpp"
#include "common/device_buffer.hpp"
#include "stream_compaction/registry.hpp"

#ifdef __CUDACC__
#define SC_FRESH_HD __host__ __device__
#else
#define SC_FRESH_HD
#endif

namespace StreamCompaction {
namespace Fresh {

// SplitMix64's finalizer: 64 well-mixed bits from any 64-bit value.
SC_FRESH_HD inline std::uint64_t mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// An element of op's input from 64 random bits: the one place the ranges are written (the driver's
// generated inputs use it too).
SC_FRESH_HD inline int value_from_bits(Op op, std::uint64_t r) {
  return op == Op::Scan      ? static_cast<int>(r % 50)
         : op == Op::Compact ? static_cast<int>(r % 4)
                             : static_cast<int>(static_cast<std::uint32_t>(r >> 32));
}

// What the checked inputs hold (the driver's --fill): the op's random values, every element 0 (a
// compaction keeps none, a sort's keys are all equal), or no element 0 (a 0 drawn becomes 1: a
// compaction keeps every element). Every fresh input of an edge is that edge again: a timed run of
// "fill=zeros" is timed and checked on zeros, not on the random input of another case.
enum class Fill { random, zeros, nonzero };

// An element of the input `fill` names from an element of the op's random input.
SC_FRESH_HD inline int filled(Fill fill, int v) {
  return fill == Fill::zeros ? 0 : fill == Fill::nonzero && v == 0 ? 1 : v;
}

// Element i of the fresh input drawn from `key` (the same on the host and on the device).
SC_FRESH_HD inline int value(Op op, std::uint64_t key, std::int64_t i, Fill fill = Fill::random) {
  return filled(fill, value_from_bits(op, mix(key + static_cast<std::uint64_t>(i) * 0x9e3779b97f4a7c15ULL)));
}

// A key no run can predict (std::random_device).
std::uint64_t new_key();

// in[0, n) = the fresh input of `key`, on the host.
void fill(Op op, std::uint64_t key, std::int64_t n, int* in, Fill f = Fill::random);

// "" when out (and, for a compaction, count) is op's output for in; else the first difference, in
// the words the device check uses too. Host arrays.
std::string check(Op op, std::int64_t n, const int* in, const int* out, std::int64_t count);

// The checks' words, shared by the host and the device check.
std::string scan_differs(std::int64_t i, int got, int expected);
std::string kept_count_differs(std::int64_t got, std::int64_t expected);
std::string compaction_differs(std::int64_t j, int got, int expected);
std::string not_sorted(std::int64_t i, int before, int at);
std::string not_a_permutation();

// The bench hooks of a CPU version reading `in` and writing `out` (and `*count`): host arrays of n.
common::FreshInputs host_hooks(Op op, std::int64_t n, int* in, const int* out, const std::int64_t* count,
                               Fill f = Fill::random);

// The device side: fresh inputs written by a kernel, outputs checked by kernels (scratch kept
// between calls). Needs a GPU.
class DeviceChecker {
 public:
  void fill(Op op, std::uint64_t key, std::int64_t n, int* d_in, cudaStream_t s, Fill f = Fill::random);
  // As check() above, on device arrays; d_count is read for a compaction. Synchronizes s.
  std::string check(Op op, std::int64_t n, const int* d_in, const int* d_out, const std::int64_t* d_count,
                    cudaStream_t s);

 private:
  common::DeviceBuffer<unsigned long long> words_;  // the first wrong index, the two hash sums
  common::DeviceBuffer<int> tile_kept_;
  common::DeviceBuffer<std::int64_t> tile_offset_;
};

// The bench hooks of a GPU version reading d_in and writing d_out (and *d_count) on stream s.
common::FreshInputs device_hooks(DeviceChecker& checker, Op op, std::int64_t n, int* d_in, const int* d_out,
                                 const std::int64_t* d_count, cudaStream_t s, Fill f = Fill::random);

}  // namespace Fresh
}  // namespace StreamCompaction
