// FlopCounter: a chain of counters per thread; bind and the executor report each evaluation.
#include "lanes/cost.h"

#include <chrono>

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

double counter_clock() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void skip_flops(double flops) {
  if (innermost) skipped += flops;
}

double exchange_skipped_flops(double value) {
  const double was = skipped;
  skipped = value;
  return was;
}

void count_flops(const Primitive& prim, double flops, double seconds) {
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
