// The checker must reject deliberately wrong implementations: an off-by-one scan, an inclusive
// scan where an exclusive one is due, a scan that forgets the carry between blocks, a compaction
// that drops one element, and a sort that is not stable-equal to the reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "sizes.hpp"
#include "stream_compaction/check.hpp"
#include "stream_compaction/host.hpp"

namespace sc = StreamCompaction;

namespace {

std::vector<int> reference_scan(const std::vector<int>& in) {
  std::vector<int> out(in.size());
  sc::Host::scan(static_cast<std::int64_t>(in.size()), out.data(), in.data());
  return out;
}

bool accepted(const std::vector<int>& in, const std::vector<int>& got) {
  const auto ref = reference_scan(in);
  return sc::check_output(sc::Op::Scan, static_cast<std::int64_t>(in.size()), ref.data(), 0, got.data(), 0).ok;
}

}  // namespace

TEST(Checker, AcceptsACorrectScan) {
  const auto in = random_ints(1025, 11, 0, 50);
  EXPECT_TRUE(accepted(in, reference_scan(in)));
}

TEST(Checker, RejectsOffByOneScan) {
  const auto in = random_ints(1025, 12, 1, 50);
  const auto ref = reference_scan(in);
  std::vector<int> got(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) got[i] = i + 1 < in.size() ? ref[i + 1] : ref[i] + in[i];
  EXPECT_FALSE(accepted(in, got));
}

TEST(Checker, RejectsInclusiveInsteadOfExclusive) {
  const auto in = random_ints(257, 13, 1, 50);
  std::vector<int> got(in.size());
  int run = 0;
  for (std::size_t i = 0; i < in.size(); ++i) got[i] = run += in[i];
  EXPECT_FALSE(accepted(in, got));
}

TEST(Checker, RejectsMissedBlockCarry) {
  const auto in = random_ints(3 * 256 + 5, 14, 1, 50);
  std::vector<int> got(in.size());
  for (std::size_t b = 0; b < in.size(); b += 256) {  // each block scanned alone, no carry
    int run = 0;
    for (std::size_t i = b; i < std::min(in.size(), b + 256); ++i) {
      got[i] = run;
      run += in[i];
    }
  }
  EXPECT_FALSE(accepted(in, got));
}

TEST(Checker, RejectsAnUnwrittenLastElement) {
  const auto in = random_ints(33, 15, 1, 50);
  auto got = reference_scan(in);
  got.back() = static_cast<int>(0xABABABAB);  // the poison value the driver fills outputs with
  EXPECT_FALSE(accepted(in, got));
}

TEST(Checker, RejectsCompactionWithWrongCountOrValues) {
  const auto in = random_ints(100, 16, 0, 4);
  std::vector<int> ref(in.size());
  const auto kept = sc::Host::compact_without_scan(100, ref.data(), in.data());
  EXPECT_TRUE(sc::check_output(sc::Op::Compact, 100, ref.data(), kept, ref.data(), kept).ok);
  const auto short_count = sc::check_output(sc::Op::Compact, 100, ref.data(), kept, ref.data(), kept - 1);
  EXPECT_FALSE(short_count.ok);
  EXPECT_NE(short_count.message.find("kept count"), std::string::npos);
  auto wrong = ref;
  wrong[kept / 2] = 0;
  EXPECT_FALSE(sc::check_output(sc::Op::Compact, 100, ref.data(), kept, wrong.data(), kept).ok);
}

TEST(Checker, RejectsASortThatIsNotTheReference) {
  auto in = random_ints(300, 17, -1000, 1000);
  std::vector<int> ref(300);
  sc::Host::sort(300, ref.data(), in.data());
  auto got = ref;
  std::swap(got[10], got[11 + (ref[10] == ref[11] ? 5 : 0)]);
  EXPECT_FALSE(sc::check_output(sc::Op::Sort, 300, ref.data(), 0, got.data(), 0).ok);
}

