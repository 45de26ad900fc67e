#include <gtest/gtest.h>

#include "common/roofline.hpp"

TEST(Roofline, ReferenceTableHasTheCourseGpus) {
  const auto& g = common::reference_gpus();
  std::vector<std::string> names;
  for (const auto& s : g) names.push_back(s.name);
  for (const char* want : {"GTX TITAN Black", "GTX TITAN X", "TITAN V", "RTX 2080 Ti", "RTX 4070", "A100 SXM 80GB",
                           "H100 SXM", "H100 PCIe", "H200 SXM"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
}

TEST(Roofline, MemoryBoundPrediction) {
  const common::GpuSpec g{"x", 1000.0, 1000.0, 2.0, false};  // 1 TFLOP/s, 1 TB/s, 2 us
  const auto p = common::predict({1e6, 1e9, 1}, g);          // 1 us of math, 1 ms of bytes
  EXPECT_NEAR(p.memory_ms, 1.0, 1e-12);
  EXPECT_NEAR(p.compute_ms, 1e-3, 1e-12);
  EXPECT_NEAR(p.total_ms, 1.002, 1e-12);
  EXPECT_STREQ(p.bound, "memory");
}

TEST(Roofline, GpuMeansExampleIsLaunchBoundOnEveryGpu) {
  // The worked example counted right (13,675 FLOP, 20,300 bytes) is launch-bound everywhere;
  // the report's 1000x-inflated byte count would wrongly call it memory-bound.
  for (const auto& g : common::reference_gpus()) {
    EXPECT_STREQ(common::predict({13675, 20300, 1}, g).bound, "launch") << g.name;
    EXPECT_LT(common::predict({13675, 20300, 1}, g).total_ms, 1.03 * g.launch_us * 1e-3) << g.name;
    EXPECT_STREQ(common::predict({1.3675e7, 2.03e7, 1}, g).bound, "memory") << g.name;
  }
}

TEST(Roofline, ComputeBoundPrediction) {
  const common::GpuSpec g{"x", 1000.0, 1000.0, 0.0, false};
  EXPECT_STREQ(common::predict({1e10, 1e6, 0}, g).bound, "compute");
  EXPECT_NEAR(common::predict({1e10, 1e6, 0}, g).total_ms, 10.0, 1e-9);
}

// An issue-bound kernel: its instruction count, at one instruction per FP32 lane per clock
// (fp32_gflops / 2 G instructions/s), sets the floor when it exceeds the FLOP time.
TEST(Roofline, InstructionCountBoundsAnIssueBoundKernel) {
  const common::GpuSpec g{"x", 1000.0, 1000.0, 0.0, false};
  EXPECT_NEAR(common::predict({1e10, 1e6, 0, 1e10}, g).total_ms, 20.0, 1e-9);  // 1e10 instructions at 500 G/s
  EXPECT_NEAR(common::predict({1e10, 1e6, 0, 1e9}, g).total_ms, 10.0, 1e-9);   // fewer: the FLOPs bound it
  EXPECT_STREQ(common::predict({1e10, 1e6, 0, 1e10}, g).bound, "compute");
}
