// The handout's stubs. scripts/make_handout.py replaces every region of the solution marked
//   // EXERCISE BEGIN          (file scope: kernels and helpers; removed)
//   // EXERCISE BEGIN body     (inside a function: replaced by COURSE_NOT_IMPLEMENTED();)
//   // EXERCISE END
// so that the starter repository compiles and every unwritten version reports itself as
// "NOT IMPLEMENTED" (its own status: never a pass, never a failure of the harness). run_guarded
// turns the exception into that row status; the tests skip with the reason "not implemented".
#pragma once
#include <stdexcept>
#include <string>

#include "common/status.hpp"

namespace common {

class NotImplemented : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// Throws NotImplemented naming the stub's file (relative to the repository) and line.
[[noreturn]] void not_implemented(const char* file, int line);

// The verdict of a row whose version is a stub (Status::not_implemented, the stub's place as detail).
Verdict not_implemented_verdict(const NotImplemented& e);

// Device stubs (common/exercise_device.cuh): each registers, per translation unit, a function that
// returns the line of the stub that ran since its last call (0: none) and clears it.
bool register_device_stub(const char* file, int (*take_hit_line)());
// "file:line" of a device stub that ran since the last call (all flags are cleared), or "" — at once,
// without touching the GPU, where no device stub exists (the solution).
std::string device_stub_hit();
// Throws NotImplemented when a device stub ran since the last call.
void check_device_stubs();

// A version that needs hardware this GPU lacks (e.g. the bulk-copy engine of sm_90): run_guarded
// reports the row as skipped with <reason>, the tests skip it with that reason. Never a pass.
class Unsupported : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace common

#define COURSE_NOT_IMPLEMENTED() ::common::not_implemented(__FILE__, __LINE__)
