// The differential test's PCL side (ndt_graph/pcl_diff.hpp), built only where CMake finds PCL: PCL's
// own VoxelGrid, ApproximateVoxelGrid, VoxelGridCovariance and NormalDistributionsTransform on the
// same input as ndt_graph's code.
#include <Eigen/SVD>
#include <pcl/console/print.h>
#include <pcl/filters/approximate_voxel_grid.h>
#include <pcl/filters/voxel_grid.h>
#include <pcl/filters/voxel_grid_covariance.h>
#include <pcl/point_types.h>
#include <pcl/registration/ndt.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>

#include "ndt_graph/pcl_diff.hpp"

namespace ndt::pcl_diff {
namespace {

using Cloud = pcl::PointCloud<pcl::PointXYZ>;

Cloud::Ptr to_pcl(const common::PointCloud& c) {
  Cloud::Ptr out(new Cloud);
  out->resize(c.size());
  for (std::size_t i = 0; i < c.size(); ++i) (*out)[i] = pcl::PointXYZ(c.x[i], c.y[i], c.z[i]);
  return out;
}

std::string fmt(double v, int prec = 4) {
  std::ostringstream os;
  os.precision(prec);
  os << v;
  return os.str();
}

// PCL's NDT opened up: its protected derivative evaluation, and the transform after every
// iteration (read in the per-iteration visualizer callback, which PCL calls after each step).
class OpenNdt : public pcl::NormalDistributionsTransform<pcl::PointXYZ, pcl::PointXYZ> {
 public:
  std::vector<Eigen::Matrix4f> trace;
  OpenNdt() {
    update_visualizer_ = [this](const Cloud&, const pcl::Indices&, const Cloud&, const pcl::Indices&) {
      trace.push_back(final_transformation_);
    };
  }
  double derivatives_at(const double (&pose)[6], Eigen::Matrix<double, 6, 1>& g, Eigen::Matrix<double, 6, 6>& H) {
    Eigen::Matrix<double, 6, 1> x;
    for (int k = 0; k < 6; ++k) x(k) = pose[k];
    Eigen::Matrix4f T;
    convertTransform(x, T);
    Cloud moved_cloud;
    pcl::transformPointCloud(*input_, moved_cloud, T);
    return computeDerivatives(g, H, moved_cloud, x, true);
  }
};

Eigen::Matrix4f guess_matrix(const double (&guess)[6]) {
  float Tg[12];
  float_transform(guess, Tg);
  Eigen::Matrix4f G = Eigen::Matrix4f::Identity();
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c) G(r, c) = Tg[r * 4 + c];
  return G;
}

void configure(OpenNdt& ndt, const common::PointCloud& target, const common::PointCloud& source, int max_iterations) {
  pcl::console::setVerbosityLevel(pcl::console::L_ERROR);  // PCL warns once per invalid voxel
  const NdtParams p;
  ndt.setResolution(static_cast<float>(p.resolution));
  ndt.setStepSize(p.step_size);
  ndt.setTransformationEpsilon(p.epsilon);
  ndt.setOulierRatio(p.outlier_ratio);
  ndt.setMaximumIterations(max_iterations);
  ndt.setInputTarget(to_pcl(target));
  ndt.setInputSource(to_pcl(source));
}

}  // namespace

bool pcl_built() { return true; }

static Cloud pcl_filter(const common::PointCloud& in, Filter f, float leaf) {
  Cloud theirs;
  const Cloud::Ptr src = to_pcl(in);
  if (f == Filter::voxel) {
    pcl::VoxelGrid<pcl::PointXYZ> vg;
    vg.setLeafSize(leaf, leaf, leaf);
    vg.setInputCloud(src);
    vg.filter(theirs);
  } else if (f == Filter::approx) {
    pcl::ApproximateVoxelGrid<pcl::PointXYZ> vg;
    vg.setLeafSize(leaf, leaf, leaf);
    vg.setInputCloud(src);
    vg.filter(theirs);
  } else {
    theirs = *src;
  }
  return theirs;
}

static common::PointCloud from_pcl(const Cloud& c) {
  common::PointCloud out;
  for (const auto& p : c) {
    out.x.push_back(p.x);
    out.y.push_back(p.y);
    out.z.push_back(p.z);
  }
  return out;
}

