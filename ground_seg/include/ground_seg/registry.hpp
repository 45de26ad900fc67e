// The single list of ground_seg versions (the GPU ladder of the issue lands here next).
#pragma once
#include <string>
#include <vector>

#include "ground_seg/ground_seg.hpp"

namespace ground_seg {

struct Version {
  std::string id, name, idea;
  bool needs_gpu;
  Result (*run)(const common::PointCloud&, const Params&);
};

inline const std::vector<Version>& versions() {
  static const std::vector<Version> v = {
      {"cpu", "cpu", "the seed's algorithm, single thread, float64 sums: the reference", false, segment_cpu},
  };
  return v;
}

}  // namespace ground_seg
