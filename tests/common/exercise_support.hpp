// Tests over a handout (scripts/make_handout.py): a version whose body is still a stub throws
// common::NotImplemented (a device function's stub is reported by common::check_device_stubs(); a
// test that checks a kernel's output calls it before its checks). A test written with COURSE_TEST instead of TEST is then reported as
// skipped with the reason "not implemented: ..." — never as passed, and the checks it ran before
// meeting the stub still count (a failure stays a failure). In a loop over versions,
// course_test::implemented() notes the stub and lets the loop go on to the next version; the test
// is skipped at its end, naming every stub it met.
#pragma once
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "common/exercise.hpp"
#include "common/requirements.hpp"

namespace course_test {

inline std::set<std::string>& stubs() {
  static std::set<std::string> s;
  return s;
}

inline std::set<std::string>& unsupported() {
  static std::set<std::string> s;
  return s;
}

// Runs f(); false (and `what` noted) when it reached an unwritten handout exercise or a version this GPU cannot
// run (common::Unsupported: the test is then skipped with that reason).
template <class F>
bool implemented(const std::string& what, F&& f) {
  try {
    f();
    common::check_device_stubs();  // a handout's device stub ran: the results are placeholders
    return true;
  } catch (const common::NotImplemented&) {
    stubs().insert(what);
    return false;
  } catch (const common::Unsupported& e) {  // e.g. sm_90 hardware on an older GPU
    unsupported().insert(what + " (" + e.what() + ")");
    return false;
  }
}

inline std::string take_unsupported() {
  std::string out;
  for (const auto& s : unsupported()) out += (out.empty() ? "" : ", ") + s;
  unsupported().clear();
  return out;
}

inline std::string take_stubs() {
  std::string out;
  for (const auto& s : stubs()) out += (out.empty() ? "" : ", ") + s;
  stubs().clear();
  return out;
}

}  // namespace course_test

// Skips a GPU test where no GPU can run this build, with the reason: no device, a driver older than
// the runtime, or a GPU this build has no code for (with the rebuild line).
#define REQUIRE_GPU() \
  if (!common::gpu_unavailable_reason().empty()) GTEST_SKIP() << common::gpu_unavailable_reason()

// The test's end: skipped, with their names, when it met unwritten handout exercises or versions
// this GPU cannot run (noted by implemented()); a failure it recorded before stays a failure.
// clang-format off: macros whose ifs guard a GTEST_SKIP on the next line
#define COURSE_SKIP_NOTED()                                                                          \
  if (!course_test::stubs().empty())                                                                 \
    GTEST_SKIP() << "not implemented: " << course_test::take_stubs();                                \
  if (!course_test::unsupported().empty())                                                           \
    GTEST_SKIP() << "unsupported on this GPU: " << course_test::take_unsupported()
// clang-format on

// A test of one registry version (a value-parameterized test's body starts with it): skipped with
// the reason where no GPU can run this build, or where this GPU or the code loaded for it lacks
// what the version's registry entry needs (common/requirements.hpp). The other versions' tests
// still run.
// clang-format off
#define REQUIRE_VERSION_RUNNABLE(name, needs)                                                        \
  REQUIRE_GPU();                                                                                     \
  course_test::stubs().clear();                                                                      \
  course_test::unsupported().clear();                                                                \
  if (const std::string why_ = common::unmet(needs); !why_.empty())                                  \
    GTEST_SKIP() << (name) << " cannot run on this GPU: " << why_
// clang-format on

#define COURSE_TEST(suite, name)                \
  static void suite##_##name##_body();          \
  TEST(suite, name) {                           \
    course_test::stubs().clear();               \
    course_test::unsupported().clear();         \
    try {                                       \
      suite##_##name##_body();                  \
      common::check_device_stubs();             \
    } catch (const common::NotImplemented& e) { \
      course_test::stubs().insert(e.what());    \
    }                                           \
    COURSE_SKIP_NOTED();                        \
  }                                             \
  static void suite##_##name##_body()
