// Op-table rows of the indexing family: gather, take, scatter_add and one_hot over all six
// dtypes, with negative axes and indices, batch_dims = 1, 0-d and 0-size indices, repeated
// indices (scatter_add accumulates), uint8/int32/int64 index dtypes and large inputs (threaded).
// References are naive float64 loops over output indices.
#include <cmath>

#include "op_table.h"

using namespace optable;

namespace {

using Sample = std::function<std::vector<Tensor>(DType, Gen&)>;

Tensor idx32(std::vector<int32_t> v, Shape s) { return lanes::tensor(v, s); }
Tensor idx64(std::vector<int64_t> v, Shape s) { return lanes::tensor(v, s); }

// Random in-range indices (negative half the time when signed), for the large rows.
Tensor random_indices(Shape shape, int64_t n, Gen& g, bool allow_negative) {
  Tensor u = g.uniform(shape, DType::Int64, 0, double(n - 1));
  std::vector<int64_t> v = u.to_vector<int64_t>();
  for (size_t i = 0; allow_negative && i < v.size(); i += 2) v[i] -= n;
  return lanes::tensor(v, shape);
}

// Where one gathered element comes from: out index -> x index (tf.gather with batch_dims).
std::vector<int64_t> source_index(const std::vector<int64_t>& out, const Ref& x, const Ref& idx,
                                  int64_t axis, int64_t batch_dims) {
  const int64_t k = idx.ndim() - batch_dims;
  std::vector<int64_t> at_idx(out.begin(), out.begin() + batch_dims);
  at_idx.insert(at_idx.end(), out.begin() + axis, out.begin() + axis + k);
  int64_t i = static_cast<int64_t>(idx.at(at_idx));
  if (i < 0) i += x.shape[axis];
  std::vector<int64_t> src(out.begin(), out.begin() + axis);
  src.push_back(i);
  src.insert(src.end(), out.begin() + axis + k, out.end());
  return src;
}

Shape gathered_shape(const Ref& x, const Ref& idx, int64_t axis, int64_t batch_dims) {
  Shape s(x.shape.begin(), x.shape.begin() + axis);
  s.insert(s.end(), idx.shape.begin() + batch_dims, idx.shape.end());
  s.insert(s.end(), x.shape.begin() + axis + 1, x.shape.end());
  return s;
}

Ref gather_ref(const Ref& x, const Ref& idx, int64_t axis, int64_t batch_dims) {
  if (axis < 0) axis += x.ndim();
  if (batch_dims < 0) batch_dims += idx.ndim();
  Ref out(gathered_shape(x, idx, axis, batch_dims));
  for (int64_t i = 0; i < out.numel(); ++i)
    out.data[i] = x.at(source_index(unravel(i, out.shape), x, idx, axis, batch_dims));
  return out;
}

Ref scatter_ref(const Ref& x, const Ref& idx, const Ref& updates, int64_t axis,
                int64_t batch_dims) {
  if (axis < 0) axis += x.ndim();
  if (batch_dims < 0) batch_dims += idx.ndim();
  Ref out = x;
  const Shape shape = gathered_shape(x, idx, axis, batch_dims);
  for (int64_t i = 0; i < lanes::shape_numel(shape); ++i) {
    const std::vector<int64_t> u = unravel(i, shape);
    out.at(source_index(u, x, idx, axis, batch_dims)) += at_broadcast(updates, u);
  }
  return out;
}

OpRow gather_row(std::string name, Shape x_shape, std::function<Tensor(Gen&)> indices, int64_t axis,
                 int64_t batch_dims = 0, std::vector<DType> dtypes = kAll) {
  OpRow r;
  r.name = std::move(name);
  r.op = "gather";
  r.dtypes = std::move(dtypes);
  r.sample = [=](DType d, Gen& g) {
    return std::vector<Tensor>{g.uniform(x_shape, d, -3, 3), indices(g)};
  };
  r.call = [=](const std::vector<Tensor>& in) {
    return lanes::gather(in[0], in[1], axis, batch_dims);
  };
  r.reference = [=](const std::vector<Ref>& in, DType d) {
    return Expected{gather_ref(in[0], in[1], axis, batch_dims), d};
  };
  r.differentiable = true;
  return r;
}

OpRow take_row(std::string name, Shape x_shape, std::function<Tensor(Gen&)> indices, int64_t axis) {
  OpRow r = gather_row(std::move(name), std::move(x_shape), std::move(indices), axis);
  r.op = "take";
  r.call = [=](const std::vector<Tensor>& in) { return lanes::take(in[0], in[1], axis); };
  return r;
}

OpRow scatter_row(std::string name, Shape x_shape, std::function<Tensor(Gen&)> indices,
                  Shape updates_shape, int64_t axis, int64_t batch_dims = 0,
                  std::vector<DType> dtypes = kAll) {
  OpRow r;
  r.name = std::move(name);
  r.op = "scatter_add";
  r.dtypes = std::move(dtypes);
  r.sample = [=](DType d, Gen& g) {
    return std::vector<Tensor>{g.uniform(x_shape, d, 0, 3), indices(g),
                               g.uniform(updates_shape, d, 0, 3)};
  };
  r.call = [=](const std::vector<Tensor>& in) {
    return lanes::scatter_add(in[0], in[1], in[2], axis, batch_dims);
  };
  r.reference = [=](const std::vector<Ref>& in, DType d) {
    return Expected{round_to(scatter_ref(in[0], in[1], in[2], axis, batch_dims), d), d};
  };
  r.differentiable = true;
  return r;
}

auto fixed(Tensor t) {
  return [t](Gen&) { return t; };
}

std::vector<OpRow> gather_rows() {
  std::vector<OpRow> rows;
  rows.push_back(gather_row("gather_axis0", {5, 3}, fixed(idx32({0, 4, -1, 2, 4}, {5})), 0));
  rows.push_back(gather_row("gather_axis1_2d_indices", {3, 6, 2},
                            fixed(idx64({1, -6, 5, 0, 3, -2}, {2, 3})), 1));
  rows.push_back(gather_row("gather_axis_negative", {4, 5}, fixed(idx32({4, 0, -3}, {3})), -1));
  rows.push_back(gather_row("gather_uint8_indices", {6, 2},
                            fixed(lanes::tensor(std::vector<uint8_t>{5, 0, 5, 2}, {2, 2})), 0));
  rows.push_back(gather_row("gather_scalar_index", {4, 3}, fixed(idx32({-2}, {})), 0));
  rows.push_back(gather_row("gather_scalar_index_axis1", {4, 3}, fixed(idx64({2}, {})), 1));
  rows.push_back(gather_row("gather_batch_dims1", {3, 5, 2},
                            fixed(idx32({0, 4, 4, -1, 2, 2, 1, 0, 3, -5, 1, 1}, {3, 4})), 1, 1));
  rows.push_back(gather_row("gather_batch_dims1_axis2", {2, 3, 5},
                            fixed(idx64({4, 0, -1, 2, 1, 1, 3, 0}, {2, 4})), 2, 1));
  rows.push_back(gather_row("gather_batch_dims_negative", {2, 4},
                            fixed(idx64({3, 0, 1, -1, 2, 2}, {2, 3})), 1, -1));
  rows.push_back(gather_row("gather_empty_indices", {4, 3}, fixed(idx32({}, {0})), 0));
  rows.push_back(gather_row("gather_zero_size_x", {0, 5}, fixed(idx32({1, -1}, {2})), 1));
  rows.push_back(gather_row(
      "gather_large_rows", {1000, 64}, [](Gen& g) { return random_indices({2000}, 1000, g, true); },
      0, 0, kFloats));
  rows.push_back(gather_row("gather_large_last_axis", {300, 400},
                            [](Gen& g) { return random_indices({300}, 400, g, false); }, 1, 0,
                            {DType::Int32}));
  rows.push_back(take_row("take_axis0", {5, 2}, fixed(idx64({-1, 3, 3}, {3})), 0));
  rows.push_back(
      take_row("take_axis_negative", {2, 3, 4}, fixed(idx32({3, 0, -4, 1}, {2, 2})), -1));
  return rows;
}

std::vector<OpRow> scatter_rows() {
  std::vector<OpRow> rows;
  rows.push_back(scatter_row("scatter_add_axis0_repeated", {5, 3},
                             fixed(idx32({0, 2, 0, -1, 2, 2}, {6})), {6, 3}, 0));
  rows.push_back(
      scatter_row("scatter_add_axis1", {4, 6}, fixed(idx64({5, -1, 0, 5}, {2, 2})), {4, 2, 2}, 1));
  rows.push_back(
      scatter_row("scatter_add_axis_negative", {3, 4}, fixed(idx32({1, 1, -4}, {3})), {3, 3}, -1));
  rows.push_back(scatter_row("scatter_add_batch_dims1", {3, 5, 2},
                             fixed(idx64({0, 4, 4, -1, 2, 2, 2, 0, 3, -5, 1, 1}, {3, 4})),
                             {3, 4, 2}, 1, 1));
  rows.push_back(scatter_row("scatter_add_scalar_index", {4, 3}, fixed(idx32({-1}, {})), {3}, 0));
  rows.push_back(scatter_row("scatter_add_uint8_indices", {3, 2},
                             fixed(lanes::tensor(std::vector<uint8_t>{2, 2, 0}, {3})), {3, 2}, 0));
  rows.push_back(scatter_row("scatter_add_broadcast_updates", {5, 3},
                             fixed(idx32({1, 1, 4, 0}, {4})), {3}, 0));
  rows.push_back(
      scatter_row("scatter_add_empty_indices", {4, 3}, fixed(idx32({}, {0})), {0, 3}, 0));
  rows.push_back(scatter_row(
      "scatter_add_large_columns", {200, 2048},
      [](Gen& g) { return random_indices({300}, 200, g, true); }, {300, 2048}, 0, 0, kFloats));
  rows.push_back(scatter_row("scatter_add_large_slabs", {64, 50, 32},
                             [](Gen& g) { return random_indices({40}, 50, g, false); },
                             {64, 40, 32}, 1, 0, {DType::Int64}));
  // Updates of another dtype take x's dtype (jnp's x.at[i].add(u)).
  OpRow cast =
      scatter_row("scatter_add_casts_updates", {4, 2}, fixed(idx32({3, 3}, {2})), {2, 2}, 0);
  cast.sample = [](DType d, Gen& g) {
    return std::vector<Tensor>{g.uniform({4, 2}, d, 0, 3), idx32({3, 3}, {2}),
                               g.uniform({2, 2}, DType::Int32, 0, 3)};
  };
  cast.differentiable = false;
  rows.push_back(cast);
  return rows;
}

OpRow one_hot_row(std::string name, Tensor indices, int64_t depth) {
  OpRow r;
  r.name = std::move(name);
  r.op = "one_hot";
  r.dtypes = kAll;  // the output dtype, carried by a 0-d second input
  r.sample = [indices](DType d, Gen&) { return std::vector<Tensor>{indices, lanes::scalar(0, d)}; };
  r.call = [depth](const std::vector<Tensor>& in) {
    return lanes::one_hot(in[0], depth, in[1].dtype());
  };
  r.reference = [depth](const std::vector<Ref>& in, DType d) {
    Shape shape = in[0].shape;
    shape.push_back(depth);
    Ref out(shape);
    for (int64_t i = 0; i < in[0].numel(); ++i)
      for (int64_t j = 0; j < depth; ++j) out.data[i * depth + j] = in[0].data[i] == double(j);
    return Expected{out, d};
  };
  return r;
}

std::vector<OpRow> one_hot_rows() {
  return {
      one_hot_row("one_hot", idx32({0, 3, -1, 2, 7, 1}, {2, 3}), 4),
      one_hot_row("one_hot_1d_int64", idx64({2, 0, 2}, {3}), 3),
      one_hot_row("one_hot_uint8", lanes::tensor(std::vector<uint8_t>{1, 0, 255}, {3}), 2),
      one_hot_row("one_hot_float_indices", lanes::tensor(std::vector<float>{1, 0.5, 2}, {3}), 3),
      one_hot_row("one_hot_scalar", idx32({1}, {}), 3),
      one_hot_row("one_hot_depth0", idx32({1, 0}, {2}), 0),
  };
}

std::vector<OpRow> all_rows() {
  std::vector<OpRow> rows = gather_rows();
  for (auto* part : {scatter_rows, one_hot_rows})
    for (OpRow& r : part()) rows.push_back(std::move(r));
  // The large rows test the threaded kernels; derivatives are covered by the small ones.
  for (OpRow& r : rows)
    if (r.name.find("large") != std::string::npos) r.differentiable = false;
  return rows;
}

// ---- errors -----------------------------------------------------------------------------------

ErrorRow error(std::string name, std::function<void()> call, std::vector<std::string> mentions) {
  return ErrorRow{std::move(name), std::move(call), std::move(mentions)};
}

std::vector<ErrorRow> error_rows() {
  using lanes::ones;
  const Tensor x = ones({4, 3});
  return {
      error("gather_index_too_large",
            [x] {
              lanes::gather(x, idx32({0, 7}, {2}));
            },
            {"gather", "index 7", "axis 0", "size 4", "(4, 3)"}),
      error("gather_index_too_negative", [x] { lanes::gather(x, idx64({-5}, {1}), -1); },
            {"gather", "index -5", "axis 1", "size 3"}),
      error("gather_index_empty_axis",
            [] {
              lanes::gather(ones({0, 2}), idx32({0}, {1}));
            },
            {"gather", "index 0", "size 0"}),
      error("gather_float_indices",
            [x] { lanes::gather(x, lanes::tensor(std::vector<float>{1}, {1})); },
            {"gather", "indices", "float32", "(1,)"}),
      error("gather_bad_axis", [x] { lanes::gather(x, idx32({0}, {1}), 2); },
            {"gather", "axis 2", "rank 2"}),
      error("gather_batch_dims_past_axis",
            [] {
              lanes::gather(ones({2, 3}), idx32({0, 0}, {2, 1}), 0, 1);
            },
            {"gather", "batch_dims 1", "(2, 3)", "(2, 1)"}),
      error("gather_batch_dims_past_indices",
            [] {
              lanes::gather(ones({2, 3}), idx32({0}, {}), 1, 1);
            },
            {"gather", "batch_dims 1", "()"}),
      error("gather_batch_mismatch",
            [] {
              lanes::gather(ones({3, 5}), idx32({0, 0, 0, 0}, {2, 2}), 1, 1);
            },
            {"gather", "(3, 5)", "(2, 2)"}),
      error("gather_scalar_x", [] { lanes::gather(ones({}), idx32({0}, {1})); },
            {"gather", "zero-dimensional", "()"}),
      error("take_index_out_of_range", [x] { lanes::take(x, idx32({3}, {1}), 1); },
            {"index 3", "axis 1", "size 3"}),
      error("take_bad_axis", [x] { lanes::take(x, idx32({0}, {1}), -3); }, {"take", "axis -3"}),
      error("scatter_add_index_out_of_range",
            [x] {
              lanes::scatter_add(x, idx32({9}, {1}), ones({4, 1}), 1);
            },
            {"scatter_add", "index 9", "axis 1", "size 3", "(4, 3)"}),
      error("scatter_add_negative_index_out_of_range",
            [x] {
              lanes::scatter_add(x, idx32({-5, 0}, {2}), ones({2, 3}));
            },
            {"scatter_add", "index -5", "axis 0", "size 4"}),
      error("scatter_add_updates_shape",
            [x] {
              lanes::scatter_add(x, idx32({0, 1}, {2}), ones({3, 3}));
            },
            {"scatter_add", "(3, 3)", "(2, 3)", "(4, 3)"}),
      error("scatter_add_float_indices",
            [x] {
              lanes::scatter_add(x, ones({2}), ones({2, 3}));
            },
            {"scatter_add", "indices", "float32"}),
      error("scatter_add_bad_axis",
            [x] {
              lanes::scatter_add(x, idx32({0}, {1}), ones({1, 3}), 5);
            },
            {"scatter_add", "axis 5"}),
      error("scatter_add_batch_mismatch",
            [] {
              lanes::scatter_add(ones({3, 5}), idx32({0, 0}, {2, 1}), ones({2, 1}), 1, 1);
            },
            {"scatter_add", "(3, 5)", "(2, 1)"}),
      error("one_hot_negative_depth", [] { lanes::one_hot(idx32({0}, {1}), -1); },
            {"one_hot", "depth", "-1"}),
      error("one_hot_bool_indices",
            [] { lanes::one_hot(lanes::tensor(std::vector<bool>{true}, {1}), 2); },
            {"one_hot", "bool", "(1,)"}),
  };
}

Rows rows{all_rows(), error_rows()};

}  // namespace
