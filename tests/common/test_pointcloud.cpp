// Point-cloud readers: real files from the data directory (skipped when absent), malformed files
// written here, LZF, and the PNG writer.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "common/lidar_sim.hpp"
#include "common/png.hpp"
#include "common/pointcloud.hpp"

namespace {

std::string data(const std::string& rel) { return common::data_dir() + "/" + rel; }

#define REQUIRE_DATA(path) \
  if (!common::file_exists(path)) GTEST_SKIP() << "real data not found: " << path << " (set COURSE_DATA_DIR)"

std::string write_file(const std::string& name, const std::string& bytes) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

std::string error_of(const std::string& path) {
  try {
    common::read_point_cloud(path);
  } catch (const common::PointCloudError& e) {
    return e.what();
  }
  return "";
}

const char* kHeader3 = "VERSION 0.7\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nCOUNT 1 1 1\n";

}  // namespace

TEST(PointCloudReal, KittiBinAndLabels) {
  const std::string bin = data("semantickitti_04_000056/000056.bin");
  REQUIRE_DATA(bin);
  const auto pc = common::read_kitti_bin(bin);
  EXPECT_EQ(pc.size(), 125822u);
  EXPECT_EQ(pc.intensity.size(), pc.size());
  const auto labels = common::read_semantickitti_labels(data("semantickitti_04_000056/000056.label"), pc.size());
  EXPECT_EQ(labels.size(), 125822u);
  EXPECT_THROW(common::read_semantickitti_labels(data("semantickitti_04_000056/000056.label"), 125821),
               common::PointCloudError);
}

TEST(PointCloudReal, PcdAsciiBinaryAndCompressedAgree) {
  const std::string comp = data("pcl_room_scan/room_scan1.pcd"), bin = data("pcl_room_scan/room_scan1_binary.pcd");
  REQUIRE_DATA(comp);
  REQUIRE_DATA(bin);
  const auto a = common::read_pcd(comp), b = common::read_pcd(bin);  // binary_compressed (LZF) vs binary
  ASSERT_EQ(a.size(), 112586u);
  EXPECT_EQ(a.x, b.x);
  EXPECT_EQ(a.z, b.z);
  const std::string ascii = data("cupcl_samples/sample.pcd");
  REQUIRE_DATA(ascii);
  EXPECT_EQ(common::read_pcd(ascii).size(), 119978u);
  const std::string koide = data("koide_ndt_pair/251370668.pcd");
  REQUIRE_DATA(koide);
  const auto k = common::read_pcd(koide);
  EXPECT_EQ(k.size(), 69088u);
  EXPECT_EQ(k.intensity.size(), k.size());
}

TEST(PointCloudReal, OrganizedOusterScanDropsNoReturns) {
  const std::string path = data("ouster128_patchwork/000000.pcd");
  REQUIRE_DATA(path);
  const auto pc = common::read_pcd(path);
  EXPECT_EQ(pc.width, 1875u);
  EXPECT_EQ(pc.height, 128u);
  EXPECT_EQ(pc.size() + pc.dropped_nonfinite + pc.dropped_no_return, 240000u);
  EXPECT_GT(pc.size(), 200000u);  // ~206k valid returns
  for (std::size_t i = 0; i < pc.size(); i += 997) EXPECT_FALSE(pc.x[i] == 0 && pc.y[i] == 0 && pc.z[i] == 0);
}

