// PCL 1.13's NormalDistributionsTransform::computeTransformation as a state machine that runs the
// same on the host (the CPU reference) and in a single GPU thread (the device-side versions):
// every call to advance() consumes the sums of the evaluation it asked for last and says which
// evaluation comes next (a transform + whether the Hessian is needed), until `done`. The Newton
// direction is the SVD-equivalent solve of PCL's JacobiSVD, the step length PCL's More-Thuente
// line search with its parameters and trial logic, convergence when the squared translation of
// the last step is <= epsilon (the rotation epsilon is 0, PCL's default), or max iterations.
// Written once so that every version follows exactly the same control flow; only the evaluation
// (where the 30 sums come from) differs between versions.
#pragma once
#include <cmath>

#include "common/linalg.hpp"
#include "ndt_graph/ndt_math.hpp"

// The solver is large: inline, not force-inlined, on the device.
#if defined(__CUDACC__)
#define NDT_HD __host__ __device__ inline
// Out of line in the device code: the SVD-equivalent fallback of the Newton step (thousands of
// instructions of unrolled Jacobi sweeps, run only for a near-singular Hessian), which the state
// machine's phases would otherwise each inline: v9's solver was 36,000 instructions (580 KB) with
// its hot path scattered through them, 13,700 (215 KB) without. Measured (H100, v9, room_tutorial):
// 0.364 against 0.370 ms. The chained steps out of line as well: v9 0.359 ms, but v8 0.419 against
// 0.388 ms (its step kernel's calls through the stack).
#define NDT_COLD __host__ __device__ __noinline__ inline
#else
#define NDT_HD inline
#define NDT_COLD inline
#endif

