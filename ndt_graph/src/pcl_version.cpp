// pcl: pcl::NormalDistributionsTransform as a user calls it (PointXYZ, one thread), prepared
// with the target cloud (its own VoxelGridCovariance + kd-tree, outside the timing, like the
// other versions' prebuilt map). Built only when CMake finds PCL.
#include <pcl/console/print.h>
#include <pcl/point_types.h>
#include <pcl/registration/ndt.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "ndt_graph/registry_detail.hpp"

namespace ndt {
namespace {

pcl::PointCloud<pcl::PointXYZ>::Ptr to_pcl(const common::PointCloud& c) {
  pcl::PointCloud<pcl::PointXYZ>::Ptr out(new pcl::PointCloud<pcl::PointXYZ>);
  out->resize(c.size());
  for (std::size_t i = 0; i < c.size(); ++i) (*out)[i] = pcl::PointXYZ(c.x[i], c.y[i], c.z[i]);
  return out;
}

class PclRunner : public Runner {
 public:
  void prepare(const Problem& p) override {
    p.params.validate();
    pcl::console::setVerbosityLevel(pcl::console::L_ERROR);  // PCL warns once per invalid voxel
    if (p.params.search != Search::radius)
      throw InputError("PCL 1.13's NDT has only the radius (kd-tree) neighbour search");
    if (!p.source || p.source->size() == 0) throw InputError("source cloud is empty");
    if (!p.target || p.target->size() == 0) throw InputError("target cloud is empty");
    ndt_.setResolution(static_cast<float>(p.params.resolution));
    ndt_.setStepSize(p.params.step_size);
    ndt_.setTransformationEpsilon(p.params.epsilon);
    ndt_.setMaximumIterations(p.params.max_iterations);
    ndt_.setOulierRatio(p.params.outlier_ratio);
    ndt_.setInputTarget(to_pcl(*p.target));
    ndt_.setInputSource(to_pcl(*p.source));
    n_ = p.source->size();
    set_guess(p.guess);
  }
  void enqueue() override {
    pcl::PointCloud<pcl::PointXYZ> out;
    ndt_.align(out, guess_);
  }
  void reload(const Problem& p) override {  // PCL builds its own map from the target
    ndt_.setInputTarget(to_pcl(*p.target));
    ndt_.setInputSource(to_pcl(*p.source));
    set_guess(p.guess);
  }
  AlignResult result() override {
    AlignResult r;
    const Eigen::Matrix4f T = ndt_.getFinalTransformation();
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) r.T[i][j] = T(i, j);
    double m[3][4];
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 4; ++j) m[i][j] = T(i, j);
    // R = Rx Ry Rz on the branch with pitch in [-pi/2, pi/2]
    const double rpy[3] = {std::atan2(-m[1][2], m[2][2]), std::asin(std::max(-1.0, std::min(1.0, m[0][2]))),
                           std::atan2(-m[0][1], m[0][0])};
    for (int k = 0; k < 3; ++k) {
      r.pose[k] = T(k, 3);
      r.pose[3 + k] = rpy[k];
    }
    r.iterations = ndt_.getFinalNumIteration();
    r.converged = ndt_.hasConverged() && r.iterations < ndt_.getMaximumIterations();
    r.status = r.converged ? Status::converged : Status::max_iterations;
    r.likelihood = ndt_.getTransformationLikelihood();
    r.score = r.likelihood * static_cast<double>(n_);
    return r;
  }

 private:
  void set_guess(const double (&guess)[6]) {
    float T[12];
    float_transform(guess, T);
    guess_.setIdentity();
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 4; ++c) guess_(r, c) = T[r * 4 + c];
  }
  pcl::NormalDistributionsTransform<pcl::PointXYZ, pcl::PointXYZ> ndt_;
  Eigen::Matrix4f guess_;
  std::size_t n_ = 0;
};

}  // namespace

bool pcl_available() { return true; }
std::unique_ptr<Runner> make_pcl() { return std::make_unique<PclRunner>(); }

}  // namespace ndt
