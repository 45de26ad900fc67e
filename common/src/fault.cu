// A deliberate device fault for the fault-injection hook of run_guarded (COURSE_FAIL_VERSION=
// name:trap): a kernel that executes a trap, which leaves the context unusable, as an illegal
// address would.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace common {

namespace {
__global__ void trap_kernel() { __trap(); }
}  // namespace

void launch_trap_kernel() {
  trap_kernel<<<1, 1>>>();
  const cudaError_t e = cudaDeviceSynchronize();
  throw std::runtime_error(std::string("injected device fault: ") + cudaGetErrorString(e));
}

}  // namespace common
