// The names of the vmaps being traced: a thread-local stack, innermost last (traces are
// thread-local too).
#include "ir/axis_scope.h"

#include <vector>

#include "ir/trace.h"
#include "lanes/collectives.h"

namespace lanes::detail {

namespace {
thread_local std::vector<AxisFrame> frames;

std::string names_in_scope() {
  if (frames.empty())
    return "no named vmap is in scope (collectives run inside a vmap whose "
           "VmapOptions::axis_name names their axis)";
  std::string out = "names in scope:";
  for (size_t i = frames.size(); i-- > 0;) out += " '" + frames[i].name + "'";
  return out;
}
}  // namespace

AxisNameScope::AxisNameScope(const std::string& name, int64_t size) {
  if (name.empty()) return;
  // The vmap's trace opens next, at this depth.
  frames.push_back({name, size, trace_depth()});
  pushed_ = true;
}

AxisNameScope::~AxisNameScope() {
  if (pushed_) frames.pop_back();
}

const AxisFrame& find_axis(const std::string& name, const char* op) {
  for (size_t i = frames.size(); i-- > 0;)
    if (frames[i].name == name) return frames[i];
  fail(op, ": unknown axis name '", name, "': ", names_in_scope());
}

TraceState* collective_trace(const Primitive& prim, const std::string& axis, TraceState* owner) {
  const AxisFrame& frame = find_axis(axis, prim.name().c_str());
  TraceState* own = active_trace(frame.depth);
  check(own != nullptr, "collective over axis '", axis,
        "': the vmap of that name is not tracing (a collective outside its vmap's function)");
  if (!owner) return own;
  // The deeper of the two: a trace at a larger depth is nested inside the other.
  for (size_t d = trace_depth(); d-- > frame.depth;)
    if (active_trace(d) == owner) return owner;
  return own;
}

}  // namespace lanes::detail
