// The status word of a decoupled look-back (Merrill & Garland 2016), one type for every look-back
// in the course: the scans' and the compactions' (one word per tile) and the one-sweep sort's (one
// word per tile and digit). A tile publishes its aggregate (its own total), then its inclusive
// prefix (the total of every tile up to it); a later tile reads the words of its predecessors,
// adds aggregates until it meets a prefix, and waits on a word still empty.
//
// The flag takes the word's top 2 bits and the value the rest, so one atomic load sees both: a
// 32-bit word holds a 30-bit count (the sort below 2^30 keys), a 64-bit word a count below 2^62 or
// a 32-bit scan value (any int, stored as its unsigned bits). A cleared word (all zero) is empty,
// so clearing the status array with cudaMemsetAsync resets a launch.
#pragma once
#include <cuda/atomic>
#include <cuda_runtime.h>

#include <cstdint>

namespace common {

template <typename Word>
struct TileStatus {
  static_assert(sizeof(Word) == 4 || sizeof(Word) == 8, "a status word is 32 or 64 bits");
  static constexpr int kShift = 8 * sizeof(Word) - 2;
  static constexpr Word kAggregate = Word{1} << kShift;  // flag bits of a word holding an aggregate
  static constexpr Word kPrefix = Word{2} << kShift;     // ... and of a word holding an inclusive prefix
  static constexpr Word kValueMask = (Word{1} << kShift) - 1;
  using Ref = cuda::atomic_ref<Word, cuda::thread_scope_device>;

  // Relaxed: the value travels in the same word as its flag, so no ordering beyond the word's own
  // atomicity is needed.
  __device__ static void publish(Word* status, std::int64_t i, Word flag, Word value) {
    Ref(status[i]).store(flag | value, cuda::memory_order_relaxed);
  }
  __device__ static Word read(Word* status, std::int64_t i) { return Ref(status[i]).load(cuda::memory_order_relaxed); }
  __device__ static bool is_empty(Word w) { return (w & ~kValueMask) == 0; }
  __device__ static bool is_prefix(Word w) { return (w & kPrefix) != 0; }
  __device__ static Word value(Word w) { return w & kValueMask; }
  // A 32-bit scan value (an int's or an unsigned's bits) and back.
  template <typename T>
  __device__ static Word bits_of(T v) {
    static_assert(sizeof(T) == 4 && sizeof(Word) == 8, "a 64-bit status word holds a 4-byte scan value");
    return static_cast<unsigned>(v);
  }
  template <typename T>
  __device__ static T as(Word w) {
    return static_cast<T>(static_cast<unsigned>(w));
  }
};

}  // namespace common
