// What a version needs from the GPU and from the code this build compiled for it, stated in its
// registry entry, and the one place that decides whether the current GPU can run it.
//
// Two things must both hold for a Hopper-only version (TMA, programmatic launch): the GPU is
// sm_90 or newer, and the code the runtime loaded for it was compiled for sm_90 or newer. The
// second can fail on an H100: a build for `80` carries compute_80 PTX, the driver JIT-compiles it
// for the H100, and every `__CUDA_ARCH__ >= 900` path is compiled out of it (the TMA calls trap,
// the programmatic-launch waits vanish). cudaFuncGetAttributes says which code was loaded:
// binaryVersion (the SASS's architecture) and ptxVersion (the virtual architecture it was compiled
// from, which is what `__CUDA_ARCH__` was). A version that cannot run is skipped with the reason
// and the fix, never run into a trap, a FAIL or a silent fallback.
#pragma once
#include <cstddef>
#include <string>

#include "common/status.hpp"

namespace common {

struct Needs {
  int sm = 0;                      // lowest compute capability x 10 (90 = sm_90) of the GPU and of its code
  std::string feature;             // what needs it, for the skip text: "TMA bulk copy"
  bool cooperative = false;        // a cooperative launch (every block co-resident, grid-wide sync)
  std::size_t smem_per_block = 0;  // shared memory one block asks for (bytes; 0: fits on every GPU)
  bool any() const { return sm > 0 || cooperative || smem_per_block > 0; }
};

inline Needs needs_sm(int sm, std::string feature) { return Needs{sm, std::move(feature), false, 0}; }
inline Needs needs_cooperative() { return Needs{0, "", true, 0}; }

// For --list: "sm_90+ (TMA bulk copy)", "cooperative launch", "-" when it needs nothing special.
std::string describe(const Needs& n);

// The code the runtime loaded for `kernel` on the current GPU (both x 10: 90 = sm_90).
struct CodeArch {
  int binary = 0;  // the SASS's architecture (the GPU's own when the PTX was JIT-compiled)
  int ptx = 0;     // the virtual architecture it was compiled from: what __CUDA_ARCH__ was
};
// nullptr: the project's probe kernel, compiled with the same architectures as every target.
// Throws Unsupported (with the rebuild line) when this build has no code for the GPU.
CodeArch code_arch(const void* kernel = nullptr);

// The current GPU's compute capability x 10.
int device_sm();

// "" when the current GPU can run a version with these needs; else why not, e.g. "needs sm_90
// (TMA bulk copy); this GPU is sm_86 (NVIDIA GeForce RTX 3080)". `kernel`: one of the version's
// kernels (its loaded code is checked); nullptr: the probe kernel.
std::string unmet(const Needs& n, const void* kernel = nullptr);
// Throws Unsupported(unmet(n, kernel)) when not met.
void require(const Needs& n, const void* kernel = nullptr);

// Throws Unsupported when a block of `kernel` asking for `bytes` of shared memory cannot be
// launched on this GPU ("<who>: needs 131688 B of shared memory per block; this GPU allows at
// most 101376 B (sm_120)"); otherwise raises the kernel's dynamic shared-memory limit to `bytes`
// when they are over the default 48 KB.
void require_smem(const void* kernel, std::size_t bytes, const std::string& who);

// The architectures this build was compiled for (CMAKE_CUDA_ARCHITECTURES), e.g. "75-real;...;90".
const char* built_architectures();

// "" when a GPU is there and this build can run on it; else one line saying what is wrong and the
// command that fixes it: no device, a driver older than this build's runtime, or a GPU this build
// has no code for. Computed once (the first call creates the CUDA context).
const std::string& gpu_unavailable_reason();
// Skipped because of gpu_unavailable_reason(): the verdict of a GPU row that cannot run here.
Verdict no_gpu_verdict();

}  // namespace common
