// The factories behind the registry's entries (one per version file).
#pragma once
#include <memory>

#include "ndt_graph/versions.hpp"

namespace ndt {

std::unique_ptr<Runner> make_cpu();
std::unique_ptr<Runner> make_cpu_openmp();
std::unique_ptr<Runner> make_pcl();  // null when PCL was not found at build time
std::unique_ptr<Runner> make_v1_naive();
std::unique_ptr<Runner> make_v2_device_step();
std::unique_ptr<Runner> make_v3_cooperative();
// v3 with one block more than can be resident: its run() throws the too-large-launch error.
std::unique_ptr<Runner> make_v3_cooperative_oversized();
// The most blocks v3's cooperative grid may have on this GPU (its occupancy query x the SMs).
int v3_cooperative_resident_blocks();
std::unique_ptr<Runner> make_v4_graph_batch();
std::unique_ptr<Runner> make_v4_graph_batch_unrolled(int unrolled);
std::unique_ptr<Runner> make_v5_graph_while();
std::unique_ptr<Runner> make_v6_parallel_line_search();
std::unique_ptr<Runner> make_v8_programmatic_launch();
std::unique_ptr<Runner> make_v8_programmatic_launch_unrolled(int unrolled);
std::unique_ptr<Runner> make_v9_resident_clusters();
// v9 that reports, after each result(), how many evaluations' totals it added in order (the
// fallback for partials that do not fit the fixed-point words) in `ordered`; `ordered_only`
// sends every evaluation there.
std::unique_ptr<Runner> make_v9_resident_clusters_counting(bool ordered_only, int* ordered);
// The most blocks v9's clustered grid may have on this GPU (its largest resident clusters x size).
int v9_resident_clusters_resident_blocks();
std::unique_ptr<Runner> make_v10_mapped_io();
bool pcl_available();

}  // namespace ndt
