// Small helpers shared by the primitive families: axis normalisation and params printing.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "lanes/error.h"
#include "lanes/primitive.h"

namespace lanes::prim {

/// Maps a possibly negative axis into [0, ndim); throws naming `op` when out of range.
inline int64_t normalize_axis(int64_t axis, int64_t ndim, const char* op) {
  check(axis >= -ndim && axis < ndim, op, ": axis ", axis, " is out of range for rank ", ndim);
  return axis < 0 ? axis + ndim : axis;
}

/// "(0, 1)": how params print lists (like shapes).
inline std::string list_str(const std::vector<int64_t>& v) { return shape_str(v); }

/// A shape rule's one output type, built without the extra shape copy of an initializer list
/// (shape rules run on every traced op).
inline std::vector<TensorType> single(Shape shape, DType dtype) {
  std::vector<TensorType> out;
  out.reserve(1);
  out.push_back({std::move(shape), dtype});
  return out;
}

/// Checks a primitive got `n` inputs (a bug in an op wrapper otherwise, but never a crash).
inline void check_arity(const std::vector<TensorType>& in, size_t n, const char* op) {
  check(in.size() == n, op, ": expected ", n, " inputs, got ", in.size());
}

}  // namespace lanes::prim
