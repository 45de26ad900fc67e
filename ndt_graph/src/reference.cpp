// cpu: the reference. PCL 1.13's NDT in float64 on one thread: the shared solver state machine
// (solver.hpp) driven by a plain loop over the source points. cpu_openmp: the same evaluation on
// every core with per-thread sums (what a user would run instead of PCL's single thread). And the
// comparisons the checks make (pose error, a result against the reference's). A harness file: no
// exercise lives here (grading/rubric.toml's checker_files).
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "common/bench.hpp"
#include "ndt_graph/ndt.hpp"

namespace ndt {

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
                              const double (&guess)[6], bool parallel, double* solve_ms) {
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
    const common::WallTimer t;
    solver_advance(s, cfg, sums, s.req.need_hessian != 0, trace.data());
    if (solve_ms) *solve_ms += t.elapsed_ms();
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
