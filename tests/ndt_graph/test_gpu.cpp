// ndt_graph on the GPU: every version against the CPU reference (simulated pair, room_tutorial,
// awkward sizes, points without neighbours, a source far outside the map), the GPU map build and
// VoxelGrid filter against the CPU's (identical), batched alignments, the cooperative
// too-large-launch error, v9's ordered fallback against its fixed-point totals, v9 and v10 prepared
// again and fed a fresh input on one runner, and a deliberately
// wrong evaluation that the acceptance test rejects.
#include <gtest/gtest.h>
#include "../common/exercise_support.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "common/cli.hpp"

#include "common/device_info.hpp"
#include "common/lidar_sim.hpp"
#include "ndt_graph/registry_detail.hpp"
#include "sim_pair.hpp"

using namespace ndt;

namespace {

using ndt_test::Pair;
using ndt_test::sim_pair;

// NDT_TEST_VERSIONS=v2_device_step,v4_graph_batch limits the GPU versions (the GPU check runs
// racecheck per launch style); unset: all of them.
bool version_selected(const std::string& name) {
  const char* env = std::getenv("NDT_TEST_VERSIONS");
  if (!env || !*env) return true;
  for (const auto& v : common::split(env, ','))
    if (v == name) return true;
  return false;
}

void version_matches(const Version& v, const VoxelMap& map, const common::PointCloud& target,
                     const common::PointCloud& source, const double (&guess)[6], const std::string& what) {
  const AlignResult ref = align_cpu(map, source, v.params_for(NdtParams{}), guess);
  Problem p;
  p.map = &map;
  p.target = &target;
  p.source = &source;
  p.params = v.params_for(NdtParams{});
  std::copy(guess, guess + 6, p.guess);
  auto r = v.make();
  if (!course_test::implemented(v.name, [&] { r->prepare(p), r->run(); })) return;  // unwritten: the test ends skipped
  const AlignResult got = r->result();
  EXPECT_EQ(compare_to_reference(got, ref, 1.0, 0.1, 2), "") << v.name << " on " << what;
  EXPECT_EQ(got.status, ref.status) << v.name << " on " << what;
  r->run();  // a second run from the same guess: the same answer
  const AlignResult again = r->result();
  EXPECT_EQ(compare_to_reference(again, got, 1e-3, 1e-4, 0), "") << v.name << " repeated on " << what;
}

// The simulated pair as a problem on `map` (its target's map), from the pair's guess.
Problem problem_of(const Pair& p, const VoxelMap& map) {
  Problem pr;
  pr.map = &map;
  pr.target = &p.target;
  pr.source = &p.source;
  std::copy(p.guess, p.guess + 6, pr.guess);
  return pr;
}

std::vector<std::string> gpu_version_names() {
  std::vector<std::string> out;
  for (const auto& v : versions())
    if (v.needs_gpu && v.make) out.push_back(v.name);
  return out;
}

}  // namespace

// One test per GPU version (REQUIRE_VERSION_RUNNABLE: a version this GPU cannot run is skipped on
// its own, with the reason; the others still run).
class NdtGpuVersion : public ::testing::TestWithParam<std::string> {
 protected:
  const Version& v() const {
    for (const auto& x : versions())
      if (x.name == GetParam()) return x;
    throw std::logic_error("no version " + GetParam());
  }
};

#define REQUIRE_SELECTED_VERSION_RUNNABLE()      \
  REQUIRE_VERSION_RUNNABLE(v().name, v().needs); \
  if (!version_selected(v().name)) GTEST_SKIP() << v().name << " is not in NDT_TEST_VERSIONS"

TEST_P(NdtGpuVersion, MatchesTheReferenceOnASimulatedPair) {
  REQUIRE_SELECTED_VERSION_RUNNABLE();
  const Pair p = sim_pair();
  version_matches(v(), build_voxel_map(p.target, 1.0f), p.target, p.source, p.guess, "sim pair");
  COURSE_SKIP_NOTED();
}

TEST_P(NdtGpuVersion, MatchesTheReferenceOnRoomTutorial) {
  REQUIRE_SELECTED_VERSION_RUNNABLE();
  const std::string d = common::data_dir() + "/pcl_room_scan/";
  if (!common::file_exists(d + "room_scan1.pcd")) GTEST_SKIP() << "room_tutorial not in " << common::data_dir();
  const auto target = common::read_point_cloud(d + "room_scan1.pcd");
  const auto source = approximate_voxel_grid_filter(common::read_point_cloud(d + "room_scan2.pcd"), 0.2f);
  const double guess[6] = {1.79387, 0.720047, 0, 0, 0, 0.6931};
  version_matches(v(), build_voxel_map(target, 1.0f), target, source, guess, "room_tutorial");
  COURSE_SKIP_NOTED();
}

