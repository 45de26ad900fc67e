// The arithmetic of one NDT evaluation, written once for the CPU reference and the GPU kernels
// (host + device): the voxel lookup, PCL's angular derivatives (Magnusson 2009, eq. 6.19/6.21) and
// the score/gradient/Hessian contribution of one (point, voxel) pair (eq. 6.9-6.13), including
// the pairs PCL skips. Everything is float64 except the transformed point, which PCL computes in
// float (its Matrix4f transform) and the neighbour distance test (FLANN's float L2).
#pragma once
#include <cmath>
#include <cstdint>

#include "common/linalg.hpp"

namespace ndt {

// Float add/multiply that are never fused into an FMA (nvcc contracts by default; the host
// build uses -ffp-contract=off), so the CPU reference and the kernels round identically.
COMMON_HD float fadd_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
COMMON_HD float fmul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
COMMON_HD float fsub_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}

// The 30 sums one evaluation produces: score, gradient (6), the Hessian's upper triangle (21,
// row by row), neighbour (point, voxel) pairs found, and the pairs that contributed (PCL skips a
// pair whose scaled exponential is outside [0, 1]).
constexpr int kGradient = 1, kHessian = 7, kNeighbours = 28, kPairs = 29, kSums = 30;
COMMON_HD int hess_index(int i, int j) {  // i <= j
  return kHessian + i * 6 - i * (i - 1) / 2 + (j - i);
}

enum class Search : int { radius = 0, direct7 = 1, direct1 = 2 };

// A target voxel as PCL's VoxelGridCovariance keeps it: every voxel with >= 6 points is
// searchable (its float centroid sits in PCL's kd-tree); `valid` is 0 when PCL marked it invalid
// (nr_points = -1: a negative or zero eigenvalue), its inverse covariance then stays zero.
struct Voxel {
  double mean[3];
  double icov[6];  // xx xy xz yy yz zz
  float centroid[3];
  int points;
  int valid;
};

// Cell coordinates of the hash key: 21 bits per axis, offset so negatives fit.
constexpr int kCellBias = 1 << 20;
constexpr std::uint64_t kEmptyKey = ~std::uint64_t(0);
COMMON_HD bool cell_in_range(long long i) { return i > -kCellBias + 1 && i < kCellBias - 2; }
COMMON_HD std::uint64_t cell_key(int ix, int iy, int iz) {
  return (std::uint64_t(ix + kCellBias) << 42) | (std::uint64_t(iy + kCellBias) << 21) | std::uint64_t(iz + kCellBias);
}
// The home slot of a cell key: a 64-bit mixer (every key bit reaches every slot bit), masked to
// the table. The first version kept bits 29.. of key * 0x9E3779B97F4A7C15, which depend only on
// the key's bits below them: x (bits 42..62) never moved a slot, so each row of cells along x
// shared one home slot and the linear probes walked runs of ~20 slots (measured on the H200: an
// evaluation of room_tutorial took 23 us; with this mixer, see the README).
COMMON_HD std::uint32_t hash_slot(std::uint64_t key, std::uint64_t mask) {
  key ^= key >> 32;
  key *= 0xd6e8feb86659fd93ull;
  key ^= key >> 32;
  key *= 0xd6e8feb86659fd93ull;
  key ^= key >> 32;
  return static_cast<std::uint32_t>(key & mask);
}

// One slot of the cell hash: the cell's key, its voxel, and what the neighbour search tests
// (centroid, valid) in the same 32 bytes, so a probe that hits reads one slot (its loads issue
// together) instead of a key, then a voxel index, then the voxel: on the H200 the three dependent
// loads were the largest stall of the evaluation. Free slots hold kEmptyKey and voxel -1.
struct alignas(32) CellSlot {
  std::uint64_t key;
  int voxel;
  int valid;
  float centroid[3];
  float unused;
};

COMMON_HD CellSlot empty_slot() { return CellSlot{kEmptyKey, -1, 0, {0, 0, 0}, 0}; }
COMMON_HD void fill_slot(CellSlot& s, std::uint64_t key, int voxel, const Voxel& v) {
  s.key = key;
  s.voxel = voxel;
  s.valid = v.valid;
  for (int k = 0; k < 3; ++k) s.centroid[k] = v.centroid[k];
  s.unused = 0;
}

