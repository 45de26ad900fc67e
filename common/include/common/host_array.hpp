// Host arrays whose elements are not zeroed when made, for large buffers every element of which is
// written next (an input drawn in parallel, a reference, a sort's passes): their pages are first
// touched by the threads that write them. A zeroed 2^26-int vector took about 0.1 s of one core on
// an H100 host, once for each input, reference and sort buffer of a size (2026-11-26).
#pragma once
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

namespace common {

// std::allocator, except that a value-initialised element (vector(n), resize(n)) is left as it is
template <class T>
struct NoZeroAllocator : std::allocator<T> {
  static_assert(std::is_trivial<T>::value, "only for trivial element types");
  using value_type = T;
  template <class U>
  struct rebind {
    using other = NoZeroAllocator<U>;
  };
  NoZeroAllocator() = default;
  template <class U>
  NoZeroAllocator(const NoZeroAllocator<U>&) noexcept {}
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;  // default-initialised: no write
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

template <class T>
using HostArray = std::vector<T, NoZeroAllocator<T>>;

}  // namespace common