TEST_P(NdtGpuVersion, AwkwardSourceSizes) {
  REQUIRE_SELECTED_VERSION_RUNNABLE();
  const Pair p = sim_pair();
  const VoxelMap map = build_voxel_map(p.target, 1.0f);
  for (std::size_t n : {1u, 31u, 32u, 33u, 127u, 128u, 129u, 4097u}) {
    common::PointCloud s;
    for (std::size_t i = 0; i < n; ++i) {  // spread over the scan: some points have neighbours, some none
      const std::size_t k = (i * 7919) % p.source.size();
      s.x.push_back(p.source.x[k]);
      s.y.push_back(p.source.y[k]);
      s.z.push_back(p.source.z[k]);
    }
    version_matches(v(), map, p.target, s, p.guess, std::to_string(n) + " points");
  }
  COURSE_SKIP_NOTED();
}

TEST_P(NdtGpuVersion, AFarSourceHasNoCorrespondences) {
  REQUIRE_SELECTED_VERSION_RUNNABLE();
  const Pair p = sim_pair();
  const VoxelMap map = build_voxel_map(p.target, 1.0f);
  const double far[6] = {1e4, -1e4, 50, 0, 0, 0};
  version_matches(v(), map, p.target, p.source, far, "a source far outside the map");
  COURSE_SKIP_NOTED();
}

// A target whose cells' box is too large for the dense grid (a second cluster 3 km away): the
// evaluation probes the hash instead, and must agree with the reference all the same.
TEST_P(NdtGpuVersion, MatchesTheReferenceThroughTheHash) {
  REQUIRE_SELECTED_VERSION_RUNNABLE();
  const Pair p = sim_pair();
  common::PointCloud target = p.target;
  for (int k = 0; k < 2 * kMinPointsPerVoxel; ++k) {
    target.x.push_back(3000.25f + 0.05f * k);
    target.y.push_back(3000.5f - 0.03f * k);
    target.z.push_back(0.5f + 0.02f * k);
  }
  const VoxelMap map = build_voxel_map(target, 1.0f);
  CellGrid box;
  std::vector<GridCell> cells;
  ASSERT_FALSE(build_cell_grid(map, kMaxGridCells, box, cells)) << "the box should be too large for the grid";
  version_matches(v(), map, target, p.source, p.guess, "a map probed through its hash");
  COURSE_SKIP_NOTED();
}