CloudDiff compare_filter(const common::PointCloud& in, Filter f, float leaf) {
  CloudDiff d;
  const common::PointCloud ours = apply_filter(in, f, leaf);
  const Cloud theirs = pcl_filter(in, f, leaf);
  d.ours = ours.size();
  d.pcl = theirs.size();
  for (std::size_t i = 0; i < std::min(d.ours, d.pcl); ++i) {
    const double e = std::max({std::fabs(double(ours.x[i]) - theirs[i].x), std::fabs(double(ours.y[i]) - theirs[i].y),
                               std::fabs(double(ours.z[i]) - theirs[i].z)});
    if (e > 0) {
      if (d.differing++ == 0)
        d.first = "point " + std::to_string(i) + ": (" + fmt(ours.x[i], 9) + ", " + fmt(ours.y[i], 9) + ", " +
                  fmt(ours.z[i], 9) + ") vs PCL's (" + fmt(theirs[i].x, 9) + ", " + fmt(theirs[i].y, 9) + ", " +
                  fmt(theirs[i].z, 9) + ")";
      d.max_diff = std::max(d.max_diff, e);
    }
  }
  if (d.ours != d.pcl && d.first.empty())
    d.first = std::to_string(d.ours) + " points vs PCL's " + std::to_string(d.pcl);
  return d;
}

MapDiff compare_map(const common::PointCloud& target, float resolution) {
  MapDiff d;
  const VoxelMap map = build_voxel_map(target, resolution);
  pcl::VoxelGridCovariance<pcl::PointXYZ> grid;
  grid.setLeafSize(resolution, resolution, resolution);
  grid.setInputCloud(to_pcl(target));
  grid.filter(true);
  // PCL's searchable voxels: the leaves with >= min points (nr_points -1 marks one it invalidated),
  // in the std::map's order, which is the order the reference keeps
  std::vector<const pcl::VoxelGridCovariance<pcl::PointXYZ>::Leaf*> leaves;
  for (const auto& kv : grid.getLeaves())
    if (kv.second.nr_points >= kMinPointsPerVoxel || kv.second.nr_points == -1) leaves.push_back(&kv.second);
  d.ours = map.voxels.size();
  d.pcl = leaves.size();
  auto note = [&](const std::string& s) {
    if (d.first.empty()) d.first = s;
  };
  // match by mean (a voxel's identity: its points' centroid), in order
  std::size_t i = 0, j = 0;
  while (i < map.voxels.size() && j < leaves.size()) {
    const Voxel& v = map.voxels[i];
    const auto& l = *leaves[j];
    double dm = 0;
    for (int k = 0; k < 3; ++k) dm = std::max(dm, std::fabs(v.mean[k] - l.mean_(k)));
    if (dm > 1e-3) {  // not the same voxel: one side has a voxel the other lacks
      const bool ours_first = std::tie(v.mean[2], v.mean[1], v.mean[0]) < std::tie(l.mean_(2), l.mean_(1), l.mean_(0));
      if (ours_first) {
        ++d.extra;
        note("voxel " + std::to_string(i) + " (mean " + fmt(v.mean[0]) + ", " + fmt(v.mean[1]) + ", " + fmt(v.mean[2]) +
             ") is not in PCL's map");
        ++i;
      } else {
        ++d.missing;
        note("PCL's voxel " + std::to_string(j) + " (mean " + fmt(l.mean_(0)) + ", " + fmt(l.mean_(1)) + ", " +
             fmt(l.mean_(2)) + ") is not in ours");
        ++j;
      }
      continue;
    }
    d.max_mean_diff = std::max(d.max_mean_diff, dm);
    const bool pcl_valid = l.nr_points != -1;
    if (pcl_valid != (v.valid != 0)) {
      ++d.validity;
      note("voxel " + std::to_string(i) + ": " + (v.valid ? "valid" : "invalid") + " here, " +
           (pcl_valid ? "valid" : "invalid") + " in PCL");
    }
    if (pcl_valid && v.valid) {
      const int idx[6][2] = {{0, 0}, {0, 1}, {0, 2}, {1, 1}, {1, 2}, {2, 2}};
      double scale = 0, diff = 0;
      for (int k = 0; k < 6; ++k) {
        scale = std::max(scale, std::fabs(l.icov_(idx[k][0], idx[k][1])));
        diff = std::max(diff, std::fabs(v.icov[k] - l.icov_(idx[k][0], idx[k][1])));
      }
      const double rel = scale > 0 ? diff / scale : diff;
      if (rel > 1e-9)
        note("voxel " + std::to_string(i) + ": inverse covariance " + fmt(rel, 3) + " (relative) from PCL's");
      d.max_icov_rel = std::max(d.max_icov_rel, rel);
    }
    ++i;
    ++j;
  }
  d.extra += map.voxels.size() - i;
  d.missing += leaves.size() - j;
  if (d.ours != d.pcl) note(std::to_string(d.ours) + " voxels vs PCL's " + std::to_string(d.pcl));
  return d;
}

