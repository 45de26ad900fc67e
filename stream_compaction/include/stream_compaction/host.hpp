// CPU versions and the independent references the checker compares against (64-bit sizes): the
// references in src/reference.cpp (a harness file), compact_with_scan (the CPU exercise) in src/cpu.cpp.
#pragma once
#include <chrono>
#include <cstdint>

namespace StreamCompaction {
namespace Host {

// Exclusive scan, wrap-around 32-bit arithmetic (unsigned internally, so overflow is defined).
void scan(std::int64_t n, int* out, const int* in);
std::int64_t compact_without_scan(std::int64_t n, int* out, const int* in);
// Time points a staged CPU compaction records as it finishes each stage (map -> scan -> scatter),
// the host twin of Device::CompactStageEvents: the driver sets `start` before the call and reads
// the split of a run whose three marks are set. Left unset, the run still counts; it has no split.
struct CompactStageClock {
  using Clock = std::chrono::steady_clock;
  Clock::time_point start, after_map, after_scan, after_scatter;
};
std::int64_t compact_with_scan(std::int64_t n, int* out, const int* in, CompactStageClock* stages = nullptr);
void sort(std::int64_t n, int* out, const int* in);  // std::sort
// Reference for big sorts: counting-sort LSD radix, O(n), independent of the GPU code.
void reference_radix_sort(std::int64_t n, int* out, const int* in);

}  // namespace Host
}  // namespace StreamCompaction
