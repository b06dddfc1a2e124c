// Op-table rows of the shape family (views over reshape / transpose / broadcast_in_dim / slice):
// every op over all six dtypes, negative axes, -1 in reshape, 0-d and 0-size shapes. The generic
// test also feeds strided, transposed and broadcast inputs, so reshape's copying path runs too.
// References are naive float64 index mappings.
#include <algorithm>
#include <numeric>

#include "op_table.h"

using namespace optable;

namespace {

using Index = std::vector<int64_t>;
// For an output of `out_shape`, the input index each element reads.
using SourceMap = std::function<Index(const Index&)>;

// A one-input row whose reference copies x through an index map.
OpRow mapped(std::string name, std::string op, Shape in_shape, Shape out_shape,
             std::function<Tensor(const Tensor&)> fn, SourceMap source) {
  OpRow r;
  r.name = std::move(name);
  r.op = std::move(op);
  r.dtypes = kAll;
  r.sample = [in_shape](DType d, Gen& g) { return std::vector<Tensor>{g.uniform(in_shape, d)}; };
  r.call = [fn](const std::vector<Tensor>& in) { return fn(in[0]); };
  r.reference = [out_shape, source](const std::vector<Ref>& in, DType d) {
    Ref out(out_shape);
    for (int64_t i = 0; i < out.numel(); ++i) out.data[i] = in[0].at(source(unravel(i, out_shape)));
    return Expected{out, d};
  };
  r.differentiable = true;
  return r;
}

// Reshape-like ops keep the row-major order: element i of the output is element i of x.
OpRow same_order(std::string name, std::string op, Shape in_shape, Shape out_shape,
                 std::function<Tensor(const Tensor&)> fn) {
  return mapped(
      std::move(name), std::move(op), in_shape, out_shape, fn,
      [in_shape, out_shape](const Index& i) { return unravel(ravel(i, out_shape), in_shape); });
}

// out[i] = x[i[perm[0]], ...] inverted: output dim k is input dim perm[k].
SourceMap permuted(std::vector<int64_t> perm) {
  return [perm](const Index& out) {
    Index in(out.size());
    for (size_t k = 0; k < perm.size(); ++k) in[perm[k]] = out[k];
    return in;
  };
}

Shape permute(const Shape& s, const std::vector<int64_t>& perm) {
  Shape out;
  for (int64_t p : perm) out.push_back(s[p]);
  return out;
}

OpRow transposed(std::string name, std::string op, Shape in_shape, std::vector<int64_t> perm,
                 std::function<Tensor(const Tensor&)> fn) {
  return mapped(std::move(name), std::move(op), in_shape, permute(in_shape, perm), fn,
                permuted(perm));
}

// numpy broadcasting: the input index is the output's trailing dims, 0 where x has size 1.
SourceMap broadcast_from(Shape in_shape, std::vector<int64_t> dims) {
  return [in_shape, dims](const Index& out) {
    Index in(in_shape.size());
    for (size_t k = 0; k < dims.size(); ++k) in[k] = in_shape[k] == 1 ? 0 : out[dims[k]];
    return in;
  };
}

std::vector<int64_t> trailing(size_t in_rank, size_t out_rank) {
  std::vector<int64_t> dims(in_rank);
  std::iota(dims.begin(), dims.end(), int64_t(out_rank - in_rank));
  return dims;
}

OpRow sliced(std::string name, std::string op, Shape in_shape, Shape start, Shape step,
             Shape out_shape, std::function<Tensor(const Tensor&)> fn) {
  return mapped(std::move(name), std::move(op), in_shape, out_shape, fn,
                [start, step](const Index& out) {
                  Index in(out.size());
                  for (size_t d = 0; d < out.size(); ++d) in[d] = start[d] + out[d] * step[d];
                  return in;
                });
}

std::vector<OpRow> reshape_rows() {
  using lanes::reshape;
  return {
      same_order("reshape", "reshape", {2, 3, 4}, {4, 6},
                 [](const Tensor& x) {
                   return reshape(x, {4, 6});
                 }),
      same_order("reshape_infer_last", "reshape", {2, 3, 4}, {6, 4},
                 [](const Tensor& x) {
                   return reshape(x, {6, -1});
                 }),
      same_order("reshape_infer_first", "reshape", {2, 3, 4}, {3, 2, 4},
                 [](const Tensor& x) {
                   return reshape(x, {-1, 2, 4});
                 }),
      same_order("reshape_to_scalar", "reshape", {1, 1}, {},
                 [](const Tensor& x) { return reshape(x, {}); }),
      same_order("reshape_from_scalar", "reshape", {}, {1, 1, 1},
                 [](const Tensor& x) {
                   return reshape(x, {1, -1, 1});
                 }),
      same_order("reshape_zero_size", "reshape", {0, 3}, {3, 0, 2},
                 [](const Tensor& x) {
                   return reshape(x, {3, 0, 2});
                 }),
      same_order("reshape_zero_size_infer", "reshape", {0, 3}, {0, 3},
                 [](const Tensor& x) {
                   return reshape(x, {-1, 3});
                 }),
      same_order("reshape_same_shape", "reshape", {2, 3}, {2, 3},
                 [](const Tensor& x) {
                   return reshape(x, {2, 3});
                 }),
      // A transposed (non-contiguous) operand: reshape copies into row-major order first.
      mapped(
          "reshape_non_contiguous", "reshape", {3, 4}, {2, 6},
          [](const Tensor& x) {
            return reshape(lanes::transpose(x), {2, 6});
          },
          [](const Index& out) {
            const Index t = unravel(ravel(out, {2, 6}), {4, 3});
            return Index{t[1], t[0]};
          }),
      same_order("flatten", "flatten", {2, 3, 4}, {24},
                 [](const Tensor& x) { return lanes::flatten(x); }),
      same_order("flatten_scalar", "flatten", {}, {1},
                 [](const Tensor& x) { return lanes::flatten(x); }),
      same_order("expand_dims_front", "expand_dims", {2, 3}, {1, 2, 3},
                 [](const Tensor& x) { return lanes::expand_dims(x, 0); }),
      same_order("expand_dims_middle", "expand_dims", {2, 3}, {2, 1, 3},
                 [](const Tensor& x) { return lanes::expand_dims(x, 1); }),
      same_order("expand_dims_negative", "expand_dims", {2, 3}, {2, 3, 1},
                 [](const Tensor& x) { return lanes::expand_dims(x, -1); }),
      same_order("expand_dims_scalar", "expand_dims", {}, {1},
                 [](const Tensor& x) { return lanes::expand_dims(x, 0); }),
      same_order("squeeze_all", "squeeze", {1, 3, 1, 2}, {3, 2},
                 [](const Tensor& x) { return lanes::squeeze(x); }),
      same_order("squeeze_axes", "squeeze", {1, 3, 1, 2}, {3, 1, 2},
                 [](const Tensor& x) { return lanes::squeeze(x, {0}); }),
      same_order("squeeze_negative_axes", "squeeze", {1, 3, 1, 2}, {1, 3, 2},
                 [](const Tensor& x) { return lanes::squeeze(x, {-2}); }),
      same_order("squeeze_to_scalar", "squeeze", {1, 1}, {},
                 [](const Tensor& x) { return lanes::squeeze(x); }),
      same_order("squeeze_nothing", "squeeze", {2, 3}, {2, 3},
                 [](const Tensor& x) { return lanes::squeeze(x); }),
  };
}

std::vector<OpRow> transpose_rows() {
  using lanes::transpose;
  return {
      transposed("transpose_default_reverses", "transpose", {2, 3, 4}, {2, 1, 0},
                 [](const Tensor& x) { return transpose(x); }),
      transposed("transpose_perm", "transpose", {2, 3, 4}, {1, 0, 2},
                 [](const Tensor& x) {
                   return transpose(x, {1, 0, 2});
                 }),
      transposed("transpose_negative_axes", "transpose", {2, 3, 4}, {2, 0, 1},
                 [](const Tensor& x) {
                   return transpose(x, {-1, 0, -2});
                 }),
      transposed("transpose_identity", "transpose", {2, 3}, {0, 1},
                 [](const Tensor& x) {
                   return transpose(x, {0, 1});
                 }),
      transposed("transpose_1d", "transpose", {5}, {0},
                 [](const Tensor& x) { return transpose(x); }),
      transposed("transpose_zero_size", "transpose", {0, 3}, {1, 0},
                 [](const Tensor& x) { return transpose(x); }),
      transposed("moveaxis_first_to_last", "moveaxis", {2, 3, 4}, {1, 2, 0},
                 [](const Tensor& x) { return lanes::moveaxis(x, 0, -1); }),
      transposed("moveaxis_last_to_first", "moveaxis", {2, 3, 4}, {2, 0, 1},
                 [](const Tensor& x) { return lanes::moveaxis(x, -1, 0); }),
      transposed("moveaxis_middle", "moveaxis", {2, 3, 4, 5}, {0, 2, 1, 3},
                 [](const Tensor& x) { return lanes::moveaxis(x, 1, 2); }),
      transposed("swapaxes", "swapaxes", {2, 3, 4}, {2, 1, 0},
                 [](const Tensor& x) { return lanes::swapaxes(x, 0, 2); }),
      transposed("swapaxes_negative", "swapaxes", {2, 3, 4}, {0, 2, 1},
                 [](const Tensor& x) { return lanes::swapaxes(x, -1, -2); }),
  };
}

OpRow broadcast_row(std::string name, Shape in_shape, Shape out_shape) {
  return mapped(
      std::move(name), "broadcast_to", in_shape, out_shape,
      [out_shape](const Tensor& x) { return lanes::broadcast_to(x, out_shape); },
      broadcast_from(in_shape, trailing(in_shape.size(), out_shape.size())));
}

OpRow broadcast_in_dim_row(std::string name, Shape in_shape, Shape out_shape,
                           std::vector<int64_t> dims) {
  return mapped(
      std::move(name), "broadcast_in_dim", in_shape, out_shape,
      [=](const Tensor& x) { return lanes::broadcast_in_dim(x, out_shape, dims); },
      broadcast_from(in_shape, dims));
}

std::vector<OpRow> broadcast_rows() {
  return {
      broadcast_row("broadcast_to", {3, 1}, {2, 3, 4}),
      broadcast_row("broadcast_to_1d", {4}, {3, 4}),
      broadcast_row("broadcast_to_scalar", {}, {2, 2}),
      broadcast_row("broadcast_to_same", {2, 3}, {2, 3}),
      broadcast_row("broadcast_to_zero_size", {1, 3}, {0, 3}),
      broadcast_in_dim_row("broadcast_in_dim", {3}, {2, 3}, {1}),
      broadcast_in_dim_row("broadcast_in_dim_middle", {3, 1}, {3, 2, 4}, {0, 2}),
      broadcast_in_dim_row("broadcast_in_dim_scalar", {}, {2, 3}, {}),
  };
}

std::vector<OpRow> slice_rows() {
  using lanes::slice;
  using lanes::slice_axis;
  return {
      sliced("slice", "slice", {5, 6}, {1, 0}, {1, 1}, {3, 6},
             [](const Tensor& x) {
               return slice(x, {1, 0}, {4, 6});
             }),
      sliced("slice_strides", "slice", {5, 7}, {0, 1}, {2, 3}, {3, 2},
             [](const Tensor& x) {
               return slice(x, {0, 1}, {5, 7}, {2, 3});
             }),
      sliced("slice_3d", "slice", {3, 4, 5}, {1, 1, 0}, {1, 2, 4}, {2, 2, 2},
             [](const Tensor& x) {
               return slice(x, {1, 1, 0}, {3, 4, 5}, {1, 2, 4});
             }),
      sliced("slice_empty", "slice", {4, 3}, {2, 0}, {1, 1}, {0, 3},
             [](const Tensor& x) {
               return slice(x, {2, 0}, {2, 3});
             }),
      sliced("slice_axis", "slice_axis", {6, 3}, {1, 0}, {1, 1}, {3, 3},
             [](const Tensor& x) { return slice_axis(x, 0, 1, 4); }),
      sliced("slice_axis_negative_bounds", "slice_axis", {3, 7}, {0, 2}, {1, 1}, {3, 4},
             [](const Tensor& x) { return slice_axis(x, -1, -5, -1); }),
      sliced("slice_axis_clamped", "slice_axis", {3, 5}, {0, 0}, {1, 1}, {3, 5},
             [](const Tensor& x) { return slice_axis(x, 1, -100, 100); }),
      sliced("slice_axis_step", "slice_axis", {7, 2}, {1, 0}, {3, 1}, {2, 2},
             [](const Tensor& x) { return slice_axis(x, 0, 1, 7, 3); }),
      sliced("slice_axis_start_past_stop", "slice_axis", {4, 3}, {0, 3}, {1, 1}, {4, 0},
             [](const Tensor& x) { return slice_axis(x, 1, 3, 1); }),
      // Negative steps, numpy's x[start:stop:step]: bounds clamp to [-1, n - 1].
      sliced("slice_axis_reverse_all", "slice_axis", {5, 2}, {4, 0}, {-1, 1}, {5, 2},
             [](const Tensor& x) { return slice_axis(x, 0, -1, -6, -1); }),
      sliced("slice_axis_negative_step2", "slice_axis", {3, 7}, {0, 5}, {1, -2}, {3, 3},
             [](const Tensor& x) { return slice_axis(x, -1, 5, 0, -2); }),
      sliced("slice_axis_negative_step_clamped", "slice_axis", {2, 6}, {0, 5}, {1, -4}, {2, 2},
             [](const Tensor& x) { return slice_axis(x, 1, 100, -100, -4); }),
      sliced("slice_axis_negative_step_empty", "slice_axis", {4, 3}, {1, 0}, {-1, 1}, {0, 3},
             [](const Tensor& x) { return slice_axis(x, 0, 1, 3, -1); }),
      sliced("slice_axis_negative_step_zero_size", "slice_axis", {0, 3}, {0, 0}, {-1, 1}, {0, 3},
             [](const Tensor& x) { return slice_axis(x, 0, -1, -100, -1); }),
  };
}

// flip: index i of a flipped axis of size n reads n - 1 - i.
OpRow flip_row(std::string name, Shape shape, lanes::Axes axes, std::vector<int64_t> flipped) {
  return mapped(
      std::move(name), "flip", shape, shape,
      [axes](const Tensor& x) { return lanes::flip(x, axes); },
      [shape, flipped](const Index& out) {
        Index in = out;
        for (int64_t a : flipped) in[a] = shape[a] - 1 - out[a];
        return in;
      });
}

std::vector<OpRow> flip_rows() {
  return {
      flip_row("flip_all", {3, 4}, {}, {0, 1}),
      flip_row("flip_axis0", {4, 2, 3}, 0, {0}),
      flip_row("flip_negative_axes", {2, 3, 5}, {-1, 0}, {0, 2}),
      flip_row("flip_scalar", {}, {}, {}),
      flip_row("flip_zero_size", {0, 3}, 1, {1}),
  };
}

std::vector<OpRow> all_rows() {
  std::vector<OpRow> rows;
  for (auto* part : {reshape_rows, transpose_rows, broadcast_rows, slice_rows, flip_rows})
    for (OpRow& r : part()) rows.push_back(std::move(r));
  return rows;
}

// ---- errors -----------------------------------------------------------------------------------

ErrorRow error(std::string name, std::function<void()> call, std::vector<std::string> mentions) {
  return ErrorRow{std::move(name), std::move(call), std::move(mentions)};
}

std::vector<ErrorRow> error_rows() {
  using lanes::ones;
  const Tensor x = ones({2, 3});
  return {
      error("reshape_bad_size",
            [x] {
              lanes::reshape(x, {4, 2});
            },
            {"reshape", "(2, 3)", "(4, 2)"}),
      error("reshape_two_inferred",
            [x] {
              lanes::reshape(x, {-1, -1});
            },
            {"reshape", "-1", "(-1, -1)"}),
      error("reshape_inferred_indivisible",
            [x] {
              lanes::reshape(x, {-1, 4});
            },
            {"reshape", "(2, 3)", "(-1, 4)"}),
      error("reshape_inferred_zero",
            [] {
              lanes::reshape(ones({0, 3}), {-1, 0});
            },
            {"reshape", "(0, 3)", "(-1, 0)"}),
      error("reshape_negative_dim",
            [x] {
              lanes::reshape(x, {-2, -3});
            },
            {"reshape", "-2"}),
      error("transpose_not_a_permutation",
            [x] {
              lanes::transpose(x, {0, 0});
            },
            {"transpose", "(0, 0)", "(2, 3)"}),
      error("transpose_wrong_length", [x] { lanes::transpose(x, {1}); },
            {"transpose", "(1,)", "(2, 3)"}),
      error("transpose_axis_out_of_range",
            [x] {
              lanes::transpose(x, {0, 2});
            },
            {"transpose", "axis 2", "rank 2"}),
      error("moveaxis_out_of_range", [x] { lanes::moveaxis(x, 2, 0); }, {"moveaxis", "axis 2"}),
      error("swapaxes_out_of_range", [x] { lanes::swapaxes(x, 0, -3); }, {"swapaxes", "axis -3"}),
      error("expand_dims_out_of_range", [x] { lanes::expand_dims(x, 3); },
            {"expand_dims", "axis 3"}),
      error("squeeze_non_unit_axis",
            [] {
              lanes::squeeze(ones({2, 1}), {0});
            },
            {"squeeze", "axis 0", "(2, 1)"}),
      error("squeeze_repeated_axis",
            [] {
              lanes::squeeze(ones({1, 2}), {0, -2});
            },
            {"squeeze", "repeated"}),
      error("squeeze_axis_out_of_range", [x] { lanes::squeeze(x, {2}); }, {"squeeze", "axis 2"}),
      error("broadcast_to_incompatible",
            [] {
              lanes::broadcast_to(ones({3, 2}), {3, 4});
            },
            {"broadcast_to", "(3, 2)", "(3, 4)"}),
      error("broadcast_to_lower_rank", [x] { lanes::broadcast_to(x, {3}); },
            {"broadcast_to", "(2, 3)", "(3,)"}),
      error("broadcast_in_dim_wrong_dims",
            [x] {
              lanes::broadcast_in_dim(x, {2, 3, 4}, {0});
            },
            {"broadcast_in_dim", "(2, 3)", "(0,)"}),
      error("broadcast_in_dim_not_increasing",
            [x] {
              lanes::broadcast_in_dim(x, {3, 2}, {1, 0});
            },
            {"broadcast_in_dim", "(1, 0)", "(3, 2)"}),
      error("broadcast_in_dim_same_shape_bad_dims",
            [] {
              lanes::broadcast_in_dim(ones({3, 3}), {3, 3}, {1, 0});
            },
            {"broadcast_in_dim", "(1, 0)"}),
      error("broadcast_in_dim_size_mismatch",
            [x] {
              lanes::broadcast_in_dim(x, {2, 4}, {0, 1});
            },
            {"broadcast_in_dim", "(2, 3)", "(2, 4)"}),
      error("slice_out_of_bounds",
            [x] {
              lanes::slice(x, {0, 0}, {3, 3});
            },
            {"slice", "(2, 3)", "dim 0"}),
      error("slice_start_after_limit",
            [x] {
              lanes::slice(x, {0, 2}, {2, 1});
            },
            {"slice", "(2, 3)", "dim 1"}),
      error("slice_wrong_length", [x] { lanes::slice(x, {0}, {1}); }, {"slice", "(2, 3)"}),
      error("slice_zero_stride",
            [x] {
              lanes::slice(x, {0, 0}, {2, 3}, {1, 0});
            },
            {"slice", "stride 0"}),
      error("slice_axis_zero_step", [x] { lanes::slice_axis(x, 0, 0, 2, 0); },
            {"slice_axis", "step"}),
      error("slice_axis_out_of_range", [x] { lanes::slice_axis(x, 2, 0, 1); },
            {"slice_axis", "axis 2"}),
      // Shapes no tensor can have: a negative dim, an element count past int64 (which used to
      // wrap to 0 and give a tensor of no storage).
      error("broadcast_to_negative_dim", [] { lanes::broadcast_to(ones({1}), {-3}); },
            {"broadcast_to", "(-3,)", "negative"}),
      error("broadcast_to_overflow",
            [] {
              lanes::broadcast_to(ones({1}), {int64_t{1} << 32, int64_t{1} << 32});
            },
            {"broadcast_to", "(4294967296, 4294967296)"}),
      error("broadcast_in_dim_negative_dim", [] { lanes::broadcast_in_dim(ones({1}), {-2}, {0}); },
            {"(-2,)", "negative"}),
      error("reshape_overflow",
            [] {
              lanes::reshape(ones({0}), {int64_t{1} << 32, int64_t{1} << 32, 0});
            },
            {"reshape", "(4294967296, 4294967296, 0)"}),
      error("flip_axis_out_of_range",
            [x] {
              lanes::flip(x, {0, 2});
            },
            {"flip", "axis 2"}),
      error("flip_repeated_axis",
            [x] {
              lanes::flip(x, {1, -1});
            },
            {"flip", "repeated"}),
      error("slice_axis_zero_step_names_shape", [x] { lanes::slice_axis(x, 1, 2, 0, 0); },
            {"slice_axis", "step", "(2, 3)"}),
  };
}

Rows rows{all_rows(), error_rows()};

}  // namespace