TEST(PointCloudMalformed, RejectedWithFileAndReason) {
  EXPECT_NE(error_of(write_file("bad.bin", std::string(20, '\0'))).find("not a whole number of 16-byte points"),
            std::string::npos);
  EXPECT_NE(error_of(write_file("empty.bin", "")).find("empty file"), std::string::npos);
  EXPECT_NE(error_of(write_file("nohdr.pcd", "hello world\n")).find("unknown header line"), std::string::npos);
  EXPECT_NE(error_of(write_file("nodata.pcd", std::string(kHeader3) + "WIDTH 2\nHEIGHT 1\nPOINTS 2\n"))
                .find("before its DATA"),
            std::string::npos);
  EXPECT_NE(error_of(write_file("trunc.pcd", std::string(kHeader3) + "WIDTH 2\nHEIGHT 1\nPOINTS 2\nDATA binary\n" +
                                                 std::string(12, '\0')))
                .find("truncated"),
            std::string::npos);
  EXPECT_NE(error_of(write_file("count.pcd",
                                std::string(kHeader3) + "WIDTH 3\nHEIGHT 1\nPOINTS 2\nDATA ascii\n1 2 3\n4 5 6\n"))
                .find("WIDTH x HEIGHT"),
            std::string::npos);
  EXPECT_NE(
      error_of(write_file("short.pcd", std::string(kHeader3) + "WIDTH 2\nHEIGHT 1\nPOINTS 2\nDATA ascii\n1 2 3\n4 5\n"))
          .find("has 2 values"),
      std::string::npos);
  EXPECT_NE(error_of(write_file("fmt.pcd", std::string(kHeader3) + "WIDTH 1\nHEIGHT 1\nPOINTS 1\nDATA zip\n"))
                .find("unknown DATA format"),
            std::string::npos);
  EXPECT_NE(error_of(write_file("noxyz.pcd", "FIELDS a b\nSIZE 4 4\nTYPE F F\nWIDTH 1\nHEIGHT 1\nDATA ascii\n1 2\n"))
                .find("no x, y, z"),
            std::string::npos);
  EXPECT_NE(error_of(write_file("x.xyz", "1 2 3\n")).find("unknown point-cloud format"), std::string::npos);
  EXPECT_NE(error_of("/nonexistent/file.bin").find("cannot open"), std::string::npos);
}

TEST(PointCloudMalformed, NanPointsAreDroppedAndCounted) {
  float pts[3][4] = {{1, 2, 3, 0}, {NAN, 0, 0, 0}, {4, 5, INFINITY, 0}};
  const auto pc = common::read_kitti_bin(write_file("nan.bin", std::string(reinterpret_cast<char*>(pts), sizeof pts)));
  EXPECT_EQ(pc.size(), 1u);
  EXPECT_EQ(pc.dropped_nonfinite, 2u);
  EXPECT_EQ(pc.source_index[0], 0u);
}

TEST(Lzf, LiteralRunsAndOverlappingBackReferences) {
  // "abcabcabcX": literal "abc", back reference (length 6, distance 3), literal "X"
  const unsigned char in[] = {2, 'a', 'b', 'c', (4 << 5) | 0, 2, 0, 'X'};
  const auto out = common::lzf_decompress(in, sizeof in, 10, "t");
  EXPECT_EQ(std::string(out.begin(), out.end()), "abcabcabcX");
  EXPECT_THROW(common::lzf_decompress(in, sizeof in, 9, "t"), common::PointCloudError);  // wrong size
  const unsigned char bad[] = {(1 << 5), 5};                                             // reference before start
  EXPECT_THROW(common::lzf_decompress(bad, sizeof bad, 3, "t"), common::PointCloudError);
}

TEST(Png, WritesAValidSignatureAndSize) {
  common::RgbImage img(70000 / 700, 3);
  img.set(1, 1, 255, 0, 0);
  const std::string path = ::testing::TempDir() + "t.png";
  common::write_png(path, img);
  std::ifstream is(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(is)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 8u + 25u + 12u);
  EXPECT_EQ(bytes.substr(1, 3), "PNG");
  EXPECT_EQ(bytes.substr(12, 4), "IHDR");
}

TEST(LidarSim, DeterministicLabelledAndPlausible) {
  const auto a = common::simulate_lidar_scan({}, 3), b = common::simulate_lidar_scan({}, 3);
  EXPECT_EQ(a.cloud.x, b.cloud.x);
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_GT(a.cloud.size(), 90000u);
  EXPECT_EQ(a.labels.size(), a.cloud.size());
  std::size_t road = 0, car = 0, building = 0;
  for (auto l : a.labels) {
    road += l == 40;
    car += l == 10;
    building += l == 50;
  }
  EXPECT_GT(road, 20000u);
  EXPECT_GT(car, 1000u);       // enough cars to show the roof failure
  EXPECT_GT(building, 2000u);  // and walls
  const auto c = common::simulate_lidar_scan({}, 4);
  EXPECT_NE(a.cloud.x, c.cloud.x);
}

