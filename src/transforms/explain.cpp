// The recorder behind lanes::explain: batching rules and vmap report to it while it is active.
#include "lanes/explain.h"

#include <ostream>

#include "transforms/batching.h"
#include "transforms/explain_recorder.h"

namespace lanes {

namespace {
thread_local Explanation* recording = nullptr;
thread_local int vmap_depth = 0;  // only the outermost vmap's example graph is reported
}  // namespace

int64_t Explanation::materialized_bytes() const {
  int64_t total = 0;
  for (const Broadcast& b : broadcasts)
    if (b.materialized) total += b.bytes;
  return total;
}

namespace detail {
ExplainScope::ExplainScope() { recording = new Explanation(); }
ExplainScope::~ExplainScope() {
  delete recording;
  recording = nullptr;
}
Explanation ExplainScope::take() { return std::move(*recording); }
bool explaining() { return recording != nullptr; }
void note_ragged(const std::string& what) {
  if (recording && recording->ragged.empty()) recording->ragged = what;
}

VmapRecord::VmapRecord(const Graph& g, int64_t size) : outermost_(vmap_depth++ == 0) {
  if (recording && outermost_) {
    recording->example = g;
    recording->batch_size = size;
    recording->example_dims.assign(g.types.size(), kNotMapped);
  }
}
VmapRecord::~VmapRecord() { --vmap_depth; }
void VmapRecord::value(ValueId v, int64_t dim) {
  if (recording && outermost_) recording->example_dims[v] = dim;
}
}  // namespace detail

namespace batching {
void note_broadcast(const std::string& prim, const Shape& shape, DType dtype, bool materialized) {
  if (!recording) return;
  recording->broadcasts.push_back(
      {prim, shape, shape_numel(shape) * static_cast<int64_t>(dtype_size(dtype)), materialized});
}
void note_fallback(const std::string& prim) {
  if (recording) recording->fallbacks.push_back(prim);
}
void note_control_flow(const std::string& what) {
  if (recording) recording->control_flow.push_back(what);
}
void note_chunking(const std::string& what) {
  if (recording && recording->chunking.empty()) recording->chunking = what;
}
void note_custom_rule(const std::string& what) {
  if (recording) recording->custom_rules.push_back(what);
}
}  // namespace batching

std::ostream& operator<<(std::ostream& os, const Explanation& e) {
  os << "vmap over a batch of " << e.batch_size << "\n";
  os << "one example (* = mapped; unmapped values are computed once):\n";
  for (const Node& n : e.example.nodes) {
    os << "  " << describe(*n.prim) << " ->";
    for (ValueId v : n.outputs) {
      os << ' ' << shape_str(e.example.types[v].shape);
      if (v < int64_t(e.example_dims.size()) && e.example_dims[v] != kNotMapped)
        os << "* (batch dim " << e.example_dims[v] << ")";
    }
    os << '\n';
  }
  os << "batched graph:\n" << e.batched << "\n";
  os << "broadcasts of unmapped values to the batch: ";
  if (e.broadcasts.empty()) os << "none";
  for (const auto& b : e.broadcasts)
    os << "\n  in " << b.where << ": " << shape_str(b.shape) << ", "
       << (b.materialized ? "copied, " + std::to_string(b.bytes) + " bytes" : "a view (no copy)");
  os << "\nmaterialized: " << e.materialized_bytes() << " bytes\ncontrol flow: ";
  if (e.control_flow.empty()) os << "none";
  for (const auto& c : e.control_flow) os << "\n  " << c;
  os << "\nmemory: " << (e.chunking.empty() ? "one piece" : e.chunking);
  if (!e.ragged.empty()) os << "\nragged: " << e.ragged;
  os << "\nfallbacks: ";
  if (e.fallbacks.empty()) os << "none";
  for (const auto& f : e.fallbacks) os << f << ' ';
  os << "\ncustom rules: ";
  if (e.custom_rules.empty()) os << "none";
  for (const auto& c : e.custom_rules) os << "\n  " << c;
  return os << '\n';
}

}  // namespace lanes