// A dense index of the map's cells over their bounding box, one cell of margin on every side: what
// the GPU evaluation probes instead of the hash where the box is small enough. A probe is one
// 16-byte load at an address computed from the cell, with no chain of linear probing behind it;
// neighbouring cells along x are neighbours in memory. `voxel`: the voxel's index with its valid
// flag in bit 30, or -1 for a cell without a voxel.
struct alignas(16) GridCell {
  int voxel;
  float centroid[3];
};
constexpr int kGridValidBit = 1 << 30;
struct CellGrid {
  const GridCell* cells = nullptr;
  int x0 = 0, y0 = 0, z0 = 0, nx = 0, ny = 0, nz = 0;  // nx = 0: no grid (the hash is probed)
};
// The cell of a key (cell_key's inverse).
COMMON_HD void key_cell(std::uint64_t key, int& ix, int& iy, int& iz) {
  ix = static_cast<int>((key >> 42) & 0x1fffff) - kCellBias;
  iy = static_cast<int>((key >> 21) & 0x1fffff) - kCellBias;
  iz = static_cast<int>(key & 0x1fffff) - kCellBias;
}
// The index of cell (ix, iy, iz) in the grid, or -1 outside its box.
COMMON_HD long long grid_index(const CellGrid& g, int ix, int iy, int iz) {
  const int x = ix - g.x0, y = iy - g.y0, z = iz - g.z0;
  if (x < 0 || y < 0 || z < 0 || x >= g.nx || y >= g.ny || z >= g.nz) return -1;
  return (static_cast<long long>(z) * g.ny + y) * g.nx + x;
}

// What a kernel or the CPU needs to search the map: open-addressing hash (linear probing) from
// a cell key to its slot; for the GPU evaluation also the dense grid of the cells (in device
// memory, its box read by the kernel: a map moved by --fresh-inputs keeps the same view), or null.
struct MapView {
  const Voxel* voxels = nullptr;
  const CellSlot* table = nullptr;
  std::uint64_t mask = 0;  // table size - 1 (a power of two)
  float resolution = 1.f, inv_resolution = 1.f;
  Search search = Search::radius;
  const CellGrid* grid = nullptr;
};

// The view of a map held anywhere (host vectors or device buffers): `table_size` hash slots.
inline MapView map_view(const Voxel* voxels, const CellSlot* table, std::size_t table_size, float resolution,
                        Search search) {
  MapView m;
  m.voxels = voxels;
  m.table = table;
  m.mask = table_size - 1;
  m.resolution = resolution;
  m.inv_resolution = 1.0f / resolution;
  m.search = search;
  return m;
}

// The slot holding `key`, probing linearly from slot `from`, or nullptr when no voxel has that cell.
COMMON_HD const CellSlot* find_slot_from(const MapView& m, std::uint64_t key, std::uint32_t from) {
  for (std::uint32_t s = from;; s = (s + 1) & static_cast<std::uint32_t>(m.mask)) {
    const CellSlot& slot = m.table[s];
    if (slot.key == key) return &slot;
    if (slot.key == kEmptyKey) return nullptr;
  }
}
// The slot of cell (ix, iy, iz), or nullptr when no voxel has that cell.
COMMON_HD const CellSlot* find_slot(const MapView& m, int ix, int iy, int iz) {
  const std::uint64_t key = cell_key(ix, iy, iz);
  return find_slot_from(m, key, hash_slot(key, m.mask));
}
COMMON_HD int find_voxel(const MapView& m, int ix, int iy, int iz) {
  const CellSlot* s = find_slot(m, ix, iy, iz);
  return s ? s->voxel : -1;
}

// Number of candidate cells per point in a search mode.
COMMON_HD int cells_per_point(Search s) { return s == Search::radius ? 27 : s == Search::direct7 ? 7 : 1; }

// The cell of a transformed (float) point; false when it lies far outside any map (or is not
// finite): then it has no neighbours.
COMMON_HD bool point_cell(const MapView& m, float px, float py, float pz, int& ix, int& iy, int& iz) {
  const float fx = floorf(px * m.inv_resolution), fy = floorf(py * m.inv_resolution),
              fz = floorf(pz * m.inv_resolution);
  if (!(fabsf(fx) < 2e6f && fabsf(fy) < 2e6f && fabsf(fz) < 2e6f) || !cell_in_range(static_cast<long long>(fx)) ||
      !cell_in_range(static_cast<long long>(fy)) || !cell_in_range(static_cast<long long>(fz)))
    return false;
  ix = static_cast<int>(fx);
  iy = static_cast<int>(fy);
  iz = static_cast<int>(fz);
  return true;
}

