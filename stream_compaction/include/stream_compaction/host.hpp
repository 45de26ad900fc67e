// CPU versions and the independent references the checker compares against (64-bit sizes): the
// references in src/reference.cpp (a harness file), compact_with_scan (the CPU exercise) in src/cpu.cpp.
#pragma once
#include <cstdint>

namespace StreamCompaction {
namespace Host {

// Exclusive scan, wrap-around 32-bit arithmetic (unsigned internally, so overflow is defined).
void scan(std::int64_t n, int* out, const int* in);
std::int64_t compact_without_scan(std::int64_t n, int* out, const int* in);
std::int64_t compact_with_scan(std::int64_t n, int* out, const int* in);
void sort(std::int64_t n, int* out, const int* in);  // std::sort
// Reference for big sorts: counting-sort LSD radix, O(n), independent of the GPU code.
void reference_radix_sort(std::int64_t n, int* out, const int* in);

}  // namespace Host
}  // namespace StreamCompaction
