// RAII owner of a device allocation. Allocation happens outside timed regions by construction:
// the harness allocates, checks once, then times.
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>

#include "common/cuda_check.hpp"

namespace common {

template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count) { resize(count); }
  ~DeviceBuffer() { release(); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), count_(std::exchange(o.count_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      release();
      ptr_ = std::exchange(o.ptr_, nullptr);
      count_ = std::exchange(o.count_, 0);
    }
    return *this;
  }

  // Reallocates only when growing; contents are not preserved.
  void resize(std::size_t count) {
    if (count <= count_) return;
    release();
    CUDA_CHECK(cudaMalloc(&ptr_, count * sizeof(T)));
    count_ = count;
  }
  void release() {
    if (ptr_) cudaFree(ptr_);
    ptr_ = nullptr;
    count_ = 0;
  }
  T* get() const { return ptr_; }
  std::size_t size() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }

 private:
  T* ptr_ = nullptr;
  std::size_t count_ = 0;
};

// Grow-only temporary storage handed to device algorithms. The first (checked) run sizes it;
// timed runs then reuse it without allocating.
class Scratch {
 public:
  void* get(std::size_t bytes) {
    buffer_.resize(bytes == 0 ? 1 : bytes);
    return buffer_.get();
  }
  template <typename T>
  T* as(std::size_t count) {
    return static_cast<T*>(get(count * sizeof(T)));
  }
  std::size_t capacity() const { return buffer_.size(); }

 private:
  DeviceBuffer<unsigned char> buffer_;
};

// Carves one scratch allocation into 256-byte-aligned pieces.
class ScratchCarver {
 public:
  explicit ScratchCarver(std::size_t offset = 0) : offset_(offset) {}
  std::size_t take(std::size_t bytes) {
    std::size_t at = offset_;
    offset_ += (bytes + 255) / 256 * 256;
    return at;
  }
  std::size_t total() const { return offset_; }

 private:
  std::size_t offset_;
};

}  // namespace common
