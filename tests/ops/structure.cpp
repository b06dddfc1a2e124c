// Op-table rows of the structural family: arange, eye, iota (creation: the sample is a dummy 0-d
// tensor carrying the dtype), concatenate, stack and pad over all six dtypes, with negative axes,
// 0-size dims, dtype promotion and large inputs (threaded copies). References are naive float64
// loops over output indices.
#include <algorithm>
#include <cmath>

#include "op_table.h"

using namespace optable;

namespace {

using Sample = std::function<std::vector<Tensor>(DType, Gen&)>;
using Call = std::function<Tensor(const std::vector<Tensor>&)>;
using Reference = std::function<Expected(const std::vector<Ref>&, DType)>;

OpRow row(std::string name, std::string op, std::vector<DType> dtypes, Sample sample, Call call,
          Reference reference, bool differentiable = false) {
  OpRow r;
  r.name = std::move(name);
  r.op = std::move(op);
  r.dtypes = std::move(dtypes);
  r.sample = std::move(sample);
  r.call = std::move(call);
  r.reference = std::move(reference);
  r.differentiable = differentiable;
  return r;
}

ErrorRow error(std::string name, std::function<void()> call, std::vector<std::string> mentions) {
  return ErrorRow{std::move(name), std::move(call), std::move(mentions)};
}

// ---- creation ---------------------------------------------------------------------------------

// Creation ops take no tensors: the row's one input is a 0-d tensor whose dtype is the request.
Sample dtype_carrier() {
  return [](DType d, Gen&) { return std::vector<Tensor>{lanes::scalar(0, d)}; };
}

Reference from_values(std::function<Ref()> values) {
  return [values](const std::vector<Ref>&, DType d) { return Expected{round_to(values(), d), d}; };
}

OpRow arange_range(std::string name, double start, double stop, double step,
                   std::vector<DType> dtypes) {
  return row(
      std::move(name), "arange", std::move(dtypes), dtype_carrier(),
      [=](const std::vector<Tensor>& in) {
        return lanes::arange(start, stop, step, in[0].dtype());
      },
      from_values([=] {
        // numpy's length: ceil((stop - start) / step), at least 0.
        const int64_t n = std::max<int64_t>(0, int64_t(std::ceil((stop - start) / step)));
        Ref r({n});
        for (int64_t i = 0; i < n; ++i) r.data[i] = start + double(i) * step;
        return r;
      }));
}

Ref iota_ref(const Shape& shape, int64_t dim) {
  Ref r(shape);
  for (int64_t i = 0; i < r.numel(); ++i) r.data[i] = double(unravel(i, shape)[dim]);
  return r;
}

std::vector<OpRow> creation_rows() {
  std::vector<OpRow> rows;
  for (int64_t n : {7, 0})
    rows.push_back(row(
        "arange_n" + std::to_string(n), "arange", kAll, dtype_carrier(),
        [n](const std::vector<Tensor>& in) { return lanes::arange(n, in[0].dtype()); },
        from_values([n] { return iota_ref({n}, 0); })));
  rows.push_back(arange_range("arange_start_stop_step", -3, 10, 2.5, kSignedNumbers));
  rows.push_back(arange_range("arange_fractional", 0.25, 3.7, 0.5, kFloats));
  rows.push_back(arange_range("arange_negative_step", 5, -4, -1.5, kSignedNumbers));
  rows.push_back(arange_range("arange_empty", 5, 2, 1, kAll));
  rows.push_back(arange_range("arange_unit_step", 2, 6, 1, kNumbers));
  for (int64_t n : {4, 1, 0})
    rows.push_back(row(
        "eye" + std::to_string(n), "eye", kAll, dtype_carrier(),
        [n](const std::vector<Tensor>& in) { return lanes::eye(n, in[0].dtype()); },
        from_values([n] {
          Ref r({n, n});
          for (int64_t i = 0; i < n; ++i) r.at({i, i}) = 1;
          return r;
        })));
  struct IotaCase {
    const char* name;
    Shape shape;
    int64_t dim, ref_dim;
  };
  for (const IotaCase& c :
       {IotaCase{"iota_dim1", {2, 3, 4}, 1, 1}, IotaCase{"iota_dim_negative", {3, 5}, -1, 1},
        IotaCase{"iota_1d", {6}, 0, 0}, IotaCase{"iota_zero_size", {3, 0}, 0, 0},
        IotaCase{"iota_large", {300, 400}, 0, 0}})
    rows.push_back(row(
        c.name, "iota", kAll, dtype_carrier(),
        [c](const std::vector<Tensor>& in) { return lanes::iota(c.shape, c.dim, in[0].dtype()); },
        from_values([c] { return iota_ref(c.shape, c.ref_dim); })));
  rows.back().dtypes = {DType::Int32, DType::Float32};  // uint8 and bool would wrap past 255
  return rows;
}

// ---- concatenate / stack ----------------------------------------------------------------------

Ref concat_ref(const std::vector<Ref>& xs, int64_t axis) {
  Shape shape = xs[0].shape;
  if (axis < 0) axis += int64_t(shape.size());
  shape[axis] = 0;
  for (const Ref& x : xs) shape[axis] += x.shape[axis];
  Ref out(shape);
  for (int64_t i = 0; i < out.numel(); ++i) {
    std::vector<int64_t> index = unravel(i, shape);
    size_t k = 0;
    while (index[axis] >= xs[k].shape[axis]) index[axis] -= xs[k++].shape[axis];
    out.data[i] = xs[k].at(index);
  }
  return out;
}

OpRow concat(std::string name, std::vector<Shape> shapes, int64_t axis,
             std::vector<DType> dtypes = kAll) {
  return row(
      std::move(name), "concatenate", std::move(dtypes),
      [shapes](DType d, Gen& g) {
        std::vector<Tensor> xs;
        for (const Shape& s : shapes) xs.push_back(g.uniform(s, d, -3, 3));
        return xs;
      },
      [axis](const std::vector<Tensor>& in) { return lanes::concatenate(in, axis); },
      [axis](const std::vector<Ref>& in, DType d) {
        return Expected{concat_ref(in, axis), d};
      },
      true);
}

OpRow stack_row(std::string name, Shape shape, size_t count, int64_t axis) {
  return row(
      std::move(name), "stack", kAll,
      [shape, count](DType d, Gen& g) {
        std::vector<Tensor> xs;
        for (size_t k = 0; k < count; ++k) xs.push_back(g.uniform(shape, d, -3, 3));
        return xs;
      },
      [axis](const std::vector<Tensor>& in) { return lanes::stack(in, axis); },
      [axis](const std::vector<Ref>& in, DType d) {
        // stack == concatenate of the inputs with a size-1 dim inserted at axis.
        std::vector<Ref> expanded;
        const int64_t rank = in[0].ndim() + 1;
        const int64_t a = axis < 0 ? axis + rank : axis;
        for (Ref r : in) {
          r.shape.insert(r.shape.begin() + a, 1);
          expanded.push_back(r);
        }
        return Expected{concat_ref(expanded, a), d};
      },
      true);
}

std::vector<OpRow> concat_rows() {
  std::vector<OpRow> rows;
  rows.push_back(concat("concatenate_axis0", {{2, 3}, {1, 3}, {4, 3}}, 0));
  rows.push_back(concat("concatenate_axis_negative", {{2, 3, 1}, {2, 3, 4}, {2, 3, 2}}, -1));
  rows.push_back(concat("concatenate_axis1_3d", {{2, 1, 3}, {2, 4, 3}}, 1));
  rows.push_back(concat("concatenate_zero_size", {{2, 0}, {2, 3}, {2, 0}}, 1));
  rows.push_back(concat("concatenate_zero_size_axis0", {{0, 3}, {2, 3}}, 0));
  rows.push_back(concat("concatenate_all_empty", {{3, 0}, {3, 0}}, 1));
  rows.push_back(concat("concatenate_single", {{2, 3}}, 1));
  rows.push_back(concat("concatenate_1d", {{3}, {2}, {1}, {4}}, 0));
  rows.push_back(concat("concatenate_large_rows", {{300, 200}, {300, 150}}, 1, kFloats));
  rows.push_back(concat("concatenate_large_axis0", {{400, 200}, {300, 200}}, 0, {DType::Int32}));
  // Mixed dtypes promote: the second operand is always int32.
  rows.push_back(row(
      "concatenate_promotes", "concatenate", kAll,
      [](DType d, Gen& g) {
        return std::vector<Tensor>{g.uniform({2, 3}, d, 0, 3),
                                   g.uniform({2, 2}, DType::Int32, 0, 3)};
      },
      [](const std::vector<Tensor>& in) { return lanes::concatenate(in, 1); },
      [](const std::vector<Ref>& in, DType d) {
        return Expected{concat_ref(in, 1), lanes::promote_types(d, DType::Int32)};
      },
      true));
  rows.push_back(stack_row("stack_axis0", {2, 3}, 3, 0));
  rows.push_back(stack_row("stack_axis1", {2, 3}, 2, 1));
  rows.push_back(stack_row("stack_axis_negative", {2, 3}, 3, -1));
  rows.push_back(stack_row("stack_scalars", {}, 4, 0));
  rows.push_back(stack_row("stack_zero_size", {0, 2}, 2, 1));
  return rows;
}

// ---- pad --------------------------------------------------------------------------------------

Ref pad_ref(const Ref& x, const Shape& low, const Shape& high, double value) {
  Shape shape(x.shape.size());
  for (size_t d = 0; d < shape.size(); ++d) shape[d] = low[d] + x.shape[d] + high[d];
  Ref out(shape, value);
  for (int64_t i = 0; i < out.numel(); ++i) {
    std::vector<int64_t> index = unravel(i, shape);
    bool inside = true;
    for (size_t d = 0; d < shape.size(); ++d) {
      index[d] -= low[d];
      inside &= index[d] >= 0 && index[d] < x.shape[d];
    }
    if (inside) out.data[i] = x.at(index);
  }
  return out;
}

OpRow pad_row(std::string name, Shape shape, Shape low, Shape high, double value,
              std::vector<DType> dtypes = kAll) {
  return row(
      std::move(name), "pad", std::move(dtypes),
      [shape](DType d, Gen& g) { return std::vector<Tensor>{g.uniform(shape, d, 0, 3)}; },
      [=](const std::vector<Tensor>& in) { return lanes::pad(in[0], low, high, value); },
      [=](const std::vector<Ref>& in, DType d) {
        return Expected{round_to(pad_ref(in[0], low, high, value), d), d};
      },
      true);
}

std::vector<OpRow> pad_rows() {
  std::vector<OpRow> rows;
  rows.push_back(pad_row("pad_2d", {3, 4}, {1, 0}, {2, 3}, 1.5));
  rows.push_back(pad_row("pad_1d", {5}, {2}, {1}, 0.0));
  rows.push_back(pad_row("pad_crop", {4, 5}, {-1, 2}, {1, -2}, 2.0));
  rows.push_back(pad_row("pad_crop_only", {4, 5}, {-1, 0}, {0, -3}, 7.0));
  rows.push_back(pad_row("pad_crop_to_empty", {3, 4}, {-2, 0}, {-1, 1}, 1.0));
  rows.push_back(pad_row("pad_crop_past_data", {3, 4}, {-5, 1}, {3, 0}, 1.0));
  rows.push_back(pad_row("pad_zero_size_input", {0, 3}, {1, 1}, {1, 0}, 2.0));
  rows.push_back(pad_row("pad_identity", {2, 3}, {0, 0}, {0, 0}, 5.0));
  rows.push_back(pad_row("pad_3d", {2, 3, 4}, {0, 1, 2}, {1, 0, 1}, 1.0));
  rows.push_back(pad_row("pad_large", {64, 64, 32}, {1, 2, 3}, {2, 1, 0}, 0.5, kFloats));
  return rows;
}

std::vector<OpRow> all_rows() {
  std::vector<OpRow> rows = creation_rows();
  for (auto* part : {concat_rows, pad_rows})
    for (OpRow& r : part()) rows.push_back(std::move(r));
  // The large rows test the threaded kernels; derivatives are covered by the small ones.
  for (OpRow& r : rows)
    if (r.name.find("large") != std::string::npos) r.differentiable = false;
  return rows;
}

// ---- errors -----------------------------------------------------------------------------------

std::vector<ErrorRow> error_rows() {
  using lanes::ones;
  return {
      error("arange_zero_step", [] { lanes::arange(0.0, 5.0, 0.0); }, {"arange", "step"}),
      error("arange_negative_n", [] { lanes::arange(-3); }, {"arange", "-3"}),
      error("eye_negative", [] { lanes::eye(-2); }, {"eye", "-2"}),
      error("iota_bad_dimension",
            [] {
              lanes::iota({2, 3}, 2);
            },
            {"iota", "2"}),
      error("iota_negative_shape",
            [] {
              lanes::iota({2, -3}, 0);
            },
            {"iota", "(2, -3)"}),
      error("concatenate_empty", [] { lanes::concatenate({}); }, {"concatenate"}),
      error("concatenate_rank_mismatch",
            [] {
              lanes::concatenate({ones({2, 3}), ones({3})});
            },
            {"concatenate", "operand 1", "(3,)", "(2, 3)"}),
      error("concatenate_shape_mismatch",
            [] {
              lanes::concatenate({ones({3, 4}), ones({3, 2}), ones({2, 4})}, 1);
            },
            {"concatenate", "operand 2", "(2, 4)", "(3, 4)"}),
      error("concatenate_bad_axis",
            [] {
              lanes::concatenate({ones({2}), ones({2})}, 1);
            },
            {"concatenate", "axis 1"}),
      error("concatenate_scalars",
            [] {
              lanes::concatenate({ones({}), ones({})});
            },
            {"concatenate", "zero-dimensional"}),
      error("stack_empty", [] { lanes::stack({}); }, {"stack"}),
      error("stack_shape_mismatch",
            [] {
              lanes::stack({ones({2, 3}), ones({3, 2})});
            },
            {"stack", "operand 1", "(3, 2)", "(2, 3)"}),
      error("stack_bad_axis",
            [] {
              lanes::stack({ones({2}), ones({2})}, 3);
            },
            {"stack", "axis 3"}),
      error("pad_wrong_length",
            [] {
              lanes::pad(ones({2, 3}), {1}, {1});
            },
            {"pad", "(2, 3)"}),
      error("pad_negative_size",
            [] {
              lanes::pad(ones({2, 3}), {-2, 0}, {-1, 0});
            },
            {"pad", "(2, 3)", "negative size"}),
      error("pad_overflow", [] { lanes::pad(ones({2}), {int64_t{1} << 62}, {int64_t{1} << 62}); },
            {"pad", "overflow"}),
      // Four broadcast views of 2^62 bools: 2^64 elements, which used to wrap to 0.
      error("concatenate_overflow",
            [] {
              const Tensor q = lanes::broadcast_to(ones({1}, DType::Bool), {int64_t{1} << 62});
              lanes::concatenate({q, q, q, q});
            },
            {"concatenate", "overflow"}),
      error("pad_too_large_to_allocate", [] { lanes::pad(ones({2}), {int64_t{1} << 40}, {0}); },
            {"(1099511627778,)", "float32", "bytes"}),
  };
}

Rows rows{all_rows(), error_rows()};

}  // namespace
