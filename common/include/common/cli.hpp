// Command line shared by every driver: --list, --version, --n / sizes, --sweep, --reps, --csv,
// --seed, --quick, --input, --cold, --fresh-inputs, --evidence-fd, --profile, plus flags a sub-project adds. Bad
// arguments throw UsageError; drivers print usage and exit with status 2.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace common {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ExtraFlag {
  std::string name;  // without the leading dashes
  std::string help;
  bool takes_value = true;
  std::string default_value;
};

struct CliOptions {
  bool help = false, list = false, sweep = false, quick = false, cold = false;
  // every GPU version profiled with Nsight Compute on the driver's fixed case (profile.hpp), in place of the run
  bool profile = false;
  // every timed run on an input no earlier run saw, its output checked (bench.hpp's FreshInputs):
  // what the grader passes, so that a version cannot be timed replaying a remembered result
  bool fresh_inputs = false;
  // the grader's evidence descriptor (evidence.hpp): every checked output's record is written there
  int evidence_fd = -1;
  std::vector<std::string> versions;
  std::vector<std::int64_t> sizes;
  int reps = 0;     // 0: sample until the noise target
  int warmup = -1;  // --warmup W: untimed runs before a row's samples (-1: the bench's own count)
  std::string csv;
  std::uint64_t seed = 20261121;
  std::string input;
  std::map<std::string, std::string> extra;  // every ExtraFlag, defaulted
  std::vector<std::string> given;            // the ExtraFlags on the command line, in order

  // A flag set on the command line: a common one ("n", "sweep", "cold", "input", "version",
  // "reps", "fresh-inputs", "profile") or an ExtraFlag.
  bool was_given(const std::string& name) const;

  bool flag(const std::string& name) const;  // a boolean ExtraFlag
  // An integer ExtraFlag (size syntax, see parse_size) within [lo, hi]; the error names the flag,
  // the value and the range.
  std::int64_t extra_int(const std::string& name, std::int64_t lo, std::int64_t hi) const;
  // A floating-point ExtraFlag (see parse_number) within [lo, hi].
  double extra_double(const std::string& name, double lo, double hi) const;
};

// "1000", "2^20", "2^20-3", "2^20+7", "1<<20"; throws UsageError naming the text when it is not
// such a size or does not fit in 2^62 (nothing wraps).
std::int64_t parse_size(const std::string& text);
// parse_size, then within [lo, hi]: "--flag: 'text' is out of range [lo, hi]".
std::int64_t parse_int(const std::string& text, const std::string& flag, std::int64_t lo, std::int64_t hi);
// A decimal or scientific number, the whole text (no trailing junk, no blanks), finite and
// within [lo, hi]; else UsageError "--flag: 'text' ...".
double parse_number(const std::string& text, const std::string& flag, double lo, double hi);
std::vector<std::string> split(const std::string& text, char sep);
CliOptions parse_cli(int argc, const char* const* argv, const std::vector<ExtraFlag>& extras = {});
// `ignored`: common flags the program has no use for, left out of the text.
std::string usage(const std::string& program, const std::string& summary, const std::vector<ExtraFlag>& extras = {},
                  const std::vector<std::string>& ignored = {});

// The shape of every driver's main(): parse the command line, answer --help with the usage, run
// (or, with --profile, profile), and turn a UsageError (from parsing or from the run) into the
// message + usage + exit 2 and any other exception into one "<name>: error: ..." line + exit 1.
struct DriverSpec {
  std::string name;
  std::string summary;
  std::vector<ExtraFlag> extras;
  // Common flags this driver has no use for ("n", "sweep", "cold", "input", "version", "reps",
  // "fresh-inputs"):
  // giving one is a usage error instead of a flag silently ignored.
  std::vector<std::string> ignores = {};
  // --profile: what the driver runs in place of its run (common::profile_mode, profile.hpp: each
  // GPU version under Nsight Compute on the driver's fixed case). Empty: the program has no
  // --profile (its usage leaves it out, giving it is a usage error).
  std::function<int(const CliOptions&)> profile = {};
};
// UsageError when `o` holds one of the common flags in `ignores` (see DriverSpec).
void reject_ignored_flags(const CliOptions& o, const std::string& program, const std::vector<std::string>& ignores);
// UsageError when --profile comes with a flag it does not read: the profile case is the driver's
// own (the same for every run, so profiles compare), only --version, --csv and --seed go with it.
void reject_flags_beside_profile(const CliOptions& o);
int driver_main(int argc, const char* const* argv, const DriverSpec& spec,
                const std::function<int(const CliOptions&)>& run);

}  // namespace common
