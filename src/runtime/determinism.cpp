#include "lanes/determinism.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace lanes {

namespace {

bool from_environment() {
  const char* v = std::getenv("LANES_BATCH_INVARIANT");
  return v && *v && std::strcmp(v, "0") != 0;
}

std::atomic<bool>& flag() {
  static std::atomic<bool> on{from_environment()};
  return on;
}

}  // namespace

bool batch_invariant() { return flag().load(std::memory_order_relaxed); }

void set_batch_invariant(bool on) { flag().store(on, std::memory_order_relaxed); }

}  // namespace lanes
