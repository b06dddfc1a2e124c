// lanes.FlopCounter: lanes::FlopCounter as a context manager, so Python sees what a call did
// (each primitive's evaluations, flops and time) as bench/workloads --profile does in C++.
#include <lanes/cost.h>

#include <memory>
#include <string>
#include <thread>

#include "bindings.h"

namespace lanes::python {
namespace {

/// lanes::FlopCounter counts on the thread that made it while it lives, and counters nest. A
/// Python `with` block gives both as long as blocks close in the order they opened, on the
/// thread that opened them; this checks that instead of trusting it, since a counter closed
/// out of order would leave the thread counting into a dead one.
class CounterScope {
 public:
  CounterScope() = default;
  CounterScope(const CounterScope&) = delete;
  CounterScope& operator=(const CounterScope&) = delete;
  // Dropped while counting (__enter__ called by hand, never __exit__): closed if it is the
  // thread's innermost counter; otherwise left alive, since freeing a counter under another
  // would leave the thread counting into freed memory.
  ~CounterScope() {
    if (!counter_) return;
    if (thread_ == std::this_thread::get_id() && top() == this) {
      counter_.reset();
      top() = below_;
    } else {
      (void)counter_.release();
    }
  }

  CounterScope& enter() {
    if (counter_) throw Error("lanes.FlopCounter: this counter is already counting");
    if (entered_) throw Error("lanes.FlopCounter: a counter counts once; make a new one");
    counter_ = std::make_unique<FlopCounter>();
    thread_ = std::this_thread::get_id();
    below_ = top();
    top() = this;
    entered_ = true;
    return *this;
  }

  void exit(nb::args) {
    if (!counter_) throw Error("lanes.FlopCounter: __exit__ without __enter__");
    if (thread_ != std::this_thread::get_id() || top() != this)
      throw Error(
          "lanes.FlopCounter: counters must close on the thread that opened them, the "
          "innermost first");
    flops_ = counter_->flops();
    evaluations_ = counter_->evaluations();
    by_primitive_ = counter_->by_primitive();
    counter_.reset();
    top() = below_;
  }

  double flops() const { return counter_ ? counter_->flops() : flops_; }
  int64_t evaluations() const { return counter_ ? counter_->evaluations() : evaluations_; }

  nb::dict by_primitive() const {
    nb::dict out;
    for (const auto& [name, c] : counter_ ? counter_->by_primitive() : by_primitive_) {
      nb::dict row;
      row["evaluations"] = c.evaluations;
      row["flops"] = c.flops;
      row["seconds"] = c.seconds;
      out[name.c_str()] = row;
    }
    return out;
  }

 private:
  static CounterScope*& top() {
    thread_local CounterScope* innermost = nullptr;
    return innermost;
  }

  std::unique_ptr<FlopCounter> counter_;
  std::thread::id thread_;
  CounterScope* below_ = nullptr;
  bool entered_ = false;
  double flops_ = 0;
  int64_t evaluations_ = 0;
  std::map<std::string, FlopCounter::PerPrimitive> by_primitive_;
};

}  // namespace

void bind_cost(nb::module_& m) {
  nb::class_<CounterScope>(m, "FlopCounter", R"(Counts what lanes evaluates in a `with` block.

    with lanes.FlopCounter() as c:
        f(x)
    c.flops         # floating-point operations (a multiply-add counts 2)
    c.evaluations   # primitive evaluations (a fused chain counts once)
    c.by_primitive  # {"dot_general": {"evaluations": 3, "flops": ..., "seconds": ...}, ...}

Counts the calls made on this thread (and the work lanes' pool does for them) while the block
runs; counters nest, an inner block's work counting in the outer one too. The values are read
live inside the block and kept after it. A control-flow primitive's seconds include its
sub-graphs' nodes, which also count under their own names.)")
      .def(nb::init<>())
      .def("__enter__", &CounterScope::enter, nb::rv_policy::reference)
      .def("__exit__", &CounterScope::exit)
      .def_prop_ro("flops", &CounterScope::flops, "Floating-point operations counted.")
      .def_prop_ro("evaluations", &CounterScope::evaluations,
                   "Primitive evaluations counted (a fused chain counts once).")
      .def_prop_ro("by_primitive", &CounterScope::by_primitive,
                   "Per primitive name: its evaluations, flops and seconds, as a dict.");
}

}  // namespace lanes::python
