// Small dense linear algebra that runs the same on the host and in a kernel: fixed-size symmetric
// eigen-decomposition (cyclic Jacobi), the SVD-equivalent least-squares solve of a symmetric
// system (pseudo-inverse with Eigen's JacobiSVD rank threshold), 3x3 inverse and rigid transforms.
// Used by ndt_graph's voxel statistics and Newton step on both sides, so the CPU reference and the
// GPU kernels run the same arithmetic.
#pragma once
#include <cmath>
#include <cfloat>

#if defined(__CUDACC__)
#define COMMON_HD __host__ __device__ __forceinline__
#define COMMON_UNROLL _Pragma("unroll")
#else
#define COMMON_HD inline
#define COMMON_UNROLL
#endif

namespace common {
namespace la {

// Symmetric N x N matrix `a` (row-major, overwritten) -> eigenvalues `w` ascending and
// eigenvectors as the columns of `v`. Cyclic Jacobi: robust for the tiny matrices here (3x3 voxel
// covariances, 6x6 Newton Hessians), and exact zeros stay zero.
template <int N>
COMMON_HD void sym_eigen(double (&a)[N][N], double (&w)[N], double (&v)[N][N]) {
  COMMON_UNROLL
  for (int i = 0; i < N; ++i) {
    COMMON_UNROLL
    for (int j = 0; j < N; ++j) v[i][j] = i == j ? 1.0 : 0.0;
  }
  for (int sweep = 0; sweep < 64; ++sweep) {
    double off = 0, diag = 0;
    COMMON_UNROLL
    for (int i = 0; i < N; ++i) {
      diag += a[i][i] * a[i][i];
      COMMON_UNROLL
      for (int j = i + 1; j < N; ++j) off += a[i][j] * a[i][j];
    }
    if (off == 0 || off <= 1e-34 * diag) break;
    // Unrolled so every index is a compile-time constant: the matrices stay in registers when
    // this runs in one GPU thread instead of going through local memory.
    COMMON_UNROLL
    for (int p = 0; p < N; ++p) {
      COMMON_UNROLL
      for (int q = p + 1; q < N; ++q) {
        if (a[p][q] == 0) continue;
        const double theta = (a[q][q] - a[p][p]) / (2 * a[p][q]);
        const double t = (theta >= 0 ? 1.0 : -1.0) / (fabs(theta) + sqrt(theta * theta + 1));
        const double c = 1 / sqrt(t * t + 1), s = t * c;
        COMMON_UNROLL
        for (int k = 0; k < N; ++k) {  // A <- A J
          const double akp = a[k][p], akq = a[k][q];
          a[k][p] = c * akp - s * akq;
          a[k][q] = s * akp + c * akq;
        }
        COMMON_UNROLL
        for (int k = 0; k < N; ++k) {  // A <- J^T A
          const double apk = a[p][k], aqk = a[q][k];
          a[p][k] = c * apk - s * aqk;
          a[q][k] = s * apk + c * aqk;
        }
        COMMON_UNROLL
        for (int k = 0; k < N; ++k) {
          const double vkp = v[k][p], vkq = v[k][q];
          v[k][p] = c * vkp - s * vkq;
          v[k][q] = s * vkp + c * vkq;
        }
      }
    }
  }
  for (int i = 0; i < N; ++i) w[i] = a[i][i];
  // Ascending, columns of v following: a stable bubble sort with constant indices (registers on
  // the device), the same permutation an insertion sort gives.
  COMMON_UNROLL
  for (int i = 0; i < N - 1; ++i) {
    COMMON_UNROLL
    for (int j = 0; j < N - 1 - i; ++j) {
      if (w[j] > w[j + 1]) {
        const double tw = w[j];
        w[j] = w[j + 1];
        w[j + 1] = tw;
        COMMON_UNROLL
        for (int k = 0; k < N; ++k) {
          const double tv = v[k][j];
          v[k][j] = v[k][j + 1];
          v[k][j + 1] = tv;
        }
      }
    }
  }
}

// Minimum-norm least-squares solution of the symmetric system A x = b, as Eigen's
// JacobiSVD::solve computes it: singular values (|eigenvalues| here) at or below
// N * DBL_EPSILON * the largest are treated as zero. Returns the numerical rank.
template <int N>
COMMON_HD int sym_solve_pinv(const double (&a_in)[N][N], const double (&b)[N], double (&x)[N]) {
  double a[N][N], w[N], v[N][N];
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j) a[i][j] = 0.5 * (a_in[i][j] + a_in[j][i]);
  sym_eigen<N>(a, w, v);
  double wmax = 0;
  for (int i = 0; i < N; ++i) wmax = fmax(wmax, fabs(w[i]));
  const double threshold = wmax * N * DBL_EPSILON;
  int rank = 0;
  COMMON_UNROLL
  for (int i = 0; i < N; ++i) x[i] = 0;
  COMMON_UNROLL
  for (int k = 0; k < N; ++k) {
    if (!(fabs(w[k]) > threshold)) continue;
    ++rank;
    double proj = 0;
    COMMON_UNROLL
    for (int i = 0; i < N; ++i) proj += v[i][k] * b[i];
    proj /= w[k];
    COMMON_UNROLL
    for (int i = 0; i < N; ++i) x[i] += proj * v[i][k];
  }
  return rank;
}

// Solves A x = b by Gaussian elimination with partial pivoting, fully unrolled (row swaps as
// conditional swaps with constant indices) so it stays in registers in one GPU thread: ~N^3/3
// multiply-adds instead of a Jacobi eigen-decomposition's sweeps. Returns false, leaving x
// unwritten, when a pivot falls below `min_pivot_ratio` x the largest |entry| of A: near-singular
// systems are left to sym_solve_pinv, whose rank threshold this does not reproduce.
// The largest |entry| is a tree of fmax (depth log2(N*N), not a chain of N*N), and the pivots are
// checked against it after the elimination, not before each step: no branch and no wait on the
// elimination's chain. The elimination is the same either way (a pivot that fails the test only
// decides the return value), so x is the same bits as with the checks in the loop. Measured (one
// H100 thread, clock64, N = 6): 2,468 -> 1,829 cycles; a chain of 36 fmax alone takes 1,184 (a
// double compare and select, ~33 cycles each), six dependent reciprocals 398, 36 dependent
// multiply-adds 282.
template <int N>
COMMON_HD bool solve_pivoted(const double (&a_in)[N][N], const double (&b_in)[N], double (&x)[N],
                             double min_pivot_ratio) {
  double a[N][N], b[N], inv_pivot[N], best_of[N], m[N * N];
  COMMON_UNROLL
  for (int i = 0; i < N; ++i) {
    b[i] = b_in[i];
    COMMON_UNROLL
    for (int j = 0; j < N; ++j) {
      a[i][j] = a_in[i][j];
      m[i * N + j] = fabs(a[i][j]);
    }
  }
  // fmax ignores a NaN unless both are: the tree gives the same largest entry as a chain from 0
  // (NaN only where every entry is NaN, 0 in the chain; both fail the test below)
  COMMON_UNROLL
  for (int w = 1; w < N * N; w *= 2) {
    COMMON_UNROLL
    for (int i = 0; i + w < N * N; i += 2 * w) m[i] = fmax(m[i], m[i + w]);
  }
  const double amax = m[0];
  COMMON_UNROLL
  for (int j = 0; j < N; ++j) {
    double best = fabs(a[j][j]);
    int p = j;
    COMMON_UNROLL
    for (int r = j + 1; r < N; ++r)
      if (fabs(a[r][j]) > best) {
        best = fabs(a[r][j]);
        p = r;
      }
    best_of[j] = best;
    COMMON_UNROLL
    for (int r = j + 1; r < N; ++r)
      if (r == p) {
        COMMON_UNROLL
        for (int c = j; c < N; ++c) {
          const double t = a[j][c];
          a[j][c] = a[r][c];
          a[r][c] = t;
        }
        const double t = b[j];
        b[j] = b[r];
        b[r] = t;
      }
    const double inv = 1 / a[j][j];
    inv_pivot[j] = inv;
    COMMON_UNROLL
    for (int r = j + 1; r < N; ++r) {
      const double f = a[r][j] * inv;
      COMMON_UNROLL
      for (int c = j + 1; c < N; ++c) a[r][c] -= f * a[j][c];
      b[r] -= f * b[j];
    }
  }
  bool ok = amax > 0 && amax < INFINITY;
  COMMON_UNROLL
  for (int j = 0; j < N; ++j) ok = ok && best_of[j] > min_pivot_ratio * amax;
  if (!ok) return false;
  COMMON_UNROLL
  for (int i = N - 1; i >= 0; --i) {
    double t = b[i];
    COMMON_UNROLL
    for (int c = i + 1; c < N; ++c) t -= a[i][c] * x[c];
    // times the pivot's reciprocal from the elimination, not a division on this chain
    x[i] = t * inv_pivot[i];
  }
  return true;
}

// 3x3 inverse by cofactors; returns the determinant (0: the result is not written).
COMMON_HD double inverse3(const double (&m)[3][3], double (&inv)[3][3]) {
  const double c00 = m[1][1] * m[2][2] - m[1][2] * m[2][1];
  const double c01 = m[1][2] * m[2][0] - m[1][0] * m[2][2];
  const double c02 = m[1][0] * m[2][1] - m[1][1] * m[2][0];
  const double det = m[0][0] * c00 + m[0][1] * c01 + m[0][2] * c02;
  if (det == 0) return 0;
  const double r = 1 / det;
  inv[0][0] = c00 * r;
  inv[1][0] = c01 * r;
  inv[2][0] = c02 * r;
  inv[0][1] = (m[0][2] * m[2][1] - m[0][1] * m[2][2]) * r;
  inv[1][1] = (m[0][0] * m[2][2] - m[0][2] * m[2][0]) * r;
  inv[2][1] = (m[0][1] * m[2][0] - m[0][0] * m[2][1]) * r;
  inv[0][2] = (m[0][1] * m[1][2] - m[0][2] * m[1][1]) * r;
  inv[1][2] = (m[0][2] * m[1][0] - m[0][0] * m[1][2]) * r;
  inv[2][2] = (m[0][0] * m[1][1] - m[0][1] * m[1][0]) * r;
  return det;
}

// Rigid transform from x, y, z, roll, pitch, yaw as T = Translation * Rx(roll) * Ry(pitch) *
// Rz(yaw) (PCL's and the NDT literature's convention). Row-major 3x4 [R | t].
COMMON_HD void pose_to_matrix(const double (&p)[6], double (&m)[3][4]) {
  const double cx = cos(p[3]), sx = sin(p[3]), cy = cos(p[4]), sy = sin(p[4]), cz = cos(p[5]), sz = sin(p[5]);
  m[0][0] = cy * cz;
  m[0][1] = -cy * sz;
  m[0][2] = sy;
  m[1][0] = cx * sz + sx * sy * cz;
  m[1][1] = cx * cz - sx * sy * sz;
  m[1][2] = -sx * cy;
  m[2][0] = sx * sz - cx * sy * cz;
  m[2][1] = sx * cz + cx * sy * sz;
  m[2][2] = cx * cy;
  m[0][3] = p[0];
  m[1][3] = p[1];
  m[2][3] = p[2];
}

// Euler angles (roll, pitch, yaw) of R = Rx Ry Rz on the branch Eigen's eulerAngles(0, 1, 2)
// returns (roll in [0, pi]), which is how PCL's NDT turns a guess matrix into its 6-vector.
COMMON_HD void matrix_to_euler_xyz(const double (&m)[3][4], double (&rpy)[3]) {
  const double pi = 3.14159265358979323846;
  double r0 = atan2(m[1][2], m[2][2]), r1;
  const double c2 = sqrt(m[0][0] * m[0][0] + m[0][1] * m[0][1]);
  if (r0 > 0) {
    r0 -= pi;
    r1 = atan2(-m[0][2], -c2);
  } else {
    r1 = atan2(-m[0][2], c2);
  }
  const double s1 = sin(r0), c1 = cos(r0);
  const double r2 = atan2(s1 * m[2][0] - c1 * m[1][0], c1 * m[1][1] - s1 * m[2][1]);
  rpy[0] = -r0;
  rpy[1] = -r1;
  rpy[2] = -r2;
}

}  // namespace la
}  // namespace common
