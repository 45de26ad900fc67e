#pragma once
#include "common.h"

namespace StreamCompaction {
namespace Radix {
StreamCompaction::Common::PerformanceTimer& timer();
// The extra credit's radix sort: ascending int32 keys (negative ones included), one bit per pass,
// each pass a split over the work-efficient scan (Device::sort_split).
void sort(int n, int* odata, const int* idata);
}  // namespace Radix
}  // namespace StreamCompaction
