// The NDT parameters, the pose helpers and the solver's result: harness code every version shares.
// The CPU reference itself (and cpu_openmp) is src/reference.cpp.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include "ndt_graph/ndt.hpp"

namespace ndt {

Search parse_search(const std::string& name) {
  if (name == "radius") return Search::radius;
  if (name == "direct7") return Search::direct7;
  if (name == "direct1") return Search::direct1;
  throw InputError("unknown search '" + name + "' (radius, direct7, direct1)");
}
const char* search_name(Search s) {
  return s == Search::radius ? "radius" : s == Search::direct7 ? "direct7" : "direct1";
}

void NdtParams::validate() const {
  auto positive = [](double v, const char* name) {
    if (!(v > 0) || !std::isfinite(v))
      throw InputError(std::string(name) + " must be positive and finite (got " + std::to_string(v) + ")");
  };
  positive(resolution, "resolution");
  positive(step_size, "step size");
  positive(epsilon, "epsilon");
  if (!(outlier_ratio > 0 && outlier_ratio < 1))
    throw InputError("outlier ratio must lie in (0, 1) (got " + std::to_string(outlier_ratio) + ")");
  if (max_iterations < 1 || max_iterations > 10000)
    throw InputError("max iterations must be in [1, 10000] (got " + std::to_string(max_iterations) + ")");
  if (line_search_candidates < 1 || line_search_candidates > kMaxCandidates)
    throw InputError("line-search candidates must be in [1, " + std::to_string(kMaxCandidates) + "] (got " +
                     std::to_string(line_search_candidates) + ")");
  const GaussConstants g = gauss_constants(resolution, outlier_ratio);
  if (!std::isfinite(g.d1) || !std::isfinite(g.d2))
    throw InputError("resolution " + std::to_string(resolution) + " and outlier ratio " +
                     std::to_string(outlier_ratio) + " give non-finite Gaussian constants");
}

SolverConfig NdtParams::solver_config(std::size_t n_points) const {
  SolverConfig c;
  c.step_size = step_size;
  c.epsilon = epsilon;
  c.max_iterations = max_iterations;
  c.gauss = gauss_constants(resolution, outlier_ratio);
  c.n_points = static_cast<double>(n_points);
  c.fast_solve = fast_solve ? 1 : 0;
  c.candidates = line_search_candidates;
  return c;
}

std::vector<float> interleave(const common::PointCloud& pc) {
  std::vector<float> xyz(3 * pc.size());
  for (std::size_t i = 0; i < pc.size(); ++i) {
    xyz[3 * i] = pc.x[i];
    xyz[3 * i + 1] = pc.y[i];
    xyz[3 * i + 2] = pc.z[i];
  }
  return xyz;
}

void pose_to_matrix4(const double (&pose)[6], double (&T)[4][4]) {
  double m[3][4];
  common::la::pose_to_matrix(pose, m);
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c) T[r][c] = m[r][c];
  T[3][0] = T[3][1] = T[3][2] = 0;
  T[3][3] = 1;
}

std::string AlignResult::reason() const {
  std::ostringstream os;
  switch (status) {
    case Status::converged: os << "converged after " << iterations << " iterations"; break;
    case Status::max_iterations: os << "stopped at the iteration limit (" << iterations << ")"; break;
    case Status::no_correspondences:
      os << "no source point has a target voxel within reach at the guess: nothing to align (move the guess closer, or "
            "raise the resolution)";
      break;
    case Status::numerical: os << "the Newton step is not finite (singular or NaN Hessian)"; break;
    case Status::running: os << "did not finish"; break;
  }
  return os.str();
}

AlignResult result_from_state(const SolverState& s, const TraceRow* trace) {
  AlignResult r;
  std::memcpy(r.pose, s.p, sizeof r.pose);
  pose_to_matrix4(r.pose, r.T);
  r.iterations = s.iterations;
  r.evaluations = s.evaluations;
  r.solve_fallbacks = s.solve_fallbacks;
  r.status = static_cast<Status>(s.status);
  r.converged = r.status == Status::converged;
  r.likelihood = s.likelihood;
  r.score = s.score;
  for (int i = 0; i < 6; ++i)
    for (int j = i; j < 6; ++j) r.hessian[i][j] = r.hessian[j][i] = s.hess[hess_index(i, j) - kHessian];
  r.neighbours = s.matched;
  r.pairs = s.pairs;
  if (trace) r.trace.assign(trace, trace + s.iterations + 1);
  return r;
}

}  // namespace ndt
