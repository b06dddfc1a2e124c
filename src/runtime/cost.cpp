// FlopCounter: a chain of counters per thread; bind and the executor report each evaluation.
#include "lanes/cost.h"

namespace lanes {
namespace {
thread_local FlopCounter* innermost = nullptr;
}  // namespace

FlopCounter::FlopCounter() : outer_(innermost) { innermost = this; }
FlopCounter::~FlopCounter() { innermost = outer_; }

namespace detail {

bool counting_flops() { return innermost != nullptr; }

void count_flops(double flops) {
  for (FlopCounter* c = innermost; c; c = c->outer_) {
    c->flops_ += flops;
    ++c->evaluations_;
  }
}

}  // namespace detail
}  // namespace lanes
