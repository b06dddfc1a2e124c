// lanes::FlopCounter: the floating-point work lanes actually runs, for rooflines.
//
//     lanes::FlopCounter count;
//     auto grads = per_example_loop();   // anything: eager ops, compiled graphs, loops
//     double flops = count.flops();
//     for (auto& [name, c] : count.by_primitive()) ...  // evaluations, flops, seconds
//
// jax's cost_analysis() estimates the flops of one compiled program from its HLO, counting a
// while loop's body once. The counter instead adds up every primitive as it evaluates (each
// primitive's Primitive::flops), so a while_loop counts the iterations it ran and a per-example
// loop counts exactly the work its examples needed: the numerator of a roofline.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace lanes {

class Primitive;
class FlopCounter;

namespace detail {
/// This thread's innermost counter (null: none).
FlopCounter* current_flop_counter();
/// Work a pool thread does for a caller that counts (a parallel chunk of lanes, a step of a
/// parallel scan): counted apart while it lives, then added to `parent` and its outer counters
/// (under a lock: the caller's other tasks finish beside it). Does nothing for a null parent.
class FlopsOnBehalf {
 public:
  explicit FlopsOnBehalf(FlopCounter* parent);
  ~FlopsOnBehalf();
  FlopsOnBehalf(const FlopsOnBehalf&) = delete;
  FlopsOnBehalf& operator=(const FlopsOnBehalf&) = delete;

 private:
  FlopCounter* parent_;
  FlopCounter* saved_ = nullptr;
  std::unique_ptr<FlopCounter> local_;
};

/// Whether a FlopCounter lives on this thread (one thread-local load: the executor asks per node).
bool counting_flops();
/// Seconds on a monotonic clock, for timing one evaluation.
double counter_clock();
/// A kernel that found a shortcut (a product with the identity) tells the counters that this much
/// of its primitive's nominal flops did not run; the evaluation counts the rest.
void skip_flops(double flops);
/// One evaluation under a FlopCounter (bind's and the executor's), from just before eval to
/// done(): its time, and its nominal flops less what its kernels skipped meanwhile (evaluations
/// nest: each keeps its own share of skip_flops and restores its caller's).
class CountedEvaluation {
 public:
  CountedEvaluation();
  /// Adds the evaluation of `prim`, whose Primitive::flops are `nominal`, to this thread's
  /// counters.
  void done(const Primitive& prim, double nominal);

 private:
  double caller_skipped_, start_;
};
}  // namespace detail

/// Counts the flops of the primitives evaluated on this thread while it lives (a multiply-add
/// counts 2; see Primitive::flops). Counters nest: an inner one's work also counts in the outer.
/// Kernels' helper threads are not separate evaluations: a primitive counts once, on the thread
/// that evaluated it; whole evaluations a pool thread runs for the caller (parallel chunks) count
/// too.
class FlopCounter {
 public:
  FlopCounter();
  ~FlopCounter();
  FlopCounter(const FlopCounter&) = delete;
  FlopCounter& operator=(const FlopCounter&) = delete;

  double flops() const { return flops_; }
  /// Primitive evaluations counted (fused chains count once).
  int64_t evaluations() const { return evaluations_; }

  /// Per primitive name: where the flops and the time went. A control-flow primitive's seconds
  /// include its sub-graphs' (whose nodes also count under their own names).
  struct PerPrimitive {
    int64_t evaluations = 0;
    double flops = 0, seconds = 0;
  };
  const std::map<std::string, PerPrimitive>& by_primitive() const { return by_primitive_; }

 private:
  friend class detail::CountedEvaluation;
  friend class detail::FlopsOnBehalf;
  FlopCounter* outer_;
  double flops_ = 0;
  int64_t evaluations_ = 0;
  std::map<std::string, PerPrimitive> by_primitive_;
};
}  // namespace lanes
