// Op-table rows of scatter's modes beside add (set, multiply, min, max): repeated indices (set
// keeps the last, the others combine them all), negative indices, batch_dims = 1, broadcast
// updates, and multiply through zero updates at repeated indices. The reference applies the
// updates one by one in row-major index order.
#include <cmath>

#include "op_table.h"

using namespace optable;

namespace {

using lanes::ScatterMode;

double combine(ScatterMode mode, double a, double b) {
  switch (mode) {
    case ScatterMode::Add:
      return a + b;
    case ScatterMode::Set:
      return b;
    case ScatterMode::Multiply:
      return a * b;
    case ScatterMode::Min:
      return std::min(a, b);
    case ScatterMode::Max:
      return std::max(a, b);
  }
  return a;
}

// x is (batch..., pre..., n, inner...), indices (batch..., idx...), updates the gathered shape
// (batch..., pre..., idx..., inner...); `u` walks the gathered shape.
std::vector<int64_t> target(const std::vector<int64_t>& u, const Ref& x, const Ref& idx,
                            int64_t axis, int64_t batch_dims) {
  const int64_t k = idx.ndim() - batch_dims;
  std::vector<int64_t> at_idx(u.begin(), u.begin() + batch_dims);
  at_idx.insert(at_idx.end(), u.begin() + axis, u.begin() + axis + k);
  int64_t i = static_cast<int64_t>(idx.at(at_idx));
  if (i < 0) i += x.shape[axis];
  std::vector<int64_t> to(u.begin(), u.begin() + axis);
  to.push_back(i);
  to.insert(to.end(), u.begin() + axis + k, u.end());
  return to;
}

Ref scatter_ref(const Ref& x, const Ref& idx, const Ref& updates, int64_t axis, int64_t batch_dims,
                ScatterMode mode) {
  Shape shape(x.shape.begin(), x.shape.begin() + axis);
  shape.insert(shape.end(), idx.shape.begin() + batch_dims, idx.shape.end());
  shape.insert(shape.end(), x.shape.begin() + axis + 1, x.shape.end());
  Ref out = x;
  for (int64_t i = 0; i < lanes::shape_numel(shape); ++i) {
    const std::vector<int64_t> u = unravel(i, shape);
    double& v = out.at(target(u, x, idx, axis, batch_dims));
    v = combine(mode, v, at_broadcast(updates, u));
  }
  return out;
}

const char* mode_name(ScatterMode m) {
  switch (m) {
    case ScatterMode::Add:
      return "add";
    case ScatterMode::Set:
      return "set";
    case ScatterMode::Multiply:
      return "multiply";
    case ScatterMode::Min:
      return "min";
    case ScatterMode::Max:
      return "max";
  }
  return "?";
}

OpRow scatter_row(ScatterMode mode, std::string suffix, Shape x_shape, Tensor indices,
                  Shape updates_shape, int64_t axis, int64_t batch_dims = 0) {
  OpRow r;
  r.name = std::string("scatter_") + mode_name(mode) + suffix;
  r.op = "scatter";
  r.dtypes = kAll;
  r.sample = [=](DType d, Gen& g) {
    return std::vector<Tensor>{g.uniform(x_shape, d, -3, 3), indices,
                               g.uniform(updates_shape, d, -3, 3)};
  };
  r.call = [=](const std::vector<Tensor>& in) {
    return lanes::scatter(in[0], in[1], in[2], mode, axis, batch_dims);
  };
  r.reference = [=](const std::vector<Ref>& in, DType d) {
    return Expected{round_to(scatter_ref(in[0], in[1], in[2], axis, batch_dims, mode), d), d};
  };
  r.differentiable = true;
  return r;
}

Tensor idx32(std::vector<int32_t> v, Shape s) { return lanes::tensor(v, s); }
Tensor idx64(std::vector<int64_t> v, Shape s) { return lanes::tensor(v, s); }

std::vector<OpRow> all_rows() {
  std::vector<OpRow> rows;
  for (ScatterMode m :
       {ScatterMode::Set, ScatterMode::Multiply, ScatterMode::Min, ScatterMode::Max}) {
    rows.push_back(scatter_row(m, "_repeated", {5, 3}, idx32({0, 2, 0, -1, 2, 2}, {6}), {6, 3}, 0));
    rows.push_back(scatter_row(m, "_axis1", {4, 6}, idx64({5, -1, 0, 3}, {2, 2}), {4, 2, 2}, 1));
    rows.push_back(scatter_row(m, "_batch_dims1", {3, 5, 2},
                               idx64({0, 4, 4, -1, 2, 2, 2, 0, 3, -5, 1, 1}, {3, 4}), {3, 4, 2}, 1,
                               1));
    rows.push_back(scatter_row(m, "_broadcast_updates", {5, 3}, idx32({1, 1, 4, 0}, {4}), {3}, 0));
    rows.push_back(scatter_row(m, "_empty_indices", {4, 3}, idx32({}, {0}), {0, 3}, 0));
  }
  // Zero updates, alone and at repeated indices: multiply's derivative must not divide by them.
  OpRow zeros = scatter_row(ScatterMode::Multiply, "_zero_updates", {4, 2},
                            idx32({0, 0, 1, 1, 1, 3, 2, 2}, {8}), {8, 2}, 0);
  zeros.dtypes = kFloats;
  zeros.sample = [](DType d, Gen& g) {
    std::vector<double> mask(16, 1.0);
    for (int i : {0, 5, 6, 9, 14, 15}) mask[i] = 0.0;  // rows 0, 1 and 2 get 1 or 2 zeros
    const Tensor u = g.uniform({8, 2}, d, 0.5, 1.5) * lanes::cast(lanes::tensor(mask, {8, 2}), d);
    return std::vector<Tensor>{g.uniform({4, 2}, d, -2, 2), idx32({0, 0, 1, 1, 1, 3, 2, 2}, {8}),
                               u};
  };
  rows.push_back(zeros);
  rows.push_back(scatter_row(ScatterMode::Add, "_mode", {4, 3}, idx32({1, 1}, {2}), {2, 3}, 0));
  return rows;
}

std::vector<ErrorRow> error_rows() {
  const Tensor x = lanes::ones({4, 3});
  return {
      {"scatter_set_index_out_of_range",
       [x] {
         lanes::scatter(x, idx32({4}, {1}), lanes::ones({1, 3}), ScatterMode::Set);
       },
       {"scatter_set", "index 4", "axis 0", "size 4", "(4, 3)"}},
      {"scatter_max_updates_shape",
       [x] {
         lanes::scatter(x, idx32({0, 1}, {2}), lanes::ones({3, 3}), ScatterMode::Max);
       },
       {"scatter", "updates", "(3, 3)", "(2, 3)", "(4, 3)"}},
      {"scatter_min_float_indices",
       [x] {
         lanes::scatter(x, lanes::ones({2}), lanes::ones({2, 3}), ScatterMode::Min);
       },
       {"scatter_min", "indices", "float32"}},
      {"scatter_multiply_bad_axis",
       [x] {
         lanes::scatter(x, idx32({0}, {1}), lanes::ones({1, 3}), ScatterMode::Multiply, 2);
       },
       {"scatter", "axis 2"}},
  };
}

Rows rows{all_rows(), error_rows()};

}  // namespace
