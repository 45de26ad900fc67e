// vN <name> (template): <the launch strategy this step tries>. Prediction: <time per alignment>.
// Copy to ndt_graph/src/vN_<name>.cu; declare make_vN_<name>() in ndt_graph/include/ndt_graph/versions.hpp;
// add its registry line to ndt_graph/src/registry.cpp (docs/adding_a_version.md). gpu_kernels.cuh
// provides DeviceRunner (the alignment's device state), launch_eval and launch_step.
#include "common/cuda_check.hpp"
#include "common/exercise.hpp"
#include "gpu_kernels.cuh"
#include "ndt_graph/versions.hpp"

namespace ndt {
namespace gpu {
namespace {

class TemplateRunner : public DeviceRunner {
 public:
  void prepare(const Problem& p) override {
    a_.prepare(p);  // validates the problem, uploads the map, sizes the buffers
  }
  void enqueue() override {
    COURSE_NOT_IMPLEMENTED();  // a_.upload_source_and_init(s), then evaluations and steps until done, then a_.download(s)
  }
};

}  // namespace
}  // namespace gpu

std::unique_ptr<Runner> make_vN_template() { return std::make_unique<gpu::TemplateRunner>(); }

}  // namespace ndt
