#include "stream_compaction/device.hpp"

namespace StreamCompaction {
namespace Device {

ScratchTree& ScratchTree::nested() {
  if (!nested_) nested_ = new ScratchTree;
  return *nested_;
}

ScratchTree::~ScratchTree() { delete nested_; }

}  // namespace Device
}  // namespace StreamCompaction
