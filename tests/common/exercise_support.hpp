// Tests over a handout (scripts/make_handout.py): a version whose body is still a stub throws
// common::NotImplemented. A test written with COURSE_TEST instead of TEST is then reported as
// skipped with the reason "not implemented: ..." — never as passed, and the checks it ran before
// meeting the stub still count (a failure stays a failure). In a loop over versions,
// course_test::implemented() notes the stub and lets the loop go on to the next version; the test
// is skipped at its end, naming every stub it met.
#pragma once
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "common/exercise.hpp"

namespace course_test {

inline std::set<std::string>& stubs() {
  static std::set<std::string> s;
  return s;
}

// Runs f(); false (and `what` noted) when it reached a handout stub.
template <class F>
bool implemented(const std::string& what, F&& f) {
  try {
    f();
    return true;
  } catch (const common::NotImplemented&) {
    stubs().insert(what);
    return false;
  }
}

inline std::string take_stubs() {
  std::string out;
  for (const auto& s : stubs()) out += (out.empty() ? "" : ", ") + s;
  stubs().clear();
  return out;
}

}  // namespace course_test

#define COURSE_TEST(suite, name)                                                          \
  static void suite##_##name##_body();                                                    \
  TEST(suite, name) {                                                                     \
    course_test::stubs().clear();                                                         \
    try {                                                                                 \
      suite##_##name##_body();                                                            \
    } catch (const common::NotImplemented& e) {                                           \
      course_test::stubs().insert(e.what());                                              \
    }                                                                                     \
    if (!course_test::stubs().empty()) GTEST_SKIP() << "not implemented: " << course_test::take_stubs(); \
  }                                                                                       \
  static void suite##_##name##_body()
