// Seeded mutation tests: mutated PCD, KITTI and label files and random command lines
// either parse or throw the reader's / parser's own error, never crash, read past a buffer,
// allocate without bound or throw anything else. Deterministic seeds, a few thousand inputs each,
// so they run in every test pass (and under the sanitizers where the build has them).
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "common/pointcloud.hpp"

namespace {

std::string temp_path(const std::string& name) { return ::testing::TempDir() + name; }

void put(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

std::string floats(std::initializer_list<float> v) {
  std::string s;
  for (float f : v) s.append(reinterpret_cast<const char*>(&f), 4);
  return s;
}

// Valid seeds: ascii, binary and binary_compressed (one LZF literal run) PCDs with an intensity.
std::vector<std::string> pcd_seeds() {
  const std::string head =
      "VERSION 0.7\nFIELDS x y z intensity\nSIZE 4 4 4 4\nTYPE F F F F\nCOUNT 1 1 1 1\n"
      "WIDTH 2\nHEIGHT 1\nVIEWPOINT 0 0 0 1 0 0 0\nPOINTS 2\n";
  std::vector<std::string> s;
  s.push_back(head + "DATA ascii\n1.5 2 3 10\n-4 5e-1 6 20\n");
  s.push_back(head + "DATA binary\n" + floats({1.5f, 2, 3, 10, -4, 0.5f, 6, 20}));
  const std::string cols = floats({1.5f, -4, 2, 0.5f, 3, 6, 10, 20});  // column by column
  std::string comp = head + "DATA binary_compressed\n";
  const std::uint32_t sizes[2] = {static_cast<std::uint32_t>(cols.size() + 1), static_cast<std::uint32_t>(cols.size())};
  comp.append(reinterpret_cast<const char*>(sizes), 8);
  comp.push_back(static_cast<char>(cols.size() - 1));  // a literal run of 32 bytes
  comp += cols;
  s.push_back(comp);
  return s;
}

std::string mutate(std::string s, std::mt19937& rng) {
  static const char* numbers[] = {"0", "-1", "4294967296", "1099511627775", "99999999999999999999", "nan", "2", "1e9"};
  static const char* lines[] = {
      "FIELDS x\n",     "COUNT 3 1 1 1\n", "DATA binary\n", "POINTS 7\n",       "SIZE 8 8 8 8\n",
      "TYPE U I F F\n", "WIDTH 0\n",       "HEIGHT 9\n",    "FIELDS x y z x\n", "\n"};
  std::uniform_int_distribution<int> op(0, 7);
  const int rounds = 1 + static_cast<int>(rng() % 3);
  for (int r = 0; r < rounds && !s.empty(); ++r) {
    const std::size_t at = rng() % s.size();
    switch (op(rng)) {
      case 0: s[at] = static_cast<char>(rng()); break;                      // any byte
      case 1: s[at] = "0123456789 \n.-e"[rng() % 15]; break;                // a plausible one
      case 2: s.resize(at); break;                                          // truncated
      case 3: s.insert(at, s.substr(rng() % s.size(), rng() % 16)); break;  // a slice again
      case 4:
        s.insert(s.find('\n', at) == std::string::npos ? s.size() : s.find('\n', at) + 1, lines[rng() % 10]);
        break;
      case 5: {  // a number swapped
        const std::size_t d = s.find_first_of("0123456789", at);
        if (d == std::string::npos) break;
        const std::size_t e = s.find_first_not_of("0123456789", d);
        s.replace(d, (e == std::string::npos ? s.size() : e) - d, numbers[rng() % 8]);
        break;
      }
      case 6: {                                     // the file ends
        const std::size_t nl = s.find('\n', at);    // with a line
        if (nl != std::string::npos) s.resize(nl);  // and no newline
        break;
      }
      default: s.erase(at, 1 + rng() % 8); break;  // bytes dropped
    }
  }
  return s;
}

}  // namespace

TEST(Mutation, PcdReaderParsesOrThrowsItsOwnError) {
  std::mt19937 rng(20261122);
  const std::string path = temp_path("mut.pcd");
  int parsed = 0, refused = 0;
  for (const auto& seed : pcd_seeds()) {
    put(path, seed);
    ASSERT_EQ(common::read_pcd(path).size(), 2u) << "the seed itself must parse";
    for (int k = 0; k < 1500; ++k) {
      put(path, mutate(seed, rng));
      try {
        const auto pc = common::read_pcd(path);
        EXPECT_EQ(pc.x.size(), pc.y.size());
        ++parsed;
      } catch (const common::PointCloudError&) {
        ++refused;
      } catch (const std::exception& e) {
        ADD_FAILURE() << "mutation " << k << " threw " << e.what();
      }
    }
  }
  EXPECT_GT(refused, 1000);
  EXPECT_GT(parsed, 10);
}

TEST(Mutation, KittiAndLabelReadersParseOrThrowTheirOwnError) {
  std::mt19937 rng(7);
  const std::string bin = temp_path("mut.bin"), label = temp_path("mut.label");
  const std::string scan = floats({1, 2, 3, 0.5f, 4, 5, 6, 0.25f});
  std::string labels(8, '\0');
  labels[0] = 40;
  for (int k = 0; k < 1500; ++k) {
    put(bin, mutate(scan, rng));
    put(label, mutate(labels, rng));
    try {
      const auto pc = common::read_kitti_bin(bin);
      common::read_semantickitti_labels(label, pc.size() + pc.dropped_nonfinite);
    } catch (const common::PointCloudError&) {
    } catch (const std::exception& e) {
      ADD_FAILURE() << "mutation " << k << " threw " << e.what();
    }
  }
}

TEST(Mutation, CommandLinesParseOrThrowUsageError) {
  std::mt19937 rng(11);
  static const char* tokens[] = {"--n",       "2^70",    "1<<63",     "--reps", "-1",
                                 "0",         "--csv",   "",          "--seed", "99999999999999999999",
                                 "--version", ",",       "=",         "--",     "--x=1",
                                 "--quick=1", "--sizes", "1,,2",      "2^20-3", "abc",
                                 "--cell",    "1e999",   "--steps",   "3.5",    "--input",
                                 "--list",    "1e-3",    "--cell=nan"};
  const std::vector<common::ExtraFlag> extras = {{"cell", "cell", true, "0.5"}, {"steps", "steps", true, "10"}};
  for (int k = 0; k < 3000; ++k) {
    std::vector<std::string> args = {"prog"};
    const int n = 1 + static_cast<int>(rng() % 6);
    for (int i = 0; i < n; ++i) args.push_back(tokens[rng() % (sizeof tokens / sizeof *tokens)]);
    std::vector<const char*> argv;
    for (const auto& a : args) argv.push_back(a.c_str());
    try {
      const auto o = common::parse_cli(static_cast<int>(argv.size()), argv.data(), extras);
      o.extra_double("cell", 1e-4, 1e4);
      o.extra_int("steps", 1, 1 << 30);
    } catch (const common::UsageError&) {
    } catch (const std::exception& e) {
      ADD_FAILURE() << "command line " << k << " threw " << e.what();
    }
  }
}