namespace ndt {

enum class Phase : int {
  initial = 0,
  first_trial = 1,
  extra_trial = 2,
  hessian_only = 3,
  done = 4,
  parallel_trial = 5
};

// Most step candidates one evaluation pass of the parallel line search carries.
constexpr int kMaxCandidates = 4;
enum class Status : int { running = 0, converged = 1, max_iterations = 2, no_correspondences = 3, numerical = 4 };

struct SolverConfig {
  double step_size = 0.1, epsilon = 1e-4;
  int max_iterations = 35;
  GaussConstants gauss{};
  double n_points = 0;  // the likelihood is score / n_points
  // 0: the Newton direction by the SVD-equivalent solve, as PCL (the reference). 1: Gaussian
  // elimination with partial pivoting first (registers, a few us in one GPU thread instead of
  // tens of us of Jacobi sweeps; the same solution wherever the Hessian is not near-singular),
  // the SVD-equivalent solve only for a near-singular Hessian (counted).
  int fast_solve = 0;
  // 1: PCL's More-Thuente line search, one trial per evaluation. 2..kMaxCandidates: the parallel
  // line search: every Newton iteration evaluates that many step lengths in one pass and takes
  // the first that PCL's test accepts (else the best), so an iteration is always one pass.
  int candidates = 1;
  // 1: a request leaves its float matrix to the caller (EvalRequest::transform_pending), which
  // takes it with float_transform_from: v9's warp takes the three angles' sines and cosines in
  // three lanes at once instead of one after another in the solver's thread.
  int defer_transform = 0;
};

struct TraceRow {
  double pose[6];
  double score, step;
  double neighbours, pairs;
};

// The request for the next evaluation: transform the source by T (float, as PCL does), take the
// angular derivatives at `pose`.
struct EvalRequest {
  float T[12];
  double pose[6];
  int need_hessian;
  int transform_pending;  // T is not yet taken (SolverConfig::defer_transform)
};

struct SolverState {
  double p[6];  // PCL's `transform` 6-vector
  double score, grad[6], hess[21];
  double matched, pairs;
  // line search (computeStepLengthMT)
  double dir[6], phi_0, d_phi_0, a_l, f_l, g_l, a_u, f_u, g_u, a_t, phi_t, d_phi_t, psi_t, d_psi_t;
  int open_interval, interval_converged, step_iterations, have_trial_hessian;
  int phase, status, iterations, evaluations;
  int solve_fallbacks;  // fast Newton solves that fell back to the SVD-equivalent solve
  double likelihood;
  int requests;  // evaluations the next pass carries: req, then more[0 .. requests - 2]
  EvalRequest req;
  EvalRequest more[kMaxCandidates - 1];
  double cand_step[kMaxCandidates];
};

NDT_HD const EvalRequest& request_at(const SolverState& s, int k) { return k == 0 ? s.req : s.more[k - 1]; }
NDT_HD EvalRequest& request_at(SolverState& s, int k) { return k == 0 ? s.req : s.more[k - 1]; }

// Where the host takes the float angles' sine and cosine. `rounded`, the reference's: the double
// sin/cos rounded to float, which is the correctly rounded value (but for about 2^-29 of angles) on
// every machine and C library. `libm`: this process's sinf/cosf, which PCL's Eigen calls. Before
// 2.41 glibc does not round those correctly (2.36: about 3% of the angles within 0.35 rad
// come out otherwise than the correctly rounded sine), so PCL's own path depends on the C library
// it runs on; `libm` follows it there (ndt_pcl_diff --trig libm shows that this is the difference).
enum class FloatTrig : int { rounded = 0, libm = 1 };
inline FloatTrig& float_trig() {
  static FloatTrig trig = FloatTrig::rounded;
  return trig;
}

// PCL's convertTransform in float, operation for operation as Eigen evaluates
// Translation3f(t) * AngleAxisf(roll, X) * AngleAxisf(pitch, Y) * AngleAxisf(yaw, Z): the NDT
// iterations are ill-conditioned enough (room_tutorial) that one float ulp in the transform moves
// the final pose by centimetres, so the reference reproduces PCL's float matrix bit for bit
// (sin/cos of the float angle: float_trig() above says whose).
// The sine and cosine of one float angle, as float_transform takes them.
NDT_HD void float_angle_sin_cos(float a, float& s, float& c) {
#if defined(__CUDA_ARCH__)
  double sd, cd;  // one argument reduction for both (the device's sin/cos are not glibc's anyway)
  sincos(static_cast<double>(a), &sd, &cd);
  s = static_cast<float>(sd);
  c = static_cast<float>(cd);
#else
  if (float_trig() == FloatTrig::libm) {
    s = sinf(a);
    c = cosf(a);
  } else {
    s = static_cast<float>(sin(static_cast<double>(a)));
    c = static_cast<float>(cos(static_cast<double>(a)));
  }
#endif
}
// The matrix from the angles' sines and cosines (float_angle_sin_cos of x[3..5]) and x[0..2].
NDT_HD void float_transform_from(const float (&s)[3], const float (&c)[3], const double (&x)[6], float (&T)[12]) {
  float R[3][3][3] = {};  // AngleAxis::toRotationMatrix for the unit axes: diagonal (1 - c) + c
  for (int k = 0; k < 3; ++k) {
    const int u = (k + 1) % 3, w = (k + 2) % 3;
    R[k][k][k] = fadd_rn(1.0f - c[k], c[k]);
    R[k][u][u] = c[k];
    R[k][w][w] = c[k];
    R[k][w][u] = s[k];
    R[k][u][w] = -s[k];
  }
  float M[3][3], N[3][3];
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      M[i][j] = fadd_rn(fadd_rn(fmul_rn(R[0][i][0], R[1][0][j]), fmul_rn(R[0][i][1], R[1][1][j])),
                        fmul_rn(R[0][i][2], R[1][2][j]));
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      N[i][j] =
          fadd_rn(fadd_rn(fmul_rn(M[i][0], R[2][0][j]), fmul_rn(M[i][1], R[2][1][j])), fmul_rn(M[i][2], R[2][2][j]));
  for (int r = 0; r < 3; ++r) {
    for (int k = 0; k < 3; ++k) T[r * 4 + k] = N[r][k];
    T[r * 4 + 3] = static_cast<float>(x[r]);
  }
}
NDT_HD void float_transform(const double (&x)[6], float (&T)[12]) {
  float s[3], c[3];
  COMMON_UNROLL  // the three angles' sin/cos are independent: let them overlap
  for (int k = 0; k < 3; ++k) float_angle_sin_cos(static_cast<float>(x[3 + k]), s[k], c[k]);
  float_transform_from(s, c, x, T);
}

// `with_transform` false: T is left to the caller (transform_pending).
NDT_HD void request(EvalRequest& r, const double (&pose)[6], bool hessian, bool with_transform = true) {
  if (with_transform) float_transform(pose, r.T);
  r.transform_pending = !with_transform;
  for (int k = 0; k < 6; ++k) r.pose[k] = pose[k];
  r.need_hessian = hessian;
}
NDT_HD void request(SolverState& s, const double (&pose)[6], bool hessian, bool with_transform = true) {
  s.requests = 1;
  request(s.req, pose, hessian, with_transform);
}

// Starts an alignment from the guess x, y, z, roll, pitch, yaw. Like PCL, the first evaluation
// uses the guess matrix itself and the Euler angles Eigen's eulerAngles(0, 1, 2) reads back from
// it (float), which can be another branch than the angles given (roll in [0, pi]).
NDT_HD void solver_init(SolverState& s, const double (&guess)[6]) {
  float Tg[12];
  float_transform(guess, Tg);
  double mf[3][4];
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c) mf[r][c] = Tg[r * 4 + c];
  double rpy[3];
  common::la::matrix_to_euler_xyz(mf, rpy);
  for (int k = 0; k < 3; ++k) {
    s.p[k] = mf[k][3];
    s.p[3 + k] = static_cast<float>(rpy[k]);
  }
  s.score = 0;
  s.matched = s.pairs = 0;
  s.phase = static_cast<int>(Phase::initial);
  s.status = static_cast<int>(Status::running);
  s.iterations = s.evaluations = 0;
  s.solve_fallbacks = 0;
  s.likelihood = 0;
  s.requests = 1;
  s.have_trial_hessian = 0;
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c) s.req.T[r * 4 + c] = static_cast<float>(mf[r][c]);
  for (int k = 0; k < 6; ++k) s.req.pose[k] = s.p[k];
  s.req.need_hessian = 1;
  s.req.transform_pending = 0;
}

