// ndt_graph's public API: PCL 1.13-exact filters (VoxelGrid, ApproximateVoxelGrid), the target
// map (VoxelGridCovariance statistics + a cell hash for the neighbour search), the NDT alignment
// parameters and result, and the CPU reference. GPU versions live behind the registry.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/pointcloud.hpp"
#include "ndt_graph/ndt_math.hpp"
#include "ndt_graph/solver.hpp"

namespace ndt {

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class Filter { none, voxel, approx };
Filter parse_filter(const std::string& name);  // throws InputError
const char* filter_name(Filter f);
Search parse_search(const std::string& name);  // throws InputError
const char* search_name(Search s);

// pcl::VoxelGrid: one point per occupied leaf, the (float) centroid of its points, leaves in
// PCL's index order. A leaf's points are summed in PCL's order (LeafOrder::pcl: the order Boost's
// integer_sort, which PCL sorts with, leaves them in; bit for bit PCL's centroids where this build
// has Boost, see voxel_grid_matches_pcl_bitwise) or in file order (LeafOrder::file: what the GPU
// filter does; a centroid can then differ from PCL's in its last bit). Throws InputError when the
// leaf is not positive and finite.
enum class LeafOrder { pcl, file };
common::PointCloud voxel_grid_filter(const common::PointCloud& in, float leaf, LeafOrder sum_order = LeafOrder::pcl);
bool voxel_grid_matches_pcl_bitwise();
// pcl::ApproximateVoxelGrid: PCL's 512-slot history; a leaf's centroid is emitted when another
// leaf takes its slot, and the rest at the end in slot order.
common::PointCloud approximate_voxel_grid_filter(const common::PointCloud& in, float leaf);
common::PointCloud apply_filter(const common::PointCloud& in, Filter f, float leaf);

// The NDT target: PCL's VoxelGridCovariance with leaf = resolution, plus the hash table that
// finds a cell's voxel. Host copy; GPU versions upload it (or build their own with build_map_gpu).
struct VoxelMap {
  float resolution = 1.f;
  std::vector<Voxel> voxels;    // searchable voxels (>= 6 points), PCL's leaf order
  std::vector<CellSlot> table;  // cell hash (a power of two of slots, at most a quarter full)
  std::size_t occupied = 0;     // leaves with at least one point
  std::size_t valid = 0;        // searchable and not invalidated
  MapView view(Search s) const;
};
constexpr int kMinPointsPerVoxel = 6;
VoxelMap build_voxel_map(const common::PointCloud& target, float resolution);
// Empty when two maps hold the same voxels, bit for bit, in the same order (the GPU build runs the
// CPU's arithmetic in the CPU's order); else the first difference.
std::string compare_maps(const VoxelMap& a, const VoxelMap& b);
// Hash table for `voxels` keyed by `cells` (x, y, z per voxel).
void build_hash(const std::vector<int>& cells, VoxelMap& map);
// The GPU evaluation keeps a map's dense cell grid up to this many cells (16 bytes each: 64 MiB);
// a map whose box is larger is probed through its hash.
constexpr std::size_t kMaxGridCells = std::size_t{1} << 22;
// The dense cell grid of a map (CellGrid: its box, one cell of margin), in `cells` (x fastest);
// false, with `cells` empty, when the box holds more than `max_cells` cells.
bool build_cell_grid(const VoxelMap& map, std::size_t max_cells, CellGrid& box, std::vector<GridCell>& cells);

struct NdtParams {
  double resolution = 1.0, step_size = 0.1, epsilon = 1e-4, outlier_ratio = 0.55;
  int max_iterations = 35;
  Search search = Search::radius;
  // Solver options of the GPU versions (the reference keeps PCL's: false, 1): the Newton solve by
  // a pivoted direct solve first, and the parallel line search's candidates per pass (see SolverConfig).
  bool fast_solve = false;
  int line_search_candidates = 1;
  void validate() const;  // throws InputError naming the parameter
  SolverConfig solver_config(std::size_t n_points) const;
};

struct AlignResult {
  double T[4][4] = {};
  double pose[6] = {};
  int iterations = 0, evaluations = 0;
  int solve_fallbacks = 0;  // fast-solve solves that needed the SVD-equivalent solve
  bool converged = false;
  Status status = Status::running;
  double likelihood = 0, score = 0;
  double hessian[6][6] = {};
  double neighbours = 0, pairs = 0;  // at the final pose
  std::vector<TraceRow> trace;       // row 0: the guess, then one row per iteration
  std::string reason() const;        // one line: why it stopped
};
AlignResult result_from_state(const SolverState& s, const TraceRow* trace);

// Float copy of a cloud's coordinates, interleaved x y z (what every version uploads).
std::vector<float> interleave(const common::PointCloud& pc);

// The CPU reference (float64, one thread) and the same on every core (OpenMP, per-thread sums).
AlignResult align_cpu(const VoxelMap& map, const common::PointCloud& source, const NdtParams& p,
                      const double (&guess)[6]);
AlignResult align_cpu_openmp(const VoxelMap& map, const common::PointCloud& source, const NdtParams& p,
                             const double (&guess)[6]);
// The same on a source already interleaved (x y z per point), as a prepared version holds it.
// `solve_ms`, when given, receives the host time of the solver's steps (solver_advance) alone.
AlignResult align_interleaved(const VoxelMap& map, const std::vector<float>& xyz, const NdtParams& p,
                              const double (&guess)[6], bool parallel, double* solve_ms = nullptr);
// One evaluation on the CPU (score, gradient, Hessian sums) at a request: used by the reference,
// by tests (finite differences) and by the trace replay.
void evaluate_cpu(const MapView& m, const float* xyz, std::size_t n, const EvalRequest& req, GaussConstants g,
                  double* sums, bool parallel);

// Pose helpers: x y z roll pitch yaw <-> 4x4 (T = Translation * Rx * Ry * Rz).
void pose_to_matrix4(const double (&pose)[6], double (&T)[4][4]);
// Translation distance (m) and rotation angle (deg) between two transforms.
void pose_error(const double (&A)[4][4], const double (&B)[4][4], double& trans_m, double& rot_deg);

// What PCL's NDT computed on a sample pair: the RESULT line of a file of
// $COURSE_DATA_DIR/pcl_ndt_reference/. Throws InputError naming the file when it has none or it
// is malformed.
struct PclRecord {
  double T[4][4];
  int iterations;
  double likelihood;
};
PclRecord read_pcl_reference(const std::string& path);

// The real sample pairs PCL's NDT was recorded on (pcl_ndt_reference/<name>.txt), with the
// filters and guess of each record; paths relative to $COURSE_DATA_DIR. The target filter's leaf
// is 0.2 m. One list for the driver's default set and the tests.
struct ReferencePair {
  const char* name;
  const char* target;
  const char* source;
  Filter target_filter;
  Filter source_filter;
  float source_leaf;  // 0: no source filter
  double guess[6];
};
constexpr float kReferenceTargetLeaf = 0.2f;
const std::vector<ReferencePair>& reference_pairs();

// The acceptance test of a version against the reference: pose within `cm` / `deg` and
// iterations within +-`iterations`. Empty when it passes, else the reason.
std::string compare_to_reference(const AlignResult& got, const AlignResult& ref, double cm, double deg, int iterations);

}  // namespace ndt
