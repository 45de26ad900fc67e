// The evidence channel (common/evidence.hpp): records written whole, one a line, to the grader's
// descriptor; nothing without one; a descriptor not open for writing refused.
#include "common/evidence.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

std::string drain(int fd) {
  std::string out;
  char buf[4096];
  for (ssize_t r; (r = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(r));
  return out;
}

TEST(Evidence, RecordsAreOneLineEachAndRepeatedKeysAreNumbered) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  common::evidence::open(p[1]);
  ASSERT_TRUE(common::evidence::enabled());
  const int data[2] = {1, 2};
  common::evidence::exact("v1", "scan n=2", data, sizeof data);
  common::evidence::exact("v1", "scan n=2", data, sizeof data);
  common::evidence::close("v1", "forces\tn=3", {1.5, -2, 1e-9}, 0.01, 0.001, 1);
  common::evidence::bits("v1", "labels", {1, 0, 1, 0, 0, 1}, 0);
  ::close(p[1]);
  const std::string text = drain(p[0]);
  ::close(p[0]);
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx",
                static_cast<unsigned long long>(common::evidence::digest(data, sizeof data)));
  EXPECT_EQ(text, std::string("E1\texact\tv1\tscan n=2\t8\t") + hash + "\n" + "E1\texact\tv1\tscan n=2#2\t8\t" + hash +
                      "\n" + "E1\tclose\tv1\tforces n=3\t0.01\t0.001\t1\t3\t1.5,-2,1e-09\n" +
                      "E1\tbits\tv1\tlabels\t0\t6\ta4\n");
  // FNV-1a of "a": the published test vector
  EXPECT_EQ(common::evidence::fnv1a("a", 1), 0xaf63dc4c8601ec8cull);
  // the digest sees every byte: one bit changed anywhere (a word, the tail) or one byte more changes it
  std::vector<unsigned char> bytes(1003);
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<unsigned char>(i * 7);
  const std::uint64_t d = common::evidence::digest(bytes.data(), bytes.size());
  for (std::size_t at : {std::size_t{0}, std::size_t{5}, std::size_t{512}, std::size_t{1000}, std::size_t{1002}}) {
    bytes[at] ^= 1;
    EXPECT_NE(common::evidence::digest(bytes.data(), bytes.size()), d) << "byte " << at;
    bytes[at] ^= 1;
  }
  EXPECT_NE(common::evidence::digest(bytes.data(), bytes.size() - 1), d);
  EXPECT_EQ(common::evidence::digest(bytes.data(), bytes.size()), d);
  // words in other lanes of one step, or in one lane of two steps, swapped: another digest
  for (std::size_t other : {std::size_t{8}, std::size_t{32}, std::size_t{40}}) {
    std::vector<unsigned char> swapped = bytes;
    std::swap_ranges(swapped.begin(), swapped.begin() + 8, swapped.begin() + other);
    EXPECT_NE(common::evidence::digest(swapped.data(), swapped.size()), d) << "word 0 and the word at byte " << other;
  }
}

TEST(Evidence, ADescriptorNotOpenForWritingIsRefused) {
  EXPECT_THROW(common::evidence::open(-1), std::runtime_error);
  EXPECT_THROW(common::evidence::open(1 << 19), std::runtime_error);
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  EXPECT_THROW(common::evidence::open(p[0]), std::runtime_error);  // the read end
  ::close(p[0]);
  ::close(p[1]);
}

}  // namespace
