// cpu: the reference. PCL 1.13's NDT in float64 on one thread: the shared solver state machine
// (solver.hpp) driven by a plain loop over the source points. cpu_openmp: the same evaluation on
// every core with per-thread sums (what a user would run instead of PCL's single thread).
#include <omp.h>

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

void pose_error(const double (&A)[4][4], const double (&B)[4][4], double& trans_m, double& rot_deg) {
  double t2 = 0;
  for (int r = 0; r < 3; ++r) t2 += (A[r][3] - B[r][3]) * (A[r][3] - B[r][3]);
  trans_m = std::sqrt(t2);
  // The angle of M = A_R^T B_R from its trace and its skew part, atan2(|v| / 2, (tr - 1) / 2): acos of
  // the trace alone has a floor of sqrt(2 * rounding), 0.007 deg between two copies of one float
  // rotation that is orthonormal only to float precision; a symmetric rounding error leaves v = 0.
  double M[3][3];
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      M[i][j] = 0;
      for (int k = 0; k < 3; ++k) M[i][j] += A[k][i] * B[k][j];
    }
  const double tr = M[0][0] + M[1][1] + M[2][2];
  const double v[3] = {M[2][1] - M[1][2], M[0][2] - M[2][0], M[1][0] - M[0][1]};
  const double s = 0.5 * std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
  rot_deg = std::atan2(s, 0.5 * (tr - 1)) * 180.0 / 3.14159265358979323846;
}

std::string compare_to_reference(const AlignResult& got, const AlignResult& ref, double cm, double deg,
                                 int iterations) {
  double t, r;
  pose_error(got.T, ref.T, t, r);
  if (!(t * 100 <= cm) || !(r <= deg) || std::abs(got.iterations - ref.iterations) > iterations) {
    std::ostringstream os;
    os.precision(4);
    os << t * 100 << " cm, " << r << " deg, " << got.iterations << " vs " << ref.iterations
       << " iterations from the reference (allowed " << cm << " cm, " << deg << " deg, +-" << iterations << ")";
    return os.str();
  }
  return "";
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

void evaluate_cpu(const MapView& m, const float* xyz, std::size_t n, const EvalRequest& req, GaussConstants g,
                  double* sums, bool parallel) {
  AngleDerivatives ad;
  angle_derivatives(req.pose, ad);
  const bool hessian = req.need_hessian != 0;
  std::fill(sums, sums + kSums, 0.0);
  if (!parallel) {
    for (std::size_t i = 0; i < n; ++i)
      accumulate_point(m, ad, req.T, g, hessian, xyz[3 * i], xyz[3 * i + 1], xyz[3 * i + 2], sums);
    return;
  }
  const long long count = static_cast<long long>(n);
#pragma omp parallel
  {
    double local[kSums] = {};
#pragma omp for schedule(static)
    for (long long i = 0; i < count; ++i)
      accumulate_point(m, ad, req.T, g, hessian, xyz[3 * i], xyz[3 * i + 1], xyz[3 * i + 2], local);
#pragma omp critical
    for (int k = 0; k < kSums; ++k) sums[k] += local[k];
  }
}

AlignResult align_interleaved(const VoxelMap& map, const std::vector<float>& xyz, const NdtParams& p,
                              const double (&guess)[6], bool parallel) {
  p.validate();
  const std::size_t n = xyz.size() / 3;
  if (n == 0) throw InputError("source cloud is empty");
  const MapView view = map.view(p.search);
  const SolverConfig cfg = p.solver_config(n);
  SolverState s;
  solver_init(s, guess);
  std::vector<TraceRow> trace(p.max_iterations + 1);
  double sums[kMaxCandidates * kSums];
  while (!solver_done(s)) {
    for (int k = 0; k < s.requests; ++k)
      evaluate_cpu(view, xyz.data(), n, request_at(s, k), cfg.gauss, sums + k * kSums, parallel);
    solver_advance(s, cfg, sums, s.req.need_hessian != 0, trace.data());
  }
  return result_from_state(s, trace.data());
}

AlignResult align_cpu(const VoxelMap& map, const common::PointCloud& source, const NdtParams& p,
                      const double (&guess)[6]) {
  return align_interleaved(map, interleave(source), p, guess, false);
}

AlignResult align_cpu_openmp(const VoxelMap& map, const common::PointCloud& source, const NdtParams& p,
                             const double (&guess)[6]) {
  return align_interleaved(map, interleave(source), p, guess, true);
}

}  // namespace ndt
