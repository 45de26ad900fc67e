// What the GPU is: name, SM count, clocks, memory, cache, and the datasheet-style theoretical
// rates derived from them. CUDA 13 removed cudaDeviceProp::clockRate, so clocks come from
// cudaDeviceGetAttribute.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace common {

struct DeviceInfo {
  int id = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  int sm_clock_khz = 0;   // cudaDevAttrClockRate
  int mem_clock_khz = 0;  // cudaDevAttrMemoryClockRate (0 where the driver does not say)
  int mem_bus_width_bits = 0;
  std::size_t global_mem_bytes = 0;
  std::size_t l2_bytes = 0;
  std::size_t smem_per_sm_bytes = 0;
  int fp32_lanes_per_sm = 0;
  double theoretical_fp32_gflops() const;  // lanes * SMs * clock * 2 (FMA)
  double theoretical_mem_gbs() const;      // DDR: 2 * mem clock * bus width / 8
};

// True when the CUDA runtime sees a device and this build has code for it. Never throws: no driver
// (CI), a driver older than the runtime or a GPU the build has no code for is a "no", and
// gpu_unavailable_reason() (requirements.hpp) says which, with the fix.
bool has_cuda_device();
DeviceInfo query_device(int id = 0);
// The SM count of the current device (a kernel's one-wave grid size is this x blocks per SM).
int current_sm_count();
// UsageError naming `what` (e.g. "--n 2^31") when a run would need more than this machine has:
// `host_bytes` against 80% of the physical memory, `device_bytes` against 90% of the current
// GPU's memory where there is a GPU. Checked before anything is allocated, so a huge size is a
// clear error instead of a bad_alloc or the OS killing the process.
void check_fits_in_memory(const std::string& what, double host_bytes, double device_bytes);
// A driver's default sizes, fitted to this machine: each size whose host and GPU bytes (per
// element x n) fit the same limits as check_fits_in_memory (the GPU's *free* memory here) is kept;
// sizes that do not fit are left out, and the largest power of two that does fit (and is larger
// than every kept size) takes the place of the largest one left out, so a 4 GB GPU still runs the
// largest size it can. `note` says what was left out and why ("" when nothing was).
std::vector<std::int64_t> fit_default_sizes(const std::vector<std::int64_t>& sizes, double host_bytes_per_elem,
                                            double device_bytes_per_elem, std::string& note);
// True where the current device can overlap a programmatic dependent launch (sm_90+) and `kernel`'s
// loaded code was compiled for sm_90+ (its griddepcontrol waits are compiled in); see requirements.hpp.
bool pdl_supported(const void* kernel);
// True where the current device has the bulk-copy (TMA) engine and mbarrier transactions (sm_90+)
// and `kernel`'s loaded code was compiled for sm_90+ (below it the bulk-copy calls trap).
bool bulk_copy_supported(const void* kernel);
int fp32_lanes_per_sm(int cc_major, int cc_minor);
std::string cuda_runtime_version();  // "13.0"
std::string describe(const DeviceInfo& d);

}  // namespace common
