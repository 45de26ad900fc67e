#include "common/device_info.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <sstream>
#include <unistd.h>

#include "common/cli.hpp"
#include "common/cuda_check.hpp"
#include "common/requirements.hpp"

namespace common {

double DeviceInfo::theoretical_fp32_gflops() const {
  return 2.0 * fp32_lanes_per_sm * sm_count * (sm_clock_khz * 1e3) / 1e9;
}

double DeviceInfo::theoretical_mem_gbs() const {
  return 2.0 * (mem_clock_khz * 1e3) * (mem_bus_width_bits / 8.0) / 1e9;
}

namespace {

std::string gib(double b) {
  std::ostringstream os;
  os.precision(3);
  os << b / (1024.0 * 1024.0 * 1024.0) << " GiB";
  return os.str();
}

double host_memory_bytes() {
  return static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE));
}

}  // namespace

void check_fits_in_memory(const std::string& what, double host_bytes, double device_bytes) {
  const double host = host_memory_bytes();
  if (host > 0 && host_bytes > 0.8 * host)
    throw UsageError(what + ": needs about " + gib(host_bytes) + " of host memory, this machine has " + gib(host));
  if (device_bytes > 0 && has_cuda_device()) {
    std::size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess && device_bytes > 0.9 * static_cast<double>(total_b))
      throw UsageError(what + ": needs about " + gib(device_bytes) + " of GPU memory, the GPU has " +
                       gib(static_cast<double>(total_b)));
    (void)cudaGetLastError();
  }
}

std::vector<std::int64_t> fit_default_sizes(const std::vector<std::int64_t>& sizes, double host_per_elem,
                                            double device_per_elem, std::string& note) {
  note.clear();
  const double host = host_memory_bytes();
  double device = 0;  // 0: no GPU limit
  if (device_per_elem > 0 && has_cuda_device()) {
    std::size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) device = static_cast<double>(free_b);
    (void)cudaGetLastError();
  }
  auto fits = [&](std::int64_t n) {
    const double nd = static_cast<double>(n);
    return (host <= 0 || host_per_elem * nd <= 0.8 * host) && (device <= 0 || device_per_elem * nd <= 0.9 * device);
  };
  std::vector<std::int64_t> kept, left;
  for (std::int64_t n : sizes) (fits(n) ? kept : left).push_back(n);
  if (left.empty()) return kept;
  std::int64_t largest_kept = 0;
  for (std::int64_t n : kept) largest_kept = std::max(largest_kept, n);
  std::int64_t p = 1;
  while (fits(p * 2) && p * 2 < *std::max_element(left.begin(), left.end())) p *= 2;
  std::ostringstream os;
  os << "left out n =";
  for (std::size_t i = 0; i < left.size(); ++i) os << (i ? ", " : " ") << left[i];
  os << " (needs about " << gib(device_per_elem * static_cast<double>(left.front())) << " of GPU memory, "
     << gib(device) << " free";
  if (host > 0)
    os << "; " << gib(host_per_elem * static_cast<double>(left.front())) << " of host memory of " << gib(host);
  os << ")";
  if (p > largest_kept && fits(p)) {
    kept.push_back(p);
    os << "; runs n = " << p << " instead, the largest power of two that fits";
  }
  note = os.str();
  return kept;
}

bool pdl_supported(const void* kernel) { return unmet(needs_sm(90, "programmatic dependent launch"), kernel).empty(); }

bool bulk_copy_supported(const void* kernel) { return unmet(needs_sm(90, "TMA bulk copy"), kernel).empty(); }

int current_sm_count() {
  int dev = 0, sms = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  return sms;
}

bool has_cuda_device() { return gpu_unavailable_reason().empty(); }

int fp32_lanes_per_sm(int major, int minor) {
  switch (major) {
    case 3: return 192;                    // Kepler
    case 5: return 128;                    // Maxwell
    case 6: return minor == 0 ? 64 : 128;  // GP100 : GP10x
    case 7: return 64;                     // Volta, Turing
    case 8: return minor == 0 ? 64 : 128;  // A100 : GA10x, Ada
    case 9: return 128;                    // Hopper
    case 10:
    case 12: return 128;  // Blackwell
    default: return 128;
  }
}

static int attribute(cudaDeviceAttr attr, int id) {
  int v = 0;
  if (cudaDeviceGetAttribute(&v, attr, id) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return v;
}

DeviceInfo query_device(int id) {
  cudaDeviceProp p{};
  CUDA_CHECK(cudaGetDeviceProperties(&p, id));
  DeviceInfo d;
  d.id = id;
  d.name = p.name;
  d.cc_major = p.major;
  d.cc_minor = p.minor;
  d.sm_count = p.multiProcessorCount;
  d.global_mem_bytes = p.totalGlobalMem;
  d.l2_bytes = static_cast<std::size_t>(p.l2CacheSize);
  d.smem_per_sm_bytes = p.sharedMemPerMultiprocessor;
  d.sm_clock_khz = attribute(cudaDevAttrClockRate, id);
  d.mem_clock_khz = attribute(cudaDevAttrMemoryClockRate, id);
  d.mem_bus_width_bits = attribute(cudaDevAttrGlobalMemoryBusWidth, id);
  d.fp32_lanes_per_sm = fp32_lanes_per_sm(p.major, p.minor);
  return d;
}

std::string cuda_runtime_version() {
  int v = CUDART_VERSION;
  std::ostringstream os;
  os << v / 1000 << "." << (v % 1000) / 10;
  return os.str();
}

std::string describe(const DeviceInfo& d) {
  std::ostringstream os;
  os << d.name << " (sm_" << d.cc_major << d.cc_minor << ", " << d.sm_count << " SMs @ " << d.sm_clock_khz / 1000
     << " MHz, " << d.global_mem_bytes / (1024 * 1024) << " MiB, L2 " << d.l2_bytes / (1024 * 1024)
     << " MiB; datasheet-style FP32 " << d.theoretical_fp32_gflops() / 1e3 << " TFLOP/s, memory "
     << d.theoretical_mem_gbs() << " GB/s)";
  return os.str();
}

}  // namespace common
