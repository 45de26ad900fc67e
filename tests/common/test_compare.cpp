#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/compare.hpp"

TEST(Compare, ExactAcceptsEqualAndNamesFirstMismatch) {
  const std::vector<int> ref = {1, 2, 3, 4};
  EXPECT_TRUE(common::compare_exact(ref.data(), ref.data(), 4).ok);
  const std::vector<int> got = {1, 2, 7, 9};
  const auto r = common::compare_exact(got.data(), ref.data(), 4);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.first_bad, 2);
  EXPECT_EQ(r.bad_count, 2);
  EXPECT_NE(r.message.find("element 2: got 7, expected 3"), std::string::npos) << r.message;
}

TEST(Compare, ToleranceIsAbsolutePlusRelative) {
  const std::vector<double> ref = {100.0, 0.0};
  const std::vector<float> inside = {100.0009f, 1e-7f};
  const std::vector<float> outside = {100.002f, 0.0f};
  const common::Tolerance tol{1e-6, 1e-5};
  EXPECT_TRUE(common::compare_close(inside.data(), ref.data(), 2, tol).ok);
  EXPECT_FALSE(common::compare_close(outside.data(), ref.data(), 2, tol).ok);
}

TEST(Compare, NanAndInfNeverPass) {
  const std::vector<double> ref = {1.0, 1.0};
  const std::vector<float> got = {NAN, INFINITY};
  const auto r = common::compare_close(got.data(), ref.data(), 2, {1e9, 1e9});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.bad_count, 2);
}
