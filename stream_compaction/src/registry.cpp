#include "stream_compaction/registry.hpp"

#include <cmath>

#include "stream_compaction/host.hpp"

namespace StreamCompaction {

const char* op_name(Op op) {
  switch (op) {
    case Op::Scan: return "scan";
    case Op::Compact: return "compact";
    case Op::Sort: return "sort";
    case Op::SortPairs: return "sort-pairs";
  }
  return "?";
}

namespace {

using common::CostModel;
constexpr double kInt = 4.0;  // bytes per element

int ceil_log2(std::int64_t n) {
  int l = 0;
  while ((std::int64_t{1} << l) < n) ++l;
  return l;
}

// ---- cost models: the bytes each version moves through DRAM and the launches it makes --------
CostModel cost_none(std::int64_t, std::int64_t, int) { return {}; }

CostModel cost_naive(std::int64_t n, std::int64_t, int) {
  const int levels = ceil_log2(n);
  return {0, kInt * n * (2.0 + 3.0 * levels), 1.0 + levels};  // shift + (read 2, write 1) per level
}

CostModel cost_work_efficient(std::int64_t n, std::int64_t, int) {
  const std::int64_t padded = std::int64_t{1} << ceil_log2(n);
  const double full = kInt * padded;
  double bytes = 2 * kInt * n + (padded != n ? 2 * kInt * n + (padded - n) * kInt : 0);
  int launches = padded != n ? 4 : 2;
  for (std::int64_t stride = 2; stride <= padded; stride <<= 1) {
    const double active = double(padded / stride);
    // from stride 16 on every access lands in its own 32-byte sector
    bytes += std::min(full, 64.0 * active) + std::min(full, 32.0 * active);  // up-sweep: 2 reads, 1 write
    bytes += 2 * std::min(full, 64.0 * active);                              // down-sweep: 2 reads, 2 writes
    launches += 2;
  }
  return {0, bytes, double(launches)};
}

CostModel cost_recursive(std::int64_t n, std::int64_t tile, double bytes_per_elem, int launches_per_level) {
  CostModel c{0, 0, 0};
  while (true) {
    c.bytes += bytes_per_elem * n;
    const std::int64_t tiles = (n + tile - 1) / tile;
    if (tiles <= 1) {
      c.launches += 1;
      break;
    }
    c.launches += launches_per_level;
    n = tiles;
  }
  return c;
}

CostModel cost_shared(std::int64_t n, std::int64_t, int block) { return cost_recursive(n, 2 * block, 4 * kInt, 2); }
CostModel cost_warp(std::int64_t n, std::int64_t, int) { return cost_recursive(n, 256 * 15, 3 * kInt, 2); }
CostModel cost_single_pass(std::int64_t n, std::int64_t, int) { return {0, 2 * kInt * n, 2}; }

template <CostModel (*Scan)(std::int64_t, std::int64_t, int)>
CostModel cost_map_scan_scatter(std::int64_t n, std::int64_t kept, int block) {
  const CostModel s = Scan(n, kept, block);
  return {0, kInt * (2.0 * n + 3.0 * n + kept) + s.bytes, 2 + s.launches};
}
CostModel cost_fused_compact(std::int64_t n, std::int64_t kept, int) { return {0, kInt * (n + kept), 2}; }
// 32 splits: map (read a key, write its flag), the v2 scan of the flags, scatter (read the key and
// its position, write the key)
CostModel cost_split(std::int64_t n, std::int64_t kept, int block) {
  const CostModel s = cost_work_efficient(n, kept, block);
  return {0, 32 * (kInt * (2.0 * n + 3.0 * n) + s.bytes), 32 * (2 + s.launches)};
}
CostModel cost_radix(std::int64_t n, std::int64_t, int) { return {0, 4 * 3 * kInt * n, 4 * 4}; }
CostModel cost_cub_radix(std::int64_t n, std::int64_t, int) { return {0, kInt * n + 4 * 2 * kInt * n, 6}; }
CostModel cost_onesweep_pairs(std::int64_t n, std::int64_t, int) { return {0, kInt * n + 4 * 4 * kInt * n, 6}; }

// ---- run adapters ----------------------------------------------------------------------------
void run_cpu_scan(const RunArgs& a) { Host::scan(a.n, a.out, a.in); }
void run_cpu_compact(const RunArgs& a) { *a.count = Host::compact_without_scan(a.n, a.out, a.in); }
void run_cpu_compact_scan(const RunArgs& a) { *a.count = Host::compact_with_scan(a.n, a.out, a.in, a.host_stages); }
void run_std_sort(const RunArgs& a) { Host::sort(a.n, a.out, a.in); }

template <Device::ScanFn Scan>
void run_scan(const RunArgs& a) {
  Scan(a.n, a.out, a.in, *a.scratch, a.stream, a.block);
}
template <Device::ScanFn Scan>
void run_compact(const RunArgs& a) {
  Device::compact_map_scan_scatter(Scan, a.n, a.out, a.count, a.in, *a.scratch, a.stream, a.block, a.stages);
}
void run_fused(const RunArgs& a) { Device::compact_fused(a.n, a.out, a.count, a.in, *a.scratch, a.stream); }
void run_tma_compact(const RunArgs& a) { Device::compact_tma(a.n, a.out, a.count, a.in, *a.scratch, a.stream); }
void run_cub_select(const RunArgs& a) { Device::compact_cub(a.n, a.out, a.count, a.in, *a.scratch, a.stream); }
void run_radix(const RunArgs& a) { Device::sort_radix(a.n, a.out, a.in, *a.scratch, a.stream); }
void run_cub_sort(const RunArgs& a) { Device::sort_cub(a.n, a.out, a.in, *a.scratch, a.stream); }
template <void (*Sort)(std::int64_t, int*, const int*, Device::ScratchTree&, cudaStream_t)>
void run_sort(const RunArgs& a) {
  Sort(a.n, a.out, a.in, *a.scratch, a.stream);
}

}  // namespace

const std::vector<Version>& versions() {
  using namespace Device;
  using common::kOnCpu;
  using common::kOnGpu;
  using common::Role;
  const common::Needs tma = common::needs_sm(90, "TMA bulk copy");
  // clang-format off: the registry is a table, one entry per line
  static const std::vector<Version> table = {
      // {{id, name, file, idea, role, where it runs[, needs]}, op, block size, stages, run, cost[, scan / compact tile variants]}
      {{"cpu", "scan_cpu", "src/reference.cpp", "sequential exclusive scan, one pass", Role::reference, kOnCpu}, Op::Scan, kFixedBlock, kOnePiece, run_cpu_scan, cost_none},
      {{"v1", "scan_naive", "src/v1_naive.cu", "Hillis-Steele in global memory: all threads at once, O(n log n) adds", Role::version, kOnGpu}, Op::Scan, kBlockTunable, kOnePiece, run_scan<scan_naive>, cost_naive},
      {{"v2", "scan_work_efficient", "src/v2_work_efficient.cu", "Blelloch up/down-sweep in global memory, only active threads launched", Role::version, kOnGpu}, Op::Scan, kBlockTunable, kOnePiece, run_scan<scan_work_efficient>, cost_work_efficient},
      {{"v3", "scan_shared_mem", "src/v3_shared_mem.cu", "Blelloch per block in shared memory, conflict-free padding, recursive block sums", Role::version, kOnGpu}, Op::Scan, kBlockTunable, kOnePiece, run_scan<scan_shared_mem>, cost_shared},
      {{"v4", "scan_warp_shuffle", "src/v4_warp_shuffle.cu", "15 items/thread, 16-byte loads, warp-shuffle block scan, reduce-then-scan", Role::version, kOnGpu}, Op::Scan, kFixedBlock, kOnePiece, run_scan<scan_warp_shuffle>, cost_warp},
      {{"v5", "scan_lookback", "src/v5_lookback.cu", "single pass: decoupled look-back between tiles, 8 bytes per element", Role::version, kOnGpu}, Op::Scan, kFixedBlock, kOnePiece, run_scan<scan_lookback>, cost_single_pass, lookback_scan_variants},
      {{"v6", "scan_tma", "src/v6_tma.cu", "Hopper: tiles arrive by bulk copy (TMA) in a 2-stage shared-memory ring, a producer warp and 8 consumer warps on mbarriers, persistent grid, look-back kept", Role::version, kOnGpu, tma}, Op::Scan, kFixedBlock, kOnePiece, run_scan<scan_tma>, cost_single_pass, tma_scan_variants},
      {{"thrust", "scan_thrust", "src/library_thrust.cu", "library: thrust::exclusive_scan", Role::version, kOnGpu}, Op::Scan, kFixedBlock, kOnePiece, run_scan<scan_thrust>, cost_single_pass},
      {{"cub", "scan_cub", "src/library_cub.cu", "library: cub::DeviceScan::ExclusiveSum", Role::library, kOnGpu}, Op::Scan, kFixedBlock, kOnePiece, run_scan<scan_cub>, cost_single_pass},

      {{"cpu", "compact_cpu", "src/reference.cpp", "sequential loop keeping nonzeros, no scan", Role::reference, kOnCpu}, Op::Compact, kFixedBlock, kOnePiece, run_cpu_compact, cost_none},
      {{"cpu-scan", "compact_cpu_scan", "src/cpu.cpp", "CPU map -> scan -> scatter (the GPU algorithm, sequentially)", Role::version, kOnCpu}, Op::Compact, kFixedBlock, kStages, run_cpu_compact_scan, cost_none},
      {{"v1", "compact_naive", "src/compact_map_scan_scatter.cu", "map -> v1 naive scan -> scatter", Role::version, kOnGpu}, Op::Compact, kBlockTunable, kStages, run_compact<scan_naive>, cost_map_scan_scatter<cost_naive>},
      {{"v2", "compact_work_efficient", "src/compact_map_scan_scatter.cu", "map -> v2 work-efficient scan -> scatter", Role::version, kOnGpu}, Op::Compact, kBlockTunable, kStages, run_compact<scan_work_efficient>, cost_map_scan_scatter<cost_work_efficient>},
      {{"v3", "compact_shared_mem", "src/compact_map_scan_scatter.cu", "map -> v3 shared-memory scan -> scatter", Role::version, kOnGpu}, Op::Compact, kBlockTunable, kStages, run_compact<scan_shared_mem>, cost_map_scan_scatter<cost_shared>},
      {{"v4", "compact_warp_shuffle", "src/compact_map_scan_scatter.cu", "map -> v4 warp-shuffle scan -> scatter", Role::version, kOnGpu}, Op::Compact, kBlockTunable, kStages, run_compact<scan_warp_shuffle>, cost_map_scan_scatter<cost_warp>},
      {{"v5", "compact_lookback", "src/compact_map_scan_scatter.cu", "map -> v5 look-back scan -> scatter", Role::version, kOnGpu}, Op::Compact, kBlockTunable, kStages, run_compact<scan_lookback>, cost_map_scan_scatter<cost_single_pass>},
      {{"v6", "compact_fused", "src/compact_fused.cu", "one pass: flags, look-back scan and coalesced scatter fused, 4n + 4k bytes", Role::version, kOnGpu}, Op::Compact, kFixedBlock, kOnePiece, run_fused, cost_fused_compact, nullptr, fused_compact_variants},
      {{"v7", "compact_tma", "src/v6_tma.cu", "Hopper: the v6 bulk-copy pipeline under the fused compaction, kept values packed in the stage", Role::version, kOnGpu, tma}, Op::Compact, kFixedBlock, kOnePiece, run_tma_compact, cost_fused_compact, nullptr, tma_compact_variants},
      {{"cub", "compact_cub", "src/library_cub.cu", "library: cub::DeviceSelect::If", Role::library, kOnGpu}, Op::Compact, kFixedBlock, kOnePiece, run_cub_select, cost_fused_compact},

      {{"cpu", "sort_std", "src/reference.cpp", "std::sort (introsort), one core", Role::reference, kOnCpu}, Op::Sort, kFixedBlock, kOnePiece, run_std_sort, cost_none},
      {{"v1", "sort_split", "src/sort_split.cu", "one bit per pass, 32 splits: map the bit, v2 work-efficient scan, stable scatter (GPU Gems 3 ch. 39)", Role::version, kOnGpu}, Op::Sort, kFixedBlock, kOnePiece, run_sort<sort_split>, cost_split},
      {{"v2", "sort_radix", "src/radix_sort.cu", "LSD radix, 8-bit digits: upsweep histograms, look-back scan, stable shared-memory ranking", Role::version, kOnGpu}, Op::Sort, kFixedBlock, kOnePiece, run_radix, cost_radix},
      {{"v3", "sort_onesweep", "src/sort_onesweep.cu", "one histogram pass for all digits, then per digit one kernel: per-warp digit counts published early, match ranking to tile places, look-back, 36 bytes per key", Role::version, kOnGpu}, Op::Sort, kFixedBlock, kOnePiece, run_sort<sort_onesweep>, cost_cub_radix},
      {{"cub", "sort_cub", "src/library_cub.cu", "library: cub::DeviceRadixSort::SortKeys (one-sweep)", Role::library, kOnGpu}, Op::Sort, kFixedBlock, kOnePiece, run_cub_sort, cost_cub_radix},

      {{"cpu", "sort_pairs_std", "src/reference.cpp", "std::sort of the keys (the values are copies of them), one core", Role::reference, kOnCpu}, Op::SortPairs, kFixedBlock, kOnePiece, run_std_sort, cost_none},
      {{"v1", "sort_pairs_onesweep", "src/sort_onesweep.cu", "the one-sweep sort moving an int32 value with every key", Role::version, kOnGpu}, Op::SortPairs, kFixedBlock, kOnePiece, run_sort<sort_pairs_onesweep>, cost_onesweep_pairs},
      {{"cub", "sort_pairs_cub", "src/sort_onesweep.cu", "library: cub::DeviceRadixSort::SortPairs", Role::library, kOnGpu}, Op::SortPairs, kFixedBlock, kOnePiece, run_sort<sort_pairs_cub>, cost_onesweep_pairs},
  };
  // clang-format on
  return table;
}

const Version* find_version(const std::string& name) {
  for (const auto& v : versions())  // by name only: ids repeat across operations
    if (v.name == name) return &v;
  return nullptr;
}

}  // namespace StreamCompaction