// The failure names the mistake where the output has its shape (what a student's report shows).
TEST(Checker, NamesTheCommonMistakes) {
  const auto in = random_ints(200, 18, 1, 9);
  const auto ref = reference_scan(in);
  std::vector<int> inclusive(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) inclusive[i] = ref[i] + in[i];
  const auto scan = sc::check_output(sc::Op::Scan, 200, ref.data(), 0, inclusive.data(), 0, in.data());
  EXPECT_FALSE(scan.ok);
  EXPECT_NE(scan.message.find("(input element 0: " + std::to_string(in[0]) + ")"), std::string::npos) << scan.message;
  EXPECT_NE(scan.message.find("the scan is inclusive"), std::string::npos) << scan.message;
  // one element: its inclusive scan is the element itself, where the exclusive one is 0
  const int one_in = 29, one_ref = 0, one_got = 29;
  const auto one = sc::check_output(sc::Op::Scan, 1, &one_ref, 0, &one_got, 0, &one_in);
  EXPECT_NE(one.message.find("the scan is inclusive"), std::string::npos) << one.message;
  const int other = 7;  // not the element: no such diagnosis
  EXPECT_EQ(sc::check_output(sc::Op::Scan, 1, &one_ref, 0, &other, 0, &one_in).message.find("inclusive"),
            std::string::npos);

  const auto flags = random_ints(100, 19, 0, 3);
  std::vector<int> kept_ref(100);
  const auto kept = sc::Host::compact_without_scan(100, kept_ref.data(), flags.data());
  const auto one_short = sc::check_output(sc::Op::Compact, 100, kept_ref.data(), kept, kept_ref.data(), kept - 1);
  EXPECT_NE(one_short.message.find("the last kept element is missing"), std::string::npos) << one_short.message;

  const auto keys = random_ints(300, 20, -1000, 1000);
  std::vector<int> sorted(300);
  sc::Host::sort(300, sorted.data(), keys.data());
  auto as_unsigned = sorted;
  std::stable_partition(as_unsigned.begin(), as_unsigned.end(), [](int k) { return k >= 0; });
  const auto sign = sc::check_output(sc::Op::Sort, 300, sorted.data(), 0, as_unsigned.data(), 0);
  EXPECT_NE(sign.message.find("ordered as unsigned"), std::string::npos) << sign.message;
  auto lost = sorted;
  lost[5] = lost[299];
  const auto dup = sc::check_output(sc::Op::Sort, 300, sorted.data(), 0, lost.data(), 0);
  EXPECT_NE(dup.message.find("keys are lost or duplicated"), std::string::npos) << dup.message;
  EXPECT_TRUE(sc::check_output(sc::Op::Sort, 300, sorted.data(), 0, sorted.data(), 0).ok);
}

// The checker's threaded references (check.cpp) against the sequential ones of reference.cpp, at
// sizes split over threads (from 2^18) and below, with negative keys and zeros, every chunk count.
TEST(Checker, ThreadedReferencesEqualTheSequentialOnes) {
  for (const std::int64_t n :
       {std::int64_t{0}, std::int64_t{1}, std::int64_t{1000}, (std::int64_t{1} << 18) + 7, std::int64_t{700001}}) {
    std::vector<int> in(static_cast<std::size_t>(std::max<std::int64_t>(n, 1)));
    std::uint64_t s = 12345 + static_cast<std::uint64_t>(n);
    for (auto& x : in) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      x = static_cast<int>(s >> 32) % 7 == 0 ? 0 : static_cast<int>(s >> 32);  // both signs, some zeros
    }
    std::vector<int> got(in.size()), want(in.size());
    sc::reference_output(sc::Op::Scan, n, got.data(), in.data());
    sc::Host::scan(n, want.data(), in.data());
    EXPECT_TRUE(std::equal(got.begin(), got.begin() + n, want.begin())) << "scan, n=" << n;
    const auto k = sc::reference_output(sc::Op::Compact, n, got.data(), in.data());
    EXPECT_EQ(k, sc::Host::compact_without_scan(n, want.data(), in.data())) << "compaction's count, n=" << n;
    EXPECT_TRUE(std::equal(got.begin(), got.begin() + k, want.begin())) << "compaction, n=" << n;
    sc::reference_output(sc::Op::Sort, n, got.data(), in.data());
    sc::Host::reference_radix_sort(n, want.data(), in.data());
    EXPECT_TRUE(std::equal(got.begin(), got.begin() + n, want.begin())) << "sort, n=" << n;
    EXPECT_TRUE(std::is_sorted(got.begin(), got.begin() + n)) << "sort, n=" << n;
  }
}