namespace detail {

constexpr double kMu = 1e-4, kNu = 0.9;
constexpr int kMaxStepIterations = 10;

NDT_HD double psi(double a, double f_a, double f_0, double g_0) { return f_a - f_0 - kMu * g_0 * a; }
NDT_HD double dpsi(double g_a, double g_0) { return g_a - kMu * g_0; }

// updateIntervalMT: true when the interval has converged.
NDT_HD bool update_interval(double& a_l, double& f_l, double& g_l, double& a_u, double& f_u, double& g_u, double a_t,
                            double f_t, double g_t) {
  if (f_t > f_l) {
    a_u = a_t;
    f_u = f_t;
    g_u = g_t;
    return false;
  }
  if (g_t * (a_l - a_t) > 0) {
    a_l = a_t;
    f_l = f_t;
    g_l = g_t;
    return false;
  }
  if (g_t * (a_l - a_t) < 0) {
    a_u = a_l;
    f_u = f_l;
    g_u = g_l;
    a_l = a_t;
    f_l = f_t;
    g_l = g_t;
    return false;
  }
  return true;
}

// trialValueSelectionMT: the four endpoint cases of More and Thuente (1994).
NDT_HD double trial_value(double a_l, double f_l, double g_l, double a_u, double f_u, double g_u, double a_t,
                          double f_t, double g_t) {
  if (a_t == a_l && a_t == a_u) return a_t;
  int c;
  if (a_t == a_l)
    c = 4;
  else if (f_t > f_l)
    c = 1;
  else if (g_t * g_l < 0)
    c = 2;
  else if (fabs(g_t) <= fabs(g_l))
    c = 3;
  else
    c = 4;
  if (c == 4) {
    const double z = 3 * (f_t - f_u) / (a_t - a_u) - g_t - g_u;
    const double w = sqrt(z * z - g_t * g_u);
    return a_u + (a_t - a_u) * (w - g_u - z) / (g_t - g_u + 2 * w);
  }
  const double z = 3 * (f_t - f_l) / (a_t - a_l) - g_t - g_l;
  const double w = sqrt(z * z - g_t * g_l);
  const double a_c = a_l + (a_t - a_l) * (w - g_l - z) / (g_t - g_l + 2 * w);
  if (c == 1) {
    const double a_q = a_l - 0.5 * (a_l - a_t) * g_l / (g_l - (f_l - f_t) / (a_l - a_t));
    if (fabs(a_c - a_l) < fabs(a_q - a_l)) return a_c;
    return 0.5 * (a_q + a_c);
  }
  const double a_s = a_l - (a_l - a_t) / (g_l - g_t) * g_l;
  if (c == 2) return fabs(a_c - a_t) >= fabs(a_s - a_t) ? a_c : a_s;
  const double a_t_next = fabs(a_c - a_t) < fabs(a_s - a_t) ? a_c : a_s;
  if (a_t > a_l) return fmin(a_t + 0.66 * (a_u - a_t), a_t_next);
  return fmax(a_t + 0.66 * (a_u - a_t), a_t_next);
}

NDT_HD void finish(SolverState& s, Status st, const SolverConfig& c) {
  s.status = static_cast<int>(st);
  s.phase = static_cast<int>(Phase::done);
  s.likelihood = c.n_points > 0 ? s.score / c.n_points : 0;
}

NDT_HD void take_sums(SolverState& s, const double* sums, bool hessian) {
  s.score = sums[0];
  for (int k = 0; k < 6; ++k) s.grad[k] = sums[kGradient + k];
  if (hessian)
    for (int k = 0; k < 21; ++k) s.hess[k] = sums[kHessian + k];
  s.matched = sums[kNeighbours];
  s.pairs = sums[kPairs];
}

NDT_HD double dot6(const double* a, const double* b) {
  double d = 0;
  for (int k = 0; k < 6; ++k) d += a[k] * b[k];
  return d;
}

NDT_HD void trial_pose(const SolverState& s, double (&x_t)[6]) {
  for (int k = 0; k < 6; ++k) x_t[k] = s.p[k] + s.dir[k] * s.a_t;
}

enum Next : int { kStop = 0, kNewton = 1, kEndIteration = 2 };

// The Newton system H delta = b of a Hessian's 21 sums (the sums' order from kHessian) and a
// gradient: H symmetric, b = -gradient. The evaluation's totals and the state's copy of them give
// the same system through this one function.
NDT_HD void newton_system(const double* hess, const double* grad, double (&H)[6][6], double (&b)[6]) {
  for (int i = 0; i < 6; ++i)
    for (int j = i; j < 6; ++j) H[i][j] = H[j][i] = hess[hess_index(i, j) - kHessian];
  for (int k = 0; k < 6; ++k) b[k] = -grad[k];
}

}  // namespace detail

