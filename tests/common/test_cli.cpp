#include <gtest/gtest.h>

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "common/device_info.hpp"
#include "common/environment.hpp"

namespace {
common::CliOptions parse(std::vector<const char*> args, const std::vector<common::ExtraFlag>& extras = {}) {
  args.insert(args.begin(), "prog");
  return common::parse_cli(static_cast<int>(args.size()), args.data(), extras);
}
}  // namespace

TEST(Cli, ParsesSizeNotations) {
  EXPECT_EQ(common::parse_size("1000"), 1000);
  EXPECT_EQ(common::parse_size("2^20"), 1 << 20);
  EXPECT_EQ(common::parse_size("2^20-3"), (1 << 20) - 3);
  EXPECT_EQ(common::parse_size("2^28+7"), (1 << 28) + 7);
  EXPECT_EQ(common::parse_size("1<<10"), 1024);
  EXPECT_THROW(common::parse_size("abc"), common::UsageError);
  EXPECT_THROW(common::parse_size("3^4"), common::UsageError);
  EXPECT_THROW(common::parse_size("2^3-9"), common::UsageError);
  EXPECT_THROW(common::parse_size(""), common::UsageError);
}

TEST(Cli, ParsesTheCommonFlags) {
  const auto o = parse({"--version", "a,b", "--n", "2^10,33", "--reps", "7", "--csv", "out.csv", "--seed", "5",
                        "--quick", "--sweep", "--list", "--cold", "--fresh-inputs", "--input=x.bin"});
  EXPECT_EQ(o.versions, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(o.sizes, (std::vector<std::int64_t>{1024, 33}));
  EXPECT_EQ(o.reps, 7);
  EXPECT_EQ(o.csv, "out.csv");
  EXPECT_EQ(o.seed, 5u);
  EXPECT_TRUE(o.quick && o.sweep && o.list && o.cold && o.fresh_inputs);
  EXPECT_TRUE(o.was_given("fresh-inputs"));
  EXPECT_FALSE(parse({}).fresh_inputs);
  EXPECT_THROW(parse({"--fresh-inputs=1"}), common::UsageError);
  EXPECT_EQ(o.input, "x.bin");
  EXPECT_EQ(o.evidence_fd, -1);
  EXPECT_EQ(parse({"--evidence-fd", "12"}).evidence_fd, 12);
  EXPECT_THROW(parse({"--evidence-fd", "-1"}), common::UsageError);
  EXPECT_THROW(parse({"--evidence-fd", "x"}), common::UsageError);
}

TEST(Cli, RejectsBadArguments) {
  EXPECT_THROW(parse({"--bogus"}), common::UsageError);
  EXPECT_THROW(parse({"--n"}), common::UsageError);
  EXPECT_THROW(parse({"--reps", "0"}), common::UsageError);
  EXPECT_THROW(parse({"stray"}), common::UsageError);
  EXPECT_THROW(parse({"--quick=1"}), common::UsageError);
  EXPECT_THROW(parse({"--n", "12x"}), common::UsageError);
}

TEST(Cli, SubprojectFlagsHaveDefaults) {
  const std::vector<common::ExtraFlag> extras = {{"op", "", true, "all"}, {"block-sweep", "", false, ""}};
  auto o = parse({}, extras);
  EXPECT_EQ(o.extra["op"], "all");
  EXPECT_FALSE(o.flag("block-sweep"));
  o = parse({"--op", "scan", "--block-sweep"}, extras);
  EXPECT_EQ(o.extra["op"], "scan");
  EXPECT_TRUE(o.flag("block-sweep"));
}

TEST(Cli, UsageListsEveryFlag) {
  const std::string u = common::usage("prog", "does things", {{"op", "which op", true, "all"}});
  for (const char* f :
       {"--list", "--version", "--n", "--sweep", "--reps", "--csv", "--seed", "--quick", "--fresh-inputs", "--op"})
    EXPECT_NE(u.find(f), std::string::npos) << f;
}

TEST(Cli, DriverMainMapsOutcomesToExitCodes) {
  const common::DriverSpec spec{"prog", "does things", {{"op", "which op", true, "all"}}};
  auto call = [&](std::vector<const char*> args, const std::function<int(const common::CliOptions&)>& run) {
    args.insert(args.begin(), "prog");
    return common::driver_main(static_cast<int>(args.size()), args.data(), spec, run);
  };
  auto ok = [](const common::CliOptions& o) { return o.extra.at("op") == "scan" ? 0 : 7; };
  EXPECT_EQ(call({"--op", "scan"}, ok), 0);
  EXPECT_EQ(call({}, ok), 7);                                                   // the run's own status passes through
  EXPECT_EQ(call({"--help"}, [](const common::CliOptions&) { return 9; }), 0);  // help never runs
  EXPECT_EQ(call({"--bogus"}, ok), 2);                                          // bad flag
  EXPECT_EQ(call({}, [](const common::CliOptions&) -> int { throw common::UsageError("bad value"); }), 2);
  EXPECT_EQ(call({}, [](const common::CliOptions&) -> int { throw std::runtime_error("file missing"); }), 1);
}

// Sizes never wrap: what does not fit in 2^62 is an error naming the text.
TEST(Cli, SizesThatWouldOverflowAreErrors) {
  EXPECT_THROW(common::parse_size("1125899906842624<<40"), common::UsageError);
  EXPECT_THROW(common::parse_size("99999999999999999999"), common::UsageError);
  EXPECT_THROW(common::parse_size("4611686018427387904+1"), common::UsageError);
  EXPECT_THROW(common::parse_size("1<<41"), common::UsageError);  // exponent above 40
  EXPECT_EQ(common::parse_size("1<<40"), std::int64_t{1} << 40);
  EXPECT_EQ(common::parse_size("4611686018427387904"), std::int64_t{1} << 62);
}

TEST(Cli, IntegerFlagsAreRangeChecked) {
  EXPECT_EQ(common::parse_int("256", "block", 16, 1024), 256);
  EXPECT_EQ(common::parse_int("2^10", "block", 16, 1024), 1024);
  try {
    common::parse_int("4294967552", "block", 16, 1024);
    FAIL() << "out of range accepted";
  } catch (const common::UsageError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("--block"), std::string::npos) << m;
    EXPECT_NE(m.find("4294967552"), std::string::npos) << m;
    EXPECT_NE(m.find("1024"), std::string::npos) << m;
  }
  EXPECT_THROW(common::parse_int("0", "files", 1, 100), common::UsageError);
  EXPECT_THROW(common::parse_int("-3", "files", 1, 100), common::UsageError);
  EXPECT_THROW(common::parse_int("3x", "files", 1, 100), common::UsageError);
  const auto o = parse({"--steps", "2^40"}, {{"steps", "steps", true, "10"}});
  EXPECT_THROW(o.extra_int("steps", 1, (std::int64_t{1} << 31) - 1), common::UsageError);
}

