// Output files: checked before a run, written whole or not at all.
#include <gtest/gtest.h>

#include <dirent.h>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cli.hpp"
#include "common/output_file.hpp"
#include "common/results.hpp"

namespace {

std::string fresh_dir(const std::string& name) {
  const std::string d = ::testing::TempDir() + name;
  mkdir(d.c_str(), 0755);
  return d;
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

int entries(const std::string& dir) {
  int n = 0;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) n += std::string(e->d_name) != "." && std::string(e->d_name) != "..";
    closedir(d);
  }
  return n;
}

}  // namespace

TEST(OutputFile, BadDestinationsAreRefusedBeforeTheRunWithTheReason) {
  const std::string d = fresh_dir("outcheck");
  std::string m = message_of([&] { common::check_output_path(d + "/missing/out.csv", "csv"); });
  EXPECT_NE(m.find("--csv"), std::string::npos) << m;
  EXPECT_NE(m.find("No such file or directory"), std::string::npos) << m;
  m = message_of([&] { common::check_output_path(d, "csv"); });
  EXPECT_NE(m.find("is a directory"), std::string::npos) << m;
  const std::string input = d + "/scan.bin";
  std::ofstream(input) << "x";
  m = message_of([&] { common::check_output_path(input, "labels-out", {input}); });
  EXPECT_NE(m.find("refusing to overwrite"), std::string::npos) << m;
  EXPECT_THROW(common::check_output_path(input, "labels-out", {input}), common::UsageError);
  common::check_output_path(d + "/ok.csv", "csv", {input});  // writable: no throw, nothing left behind
  EXPECT_EQ(entries(d), 1);
  if (geteuid() != 0) {  // root writes anywhere
    const std::string ro = fresh_dir("outcheck_ro");
    chmod(ro.c_str(), 0555);
    m = message_of([&] { common::check_output_path(ro + "/out.csv", "csv"); });
    EXPECT_NE(m.find("Permission denied"), std::string::npos) << m;
    chmod(ro.c_str(), 0755);
  }
}

TEST(OutputFile, WrittenWholeOrNotAtAll) {
  const std::string d = fresh_dir("outwrite");
  const std::string path = d + "/rows.csv";
  common::write_file_atomic(path, [](std::ostream& os) { os << "a,b\n1,2\n"; });
  std::ifstream is(path);
  std::stringstream ss;
  ss << is.rdbuf();
  EXPECT_EQ(ss.str(), "a,b\n1,2\n");
  EXPECT_EQ(entries(d), 1) << "no temporary left behind";
  // a writer that throws leaves the old file as it was and no temporary
  EXPECT_THROW(common::write_file_atomic(path, [](std::ostream&) { throw std::runtime_error("midway"); }),
               std::runtime_error);
  std::ifstream again(path);
  std::stringstream s2;
  s2 << again.rdbuf();
  EXPECT_EQ(s2.str(), "a,b\n1,2\n");
  EXPECT_EQ(entries(d), 1);
  const std::string m = message_of([&] { common::write_csv_atomic(d + "/nodir/rows.csv", {}); });
  EXPECT_NE(m.find("No such file or directory"), std::string::npos) << m;
  EXPECT_EQ(entries(d), 1);
}

TEST(OutputFile, OutputDirectoriesAreCreatedOrRefusedWithTheReason) {
  const std::string d = fresh_dir("outdirs");
  common::make_output_dir(d + "/images", "images");
  struct stat st;
  ASSERT_EQ(stat((d + "/images").c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  common::make_output_dir(d + "/images", "images");  // already there: fine
  std::string m = message_of([&] { common::make_output_dir(d + "/missing/images", "images"); });
  EXPECT_NE(m.find("No such file or directory"), std::string::npos) << m;
  std::ofstream(d + "/file") << "x";
  m = message_of([&] { common::make_output_dir(d + "/file", "images"); });
  EXPECT_NE(m.find("is not a directory"), std::string::npos) << m;
}