// The key of candidate cell `c` (0 .. cells_per_point - 1) of a point in cell (ix, iy, iz): radius
// = the 27 surrounding cells (x slowest), direct7 = the cell and its 6 face neighbours, direct1 =
// the cell itself.
COMMON_HD void candidate_cell(Search search, int ix, int iy, int iz, int c, int& cx, int& cy, int& cz) {
  if (search == Search::radius) {
    cx = ix + c / 9 - 1, cy = iy + (c / 3) % 3 - 1, cz = iz + c % 3 - 1;
    return;
  }
  cx = ix + (c == 1   ? -1
             : c == 2 ? 1
                      : 0),
  cy = iy + (c == 3   ? -1
             : c == 4 ? 1
                      : 0),
  cz = iz + (c == 5   ? -1
             : c == 6 ? 1
                      : 0);
}
COMMON_HD std::uint64_t candidate_key(Search search, int ix, int iy, int iz, int c) {
  int cx, cy, cz;
  candidate_cell(search, ix, iy, iz, c, cx, cy, cz);
  return cell_key(cx, cy, cz);
}

// The neighbour voxel a candidate cell's slot (nullptr: no voxel there) gives the point, or -1:
// radius = centroid within `resolution` (what PCL 1.13's kd-tree returns, invalid voxels included
// as PCL includes them); direct = a valid voxel (as PCL's getNeighborhoodAtPoint* return).
COMMON_HD int neighbour_of_slot(const MapView& m, const CellSlot& s, float px, float py, float pz) {
  if (m.search != Search::radius) return s.valid ? s.voxel : -1;
  const float ex = fsub_rn(px, s.centroid[0]), ey = fsub_rn(py, s.centroid[1]), ez = fsub_rn(pz, s.centroid[2]);
  const float d2 = fadd_rn(fadd_rn(fmul_rn(ex, ex), fmul_rn(ey, ey)), fmul_rn(ez, ez));
  return d2 < fmul_rn(m.resolution, m.resolution) ? s.voxel : -1;
}
COMMON_HD int neighbour_of_slot(const MapView& m, const CellSlot* s, float px, float py, float pz) {
  return s ? neighbour_of_slot(m, *s, px, py, pz) : -1;
}

// The neighbour voxel in candidate cell `c` of the point (px, py, pz) whose cell is (ix, iy, iz),
// or -1, in the search mode's sense (candidate_key, neighbour_of_slot). Split by cell so a kernel
// can give each (point, cell) pair its own thread.
COMMON_HD int neighbour_in_cell(const MapView& m, float px, float py, float pz, int ix, int iy, int iz, int c) {
  const std::uint64_t key = candidate_key(m.search, ix, iy, iz, c);
  return neighbour_of_slot(m, find_slot_from(m, key, hash_slot(key, m.mask)), px, py, pz);
}

// Calls f(voxel_index) for every neighbour voxel of the (transformed, float) point, cell by cell.
template <typename F>
COMMON_HD void for_each_neighbour(const MapView& m, float px, float py, float pz, F&& f) {
  int ix, iy, iz;
  if (!point_cell(m, px, py, pz, ix, iy, iz)) return;
  const int cells = cells_per_point(m.search);
  for (int c = 0; c < cells; ++c) {
    const int v = neighbour_in_cell(m, px, py, pz, ix, iy, iz, c);
    if (v >= 0) f(v);
  }
}

// PCL's angular Jacobian rows a..h and Hessian rows a2..f3 (first three columns; the fourth is
// multiplied by the point's w = 0). Angles under 1e-4 use cos = 1, sin = 0 as PCL does.
struct AngleDerivatives {
  double j[8][3];
  double h[15][3];
};

// Cosine and sine of one of the pose's angles, as PCL takes them.
COMMON_HD void angle_cos_sin(double angle, double& c, double& s) {
  if (fabs(angle) < 10e-5) {
    c = 1.0;
    s = 0.0;
  } else {
#if defined(__CUDA_ARCH__)
    sincos(angle, &s, &c);
#else
    c = cos(angle);
    s = sin(angle);
#endif
  }
}