// Hostile headers and data: each is an error naming the file and the reason, never a read past the
// buffer, a huge allocation, a silent wrap or silently ignored data.
TEST(PointCloudHostile, PcdHeadersAndDataAreCheckedBeforeUse) {
  const std::string h = kHeader3;
  auto expect = [](const std::string& path, const std::string& what) {
    const std::string e = error_of(path);
    EXPECT_NE(e.find(path), std::string::npos) << e;
    EXPECT_NE(e.find(what), std::string::npos) << "expected '" << what << "' in: " << e;
  };
  // DATA as the last bytes of the file (no newline): no data, not a read past the end
  expect(write_file("eof_small.pcd", h + "WIDTH 2\nHEIGHT 1\nPOINTS 2\nDATA binary"), "truncated");
  expect(write_file("eof_large.pcd", h + "WIDTH 1000000000\nHEIGHT 1\nPOINTS 1000000000\nDATA binary"), "truncated");
  expect(write_file("eof_comp.pcd", h + "WIDTH 2\nHEIGHT 1\nPOINTS 2\nDATA binary_compressed"), "no size header");
  expect(write_file("eof_ascii.pcd", h + "WIDTH 2\nHEIGHT 1\nPOINTS 2\nDATA ascii"), "cannot fit");
  // sizes that overflow or are negative
  expect(write_file("wh.pcd", h + "WIDTH 4294967296\nHEIGHT 4294967296\nPOINTS 0\nDATA ascii\n"), "overflows");
  expect(write_file("w40.pcd", h + "WIDTH 1099511627776\nHEIGHT 1\nDATA ascii\n"), "2^40 or more");
  expect(write_file("neg.pcd", h + "WIDTH -5\nHEIGHT 1\nDATA ascii\n"), "not a non-negative integer");
  expect(write_file("huge.pcd", h + "WIDTH 1099511627775\nHEIGHT 1\nDATA binary\n" + std::string(24, '\0')),
         "truncated");
  expect(write_file("bigpts.pcd", h + "WIDTH 1000000\nHEIGHT 1000000\nDATA ascii\n1 2 3\n"), "cannot fit");
  // duplicate fields, unsupported types, multi-element coordinates
  expect(write_file("dup.pcd", "FIELDS x y z x\nSIZE 4 4 4 4\nTYPE F F F F\nWIDTH 1\nHEIGHT 1\nDATA ascii\n1 2 3 4\n"),
         "listed twice");
  expect(write_file("itype.pcd",
                    "FIELDS x y z intensity\nSIZE 4 4 4 2\nTYPE F F F F\nWIDTH 1\nHEIGHT 1\nDATA ascii\n1 2 3 4\n"),
         "TYPE F SIZE 2");
  expect(write_file("xcount.pcd",
                    "FIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nCOUNT 2 1 1\nWIDTH 1\nHEIGHT 1\nDATA ascii\n1 2 3 4\n"),
         "COUNT 2");
  // trailing data after the last point
  expect(write_file("tail_ascii.pcd", h + "WIDTH 1\nHEIGHT 1\nPOINTS 1\nDATA ascii\n1 2 3\n4 5 6\n"), "trailing data");
  expect(write_file("tail_bin.pcd", h + "WIDTH 1\nHEIGHT 1\nPOINTS 1\nDATA binary\n" + std::string(12, '\0') + "junk"),
         "trailing data");
  // a compressed size no LZF stream can reach
  std::string comp = h + "WIDTH 1000000\nHEIGHT 1\nPOINTS 1000000\nDATA binary_compressed\n";
  const std::uint32_t sizes[2] = {2, 12000000};
  comp.append(reinterpret_cast<const char*>(sizes), 8);
  comp += std::string("\x01\x00\x00", 2);
  expect(write_file("bomb.pcd", comp), "is not LZF");
  // and what stays accepted: a trailing newline, a last line without one, 8-byte integer fields
  const auto ok = common::read_pcd(
      write_file("ok.pcd", "FIELDS x y z t\nSIZE 4 4 4 8\nTYPE F F F U\nWIDTH 1\nHEIGHT 1\nDATA ascii\n1 2 3 7\n\n"));
  EXPECT_EQ(ok.size(), 1u);
  const auto last = common::read_pcd(write_file("last.pcd", h + "WIDTH 1\nHEIGHT 1\nPOINTS 1\nDATA ascii\n1 2 3"));
  EXPECT_EQ(last.size(), 1u);
}
