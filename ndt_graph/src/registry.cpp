// The single list of ndt_graph versions. Predicted per-evaluation costs come from the launch/sync
// model in each version file's header comment (H100/H200 figures: ~5 us per stream launch seen
// from the host, ~1.5 us between dependent kernels inside a graph, ~8-10 us per host sync round
// trip); the arithmetic of one evaluation is < 1 us and is not the limit.
#include <cstring>

#include "ndt_graph/registry_detail.hpp"

namespace ndt {
namespace {

class CpuRunner : public Runner {
 public:
  explicit CpuRunner(bool parallel) : parallel_(parallel) {}
  void prepare(const Problem& p) override {
    p.params.validate();
    if (!p.source || p.source->size() == 0) throw InputError("source cloud is empty");
    problem_ = p;
    xyz_ = interleave(*p.source);
  }
  void enqueue() override {
    result_ = align_interleaved(*problem_.map, xyz_, problem_.params, problem_.guess, parallel_);
  }
  void reload(const Problem& p) override {
    problem_ = p;
    xyz_ = interleave(*p.source);
  }
  AlignResult result() override { return result_; }

 private:
  bool parallel_;
  Problem problem_;
  std::vector<float> xyz_;
  AlignResult result_;
};

}  // namespace

std::unique_ptr<Runner> make_cpu() { return std::make_unique<CpuRunner>(false); }
std::unique_ptr<Runner> make_cpu_openmp() { return std::make_unique<CpuRunner>(true); }

const std::vector<Version>& versions() {
  static const std::vector<Version> v = [] {
    using common::kOnCpu;
    using common::kOnGpu;
    const std::function<std::unique_ptr<Runner>()> pcl = pcl_available() ? make_pcl : nullptr;
    // {{id, name, file, idea, role, where it runs[, needs]}, predicted us per evaluation, make, why make is null
    //  [, line-search candidates, builds on, batched, make with another unroll count, claimed speed-up, over whom,
    //   resident blocks (the versions that keep their whole grid resident)]}
    // v4's claim is the plan's: graph-batched evaluations 1.4x a host sync per evaluation.
    // clang-format off: the registry is a table, one entry per line
    std::vector<Version> list = {
        {{"cpu", "cpu", "src/reference.cpp", "PCL 1.13's NDT reproduced in float64 on one thread: the reference", Role::reference, kOnCpu}, 0,
         make_cpu, ""},
        {{"omp", "cpu_openmp", "src/reference.cpp", "the same evaluation on every core (OpenMP, per-thread sums)", Role::version, kOnCpu}, 0,
         make_cpu_openmp, ""},
        {{"pcl", "pcl", "src/pcl_version.cpp", "pcl::NormalDistributionsTransform itself (one thread), the library a user would call",
          Role::library, kOnCpu},
         0, pcl, "built without PCL (install libpcl-dev and reconfigure)"},
        {{"v1", "v1_naive", "src/v1_naive.cu", "one kernel per phase, per-point array + atomics, solve on the host, sync every evaluation",
          Role::version, kOnGpu},
         35, make_v1_naive, ""},
        {{"v2", "v2_device_step", "src/v2_device_step.cu", "fused kernel with a 30-value block reduction; solve/line search on the device; flag read every evaluation",
          Role::version, kOnGpu},
         17, make_v2_device_step, ""},
        {{"v3", "v3_cooperative", "src/v3_cooperative.cu", "one persistent cooperative kernel, two grid syncs per evaluation, sized by occupancy",
          Role::version, kOnGpu, common::needs_cooperative()},
         5, make_v3_cooperative, "", 1, "", false, nullptr, 0, "", v3_cooperative_resident_blocks},
        {{"v4", "v4_graph_batch", "src/v4_graph_batch.cu", "CUDA graph of 8 unrolled evaluations, host checks the flag between graphs",
          Role::version, kOnGpu},
         5, make_v4_graph_batch, "", 1, "", false, make_v4_graph_batch_unrolled, 1.4, "v2_device_step"},
        {{"v5", "v5_graph_while", "src/v5_graph_while.cu", "the loop on the device: a conditional WHILE graph node, one host sync per alignment",
          Role::version, kOnGpu},
         5, make_v5_graph_while, ""},
        {{"v6", "v6_parallel_line_search", "src/v6_parallel_line_search.cu",
          "the line search's step candidates evaluated in one pass (PCL's test picks): one pass per iteration",
          Role::version, kOnGpu},
         7, make_v6_parallel_line_search, "", kMaxCandidates},
        {{"v7", "v7_batched", "src/v7_batched.cu", "many alignments in one graph launch (WHILE node over all): batch rows, multi-hypothesis search",
          Role::version, kOnGpu},
         5, nullptr, "", 1, "v5_graph_while", true},
        {{"v8", "v8_programmatic_launch", "src/v8_programmatic_launch.cu",
          "v4 with each kernel a programmatic dependent of the one before (Hopper PDL): launches overlap the running kernel",
          Role::version, kOnGpu, common::needs_sm(90, "programmatic dependent launch")},
         3, make_v8_programmatic_launch, "", 1, "v4_graph_batch", false, make_v8_programmatic_launch_unrolled},
        {{"v9", "v9_resident_clusters", "src/v9_resident_clusters.cu",
          "v3's persistent kernel with one barrier per evaluation: fixed-point totals added by atomics, the cluster's sums to its leader by st.async, a relaxed poll that keeps the L1, every block runs the solver",
          Role::version, kOnGpu, common::Needs{90, "thread-block clusters", true, 0}},
         13, make_v9_resident_clusters, "", 1, "v3_cooperative", false, nullptr, 0, "", v9_resident_clusters_resident_blocks},
        {{"v10", "v10_mapped_io", "src/v10_mapped_io.cu",
          "v9's kernel, the run's host round trip through pinned memory: one graph launch, the source read by the kernel, the answer and a completion word polled",
          Role::version, kOnGpu, common::Needs{90, "thread-block clusters", true, 0}},
         12.6, make_v10_mapped_io, "", 1, "v9_resident_clusters", false, nullptr, 0, "", v9_resident_clusters_resident_blocks},
    };
    // clang-format on
    return list;
  }();
  return v;
}

}  // namespace ndt
