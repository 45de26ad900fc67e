// CPU baseline (host pointers). Scans are exclusive, in wrap-around 32-bit arithmetic.
#pragma once
#include "common.h"

namespace StreamCompaction {
namespace CPU {
StreamCompaction::Common::PerformanceTimer& timer();
void scan(int n, int* odata, const int* idata);
// Keeps the nonzero elements in order; returns how many.
int compactWithoutScan(int n, int* odata, const int* idata);
int compactWithScan(int n, int* odata, const int* idata);
}  // namespace CPU
}  // namespace StreamCompaction