// The rows from the cosines and sines of roll, pitch, yaw (a kernel computes those three in
// parallel threads).
COMMON_HD void angle_derivatives_from(const double (&c)[3], const double (&s)[3], AngleDerivatives& a) {
  const double cx = c[0], cy = c[1], cz = c[2], sx = s[0], sy = s[1], sz = s[2];
  const double J[8][3] = {{-sx * sz + cx * sy * cz, -sx * cz - cx * sy * sz, -cx * cy},
                          {cx * sz + sx * sy * cz, cx * cz - sx * sy * sz, -sx * cy},
                          {-sy * cz, sy * sz, cy},
                          {sx * cy * cz, -sx * cy * sz, sx * sy},
                          {-cx * cy * cz, cx * cy * sz, -cx * sy},
                          {-cy * sz, -cy * cz, 0},
                          {cx * cz - sx * sy * sz, -cx * sz - sx * sy * cz, 0},
                          {sx * cz + cx * sy * sz, cx * sy * cz - sx * sz, 0}};
  const double H[15][3] = {{-cx * sz - sx * sy * cz, -cx * cz + sx * sy * sz, sx * cy},
                           {-sx * sz + cx * sy * cz, -cx * sy * sz - sx * cz, -cx * cy},
                           {cx * cy * cz, -cx * cy * sz, cx * sy},
                           {sx * cy * cz, -sx * cy * sz, sx * sy},
                           {-sx * cz - cx * sy * sz, sx * sz - cx * sy * cz, 0},
                           {cx * cz - sx * sy * sz, -sx * sy * cz - cx * sz, 0},
                           {-cy * cz, cy * sz, -sy},
                           {-sx * sy * cz, sx * sy * sz, sx * cy},
                           {cx * sy * cz, -cx * sy * sz, -cx * cy},
                           {sy * sz, sy * cz, 0},
                           {-sx * cy * sz, -sx * cy * cz, 0},
                           {cx * cy * sz, cx * cy * cz, 0},
                           {-cy * cz, cy * sz, 0},
                           {-cx * sz - sx * sy * cz, -cx * cz + sx * sy * sz, 0},
                           {-sx * sz + cx * sy * cz, -cx * sy * sz - sx * cz, 0}};
  for (int r = 0; r < 8; ++r)
    for (int k = 0; k < 3; ++k) a.j[r][k] = J[r][k];
  for (int r = 0; r < 15; ++r)
    for (int k = 0; k < 3; ++k) a.h[r][k] = H[r][k];
}

COMMON_HD void angle_derivatives(const double (&p)[6], AngleDerivatives& a) {
  double c[3], s[3];
  for (int k = 0; k < 3; ++k) angle_cos_sin(p[3 + k], c[k], s[k]);
  angle_derivatives_from(c, s, a);
}

// What one source point x contributes to the derivatives. PCL's point Jacobian (3 x 6) has the
// unit vectors as its first three columns, so only its angular entries are kept: column 3 is
// (0, pa0, pa1), column 4 (pa2, pa3, pa4), column 5 (pa5, pa6, pa7). The point Hessian's 3-vector
// blocks a..f of eq. 6.21 are (0, ph0, ph1), (0, ph2, ph3), (0, ph4, ph5), (ph6..ph8),
// (ph9..ph11), (ph12..ph14). Skipping the exact zeros and ones changes no bit of PCL's sums
// (x * 0 + y == y, x * 1 == x), and keeps a GPU thread's registers for what is not constant.
struct PointDerivatives {
  double pa[8];
  double ph[15];
};

COMMON_HD void point_derivatives(const AngleDerivatives& a, const double (&x)[3], bool hessian, PointDerivatives& d) {
  COMMON_UNROLL
  for (int r = 0; r < 8; ++r) d.pa[r] = a.j[r][0] * x[0] + a.j[r][1] * x[1] + a.j[r][2] * x[2];
  if (!hessian) return;
  COMMON_UNROLL
  for (int r = 0; r < 15; ++r) d.ph[r] = a.h[r][0] * x[0] + a.h[r][1] * x[1] + a.h[r][2] * x[2];
}

// Column j of the point Jacobian dotted with v, in PCL's term order.
COMMON_HD double jac_dot(const PointDerivatives& d, int j, const double (&v)[3]) {
  switch (j) {
    case 0: return v[0];
    case 1: return v[1];
    case 2: return v[2];
    case 3: return d.pa[0] * v[1] + d.pa[1] * v[2];
    case 4: return d.pa[2] * v[0] + d.pa[3] * v[1] + d.pa[4] * v[2];
    default: return d.pa[5] * v[0] + d.pa[6] * v[1] + d.pa[7] * v[2];
  }
}

