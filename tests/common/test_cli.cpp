#include <gtest/gtest.h>

#include <functional>
#include <stdexcept>
#include <vector>

#include "common/cli.hpp"

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
                        "--quick", "--sweep", "--list", "--cold", "--input=x.bin"});
  EXPECT_EQ(o.versions, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(o.sizes, (std::vector<std::int64_t>{1024, 33}));
  EXPECT_EQ(o.reps, 7);
  EXPECT_EQ(o.csv, "out.csv");
  EXPECT_EQ(o.seed, 5u);
  EXPECT_TRUE(o.quick && o.sweep && o.list && o.cold);
  EXPECT_EQ(o.input, "x.bin");
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
  for (const char* f : {"--list", "--version", "--n", "--sweep", "--reps", "--csv", "--seed", "--quick", "--op"})
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
  EXPECT_EQ(call({}, ok), 7);                  // the run's own status passes through
  EXPECT_EQ(call({"--help"}, [](const common::CliOptions&) { return 9; }), 0);  // help never runs
  EXPECT_EQ(call({"--bogus"}, ok), 2);         // bad flag
  EXPECT_EQ(call({}, [](const common::CliOptions&) -> int { throw common::UsageError("bad value"); }), 2);
  EXPECT_EQ(call({}, [](const common::CliOptions&) -> int { throw std::runtime_error("file missing"); }), 1);
}
