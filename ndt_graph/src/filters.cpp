// PCL's VoxelGrid and ApproximateVoxelGrid, point for point (float arithmetic as PCL's).
#include <algorithm>
#include <cmath>
#include <climits>
#include <cstdint>
#include <numeric>

#if defined(NDT_HAVE_BOOST_SPREADSORT)
#include <boost/sort/spreadsort/integer_sort.hpp>
#endif

#include "ndt_graph/ndt.hpp"

namespace ndt {

Filter parse_filter(const std::string& name) {
  if (name == "none") return Filter::none;
  if (name == "voxel") return Filter::voxel;
  if (name == "approx") return Filter::approx;
  throw InputError("unknown filter '" + name + "' (none, voxel, approx)");
}
const char* filter_name(Filter f) { return f == Filter::none ? "none" : f == Filter::voxel ? "voxel" : "approx"; }

namespace {

void check_leaf(float leaf, const char* who) {
  if (!(leaf > 0) || !std::isfinite(leaf) || !std::isfinite(1.0f / leaf))
    throw InputError(std::string(who) + ": leaf size must be positive and finite (got " + std::to_string(leaf) + ")");
}

void push(common::PointCloud& out, float x, float y, float z) {
  out.x.push_back(x);
  out.y.push_back(y);
  out.z.push_back(z);
}

}  // namespace

common::PointCloud voxel_grid_filter(const common::PointCloud& in, float leaf, LeafOrder sum_order) {
  check_leaf(leaf, "voxel filter");
  common::PointCloud out;
  const std::size_t n = in.size();
  if (n == 0) return out;
  const float inv = 1.0f / leaf;
  float mn[3] = {in.x[0], in.y[0], in.z[0]};
  for (std::size_t i = 1; i < n; ++i) {
    mn[0] = std::min(mn[0], in.x[i]);
    mn[1] = std::min(mn[1], in.y[i]);
    mn[2] = std::min(mn[2], in.z[i]);
  }
  float mx[3] = {mn[0], mn[1], mn[2]};
  for (std::size_t i = 0; i < n; ++i) {
    mx[0] = std::max(mx[0], in.x[i]);
    mx[1] = std::max(mx[1], in.y[i]);
    mx[2] = std::max(mx[2], in.z[i]);
  }
  long long min_b[3], div[3];
  for (int a = 0; a < 3; ++a) {
    min_b[a] = static_cast<long long>(std::floor(mn[a] * inv));
    div[a] = static_cast<long long>(std::floor(mx[a] * inv)) - min_b[a] + 1;
  }
  // PCL keys leaves by a 32-bit index and refuses grids over 2^31 leaves (it returns the cloud
  // unfiltered); a 64-bit key has no such limit and orders leaves the same way.
  const bool fits32 = div[0] * div[1] * div[2] <= static_cast<long long>(INT32_MAX);
  auto leaf_of = [&](std::size_t i) {
    const long long ijk0 = static_cast<long long>(std::floor(in.x[i] * inv) - static_cast<float>(min_b[0]));
    const long long ijk1 = static_cast<long long>(std::floor(in.y[i] * inv) - static_cast<float>(min_b[1]));
    const long long ijk2 = static_cast<long long>(std::floor(in.z[i] * inv) - static_cast<float>(min_b[2]));
    return static_cast<std::uint64_t>(ijk0 + ijk1 * div[0] + ijk2 * div[0] * div[1]);
  };
  // A leaf's centroid is a float sum, so the order its points are added in decides its last bit.
  // PCL adds them in the order Boost's integer_sort leaves equal leaf indices in (not file order:
  // spreadsort is not stable); with Boost here and a 32-bit grid, the same sort on the same
  // (leaf, point) array gives PCL's order, and so PCL's centroids to the bit.
  std::vector<std::uint32_t> order(n);
  std::vector<std::uint64_t> key(n);
#if defined(NDT_HAVE_BOOST_SPREADSORT)
  if (fits32 && sum_order == LeafOrder::pcl) {
    struct LeafPoint {  // pcl::cloud_point_index_idx: compared by the leaf index only
      unsigned int idx, point;
      bool operator<(const LeafPoint& o) const { return idx < o.idx; }
    };
    std::vector<LeafPoint> lp(n);
    for (std::size_t i = 0; i < n; ++i) lp[i] = {static_cast<unsigned int>(leaf_of(i)), static_cast<unsigned int>(i)};
    boost::sort::spreadsort::integer_sort(lp.begin(), lp.end(),
                                          [](const LeafPoint& x, unsigned offset) { return x.idx >> offset; });
    for (std::size_t i = 0; i < n; ++i) {
      order[i] = lp[i].point;
      key[i] = lp[i].idx;
    }
  } else
#endif
  {
    (void)fits32;
    std::vector<std::pair<std::uint64_t, std::uint32_t>> index(n);
    for (std::size_t i = 0; i < n; ++i) index[i] = {leaf_of(i), static_cast<std::uint32_t>(i)};
    std::stable_sort(index.begin(), index.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (std::size_t i = 0; i < n; ++i) {
      order[i] = index[i].second;
      key[i] = index[i].first;
    }
  }
  for (std::size_t b = 0; b < n;) {
    std::size_t e = b;
    float s[3] = {0, 0, 0};
    for (; e < n && key[e] == key[b]; ++e) {
      s[0] += in.x[order[e]];
      s[1] += in.y[order[e]];
      s[2] += in.z[order[e]];
    }
    const float c = static_cast<float>(e - b);
    push(out, s[0] / c, s[1] / c, s[2] / c);
    b = e;
  }
  return out;
}

bool voxel_grid_matches_pcl_bitwise() {
#if defined(NDT_HAVE_BOOST_SPREADSORT)
  return true;
#else
  return false;
#endif
}

common::PointCloud approximate_voxel_grid_filter(const common::PointCloud& in, float leaf) {
  check_leaf(leaf, "approx filter");
  constexpr unsigned kSlots = 512;
  struct Slot {
    int ix = 0, iy = 0, iz = 0, count = 0;
    float s[3] = {0, 0, 0};
  };
  std::vector<Slot> hist(kSlots);
  common::PointCloud out;
  const float inv = 1.0f / leaf;
  auto flush = [&](Slot& h) {
    const float c = static_cast<float>(h.count);
    push(out, h.s[0] / c, h.s[1] / c, h.s[2] / c);
    h.count = 0;
    h.s[0] = h.s[1] = h.s[2] = 0;
  };
  for (std::size_t i = 0; i < in.size(); ++i) {
    const int ix = static_cast<int>(std::floor(in.x[i] * inv));
    const int iy = static_cast<int>(std::floor(in.y[i] * inv));
    const int iz = static_cast<int>(std::floor(in.z[i] * inv));
    // PCL's hash, in its int arithmetic (wrapping), masked to the slot count
    const unsigned hash =
        (static_cast<unsigned>(ix) * 7171u + static_cast<unsigned>(iy) * 3079u + static_cast<unsigned>(iz) * 4231u) &
        (kSlots - 1);
    Slot& h = hist[hash];
    if (h.count && (ix != h.ix || iy != h.iy || iz != h.iz)) flush(h);
    h.ix = ix;
    h.iy = iy;
    h.iz = iz;
    ++h.count;
    h.s[0] += in.x[i];
    h.s[1] += in.y[i];
    h.s[2] += in.z[i];
  }
  for (auto& h : hist)
    if (h.count) flush(h);
  return out;
}

common::PointCloud apply_filter(const common::PointCloud& in, Filter f, float leaf) {
  switch (f) {
    case Filter::voxel: return voxel_grid_filter(in, leaf);
    case Filter::approx: return approximate_voxel_grid_filter(in, leaf);
    case Filter::none: break;
  }
  common::PointCloud out;
  out.x = in.x;
  out.y = in.y;
  out.z = in.z;
  return out;
}

}  // namespace ndt