// The fast solve of the Newton system computed ahead, on the device, by a thread other than the
// solver's, from the same sums while the solver's thread runs the line search (the solve is the
// longest part of the Newton step: ~4,100 of the ~7,400 cycles of a call that ends an
// iteration). The solver, asked to, stops where its next Newton step's Hessian and gradient are
// those sums (solver_advance returns true); after a barrier of the block, solver_resume takes the
// step from this solve. The same function on the same values gives the same bits as the solver's
// own solve would. (A flag in shared memory would spare the barrier, but racecheck does not follow
// a flag: a handoff it cannot check has no place next to its "0 hazards".)
struct NewtonAhead {
  double delta[6];
  int solved;
};
NDT_HD void newton_ahead(const double* sums, NewtonAhead& a) {
  double H[6][6], b[6];
  detail::newton_system(sums + kHessian, sums + kGradient, H, b);
  a.solved = common::la::solve_pivoted<6>(H, b, a.delta, 1e-10);
}

namespace detail {

// The fallback solve, out of line on the device (see NDT_COLD).
NDT_COLD void pinv_solve(const double (&H)[6][6], const double (&b)[6], double (&delta)[6]) {
  common::la::sym_solve_pinv<6>(H, b, delta);
}

// The Newton step and the start of computeStepLengthMT.
// The state's Newton system (the Hessian and gradient of the sums it took last).
NDT_HD void state_system(const SolverState& s, double (&H)[6][6], double (&b)[6]) {
  newton_system(s.hess, s.grad, H, b);
}

NDT_HD int newton_step(SolverState& s, const SolverConfig& c, const NewtonAhead* ahead) {
  double delta[6];
  bool solved = false;
  if (c.fast_solve) {
    // A pivot under 1e-10 of the largest entry: near-singular, the SVD-equivalent solve decides.
    if (ahead) {
      solved = ahead->solved;
      if (solved)
        for (int k = 0; k < 6; ++k) delta[k] = ahead->delta[k];
    } else {
      double H[6][6], b[6];
      state_system(s, H, b);
      solved = common::la::solve_pivoted<6>(H, b, delta, 1e-10);
    }
    if (!solved) ++s.solve_fallbacks;
  }
  if (!solved) {
    double H[6][6], b[6];
    state_system(s, H, b);
    pinv_solve(H, b, delta);
  }
  double norm = 0;
  for (int k = 0; k < 6; ++k) norm += delta[k] * delta[k];
  norm = sqrt(norm);
  if (norm == 0 || norm != norm) {
    finish(s, norm == 0 ? Status::converged : Status::numerical, c);
    return kStop;
  }
#if defined(__CUDA_ARCH__)
  const double inv_norm = 1 / norm;  // one division instead of six in the device's one thread
  for (int k = 0; k < 6; ++k) s.dir[k] = delta[k] * inv_norm;
#else
  for (int k = 0; k < 6; ++k) s.dir[k] = delta[k] / norm;  // as PCL's normalize
#endif
  s.phi_0 = -s.score;
  s.d_phi_0 = -dot6(s.grad, s.dir);
  if (s.d_phi_0 >= 0) {
    if (s.d_phi_0 == 0) {  // not a descent direction: PCL takes a zero step
      s.a_t = 0;
      return kEndIteration;
    }
    s.d_phi_0 = -s.d_phi_0;
    for (int k = 0; k < 6; ++k) s.dir[k] = -s.dir[k];
  }
  s.a_l = s.a_u = 0;
  s.f_l = s.f_u = psi(0, s.phi_0, s.phi_0, s.d_phi_0);
  s.g_l = s.g_u = dpsi(s.d_phi_0, s.d_phi_0);
  const double step_max = c.step_size, step_min = c.epsilon / 2;
  s.interval_converged = (step_max - step_min) < 0;
  s.open_interval = 1;
  s.step_iterations = 0;
  s.a_t = fmax(fmin(norm, step_max), step_min);
  if (c.candidates > 1) {  // the parallel line search: all candidates in one pass
    const int K = c.candidates < kMaxCandidates ? c.candidates : kMaxCandidates;
    const double a0 = s.a_t;
    for (int k = 0; k < K; ++k) {
      // PCL's first trial, then halvings; the last one a longer step when the first is not
      // already at the maximum (where More-Thuente would extrapolate).
      double a = a0 * pow(0.5, k);
      if (k == K - 1 && k > 0 && a0 < step_max) a = fmin(4 * a0, step_max);
      s.cand_step[k] = fmax(a, step_min);
      double x_k[6];
      for (int i = 0; i < 6; ++i) x_k[i] = s.p[i] + s.dir[i] * s.cand_step[k];
      request(request_at(s, k), x_k, true, !c.defer_transform);
    }
    s.requests = K;
    s.phase = static_cast<int>(Phase::parallel_trial);
    return kStop;
  }
  double x_t[6];
  trial_pose(s, x_t);
  request(s, x_t, true, !c.defer_transform);
  s.phase = static_cast<int>(Phase::first_trial);
  return kStop;
}

// The choice of the parallel line search among the candidates evaluated in one pass (`sums`:
// kSums per candidate): the first trial when PCL's own test (sufficient decrease and curvature)
// accepts it, so the path is PCL's wherever PCL takes its first trial; else the longest
// accepted step; else the best score among the steps with sufficient decrease; else the best.
NDT_HD int choose_candidate(const SolverState& s, const double* sums) {
  int accepted = -1, decrease = -1, best = 0;
  double best_phi = 0, decrease_phi = 0;
  for (int k = 0; k < s.requests; ++k) {
    const double* sk = sums + k * kSums;
    const double phi = -sk[0], d_phi = -dot6(sk + kGradient, s.dir);
    const double psi_k = psi(s.cand_step[k], phi, s.phi_0, s.d_phi_0);
    if (psi_k <= 0 && d_phi <= -kNu * s.d_phi_0) {
      if (k == 0) return 0;
      if (accepted < 0 || s.cand_step[k] > s.cand_step[accepted]) accepted = k;
    }
    if (psi_k <= 0 && (decrease < 0 || phi < decrease_phi)) {
      decrease = k;
      decrease_phi = phi;
    }
    if (k == 0 || phi < best_phi) {
      best = k;
      best_phi = phi;
    }
  }
  return accepted >= 0 ? accepted : decrease >= 0 ? decrease : best;
}

NDT_HD void trial_values(SolverState& s) {
  s.phi_t = -s.score;
  s.d_phi_t = -dot6(s.grad, s.dir);
  s.psi_t = psi(s.a_t, s.phi_t, s.phi_0, s.d_phi_0);
  s.d_psi_t = dpsi(s.d_phi_t, s.d_phi_0);
}

// The loop condition of computeStepLengthMT, then either the next trial or the end of it.
NDT_HD int line_search_next(SolverState& s, const SolverConfig& c) {
  if (!s.interval_converged && s.step_iterations < kMaxStepIterations &&
      !(s.psi_t <= 0 && s.d_phi_t <= -kNu * s.d_phi_0)) {
    if (s.open_interval)
      s.a_t = trial_value(s.a_l, s.f_l, s.g_l, s.a_u, s.f_u, s.g_u, s.a_t, s.psi_t, s.d_psi_t);
    else
      s.a_t = trial_value(s.a_l, s.f_l, s.g_l, s.a_u, s.f_u, s.g_u, s.a_t, s.phi_t, s.d_phi_t);
    s.a_t = fmax(fmin(s.a_t, c.step_size), c.epsilon / 2);
    double x_t[6];
    trial_pose(s, x_t);
    request(s, x_t, false, !c.defer_transform);
    s.phase = static_cast<int>(Phase::extra_trial);
    return kStop;
  }
  if (s.step_iterations && !s.have_trial_hessian) {  // PCL's computeHessian at the last trial
    s.req.need_hessian = 1;
    s.phase = static_cast<int>(Phase::hessian_only);
    return kStop;
  }
  return kEndIteration;
}

NDT_HD int end_iteration(SolverState& s, const SolverConfig& c, TraceRow* trace) {
  float t2 = 0;
  for (int k = 0; k < 6; ++k) {
    const double d = s.dir[k] * s.a_t;
    if (k < 3) t2 += static_cast<float>(d) * static_cast<float>(d);
    s.p[k] += d;
  }
  ++s.iterations;
  if (trace) {
    TraceRow& r = trace[s.iterations];
    for (int k = 0; k < 6; ++k) r.pose[k] = s.p[k];
    r.score = s.score;
    r.step = s.a_t;
    r.neighbours = s.matched;
    r.pairs = s.pairs;
  }
  if (c.epsilon > 0 && t2 <= c.epsilon) {
    finish(s, Status::converged, c);
    return kStop;
  }
  if (s.iterations >= c.max_iterations) {
    finish(s, Status::max_iterations, c);
    return kStop;
  }
  return kNewton;
}

// Runs the chained steps (a zero step ends an iteration at once, an iteration starts the next
// Newton step) without recursion, so the device code needs no call stack.
// `ahead`: the Newton system's solve from the state's Hessian and gradient, or null. `defer`:
// stops before the first Newton step instead (returns true; solver_resume takes it).
NDT_HD bool run_steps(SolverState& s, const SolverConfig& c, TraceRow* trace, int next,
                      const NewtonAhead* ahead = nullptr, bool defer = false) {
  for (; next != kStop; next = next == kNewton ? newton_step(s, c, ahead) : end_iteration(s, c, trace))
    if (next == kNewton && defer) return true;
  return false;
}

}  // namespace detail

