// Checking results against a reference. Integers compare exactly; floats pass when
// |x - ref| <= atol + rtol * |ref| against a float64 reference. NaN or inf never passes.
#pragma once
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>

namespace common {

struct CompareResult {
  bool ok = true;
  std::int64_t first_bad = -1;
  std::int64_t bad_count = 0;
  double max_abs_err = 0;
  std::string message;  // empty when ok; otherwise names the first mismatch
};

template <typename T>
CompareResult compare_exact(const T* got, const T* ref, std::int64_t n) {
  CompareResult r;
  for (std::int64_t i = 0; i < n; ++i) {
    if (!(got[i] == ref[i])) {
      if (r.first_bad < 0) {
        r.first_bad = i;
        std::ostringstream os;
        os << "element " << i << ": got " << got[i] << ", expected " << ref[i];
        r.message = os.str();
      }
      ++r.bad_count;
    }
  }
  r.ok = r.bad_count == 0;
  if (!r.ok) r.message += " (" + std::to_string(r.bad_count) + " of " + std::to_string(n) + " differ)";
  return r;
}

struct Tolerance {
  double atol = 0;
  double rtol = 0;
};

template <typename T>
CompareResult compare_close(const T* got, const double* ref, std::int64_t n, Tolerance tol) {
  CompareResult r;
  for (std::int64_t i = 0; i < n; ++i) {
    const double g = static_cast<double>(got[i]);
    const double err = std::fabs(g - ref[i]);
    const bool bad = !std::isfinite(g) || !(err <= tol.atol + tol.rtol * std::fabs(ref[i]));
    if (std::isfinite(err) && err > r.max_abs_err) r.max_abs_err = err;
    if (bad) {
      if (r.first_bad < 0) {
        r.first_bad = i;
        std::ostringstream os;
        os << "element " << i << ": got " << g << ", expected " << ref[i] << " (atol " << tol.atol << ", rtol "
           << tol.rtol << ")";
        r.message = os.str();
      }
      ++r.bad_count;
    }
  }
  r.ok = r.bad_count == 0;
  if (!r.ok) r.message += " (" + std::to_string(r.bad_count) + " of " + std::to_string(n) + " out of tolerance)";
  return r;
}

}  // namespace common
