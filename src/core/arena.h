// A fixed block that std::pmr containers allocate from before they fall back to the heap.
//
// A kernel's per-call bookkeeping is a dozen vectors of a few operands or dims each. Allocated one
// by one, they cost more than the kernel on small inputs: glibc's malloc and free were ~20% of the
// mandelbrot and ode_rk4 rows (bench/README.md, stop 43), where a fused pass's plan alone made ~20
// allocations. In a LocalArena they are carved out of one block that lives with the plan (or on
// the stack) and is released all at once; a plan larger than the block spills to the heap.
#pragma once

#include <cstddef>
#include <memory_resource>

namespace lanes::detail {

template <size_t Bytes>
class LocalArena {
 public:
  LocalArena() = default;
  LocalArena(const LocalArena&) = delete;
  LocalArena& operator=(const LocalArena&) = delete;
  std::pmr::memory_resource* resource() { return &resource_; }

 private:
  alignas(std::max_align_t) std::byte block_[Bytes];
  std::pmr::monotonic_buffer_resource resource_{block_, Bytes};
};

}  // namespace lanes::detail
