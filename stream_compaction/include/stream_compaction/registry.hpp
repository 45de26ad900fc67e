// The single source of truth for version names: the driver, --list, --version, the CSV, the
// plots (which read names from the CSV) and the README tables all come from this table.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/registry.hpp"
#include "common/roofline.hpp"
#include "stream_compaction/device.hpp"
#include "stream_compaction/host.hpp"
#include "stream_compaction/tuning.hpp"

namespace StreamCompaction {

// SortPairs: (key, value) pairs whose values are copies of the keys; a version returns the sorted
// values, so the sort checker sees whether the values travelled with their keys.
enum class Op { Scan, Compact, Sort, SortPairs };
const char* op_name(Op op);

struct RunArgs {
  std::int64_t n = 0;
  int* out = nullptr;  // host pointer for CPU versions, device pointer for GPU versions
  const int* in = nullptr;
  std::int64_t* count = nullptr;  // compaction: kept count (host or device, as above)
  Device::ScratchTree* scratch = nullptr;
  cudaStream_t stream = nullptr;
  int block = 256;
  const Device::CompactStageEvents* stages = nullptr;  // a staged GPU compaction's sub-timings
  Host::CompactStageClock* host_stages = nullptr;      // a staged CPU compaction's
};

// Registry words for Version's two flags.
constexpr bool kBlockTunable = true, kFixedBlock = false;  // block_tunable
constexpr bool kStages = true, kOnePiece = false;          // has_stages

struct Version : common::Entry {
  Op op;
  bool block_tunable;  // takes the block size as a parameter (block-size sweep)
  bool has_stages;     // map -> scan -> scatter: reports sub-timings
  void (*run)(const RunArgs&);
  // Bytes and launches it moves/makes for n elements (kept: elements kept by a compaction).
  common::CostModel (*cost)(std::int64_t n, std::int64_t kept, int block);
  // Its tile shapes (tuning.hpp): stream_compaction_tune times each next to CUB.
  const std::vector<Device::ScanVariant>& (*scan_variants)() = nullptr;
  const std::vector<Device::CompactVariant>& (*compact_variants)() = nullptr;
};

const std::vector<Version>& versions();
const Version* find_version(const std::string& name);

}  // namespace StreamCompaction
