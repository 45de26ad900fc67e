// The command-line parser and the number parsers every flag goes through: the input is split at
// NUL bytes into argv. Either options within their ranges or UsageError; parse_size never wraps.
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/cli.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> args = {"fuzz"};
  std::string cur;
  for (std::size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      args.push_back(cur);
      cur.clear();
    } else {
      cur += static_cast<char>(data[i]);
    }
  }
  args.push_back(cur);
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  const std::vector<common::ExtraFlag> extras = {
      {"block", "", true, "256"}, {"eps", "", true, "0.01"}, {"fast", "", false, ""}};
  try {
    const common::CliOptions o = common::parse_cli(static_cast<int>(argv.size()), argv.data(), extras);
    for (auto n : o.sizes)
      if (n < 0 || n > (std::int64_t{1} << 62)) std::abort();
    if (o.reps < 0 || o.reps > 100000) std::abort();
    const std::int64_t b = o.extra_int("block", 16, 1024);
    if (b < 16 || b > 1024) std::abort();
    const double e = o.extra_double("eps", 0, 1e30);
    if (!(e >= 0 && e <= 1e30)) std::abort();
    common::reject_ignored_flags(o, "fuzz", {"cold", "input"});
    common::reject_flags_beside_profile(o);
  } catch (const common::UsageError&) {}
  for (const auto& a : args) {  // every argument as a size and as a number
    try {
      const std::int64_t v = common::parse_size(a);
      if (v < -(std::int64_t{1} << 62) || v > (std::int64_t{1} << 62)) std::abort();
    } catch (const common::UsageError&) {}
    try {
      const double v = common::parse_number(a, "x", -1e300, 1e300);
      if (!std::isfinite(v)) std::abort();
    } catch (const common::UsageError&) {}
  }
  return 0;
}