INSTANTIATE_TEST_SUITE_P(Ndt, NdtGpuVersion, ::testing::ValuesIn(gpu_version_names()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

COURSE_TEST(NdtGpu, EmptySourceIsAnError) {
  REQUIRE_GPU();
  const Pair p = sim_pair();
  const VoxelMap map = build_voxel_map(p.target, 1.0f);
  common::PointCloud empty;
  for (const auto& v : versions()) {
    if (!v.needs_gpu || !v.make) continue;
    Problem pr;
    pr.map = &map;
    pr.target = &p.target;
    pr.source = &empty;
    EXPECT_THROW(v.make()->prepare(pr), InputError) << v.name;
  }
  const double far[6] = {1e4, -1e4, 50, 0, 0, 0};
  const AlignResult ref = align_cpu(map, p.source, NdtParams{}, far);
  EXPECT_EQ(ref.status, Status::no_correspondences);
}

COURSE_TEST(NdtGpu, MapBuildAndVoxelFilterAreIdenticalToTheCpu) {
  REQUIRE_GPU();
  const auto scan = common::simulate_lidar_scan({}, 4).cloud;
  for (float leaf : {0.2f, 0.5f}) {
    const auto a = voxel_grid_filter(scan, leaf, LeafOrder::file), b = voxel_grid_filter_gpu(scan, leaf);
    EXPECT_EQ(a.x, b.x);
    EXPECT_EQ(a.y, b.y);
    EXPECT_EQ(a.z, b.z);
  }
  for (float res : {0.5f, 1.0f, 2.0f}) {
    const VoxelMap c = build_voxel_map(scan, res), g = build_voxel_map_gpu(scan, res);
    ASSERT_EQ(compare_maps(c, g), "") << "resolution " << res;
    // the GPU hash finds every voxel
    const MapView view = g.view(Search::direct1);
    int found = 0;
    for (std::size_t v = 0; v < g.voxels.size(); ++v) {
      const float* m = g.voxels[v].centroid;
      const int i = find_voxel(view, static_cast<int>(std::floor(m[0] / res)), static_cast<int>(std::floor(m[1] / res)),
                               static_cast<int>(std::floor(m[2] / res)));
      found += i == static_cast<int>(v);
    }
    EXPECT_EQ(found, static_cast<int>(g.voxels.size()));
  }
}

COURSE_TEST(NdtGpu, BatchedAlignmentsMatchSingleOnes) {
  REQUIRE_GPU();
  const Pair p = sim_pair();
  const VoxelMap map = build_voxel_map(p.target, 1.0f);
  std::vector<BatchItem> items;
  for (int k = 0; k < 5; ++k) {
    BatchItem it{&p.source, {}};
    std::copy(p.guess, p.guess + 6, it.guess);
    it.guess[0] += 0.05 * k;
    it.guess[5] -= 0.01 * k;
    items.push_back(it);
  }
  auto b = make_batch_runner();
  b->prepare({&map, items, NdtParams{}});
  b->run();
  const auto res = b->result();
  ASSERT_EQ(res.size(), items.size());
  for (std::size_t k = 0; k < items.size(); ++k) {
    const AlignResult ref = align_cpu(map, p.source, NdtParams{}, items[k].guess);
    EXPECT_EQ(compare_to_reference(res[k], ref, 1.0, 0.1, 2), "") << "batch entry " << k;
  }
}

COURSE_TEST(NdtGpu, CooperativeLaunchTooLargeIsAClearError) {
  REQUIRE_GPU();
  const Pair p = sim_pair();
  const VoxelMap map = build_voxel_map(p.target, 1.0f);
  const Problem pr = problem_of(p, map);
  auto r = make_v3_cooperative_oversized();
  r->prepare(pr);
  try {
    r->run();
    FAIL() << "an oversized cooperative grid launched";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cudaErrorCooperativeLaunchTooLarge"), std::string::npos) << e.what();
  }
}

// v9 takes an evaluation's totals from fixed-point words (order-free integer atomics), or, where a
// cluster's partial does not fit them, adds the partials in order. Both paths land together and on
// the reference, and each run reports which path it took: none ordered normally, every
// evaluation when the fallback is forced. A problem of several line-search candidates is refused.
COURSE_TEST(NdtGpu, ResidentClustersOrderedFallbackLandsWithTheFixedPointTotals) {
  const Version* v9 = nullptr;
  for (const auto& v : versions())
    if (v.name == "v9_resident_clusters") v9 = &v;
  ASSERT_NE(v9, nullptr);
  REQUIRE_VERSION_RUNNABLE(v9->name, v9->needs);
  const Pair p = sim_pair();
  const VoxelMap map = build_voxel_map(p.target, 1.0f);
  const Problem pr = problem_of(p, map);
  int ordered = -1;
  auto fixed = make_v9_resident_clusters_counting(false, &ordered);
  if (!course_test::implemented(v9->name, [&] { fixed->prepare(pr), fixed->run(); })) {
    COURSE_SKIP_NOTED();
    return;
  }
  const AlignResult a = fixed->result();
  EXPECT_EQ(ordered, 0) << "evaluations summed in order with every partial fitting";
  fixed->run();  // again, on the exchange the first run left: the same bits (integer sums, any order)
  const AlignResult again = fixed->result();
  EXPECT_EQ(std::memcmp(a.pose, again.pose, sizeof a.pose), 0) << "a repeated run moved the pose";
  EXPECT_EQ(std::memcmp(&a.score, &again.score, sizeof a.score), 0) << "a repeated run moved the score";
  EXPECT_EQ(again.evaluations, a.evaluations);
  auto in_order = make_v9_resident_clusters_counting(true, &ordered);
  in_order->prepare(pr);
  in_order->run();
  const AlignResult b = in_order->result();
  EXPECT_GT(b.evaluations, 0);
  EXPECT_EQ(ordered, b.evaluations) << "the forced fallback took only some evaluations";
  const AlignResult ref = align_cpu(map, p.source, NdtParams{}, p.guess);
  EXPECT_EQ(compare_to_reference(b, ref, 1.0, 0.1, 2), "");
  EXPECT_EQ(compare_to_reference(b, a, 1e-3, 1e-4, 0), "");
  // One request per pass: several line-search candidates (v6's) are refused, not half-served.
  Problem several = pr;
  several.params.line_search_candidates = 4;
  auto refused = make_v9_resident_clusters_counting(false, nullptr);
  try {
    refused->prepare(several);
    ADD_FAILURE() << "v9 took a problem of 4 line-search candidates";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("one line-search candidate per pass"), std::string::npos) << e.what();
  }
}

// v9 and v10 on one runner, problem after problem: first a smaller one (a third of the points, the
// direct1 search, whose 128-point chunks give v10's in-kernel copy of the source several passes
// per block, another guess), which must give a fresh runner's bits; then the full problem, whose
// larger buffers move (v10 must capture its graph again); then a fresh input of that shape
// through reload (v10: the same graph reads it); then the full problem again, to the same bits
// (integer totals). v10's kernel time is its global-timer span.
COURSE_TEST(NdtGpu, ResidentRunnersTakeEachNewProblem) {
  REQUIRE_GPU();
  const Pair p = sim_pair();
  const VoxelMap map = build_voxel_map(p.target, 1.0f);
  const Problem full = problem_of(p, map);
  common::PointCloud third;
  for (std::size_t i = 0; i < p.source.size(); i += 3)
    third.x.push_back(p.source.x[i]), third.y.push_back(p.source.y[i]), third.z.push_back(p.source.z[i]);
  Problem small = problem_of(p, map);
  small.source = &third;
  small.params.search = Search::direct1;
  small.guess[0] += 0.15, small.guess[5] -= 0.02;
  common::PointCloud moved = p.source;  // the full problem's shape, other coordinates
  for (auto& x : moved.x) x += 0.05f;
  Problem fresh = full;
  fresh.source = &moved;
  const auto same_bits = [](const AlignResult& x, const AlignResult& y) {
    return std::memcmp(x.pose, y.pose, sizeof x.pose) == 0 && std::memcmp(&x.score, &y.score, sizeof x.score) == 0 &&
           x.evaluations == y.evaluations;
  };
  int found = 0, ran = 0;
  std::string not_run;  // each resident version that did not run, and why
  for (const auto& v : versions()) {
    if (v.name != "v9_resident_clusters" && v.name != "v10_mapped_io") continue;
    ++found;
    if (!version_selected(v.name)) {
      not_run += v.name + ": not in NDT_TEST_VERSIONS; ";
      continue;
    }
    if (const std::string why = common::unmet(v.needs); !why.empty()) {
      not_run += v.name + " cannot run on this GPU: " + why + "; ";
      continue;
    }
    auto alone = v.make();
    if (!course_test::implemented(v.name, [&] { alone->prepare(small), alone->run(); })) continue;
    ++ran;
    const AlignResult s_alone = alone->result();
    EXPECT_EQ(compare_to_reference(s_alone, align_cpu(map, third, small.params, small.guess), 1.0, 0.1, 2), "")
        << v.name << " (a third of the points, direct1)";
    auto r = v.make();
    r->prepare(small);
    r->run();
    EXPECT_TRUE(same_bits(r->result(), s_alone)) << v.name << ": the same problem on another runner moved the answer";
    r->prepare(full);
    r->run();
    const AlignResult a = r->result();
    EXPECT_EQ(compare_to_reference(a, align_cpu(map, p.source, full.params, full.guess), 1.0, 0.1, 2), "")
        << v.name << " prepared again (every point, radius search: larger buffers)";
    const double ms = r->kernel_ms();
    EXPECT_TRUE(ms > 0 && ms < 1e4) << v.name << ": kernel time " << ms << " ms";
    r->reload(fresh);
    r->run();
    EXPECT_EQ(compare_to_reference(r->result(), align_cpu(map, moved, full.params, full.guess), 1.0, 0.1, 2), "")
        << v.name << " on a fresh input through reload";
    r->prepare(full);
    r->run();
    EXPECT_TRUE(same_bits(r->result(), a)) << v.name << ": the full problem again moved the answer";
  }
  ASSERT_EQ(found, 2) << "v9_resident_clusters and v10_mapped_io are not both in the registry";
  COURSE_SKIP_NOTED();
  if (ran == 0) GTEST_SKIP() << "no resident version ran: " << not_run;
}

COURSE_TEST(NdtAcceptance, ADroppedHessianTermIsCaught) {
  // A deliberately wrong evaluation: the point-Hessian (second-derivative) term left out, as a
  // buggy kernel would. The acceptance test the driver and the GPU tests use must reject it.
  const Pair p = sim_pair();
  const VoxelMap map = build_voxel_map(p.target, 1.0f);
  const NdtParams params;
  const AlignResult ref = align_cpu(map, p.source, params, p.guess);
  const SolverConfig cfg = params.solver_config(p.source.size());
  const auto xyz = interleave(p.source);
  SolverState s;
  solver_init(s, p.guess);
  std::vector<TraceRow> trace(params.max_iterations + 1);
  while (!solver_done(s)) {
    double sums[kSums];
    s.req.need_hessian = 1;
    evaluate_cpu(map.view(Search::radius), xyz.data(), p.source.size(), s.req, cfg.gauss, sums, false);
    for (int i = 3; i < 6; ++i)
      for (int j = i; j < 6; ++j) sums[hess_index(i, j)] *= 0.2;  // dropped term: rotational curvature wrong
    solver_advance(s, cfg, sums, true, trace.data());
  }
  const AlignResult wrong = result_from_state(s, trace.data());
  EXPECT_NE(compare_to_reference(wrong, ref, 1.0, 0.1, 2), "") << "the wrong evaluation was accepted";
}
