#include "common/environment.hpp"

namespace common {

Environment detect_environment() {
  Environment e;
  e.gpu = has_cuda_device();
  if (!e.gpu) return e;
  e.device = query_device();
  e.device_label = e.device.name;
  e.ceilings = measure_ceilings(e.device);
  e.spec = measured_spec(e.device, e.ceilings);
  return e;
}

}  // namespace common
