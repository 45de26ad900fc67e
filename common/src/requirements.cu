#include "common/requirements.hpp"

#include <cuda_runtime.h>

#include <iostream>
#include <sstream>

#include "common/cuda_check.hpp"
#include "common/exercise.hpp"

#ifndef COURSE_CUDA_ARCHITECTURES
#define COURSE_CUDA_ARCHITECTURES "unknown"
#endif

namespace common {
namespace {

// Compiled like every other kernel of the project: what the runtime loads for it is what it loads
// for all of them.
__global__ void probe_kernel() {}

std::string sm_text(int sm) { return "sm_" + std::to_string(sm); }

std::string cuda_version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

std::string rebuild_line(int sm) {
  return "rebuild for it: cmake -B build -DCMAKE_CUDA_ARCHITECTURES=" + std::to_string(sm) +
         " (or =native on the machine with the GPU)";
}

std::string device_name() {
  int dev = 0;
  cudaDeviceProp p{};
  if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&p, dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return "this GPU";
  }
  return p.name;
}

std::string compute_reason() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    int driver = 0;  // 0: no driver at all (no libcuda): the plain no-GPU machine
    (void)cudaDriverGetVersion(&driver);
    (void)cudaGetLastError();
    if (e == cudaErrorInsufficientDriver && driver > 0) {
      return "the NVIDIA driver supports CUDA " + cuda_version_text(driver) + ", this build's runtime is CUDA " +
             cuda_version_text(CUDART_VERSION) +
             ": update the driver (nvidia-smi shows its version), or build with a CUDA toolkit the driver supports "
             "(cmake -B build -DCMAKE_CUDA_COMPILER=/usr/local/cuda-<version>/bin/nvcc)";
    }
    if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver) return "no CUDA device";
    return std::string("no CUDA device (") + cudaGetErrorName(e) + ": " + cudaGetErrorString(e) + ")";
  }
  if (count == 0) return "no CUDA device";
  cudaFuncAttributes a{};
  const cudaError_t f = cudaFuncGetAttributes(&a, reinterpret_cast<const void*>(probe_kernel));
  if (f == cudaSuccess) return "";
  (void)cudaGetLastError();
  const int sm = device_sm();
  if (f == cudaErrorNoKernelImageForDevice || f == cudaErrorInvalidDeviceFunction)
    return "this build has no code for " + device_name() + " (" + sm_text(sm) + "): it was compiled for " +
           COURSE_CUDA_ARCHITECTURES + "; " + rebuild_line(sm);
  if (f == cudaErrorUnsupportedPtxVersion)
    return "the NVIDIA driver cannot compile this build's PTX for " + device_name() +
           " (it is newer than the driver): update the driver, or " + rebuild_line(sm);
  return std::string("the CUDA runtime cannot load this build's code (") + cudaGetErrorName(f) + ": " +
         cudaGetErrorString(f) + ")";
}

}  // namespace

const char* built_architectures() { return COURSE_CUDA_ARCHITECTURES; }

std::string describe(const Needs& n) {
  std::string out;
  auto add = [&](const std::string& s) { out += (out.empty() ? "" : ", ") + s; };
  if (n.sm > 0) add(sm_text(n.sm) + "+" + (n.feature.empty() ? "" : " (" + n.feature + ")"));
  if (n.cooperative) add("cooperative launch");
  if (n.smem_per_block > 0) add(std::to_string(n.smem_per_block) + " B shared/block");
  return out.empty() ? "-" : out;
}

int device_sm() {
  int dev = 0, major = 0, minor = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
  return major * 10 + minor;
}

CodeArch code_arch(const void* kernel) {
  cudaFuncAttributes a{};
  const cudaError_t e = cudaFuncGetAttributes(&a, kernel ? kernel : reinterpret_cast<const void*>(probe_kernel));
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    const int sm = device_sm();
    throw Unsupported("this build has no code for " + device_name() + " (" + sm_text(sm) + "; " + cudaGetErrorName(e) +
                      "); it was compiled for " + COURSE_CUDA_ARCHITECTURES + "; " + rebuild_line(sm));
  }
  return CodeArch{a.binaryVersion, a.ptxVersion};
}

std::string unmet(const Needs& n, const void* kernel) {
  if (!gpu_unavailable_reason().empty()) return gpu_unavailable_reason();
  const int sm = device_sm();
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  const std::string what = n.feature.empty() ? "" : " (" + n.feature + ")";
  if (n.sm > 0 && sm < n.sm)
    return "needs " + sm_text(n.sm) + what + "; this GPU is " + sm_text(sm) + " (" + device_name() + ")";
  if (n.sm > 0) {
    const CodeArch c = code_arch(kernel);
    if (c.ptx < n.sm)
      return "needs code compiled for " + sm_text(n.sm) + what + "; this build's code for this " + sm_text(sm) +
             " GPU was compiled for compute_" + std::to_string(c.ptx) +
             (c.binary != c.ptx ? " and JIT-compiled from its PTX" : "") + ", without it; " + rebuild_line(sm);
  }
  if (n.cooperative) {
    int coop = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
    if (!coop) return "needs cooperative launch, which " + device_name() + " does not support";
  }
  if (n.smem_per_block > 0) {
    int optin = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    if (n.smem_per_block > static_cast<std::size_t>(optin))
      return "needs " + std::to_string(n.smem_per_block) + " B of shared memory per block; this GPU (" + sm_text(sm) +
             ") allows at most " + std::to_string(optin) + " B";
  }
  return "";
}

void require(const Needs& n, const void* kernel) {
  const std::string why = unmet(n, kernel);
  if (!why.empty()) throw Unsupported(why);
}

void require_smem(const void* kernel, std::size_t bytes, const std::string& who) {
  cudaFuncAttributes a{};
  CUDA_CHECK(cudaFuncGetAttributes(&a, kernel));
  Needs n;
  n.smem_per_block = bytes + a.sharedSizeBytes;  // the dynamic bytes asked for and the kernel's static ones
  if (const std::string why = unmet(n, kernel); !why.empty()) throw Unsupported(who + ": " + why);
  if (bytes > 48 * 1024)
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
}

const std::string& gpu_unavailable_reason() {
  static const std::string reason = compute_reason();
  return reason;
}

Verdict no_gpu_verdict() { return Verdict::skip(gpu_unavailable_reason()); }

}  // namespace common