TEST(Cli, NumbersRejectJunkNonFiniteAndOutOfRange) {
  EXPECT_DOUBLE_EQ(common::parse_number("0.01", "eps", 0, 1), 0.01);
  EXPECT_DOUBLE_EQ(common::parse_number("-2.5e-3", "guess", -10, 10), -2.5e-3);
  EXPECT_DOUBLE_EQ(common::parse_number("1E2", "x", 0, 1000), 100.0);
  for (const char* bad :
       {"abc", "0.01abc", "", " 1", "1 ", "inf", "-inf", "nan", "NaN", "1e999", "0x10", "1,5", "--1"}) {
    try {
      common::parse_number(bad, "eps", -1e300, 1e300);
      ADD_FAILURE() << "'" << bad << "' accepted";
    } catch (const common::UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("--eps"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(common::parse_number("2", "outlier", 0, 1), common::UsageError);
  EXPECT_THROW(common::parse_number("-0.1", "outlier", 0, 1), common::UsageError);
  const auto o = parse({"--dt=1e-3"}, {{"dt", "time step", true, "1e-2"}});
  EXPECT_DOUBLE_EQ(o.extra_double("dt", 1e-30, 1e30), 1e-3);
}

// A common flag the driver has no use for is refused, not silently ignored, and left
// out of its usage text.
TEST(Cli, CommonFlagsADriverDoesNotUseAreErrors) {
  const common::DriverSpec spec{"prog", "does things", {}, {"sweep", "n", "input", "version", "cold"}};
  auto call = [&](std::vector<const char*> args) {
    args.insert(args.begin(), "prog");
    return common::driver_main(static_cast<int>(args.size()), args.data(), spec,
                               [](const common::CliOptions&) { return 0; });
  };
  EXPECT_EQ(call({}), 0);
  EXPECT_EQ(call({"--quick"}), 0);
  EXPECT_EQ(call({"--sweep"}), 2);
  EXPECT_EQ(call({"--n", "2^10"}), 2);
  EXPECT_EQ(call({"--input", "x.pcd"}), 2);
  EXPECT_EQ(call({"--version", "v1"}), 2);
  EXPECT_EQ(call({"--cold"}), 2);
  EXPECT_THROW(common::reject_ignored_flags(parse({"--sweep"}), "prog", {"sweep"}), common::UsageError);
  const std::string text = common::usage("prog", "s", {}, {"sweep", "cold"});
  EXPECT_EQ(text.find("--sweep"), std::string::npos);
  EXPECT_EQ(text.find("--cold"), std::string::npos);
  EXPECT_NE(text.find("--quick"), std::string::npos);
}

// A size beyond the machine's memory is a usage error naming the flag before anything is
// allocated, not a bad_alloc or the OS killing the process.
// --profile runs the driver's profile in place of its run, with the driver's own case: a flag that
// would change the case is refused, and a program without a profile case has no --profile.
TEST(Cli, ProfileRunsInPlaceOfTheRunWithItsOwnCase) {
  common::DriverSpec spec{"prog", "does things", {{"op", "which op", true, "all"}}, {"cold"}};
  auto call = [&](std::vector<const char*> args) {
    args.insert(args.begin(), "prog");
    return common::driver_main(static_cast<int>(args.size()), args.data(), spec,
                               [](const common::CliOptions&) { return 3; });
  };
  EXPECT_EQ(call({"--profile"}), 2);  // no profile case: refused
  EXPECT_EQ(common::usage("prog", "s", {}, {"profile"}).find("--profile"), std::string::npos);
  std::vector<std::string> seen;
  spec.profile = [&](const common::CliOptions& o) {
    seen = o.versions;
    return 5;
  };
  EXPECT_EQ(call({"--profile", "--version", "a,b", "--seed", "7"}), 5);
  EXPECT_NO_THROW(common::reject_flags_beside_profile(parse({"--profile", "--csv", "p.csv", "--seed", "7"})));
  EXPECT_EQ(seen, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(call({}), 3);  // without --profile: the run
  for (std::vector<const char*> beside : std::vector<std::vector<const char*>>{
           {"--n", "2^20"}, {"--quick"}, {"--reps", "3"}, {"--sweep"}, {"--fresh-inputs"}, {"--op", "scan"}}) {
    beside.insert(beside.begin(), "--profile");
    EXPECT_EQ(call(beside), 2) << beside[1];
  }
  try {
    common::reject_flags_beside_profile(parse({"--profile", "--op", "scan"}, {{"op", "which op", true, "all"}}));
    ADD_FAILURE() << "--profile --op accepted";
  } catch (const common::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--op does not apply"), std::string::npos) << e.what();
  }
  EXPECT_NE(common::usage("prog", "s").find("--profile"), std::string::npos);
}

TEST(Cli, SizesBeyondTheMachinesMemoryAreUsageErrors) {
  try {
    common::check_fits_in_memory("--n 2^50", 1e18, 0);
    FAIL() << "1e18 bytes accepted";
  } catch (const common::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--n 2^50"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("host memory"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(common::check_fits_in_memory("--n 1000", 24e3, 24e3));
}

// The ceilings a grader hands to every run of a job ($COURSE_CEILINGS): all three or an error
// naming the item.
TEST(Ceilings, ParsesWhatTheGraderHandsOver) {
  const auto c = common::parse_ceilings("copy_bandwidth=3012.5;fp32_fma_peak=61000;launch_latency=2.25");
  EXPECT_DOUBLE_EQ(c.copy_gbs, 3012.5);
  EXPECT_DOUBLE_EQ(c.fma_gflops, 61000);
  EXPECT_DOUBLE_EQ(c.launch_us, 2.25);
  EXPECT_ANY_THROW(common::parse_ceilings("copy_bandwidth=3012.5;fp32_fma_peak=61000"));
  EXPECT_ANY_THROW(common::parse_ceilings("copy_bandwidth=x;fp32_fma_peak=1;launch_latency=1"));
  EXPECT_ANY_THROW(common::parse_ceilings("bogus=1"));
  EXPECT_ANY_THROW(common::parse_ceilings("copy_bandwidth=-1;fp32_fma_peak=1;launch_latency=1"));
}