// Consumes the sums of the evaluation last requested (`with_hessian`: the Hessian sums are
// there, whether or not they were asked for; s.requests x kSums values when a pass carried
// several candidates) and prepares the next request or finishes. `trace`
// (max_iterations + 1 rows, nullable) receives row 0 at the guess and one row per iteration.
// `defer_newton` (the device's solve ahead, NewtonAhead): where the next Newton step solves the
// system of `sums` (of the first candidate's), stops before it and returns true; the caller then
// passes newton_ahead(sums) to solver_resume. Otherwise (and always without defer_newton) the call
// does all of its work and returns false.
NDT_HD bool solver_advance(SolverState& s, const SolverConfig& c, const double* sums, bool with_hessian,
                           TraceRow* trace, bool defer_newton = false) {
  using namespace detail;
  ++s.evaluations;
  switch (static_cast<Phase>(s.phase)) {
    case Phase::initial:
      take_sums(s, sums, true);
      if (trace) {
        TraceRow& r = trace[0];
        for (int k = 0; k < 6; ++k) r.pose[k] = s.p[k];
        r.score = s.score;
        r.step = 0;
        r.neighbours = s.matched;
        r.pairs = s.pairs;
      }
      if (s.matched == 0) {  // PCL would report "converged" with a zero step: say why instead
        finish(s, Status::no_correspondences, c);
        return false;
      }
      return run_steps(s, c, trace, kNewton, nullptr, defer_newton);
    case Phase::first_trial:
      take_sums(s, sums, true);
      s.have_trial_hessian = 1;
      trial_values(s);
      return run_steps(s, c, trace, line_search_next(s, c), nullptr, defer_newton);
    case Phase::extra_trial:
      take_sums(s, sums, with_hessian);
      s.have_trial_hessian = with_hessian;
      trial_values(s);
      if (s.open_interval && (s.psi_t <= 0 && s.d_psi_t >= 0)) {
        s.open_interval = 0;
        s.f_l += s.phi_0 - kMu * s.d_phi_0 * s.a_l;
        s.g_l += kMu * s.d_phi_0;
        s.f_u += s.phi_0 - kMu * s.d_phi_0 * s.a_u;
        s.g_u += kMu * s.d_phi_0;
      }
      if (s.open_interval)
        s.interval_converged = update_interval(s.a_l, s.f_l, s.g_l, s.a_u, s.f_u, s.g_u, s.a_t, s.psi_t, s.d_psi_t);
      else
        s.interval_converged = update_interval(s.a_l, s.f_l, s.g_l, s.a_u, s.f_u, s.g_u, s.a_t, s.phi_t, s.d_phi_t);
      ++s.step_iterations;
      return run_steps(s, c, trace, line_search_next(s, c), nullptr, defer_newton && with_hessian);
    case Phase::parallel_trial: {
      const int k = choose_candidate(s, sums);
      take_sums(s, sums + k * kSums, true);
      s.a_t = s.cand_step[k];
      s.requests = 1;
      return run_steps(s, c, trace, kEndIteration, nullptr, defer_newton && k == 0);
    }
    case Phase::hessian_only:
      for (int k = 0; k < 21; ++k) s.hess[k] = sums[kHessian + k];
      s.have_trial_hessian = 1;
      return run_steps(s, c, trace, kEndIteration);
    case Phase::done: return false;
  }
  return false;
}

// The Newton step solver_advance deferred, from `ahead` (newton_ahead of the sums it was given),
// and the steps that follow it.
NDT_HD void solver_resume(SolverState& s, const SolverConfig& c, TraceRow* trace, const NewtonAhead& ahead) {
  detail::run_steps(s, c, trace, detail::kNewton, &ahead);
}

NDT_HD bool solver_done(const SolverState& s) { return s.phase == static_cast<int>(Phase::done); }

}  // namespace ndt