PclAlignment pcl_align(const common::PointCloud& target, const common::PointCloud& source, const double (&guess)[6]) {
  OpenNdt ndt;
  const NdtParams p;
  configure(ndt, target, source, p.max_iterations);
  Cloud out;
  const Eigen::Matrix4f G = guess_matrix(guess);
  const auto t0 = std::chrono::steady_clock::now();
  ndt.align(out, G);
  PclAlignment a;
  a.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const Eigen::Matrix4f T = ndt.getFinalTransformation();
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) a.T[i][j] = T(i, j);
  a.iterations = ndt.getFinalNumIteration();
  a.likelihood = ndt.getTransformationLikelihood();
  for (const Eigen::Matrix4f& m : ndt.trace) {
    std::array<float, 12> row;
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 4; ++c) row[r * 4 + c] = m(r, c);
    a.trace.push_back(row);
  }
  a.source_points = source.size();
  return a;
}

std::string pcl_derivatives_at(const VoxelMap& map, const common::PointCloud& target, const common::PointCloud& source,
                               const double (&pose)[6]) {
  OpenNdt ndt;
  configure(ndt, target, source, 1);
  Cloud out;
  ndt.align(out);  // one iteration sets PCL's Gaussian constants
  const NdtParams p;
  const std::vector<float> xyz = interleave(source);
  EvalRequest req;
  request(req, pose, true);
  double sums[kSums];
  evaluate_cpu(map.view(Search::radius), xyz.data(), xyz.size() / 3, req,
               gauss_constants(p.resolution, p.outlier_ratio), sums, false);
  Eigen::Matrix<double, 6, 1> grad;
  Eigen::Matrix<double, 6, 6> H;
  const double score = ndt.derivatives_at(pose, grad, H);
  double gscale = 0, gdiff = 0, hscale = 0, hdiff = 0;
  for (int a = 0; a < 6; ++a) {
    gscale = std::max(gscale, std::fabs(grad(a)));
    gdiff = std::max(gdiff, std::fabs(grad(a) - sums[kGradient + a]));
    for (int b = a; b < 6; ++b) {
      hscale = std::max(hscale, std::fabs(H(a, b)));
      hdiff = std::max(hdiff, std::fabs(H(a, b) - sums[hess_index(a, b)]));
    }
  }
  // the Newton directions: PCL's (JacobiSVD of its own derivatives, as computeTransformation
  // solves) and the reference's (its own solve of its own sums), and the Hessian's conditioning
  Eigen::JacobiSVD<Eigen::Matrix<double, 6, 6>> sv(H, Eigen::ComputeFullU | Eigen::ComputeFullV);
  Eigen::Matrix<double, 6, 1> pcl_dir = sv.solve(-grad);
  double Href[6][6], bref[6], xref[6];
  for (int a = 0; a < 6; ++a) {
    bref[a] = -sums[kGradient + a];
    for (int b = 0; b < 6; ++b) Href[a][b] = sums[hess_index(std::min(a, b), std::max(a, b))];
  }
  common::la::sym_solve_pinv<6>(Href, bref, xref);
  double pn = pcl_dir.norm(), rn = 0, apart = 0;
  for (int a = 0; a < 6; ++a) rn += xref[a] * xref[a];
  rn = std::sqrt(rn);
  for (int a = 0; a < 6; ++a)
    apart = std::max(apart, std::fabs(pcl_dir(a) / std::max(pn, 1e-300) - xref[a] / std::max(rn, 1e-300)));
  const auto& sing = sv.singularValues();
  const double cond = sing(5) > 0 ? sing(0) / sing(5) : INFINITY;
  return "PCL's score, gradient and Hessian there are " +
         fmt(std::fabs(score - sums[0]) / std::max(1e-300, std::fabs(score)), 3) + ", " +
         fmt(gdiff / std::max(gscale, 1e-300), 3) + ", " + fmt(hdiff / std::max(hscale, 1e-300), 3) +
         " (relative) from the reference's; the Hessian's condition number " + fmt(cond, 3) +
         ", and the Newton directions PCL's solve and the reference's give there " + fmt(apart, 3) + " apart";
}

}  // namespace ndt::pcl_diff
