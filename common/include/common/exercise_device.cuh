// The handout's stubs of device functions (scripts/exercise_markers.py, `device(EXPR)` regions).
// A device function cannot throw, so its stub records that it ran, returns a placeholder value, and
// the host asks afterwards: run_guarded and the tests call common::device_stub_hit() after a version
// ran, and a version that reached a stub reports NOT IMPLEMENTED (never a pass, never a FAIL of
// garbage values). The solution has no device stubs: then nothing is registered and the question
// costs nothing.
//   COURSE_DEVICE_STUB_FILE(tag)          once per file that holds device stubs, at file scope
//   COURSE_DEVICE_NOT_IMPLEMENTED(tag);   a stub's body (make_handout writes both)
// Each translation unit that includes such a file has its own flag (no relocatable device code), and
// registers it with common::register_device_stub() when the program starts.
#pragma once
#include <cuda_runtime.h>

#include "common/exercise.hpp"

#define COURSE_DEVICE_STUB_FILE(tag)                                                          \
  namespace {                                                                                 \
  namespace course_device_stub_##tag {                                                        \
    __device__ int hit_line;                                                                  \
    inline int take() {                                                                       \
      int line = 0;                                                                           \
      if (cudaMemcpyFromSymbol(&line, hit_line, sizeof line) != cudaSuccess) {                \
        (void)cudaGetLastError();                                                             \
        return 0;                                                                             \
      }                                                                                       \
      if (line != 0) {                                                                        \
        const int zero = 0;                                                                   \
        (void)cudaMemcpyToSymbol(hit_line, &zero, sizeof zero);                               \
      }                                                                                       \
      return line;                                                                            \
    }                                                                                         \
    [[maybe_unused]] const bool registered = ::common::register_device_stub(__FILE__, &take); \
  }                                                                                           \
  }

#define COURSE_DEVICE_NOT_IMPLEMENTED(tag) (::course_device_stub_##tag::hit_line = __LINE__)