// Point-Hessian block b (0..5 = a..f) dotted with v.
COMMON_HD double hblock_dot(const PointDerivatives& d, int b, const double (&v)[3]) {
  if (b < 3) return v[1] * d.ph[2 * b] + v[2] * d.ph[2 * b + 1];
  return v[0] * d.ph[3 * b - 3] + v[1] * d.ph[3 * b - 2] + v[2] * d.ph[3 * b - 1];
}

// Block (i, j) of the point Hessian (i, j >= 3; zero otherwise): a b c / b d e / c e f.
COMMON_HD int hessian_block(int i, int j) {
  const int table[3][3] = {{0, 1, 2}, {1, 3, 4}, {2, 4, 5}};
  return table[i - 3][j - 3];
}

struct GaussConstants {
  double d1, d2;
};

// Eq. 6.8 [Magnusson 2009], as PCL computes it.
inline GaussConstants gauss_constants(double resolution, double outlier_ratio) {
  const double c1 = 10.0 * (1 - outlier_ratio);
  const double c2 = outlier_ratio / std::pow(resolution, 3);
  const double d3 = -std::log(c2);
  GaussConstants g;
  g.d1 = -std::log(c1 + c2) - d3;
  g.d2 = -2 * std::log((-std::log(c1 * std::exp(-0.5) + c2) - d3) / g.d1);
  return g;
}

// Adds one (point, voxel) pair to the sums (score, gradient, Hessian upper triangle when asked).
// Returns false for the pairs PCL skips (the scaled exponential outside [0, 1] or NaN). `sums` is
// anything indexed like an array of kSums doubles (a kernel passes a view of shared memory); each
// sum gets at most one add per pair.
template <typename Sums>
COMMON_HD bool accumulate_pair(const PointDerivatives& pd, const double (&xt)[3], const double (&ic)[6],
                               GaussConstants g, bool hessian, Sums&& sums) {
  const double C[3][3] = {{ic[0], ic[1], ic[2]}, {ic[1], ic[3], ic[4]}, {ic[2], ic[4], ic[5]}};
  double cx[3];
  for (int r = 0; r < 3; ++r) cx[r] = C[r][0] * xt[0] + C[r][1] * xt[1] + C[r][2] * xt[2];
  double e = exp(-g.d2 * (xt[0] * cx[0] + xt[1] * cx[1] + xt[2] * cx[2]) / 2);
  const double score_inc = -g.d1 * e;
  e = g.d2 * e;
  if (e > 1 || e < 0 || e != e) return false;
  e *= g.d1;
  sums[0] += score_inc;
  double cj[6][3], xcj[6];
  COMMON_UNROLL
  for (int i = 0; i < 6; ++i) {
    COMMON_UNROLL
    for (int r = 0; r < 3; ++r) cj[i][r] = jac_dot(pd, i, C[r]);
    xcj[i] = xt[0] * cj[i][0] + xt[1] * cj[i][1] + xt[2] * cj[i][2];
    sums[kGradient + i] += xcj[i] * e;
  }
  if (!hessian) return true;
  COMMON_UNROLL
  for (int i = 0; i < 6; ++i) {
    COMMON_UNROLL
    for (int j = i; j < 6; ++j) {
      double h = -g.d2 * xcj[i] * xcj[j];
      if (i >= 3 && j >= 3) h += hblock_dot(pd, hessian_block(i, j), cx);  // x'^T C (block), C symmetric
      sums[hess_index(i, j)] += e * (h + jac_dot(pd, j, cj[i]));
    }
  }
  return true;
}

