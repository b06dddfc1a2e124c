// vmap's side of lanes::explain (src/transforms/explain.cpp).
#pragma once

#include "lanes/graph.h"

namespace lanes::detail {

/// Whether an explain is recording on this thread.
bool explaining();
/// How a vmap over Ragged arguments ran (Explanation::ragged).
void note_ragged(const std::string& what);

/// Lives for one run_vmap; reports the example graph and each value's batch dim when it is the
/// outermost vmap under an active explain.
class VmapRecord {
 public:
  VmapRecord(const Graph& g, int64_t size);
  ~VmapRecord();
  void value(ValueId v, int64_t dim);

 private:
  bool outermost_;
};

}  // namespace lanes::detail
