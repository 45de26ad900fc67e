#include <gtest/gtest.h>

#include <string>

#include "common/cuda_check.hpp"

TEST(CudaCheck, FailingCallThrowsWithExpressionFileLineAndErrorName) {
  try {
    CUDA_CHECK(cudaErrorInvalidValue);
    FAIL() << "CUDA_CHECK did not throw";
  } catch (const common::CudaError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cudaErrorInvalidValue"), std::string::npos) << what;
    EXPECT_NE(what.find("`cudaErrorInvalidValue`"), std::string::npos) << what;
    EXPECT_NE(what.find("test_cuda_check.cpp:"), std::string::npos) << what;
    EXPECT_EQ(e.code(), cudaErrorInvalidValue);
  }
}

TEST(CudaCheck, SuccessDoesNotThrow) { EXPECT_NO_THROW(CUDA_CHECK(cudaSuccess)); }

TEST(CudaCheck, MessageNamesTheLine) {
  const std::string m = common::format_cuda_error(cudaErrorMemoryAllocation, "cudaMalloc(&p, 1)", "x.cu", 42);
  EXPECT_EQ(m, "CUDA error cudaErrorMemoryAllocation (out of memory) in `cudaMalloc(&p, 1)` at x.cu:42");
}