// PCL's VoxelGridCovariance statistics of one voxel from its points' sums (in file order: double
// sums of x and x x^T, float sum of x for the centroid): mean; covariance (sum xx^T - sum x
// mean^T) / (n - 1) from the lower triangle (what Eigen's self-adjoint solver reads); invalid when
// an eigenvalue is below -1e-12 or the largest is <= 0; eigenvalues under 0.01 x the largest
// raised to it and the covariance rebuilt; the inverse stored. An invalid voxel keeps a zero
// inverse covariance, as PCL's does. Shared by the CPU and GPU map builds.
COMMON_HD void voxel_from_sums(const double (&sum)[3], const double (&sq)[6], const float (&csum)[3], int n, Voxel& v) {
  v.points = n;
  for (int k = 0; k < 3; ++k) {
    v.centroid[k] = csum[k] / static_cast<float>(n);
    v.mean[k] = sum[k] / n;
  }
  for (int k = 0; k < 6; ++k) v.icov[k] = 0;
  v.valid = 0;
  const double m = n - 1.0;
  double cov[3][3];
  cov[0][0] = (sq[0] - sum[0] * v.mean[0]) / m;
  cov[1][0] = cov[0][1] = (sq[1] - sum[1] * v.mean[0]) / m;
  cov[2][0] = cov[0][2] = (sq[2] - sum[2] * v.mean[0]) / m;
  cov[1][1] = (sq[3] - sum[1] * v.mean[1]) / m;
  cov[2][1] = cov[1][2] = (sq[4] - sum[2] * v.mean[1]) / m;
  cov[2][2] = (sq[5] - sum[2] * v.mean[2]) / m;
  double a[3][3], w[3], V[3][3];
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) a[r][c] = cov[r][c];
  common::la::sym_eigen<3>(a, w, V);
  if (w[0] < -1e-12 || w[1] < -1e-12 || w[2] <= 0) return;
  const double floor_value = 0.01 * w[2];
  if (w[0] < floor_value) {
    w[0] = floor_value;
    if (w[1] < floor_value) w[1] = floor_value;
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 3; ++c)
        cov[r][c] = V[r][0] * w[0] * V[c][0] + V[r][1] * w[1] * V[c][1] + V[r][2] * w[2] * V[c][2];
  }
  double inv[3][3];
  if (common::la::inverse3(cov, inv) == 0) return;
  const double ic[6] = {inv[0][0], inv[0][1], inv[0][2], inv[1][1], inv[1][2], inv[2][2]};
  for (int k = 0; k < 6; ++k)
    if (!(fabs(ic[k]) <= 3.4e38)) return;  // PCL: an infinite (float) inverse invalidates the voxel
  for (int k = 0; k < 6; ++k) v.icov[k] = ic[k];
  v.valid = 1;
}

// PCL's transformPointCloud with a float matrix, in its SSE order: x*r0 + (y*r1 + (z*r2 + t)),
// without fused multiply-adds, so host and device produce the same bits.
COMMON_HD void transform_point(const float (&T)[12], float x, float y, float z, float& ox, float& oy, float& oz) {
  ox = fadd_rn(fmul_rn(x, T[0]), fadd_rn(fmul_rn(y, T[1]), fadd_rn(fmul_rn(z, T[2]), T[3])));
  oy = fadd_rn(fmul_rn(x, T[4]), fadd_rn(fmul_rn(y, T[5]), fadd_rn(fmul_rn(z, T[6]), T[7])));
  oz = fadd_rn(fmul_rn(x, T[8]), fadd_rn(fmul_rn(y, T[9]), fadd_rn(fmul_rn(z, T[10]), T[11])));
}

// Everything one source point adds to an evaluation at the transform T / angles `ad`.
// The contribution of one (point, voxel) pair given the point transformed (tx, ty, tz).
template <typename Sums>
COMMON_HD void accumulate_neighbour(const Voxel& vox, const PointDerivatives& pd, GaussConstants g, bool hessian,
                                    float tx, float ty, float tz, Sums&& sums) {
  const double xt[3] = {double(tx) - vox.mean[0], double(ty) - vox.mean[1], double(tz) - vox.mean[2]};
  sums[kNeighbours] += 1;
  if (accumulate_pair(pd, xt, vox.icov, g, hessian, sums)) sums[kPairs] += 1;
}

// ... every neighbour of one point.
COMMON_HD void accumulate_transformed(const MapView& m, const AngleDerivatives& ad, GaussConstants g, bool hessian,
                                      float x, float y, float z, float tx, float ty, float tz, double* sums) {
  const double xo[3] = {x, y, z};
  PointDerivatives pd;
  bool have_pd = false;
  for_each_neighbour(m, tx, ty, tz, [&](int v) {
    if (!have_pd) {
      point_derivatives(ad, xo, hessian, pd);
      have_pd = true;
    }
    accumulate_neighbour(m.voxels[v], pd, g, hessian, tx, ty, tz, sums);
  });
}

COMMON_HD void accumulate_point(const MapView& m, const AngleDerivatives& ad, const float (&T)[12], GaussConstants g,
                                bool hessian, float x, float y, float z, double* sums) {
  float tx, ty, tz;
  transform_point(T, x, y, z, tx, ty, tz);
  accumulate_transformed(m, ad, g, hessian, x, y, z, tx, ty, tz, sums);
}

}  // namespace ndt
