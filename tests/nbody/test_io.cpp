#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

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
