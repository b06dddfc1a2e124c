// lanes::FlopCounter: the floating-point work lanes actually runs, for rooflines.
//
//     lanes::FlopCounter count;
//     auto grads = per_example_loop();   // anything: eager ops, compiled graphs, loops
//     double flops = count.flops();
//
// jax's cost_analysis() estimates the flops of one compiled program from its HLO, counting a
// while loop's body once. The counter instead adds up every primitive as it evaluates (each
// primitive's Primitive::flops), so a while_loop counts the iterations it ran and a per-example
// loop counts exactly the work its examples needed: the numerator of a roofline.
#pragma once

#include <cstdint>

namespace lanes {

namespace detail {
/// Whether a FlopCounter lives on this thread (one thread-local load: the executor asks per node).
bool counting_flops();
/// Adds one evaluation's flops to this thread's counters.
void count_flops(double flops);
}  // namespace detail

/// Counts the flops of the primitives evaluated on this thread while it lives (a multiply-add
/// counts 2; see Primitive::flops). Counters nest: an inner one's work also counts in the outer.
/// Kernels' helper threads are not separate evaluations: a primitive counts once, on the thread
/// that evaluated it.
class FlopCounter {
 public:
  FlopCounter();
  ~FlopCounter();
  FlopCounter(const FlopCounter&) = delete;
  FlopCounter& operator=(const FlopCounter&) = delete;

  double flops() const { return flops_; }
  /// Primitive evaluations counted (fused chains count once).
  int64_t evaluations() const { return evaluations_; }

 private:
  friend void detail::count_flops(double flops);
  FlopCounter* outer_;
  double flops_ = 0;
  int64_t evaluations_ = 0;
};
}  // namespace lanes
