#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <random>

#include "nbody/io.hpp"
#include "nbody/plummer.hpp"

using nbody::InputError;
using nbody::parse_snapshot_csv;

namespace {
std::string error_of(const std::string& text) {
  try {
    parse_snapshot_csv(text, "snap.csv");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(SnapshotCsv, ReadsSevenAndEightColumnsAndCrlf) {
  auto b = parse_snapshot_csv("x,y,z,vx,vy,vz,m\r\n1,2,3,4,5,6,0.5\r\n-1e-3, 2 ,3,4,5,6,0.25\r\n", "a.csv");
  ASSERT_EQ(b.size(), 2u);
  EXPECT_FLOAT_EQ(b.x[1], -1e-3f);
  EXPECT_FLOAT_EQ(b.y[1], 2.f);
  EXPECT_EQ(b.id[1], 1);
  b = parse_snapshot_csv("x,y,z,vx,vy,vz,m,id\n1,2,3,4,5,6,0.5,77\n", "b.csv");
  EXPECT_EQ(b.id[0], 77);
}

TEST(SnapshotCsv, RejectsMalformedFilesWithFileLineAndReason) {
  EXPECT_NE(error_of("").find("snap.csv: empty file"), std::string::npos);
  EXPECT_NE(error_of("1,2,3,4,5,6,7\n").find("snap.csv:1: missing header"), std::string::npos);
  EXPECT_NE(error_of("x,y,z,vx,vy,vz,m\n1,2,3\n").find("snap.csv:2: short row"), std::string::npos);
  EXPECT_NE(error_of("x,y,z,vx,vy,vz,m\n1,2,abc,4,5,6,7\n").find("snap.csv:2: column 3 is not a number: 'abc'"),
            std::string::npos);
  EXPECT_NE(error_of("x,y,z,vx,vy,vz,m\n1,2,3,4,5,6,7,8\n").find("more than 7 columns"), std::string::npos);
  EXPECT_NE(error_of("x,y,z,vx,vy,vz,m\n1,nan,3,4,5,6,7\n").find("not finite"), std::string::npos);
  EXPECT_NE(error_of("x,y,z,vx,vy,vz,m\n1,2,3,4,5,6,-1\n").find("negative mass"), std::string::npos);
  EXPECT_NE(error_of("x,y,z,vx,vy,vz,m\n").find("no bodies"), std::string::npos);
  EXPECT_NE(error_of("x,y,z,vx,vy,vz,m\n1,2,3,4,5,6,7\n\n1,2,3,4,5,6,7\n").find("snap.csv:3: empty line"),
            std::string::npos);
  // ids are whole non-negative integers: nothing is cast silently
  for (const char* id : {"nan", "1.7", "1e3", "-4", "", "99999999999999999999"})
    EXPECT_NE(error_of(std::string("x,y,z,vx,vy,vz,m,id\n1,2,3,4,5,6,7,") + id + "\n")
                  .find("snap.csv:2: id is not a non-negative integer"),
              std::string::npos)
        << id;
}

// Seeded mutations of a valid snapshot: each parses or throws InputError, nothing else (and,
// under the asan preset also no read past a buffer).
TEST(SnapshotCsv, MutatedFilesParseOrThrowInputError) {
  const std::string seed = "x,y,z,vx,vy,vz,m,id\n1,2,3,4,5,6,0.5,0\n-1e-3,2,3,4,5,6,0.25,1\n";
  std::mt19937 rng(5);
  int refused = 0;
  for (int k = 0; k < 3000; ++k) {
    std::string s = seed;
    for (int r = 0; r < 1 + static_cast<int>(rng() % 3); ++r) {
      if (s.empty()) break;
      const std::size_t at = rng() % s.size();
      switch (rng() % 4) {
        case 0: s[at] = static_cast<char>(rng()); break;
        case 1: s[at] = "0123456789,.-e\n "[rng() % 16]; break;
        case 2: s.resize(at); break;
        default: s.insert(at, s.substr(rng() % s.size(), rng() % 12)); break;
      }
    }
    try {
      const auto b = parse_snapshot_csv(s, "m.csv");
      EXPECT_EQ(b.x.size(), b.id.size());
    } catch (const InputError&) {
      ++refused;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "mutation " << k << " threw " << e.what();
    }
  }
  EXPECT_GT(refused, 1000);
}

TEST(SnapshotCsv, MissingFileAndDirectoryAreClearErrors) {
  EXPECT_THROW(nbody::read_snapshot_csv("/nonexistent/c_0000.csv"), InputError);
  EXPECT_THROW(nbody::list_snapshots("/nonexistent-dir"), InputError);
}

TEST(SnapshotCsv, WriteThenReadRoundTripsExactly) {
  const auto b = nbody::make_plummer(257, 3);
  const std::string path = ::testing::TempDir() + "roundtrip.csv";
  nbody::write_snapshot_csv(path, b);
  const auto r = nbody::read_snapshot_csv(path);
  EXPECT_EQ(r.x, b.x);
  EXPECT_EQ(r.vz, b.vz);
  EXPECT_EQ(r.m, b.m);
  EXPECT_EQ(r.id, b.id);
  std::remove(path.c_str());
}
