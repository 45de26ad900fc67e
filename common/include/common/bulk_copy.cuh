// Hopper's bulk-copy (TMA) engine and the shared-memory barriers it completes on, as thin
// wrappers around the PTX (sm_90+). One thread asks the copy engine to move a contiguous block of
// global memory into shared memory (`bulk_load`); the engine counts the bytes it delivers against
// an mbarrier, and the barrier's phase completes when the expected bytes and the expected
// arrivals are in. Waiting threads poll the phase parity (`wait`). This is the producer/consumer
// ring of a warp-specialised kernel. The same barriers count the bytes of `st.async`, a store
// into another block of the cluster's shared memory (`store_async_remote`), which its receiver
// waits for with `mbarrier_wait_cluster_data`. The copy engine's ring:
//
//   full[s]  : count 1; the producer arrives with expect_tx(bytes), the engine completes the bytes
//   empty[s] : count = consumer warps; each consumer warp arrives once it no longer needs slot s
//   use k of slot s (k = 0, 1, ...) waits for parity k & 1 of full[s]; the producer's refill k
//   (k >= 1) waits for parity (k - 1) & 1 of empty[s].
//
// Compiled for sm_90 and newer only: below that the calls trap, and hosts check
// common::bulk_copy_supported() (device_info.hpp) first and throw common::Unsupported.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace common {

__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define COURSE_BULK_COPY_UNAVAILABLE 1
#endif

__device__ __forceinline__ void mbarrier_init(std::uint64_t* bar, unsigned count) {
#ifndef COURSE_BULK_COPY_UNAVAILABLE
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count) : "memory");
#else
  __trap();
#endif
}

// Makes initialised barriers visible to the copy engine (the async proxy); then __syncthreads().
__device__ __forceinline__ void mbarrier_init_fence() {
#ifndef COURSE_BULK_COPY_UNAVAILABLE
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#endif
}

__device__ __forceinline__ void mbarrier_arrive(std::uint64_t* bar) {
#ifndef COURSE_BULK_COPY_UNAVAILABLE
  asm volatile("{\n\t.reg .b64 st;\n\tmbarrier.arrive.shared::cta.b64 st, [%0];\n\t}" ::"r"(smem_addr(bar)) : "memory");
#else
  __trap();
#endif
}

// Arrives and tells the barrier to also wait for `bytes` delivered by bulk copies.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(std::uint64_t* bar, unsigned bytes) {
#ifndef COURSE_BULK_COPY_UNAVAILABLE
  asm volatile(
      "{\n\t.reg .b64 st;\n\tmbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;\n\t}" ::"r"(smem_addr(bar)),
      "r"(bytes)
      : "memory");
#else
  __trap();
#endif
}

// Blocks until the phase with this parity has completed (acquire: what the arrivals released, and
// the bytes the engine delivered, are visible afterwards).
__device__ __forceinline__ void mbarrier_wait(std::uint64_t* bar, unsigned parity) {
#ifndef COURSE_BULK_COPY_UNAVAILABLE
  asm volatile(
      "{\n\t.reg .pred done;\n"
      "WAIT_%=:\n\t"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n\t"
      "@!done bra WAIT_%=;\n\t}" ::"r"(smem_addr(bar)),
      "r"(parity)
      : "memory");
#else
  __trap();
#endif
}

// mbarrier_wait for bytes that another block of the cluster stored (store_async_remote): their
// completion releases at cluster scope, so the wait must acquire at cluster scope. A cluster-scope
// acquire on the wait itself invalidates the SM's whole L1 (CCTL.IVALL after every try); a fence
// whose acquire is restricted to shared::cluster memory (PTX ISA 8.6, CUDA 12.8) acquires what the
// receiver reads and leaves the L1 alone. Older toolkits take the wait's cluster-scope acquire.
__device__ __forceinline__ void mbarrier_wait_cluster_data(std::uint64_t* bar, unsigned parity) {
#ifndef COURSE_BULK_COPY_UNAVAILABLE
#if __CUDACC_VER_MAJOR__ > 12 || (__CUDACC_VER_MAJOR__ == 12 && __CUDACC_VER_MINOR__ >= 8)
  mbarrier_wait(bar, parity);
  asm volatile("fence.acquire.sync_restrict::shared::cluster.cluster;" ::: "memory");
#else
  asm volatile(
      "{\n\t.reg .pred done;\n"
      "WAIT_%=:\n\t"
      "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 done, [%0], %1;\n\t"
      "@!done bra WAIT_%=;\n\t}" ::"r"(smem_addr(bar)),
      "r"(parity)
      : "memory");
#endif
#else
  __trap();
#endif
}

// Copies `bytes` (a multiple of 16; both addresses 16-byte aligned) from global `src` into shared
// `dst`; completion is counted on `bar`.
__device__ __forceinline__ void bulk_load(void* dst, const void* src, unsigned bytes, std::uint64_t* bar) {
#ifndef COURSE_BULK_COPY_UNAVAILABLE
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(smem_addr(dst)),
      "l"(src), "r"(bytes), "r"(smem_addr(bar))
      : "memory");
#else
  __trap();
#endif
}

// Stores `v` into another block of the cluster's shared memory (`remote`: an address from
// cluster.map_shared_rank) and counts its 8 bytes on that block's barrier (`remote_bar`, mapped
// the same way), whose phase completes once the bytes its expect_tx named are in: a push that the
// receiver waits for with mbarrier_wait_cluster_data, with no cluster barrier (whose wait invalidates the SM's
// L1) and an order the sanitizer's racecheck follows.
__device__ __forceinline__ void store_async_remote(double* remote, double v, std::uint64_t* remote_bar) {
#ifndef COURSE_BULK_COPY_UNAVAILABLE
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b64 [%0], %1, [%2];" ::"r"(smem_addr(remote)),
               "l"(__double_as_longlong(v)), "r"(smem_addr(remote_bar))
               : "memory");
#else
  __trap();
#endif
}

// Orders this thread's ordinary shared-memory writes before later copy-engine accesses to the
// same bytes (a slot that consumers wrote into and the producer refills next).
__device__ __forceinline__ void fence_proxy_async_shared() {
#ifndef COURSE_BULK_COPY_UNAVAILABLE
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}

// Named barrier over `threads` threads (a multiple of 32): synchronises the consumer warps of a
// warp-specialised block without the producer warp.
__device__ __forceinline__ void named_barrier_sync(unsigned id, unsigned threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

}  // namespace common
