// v6_parallel_line_search — the published design's K4: the line search evaluates several step
// lengths in one pass instead of one More-Thuente trial per pass. Every Newton iteration asks for
// kMaxCandidates steps along the Newton direction (PCL's first trial, its halvings, and a longer
// step where the first is below the maximum); one evaluation launch covers them all (gridDim.y =
// candidates), and the step kernel takes PCL's first trial whenever PCL's own test (sufficient
// decrease + curvature) accepts it, else the longest accepted step, else the best score. Each
// iteration is then exactly one pass: no extra trials, no separate Hessian pass. Driven like v5
// (a conditional WHILE graph, the same runner).
// Predicted: where PCL accepts its first trial (most iterations near convergence) the path is
// PCL's; where it needed extra trials (k passes) this needs one, at the price of a pass whose
// pair work is 4x larger. The pass is latency-bound (a few us of arithmetic in ~15-20 us), so it
// should cost ~1.3x a single-candidate pass, and win only where extra trials are common; on
// room_tutorial (18 iterations in ~22 passes) the saving is ~4 passes against ~30% more per pass:
// about even. Iterations may differ from PCL's by a few where a different step is taken.
// The loop is v5's (a WHILE graph whose passes carry the candidates the problem's
// line_search_candidates asks for); the idea lives in the solver (solver.hpp: newton_step's
// candidates, choose_candidate) and in the registry entry that turns it on.
#include "ndt_graph/registry_detail.hpp"

namespace ndt {

std::unique_ptr<Runner> make_v6_parallel_line_search() { return make_v5_graph_while(); }

}  // namespace ndt
