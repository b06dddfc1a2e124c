// FlopCounter: a chain of counters per thread; bind and the executor report each evaluation.
#include "lanes/cost.h"

#include <chrono>
#include <mutex>

#include "lanes/primitive.h"

namespace lanes {
namespace {
thread_local FlopCounter* innermost = nullptr;
thread_local double skipped = 0;
}  // namespace

FlopCounter::FlopCounter() : outer_(innermost) { innermost = this; }
FlopCounter::~FlopCounter() { innermost = outer_; }

namespace detail {

bool counting_flops() { return innermost != nullptr; }

FlopCounter* current_flop_counter() { return innermost; }

FlopsOnBehalf::FlopsOnBehalf(FlopCounter* parent) : parent_(parent) {
  if (!parent_) return;
  saved_ = innermost;
  innermost = nullptr;  // the local counter stands alone
  local_ = std::make_unique<FlopCounter>();
}

FlopsOnBehalf::~FlopsOnBehalf() {
  if (!parent_) return;
  const FlopCounter& done = *local_;
  static std::mutex merging;
  {
    const std::lock_guard<std::mutex> lock(merging);
    for (FlopCounter* c = parent_; c; c = c->outer_) {
      c->flops_ += done.flops_;
      c->evaluations_ += done.evaluations_;
      for (const auto& [name, p] : done.by_primitive_) {
        FlopCounter::PerPrimitive& to = c->by_primitive_[name];
        to.evaluations += p.evaluations;
        to.flops += p.flops;
        to.seconds += p.seconds;
      }
    }
  }
  local_.reset();  // restores innermost to null
  innermost = saved_;
}

double counter_clock() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void skip_flops(double flops) {
  if (innermost) skipped += flops;
}

CountedEvaluation::CountedEvaluation() : caller_skipped_(skipped), start_(counter_clock()) {
  skipped = 0;
}

void CountedEvaluation::done(const Primitive& prim, double nominal) {
  const double seconds = counter_clock() - start_;
  const double flops = nominal - skipped;
  skipped = caller_skipped_;
  const std::string name = prim.name();
  for (FlopCounter* c = innermost; c; c = c->outer_) {
    c->flops_ += flops;
    ++c->evaluations_;
    FlopCounter::PerPrimitive& p = c->by_primitive_[name];
    ++p.evaluations;
    p.flops += flops;
    p.seconds += seconds;
  }
}

}  // namespace detail
}  // namespace lanes
