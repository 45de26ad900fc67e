// Every GPU force kernel against float64, the integrators on the GPU, determinism, the batch
// pipelines and multi-GPU equality. Skipped without a GPU (multi-GPU: without 2 GPUs and NCCL).
#include <gtest/gtest.h>
#include "../common/exercise_support.hpp"

#include <cstdio>
#include <sys/stat.h>

#include "common/device_info.hpp"
#include "nbody/io.hpp"
#include "nbody/pipeline.hpp"
#include "nbody/registry.hpp"
#include "physics_checks.hpp"

using namespace nbody;

namespace {
Simulate on_gpu(AccelLauncher k) {
  return [k](Bodies& b, const Params& p) {
    DeviceSystem sys;
    sys.upload(b, nullptr);
    gpu_simulate(sys, p, k, nullptr);
    sys.download(b, nullptr);
  };
}
}  // namespace

COURSE_TEST(GpuForces, EveryKernelMatchesFloat64AtAwkwardSizes) {
  REQUIRE_GPU();
  // 0, 1, 2, warp +- 1, block sizes +- 1 (128, 256, 512 = 4 x 128), odd sizes, 1024
  std::vector<std::pair<std::string, AccelLauncher>> kernels;
  for (const auto& v : versions())
    if (v.gpu) kernels.push_back({v.name, v.gpu});
  for (const auto& k : multi_body_variants()) kernels.push_back({"v8_multi_body[" + k.name + "]", k.launch});
  for (const auto& [name, launch] : kernels) {
    for (std::size_t n : {0u, 1u, 2u, 31u, 33u, 127u, 129u, 255u, 257u, 511u, 513u, 777u, 1000u, 1024u}) {
      const Bodies b = make_plummer(n, 300 + n);
      std::vector<float> ax, ay, az;
      if (!course_test::implemented(name, [&] { gpu_accelerations(b, 1.f, 0.01f, launch, ax, ay, az); })) break;
      ASSERT_EQ(ax.size(), n);
      if (n == 1) EXPECT_EQ(ax[0], 0.f) << name;
      if (n >= 2) expect_forces_accurate(b, ax, ay, az, 0.01, name + " n=" + std::to_string(n));
    }
  }
}

// Every shape of v8, the equal-mass fold (v9) included, on equal masses (the fold taken), on
// masses that differ (it must not be) and on equal masses with massless bodies among them (folded
// tiles and tiles with weights 0 mixed), at sizes where the j-range is split into chunks (partial
// sums) and where the last tile is partial.
COURSE_TEST(GpuForces, MultiBodyShapesOnEqualAndUnequalMasses) {
  REQUIRE_GPU();
  for (std::size_t n : {1000u, 4099u, 20000u}) {
    for (const std::string masses : {"equal", "unequal", "equal or zero"}) {
      Bodies b = make_plummer(n, 900 + n);
      for (std::size_t j = 0; j < n; ++j) {
        if (masses == "unequal") b.m[j] *= 0.5f + float(j % 7) / 6.f;  // 0.5x .. 1.5x
        if (masses == "equal or zero" && j % 5 == 3) b.m[j] = 0.f;     // massless, as multi-GPU padding
      }
      const std::string what = " n=" + std::to_string(n) + " " + masses + " masses";
      for (const auto& k : multi_body_variants()) {
        std::vector<float> ax, ay, az;
        if (!course_test::implemented("v8_multi_body", [&] { gpu_accelerations(b, 1.f, 0.01f, k.launch, ax, ay, az); }))
          return;
        ASSERT_EQ(ax.size(), n);
        expect_forces_accurate(b, ax, ay, az, 0.01, k.name + what);
      }
    }
  }
}

COURSE_TEST(GpuForces, TunedBlockSizeAndSplitFactorsArePlausible) {
  REQUIRE_GPU();
  EXPECT_GE(tuned_block_size(1 << 20), 64);
  EXPECT_LE(tuned_block_size(1 << 20), 1024);
  EXPECT_LE(tuned_block_size(1 << 16), 256);  // 65536 bodies must still give every SM two blocks
  EXPECT_EQ(warp_split_group(1 << 24), 1);
  EXPECT_GT(warp_split_group(1024), 1);
}

COURSE_TEST(GpuIntegrators, TenStepEnergyDriftWithinBounds) {
  REQUIRE_GPU();
  for (Integrator i : {Integrator::ExplicitEuler, Integrator::SymplecticEuler, Integrator::Leapfrog}) {
    Bodies b = drift_test_system();
    EXPECT_LE(run_and_measure_drift(b, i, on_gpu(best_kernel())), drift_bound(i)) << integrator_name(i);
  }
}

COURSE_TEST(GpuIntegrators, TwoBodyCircularOrbitHasTheAnalyticPeriod) {
  REQUIRE_GPU();
  EXPECT_NEAR(measure_two_body_period(on_gpu(best_kernel())), 2 * M_PI, 2 * M_PI * 1e-4);
}

COURSE_TEST(GpuIntegrators, SameInputGivesBitwiseEqualOutput) {
  REQUIRE_GPU();
  for (const auto& v : versions()) {
    if (!v.gpu) continue;
    Bodies a = make_plummer(3000, 12), b = a;
    Params p;
    p.steps = 3;
    on_gpu(v.gpu)(a, p);
    on_gpu(v.gpu)(b, p);
    EXPECT_EQ(a.x, b.x) << v.name;
    EXPECT_EQ(a.vz, b.vz) << v.name;
  }
}

COURSE_TEST(GpuBatch, StreamedAndSequentialPipelinesAgreeBitwise) {
  REQUIRE_GPU();
  const std::string dir = ::testing::TempDir() + "nbody_batch";
  mkdir(dir.c_str(), 0755);
  std::vector<std::string> files;
  // sizes from ~1000 (one j-chunk) to 20000 (the best kernel splits the j-range and keeps
  // partial sums per stream: the two streams of the pipeline must not share them)
  for (int k = 0; k < 5; ++k) {
    files.push_back(dir + "/c_000" + std::to_string(k) + ".csv");
    write_snapshot_csv(files.back(), make_plummer(k == 4 ? 20000 : 1000 + 37 * k, 50 + k));
  }
  Params p;
  p.steps = 3;
  const auto seq = run_batch_sequential(files, p, best_kernel(), "", true);
  const auto str = run_batch_streamed(files, p, best_kernel(), "", true);
  ASSERT_EQ(seq.final_states.size(), 5u);
  ASSERT_EQ(str.final_states.size(), 5u);
  for (int k = 0; k < 5; ++k) {
    EXPECT_EQ(seq.final_states[k].x, str.final_states[k].x) << k;
    EXPECT_EQ(seq.final_states[k].vy, str.final_states[k].vy) << k;
  }
  for (const auto& f : files) std::remove(f.c_str());
}

COURSE_TEST(GpuMulti, MultiGpuEqualsTheSingleGpuKernel) {
  REQUIRE_GPU();
  if (!have_nccl()) GTEST_SKIP() << "built without NCCL";
  if (device_count() < 2) GTEST_SKIP() << "needs 2 GPUs (nvidia-h200-x2)";
  for (std::size_t n : {1000u, 4097u}) {
    Bodies single = make_plummer(n, 77), multi = single;
    Params p;
    p.steps = 3;
    on_gpu(best_kernel())(single, p);
    multi_gpu_simulate(multi, p, 2, best_kernel());
    EXPECT_EQ(single.x, multi.x) << n;
    EXPECT_EQ(single.vx, multi.vx) << n;
  }
}
