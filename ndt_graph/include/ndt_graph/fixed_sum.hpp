// Order-free sums of doubles (v9's exchange): a partial x with |x| < limit is split into an
// integer part and a 52-bit fraction, both added as 64-bit integers, so every order of the adds
// gives the same bits. The total is exact to within 2^-52 per partial (the fraction is truncated;
// the integer parts are exact). Host and device, so the CPU tests check what the kernel adds.
#pragma once
#include <cmath>
#include <cstdint>

#include "common/linalg.hpp"

namespace ndt {

constexpr int kFixedFracBits = 52;
// The largest magnitude a partial may have: with at most kMaxFixedPartials partials neither the
// integer words (|sum| < 2^59) nor the fraction words (sum < 2^63) overflow.
constexpr double kFixedLimit = 0x1p48;
constexpr int kMaxFixedPartials = 2048;

// x's two words; false (and the words untouched) when |x| >= limit or x is not finite: such a
// partial must be summed otherwise.
COMMON_HD bool to_fixed(double x, double limit, std::uint64_t& whole, std::uint64_t& frac) {
  if (!(fabs(x) < limit) || !(limit <= kFixedLimit)) return false;
  const double f = floor(x);
  whole = static_cast<std::uint64_t>(static_cast<std::int64_t>(f));  // two's complement
  frac = static_cast<std::uint64_t>((x - f) * 0x1p52);               // in [0, 1]: exact but for -1 < x < 0
  return true;
}

// The total of the partials whose words add up (modulo 2^64) to `whole` and `frac`.
COMMON_HD double from_fixed(std::uint64_t whole, std::uint64_t frac) {
  const std::int64_t w = static_cast<std::int64_t>(whole + (frac >> kFixedFracBits));
  return static_cast<double>(w) + static_cast<double>(frac & ((std::uint64_t{1} << kFixedFracBits) - 1)) * 0x1p-52;
}

}  // namespace ndt
