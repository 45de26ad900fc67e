// v10_mapped_io — v9's kernel, with the run's host round trip cut to what the launch itself costs.
// What a caller waits for in v9 besides its kernel (H100, room_tutorial, 0.281 ms per alignment):
// the source's copy to the device (150 KB, a copy-engine transfer that the kernel waits for), two
// events around the kernel (its time), a direct launch, and a stream synchronisation that returns
// after the grid has ended and its memory is flushed. v10 launches one CUDA graph captured when the
// problem is prepared (the kernel, its arguments the runner's buffers); the kernel reads the source
// from pinned host memory itself (each block its own chunks, while thread 0 starts the state, into
// the device buffer the evaluations read); block 0 writes its trace rows straight to pinned memory
// as they come, then the state, then its span on the global timer (the kernel time, as v2-v8 take
// theirs), then a completion word, which the host polls instead of synchronising the stream.
// Predicted (H100, micro-benchmark of an empty cooperative kernel in clusters of 2 with v9's shared
// memory: direct launch with events and stream sync 13.8 us, without events 10.8, polled 9.2,
// graph launch ~2.6 less; the 150 KB copy before it ~6-10 us, the kernel's own reads of it ~4.5):
// ~14 us per alignment, 0.281 -> ~0.267 ms.
// Measured (H100, 2026-11-27, A/B, three runs, v9 in the same runs): 0.267-0.268 against
// 0.285-0.287 ms on room_tutorial, every case ~17 us faster (sim_street 0.213 against 0.229,
// koide_vg02_both 0.142 against 0.158, cupcl_identity 0.084 against 0.098). With the L1 kept
// between evaluations (v9's header, the mbarrier handoff): 0.244-0.245 against v9's 0.259-0.262.
// Reference run (H100, commit 66ea133, v9's clusters of 1): 0.257 ms against v9's 0.269, 12.19 us
// per evaluation (kernel 11.77, outside 0.42) against 12.74; fastest on every case. With v9's
// st.async push in clusters of 2 (A/B, H100, 2026-11-28): 0.252-0.257 against 0.256-0.258.
// Not graded on its own (the rubric's v9 exercise holds the kernel): the student's kernel runs here
// too, and calls the given hooks (mapped_source_in, block0_rows, results_out) where the hint says.
#include "gpu_kernels.cuh"
#include "ndt_graph/registry_detail.hpp"

namespace ndt {

std::unique_ptr<Runner> make_v10_mapped_io() { return gpu::make_resident_runner(true); }

}  // namespace ndt
