// Op-table rows of the reductions: sum, mean, prod, max, min over no, one, negative, several and
// all axes, with and without keepdims, on every dtype (jnp dtypes: bool sums give int32, means of
// integers float32); 0-d and empty tensors; NaN propagation; large float32 inputs (threads, SIMD
// blocks, the pairwise sum's accuracy); argmax/argmin (first index of the extreme, NaN wins).
// References are naive float64 loops over the input's elements.
#include <cmath>
#include <limits>
#include <optional>

#include "op_table.h"

using namespace optable;

namespace {

enum class Kind { Sum, Prod, Max, Min, Mean, ArgMax, ArgMin };
using AxisList = std::optional<std::vector<int64_t>>;  // nullopt: every axis (the default)

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// The test's own axis normalisation (negative axes count from the end).
std::vector<bool> reduced_mask(const AxisList& axes, int64_t ndim) {
  std::vector<bool> mask(ndim, !axes.has_value());
  if (axes)
    for (int64_t a : *axes) mask[a < 0 ? a + ndim : a] = true;
  return mask;
}

/// Naive reduction: every element of x folded into the output element it maps to.
Ref ref_reduce(const Ref& x, Kind kind, const AxisList& axes, bool keepdims) {
  const std::vector<bool> mask = reduced_mask(axes, x.ndim());
  Shape full;  // the output shape with reduced dims kept as 1
  int64_t count = 1;
  for (int64_t d = 0; d < x.ndim(); ++d) {
    full.push_back(mask[d] ? 1 : x.shape[d]);
    if (mask[d]) count *= x.shape[d];
  }
  const bool arg = kind == Kind::ArgMax || kind == Kind::ArgMin;
  const double init = kind == Kind::Prod  ? 1.0
                      : kind == Kind::Max ? -kInf
                      : kind == Kind::Min ? kInf
                                          : 0.0;
  Ref out(full, init), best(full, kind == Kind::ArgMax ? -kInf : kInf);
  for (int64_t i = 0; i < x.numel(); ++i) {
    std::vector<int64_t> index = unravel(i, x.shape), pos = index;
    int64_t along = 0;  // the index along the (single) reduced axis, for argmax/argmin
    for (int64_t d = 0; d < x.ndim(); ++d)
      if (mask[d]) along = index[d], pos[d] = 0;
    const double v = x.data[i];
    double& acc = out.at(pos);
    if (arg) {
      double& b = best.at(pos);
      if (std::isnan(b)) continue;  // a NaN was first: it stays the answer
      const bool wins = kind == Kind::ArgMax ? v > b : v < b;
      if (std::isnan(v) || wins || along == 0) b = v, acc = double(along);
      continue;
    }
    switch (kind) {
      case Kind::Sum:
      case Kind::Mean:
        acc += v;
        break;
      case Kind::Prod:
        acc *= v;
        break;
      case Kind::Max:
        if (!std::isnan(acc) && (std::isnan(v) || v > acc)) acc = v;
        break;
      default:
        if (!std::isnan(acc) && (std::isnan(v) || v < acc)) acc = v;
        break;
    }
  }
  if (kind == Kind::Mean)
    for (double& v : out.data) v = count == 0 ? kNaN : v / double(count);
  if (!keepdims) {
    Shape dropped;
    for (int64_t d = 0; d < x.ndim(); ++d)
      if (!mask[d]) dropped.push_back(x.shape[d]);
    out.shape = dropped;
  }
  return out;
}

/// Results stored in the reduction's dtype (jnp rules); uint8 sums and products wrap.
Expected result(const Ref& r, Kind kind, DType d) {
  switch (kind) {
    case Kind::Sum:
    case Kind::Prod: {
      if (d == DType::Bool) return {r, DType::Int32};
      if (d != DType::UInt8) return {r, d};
      return {map1(r, [](double v) { return std::fmod(v, 256.0); }), d};
    }
    case Kind::Mean:
      return {r, lanes::is_floating(d) ? d : DType::Float32};
    case Kind::ArgMax:
    case Kind::ArgMin:
      return {r, DType::Int64};
    default:
      return {r, d};
  }
}

Tensor call(Kind kind, const Tensor& x, const AxisList& axes, bool keepdims) {
  const lanes::Axes ax = axes ? lanes::Axes(*axes) : lanes::Axes();
  switch (kind) {
    case Kind::Sum:
      return lanes::sum(x, ax, keepdims);
    case Kind::Prod:
      return lanes::prod(x, ax, keepdims);
    case Kind::Max:
      return lanes::max(x, ax, keepdims);
    case Kind::Min:
      return lanes::min(x, ax, keepdims);
    case Kind::Mean:
      return lanes::mean(x, ax, keepdims);
    case Kind::ArgMax:
      return lanes::argmax(x, axes->at(0), keepdims);
    case Kind::ArgMin:
      break;
  }
  return lanes::argmin(x, axes->at(0), keepdims);
}

const char* op_name(Kind kind) {
  constexpr const char* names[] = {"sum", "prod", "max", "min", "mean", "argmax", "argmin"};
  return names[int(kind)];
}

using Sample = std::function<std::vector<Tensor>(DType, Gen&)>;

/// Products stay small and exact: magnitudes in [0.5, 2] (integers 1 or 2, with signs).
Sample sample_for(Kind kind, const Shape& shape) {
  if (kind == Kind::Prod)
    return [=](DType d, Gen& g) {
      return std::vector<Tensor>{d == DType::Bool ? g.uniform(shape, d) : g.nonzero(shape, d)};
    };
  return [=](DType d, Gen& g) { return std::vector<Tensor>{g.uniform(shape, d)}; };
}

OpRow row(const std::string& name, Kind kind, std::vector<DType> dtypes, Sample sample,
          AxisList axes, bool keepdims) {
  OpRow r;
  r.name = name;
  r.op = op_name(kind);
  r.dtypes = std::move(dtypes);
  r.sample = std::move(sample);
  r.call = [=](const std::vector<Tensor>& in) { return call(kind, in[0], axes, keepdims); };
  r.reference = [=](const std::vector<Ref>& in, DType d) {
    return result(ref_reduce(in[0], kind, axes, keepdims), kind, d);
  };
  // float32 sums of <= 24 values in [-2, 2]: rounding error <= 24 * 2 * 2^-24 ~ 3e-6 absolute.
  r.atol_float32 = 1e-5;
  r.rtol_float32 = 1e-5;
  r.differentiable = kind != Kind::ArgMax && kind != Kind::ArgMin;
  return r;
}

/// Rows whose values have no finite derivative (NaN inputs, empty means) skip the grad tests.
OpRow no_grad(OpRow r) {
  r.differentiable = false;
  return r;
}

struct AxisCase {
  const char* suffix;
  AxisList axes;
  bool keepdims;
};

const AxisCase kAxisCases[] = {
    {"all", std::nullopt, false},
    {"all_keepdims", std::nullopt, true},
    {"axis0", {{0}}, false},
    {"axis1_keepdims", {{1}}, true},
    {"axis_neg1", {{-1}}, false},
    {"axes02", {{0, 2}}, false},
    {"axes_neg1_0_keepdims", {{-1, 0}}, true},
    {"axes012", {{0, 1, 2}}, false},
    {"no_axes", {std::vector<int64_t>{}}, false},
};

/// NaNs at a few places of a (3, 5) sample (row 0: none, row 1: one, row 2: two).
std::vector<Tensor> with_nans(DType d, Gen& g) {
  std::vector<double> v = g.uniform({3, 5}, DType::Float64).to_vector<double>();
  v[5 + 2] = v[10 + 0] = v[10 + 3] = kNaN;
  return {lanes::cast(lanes::tensor(v, {3, 5}), d)};
}

/// Small integers: many ties, so argmax/argmin must return the first index.
Sample ties(const Shape& shape) {
  return [=](DType d, Gen& g) { return std::vector<Tensor>{g.uniform(shape, d, -1, 1)}; };
}

Sample unit_interval(const Shape& shape) {
  return [=](DType d, Gen& g) { return std::vector<Tensor>{g.uniform(shape, d, 0, 1)}; };
}

std::vector<OpRow> make_rows() {
  std::vector<OpRow> rows;
  const Shape s = {2, 3, 4};
  for (Kind kind : {Kind::Sum, Kind::Mean, Kind::Prod, Kind::Max, Kind::Min}) {
    const std::string op = op_name(kind);
    for (const AxisCase& c : kAxisCases)
      rows.push_back(row(op + "_" + c.suffix, kind, kAll, sample_for(kind, s), c.axes, c.keepdims));
    rows.push_back(row(op + "_0d", kind, kAll, sample_for(kind, {}), std::nullopt, false));
    rows.push_back(row(op + "_1d", kind, kAll, sample_for(kind, {37}), {{0}}, false));
    // An empty output (no reduction happens): defined even for max/min.
    rows.push_back(row(op + "_empty_output", kind, kAll, sample_for(kind, {0, 3}), {{1}}, false));
    rows.push_back(no_grad(row(op + "_nan", kind, kFloats, with_nans, {{1}}, false)));
    rows.push_back(no_grad(row(op + "_nan_axis0", kind, kFloats, with_nans, {{0}}, false)));
  }
  // Empty reductions: the identity (sum 0, prod 1), mean 0 / 0 = NaN.
  for (Kind kind : {Kind::Sum, Kind::Prod, Kind::Mean}) {
    const std::string op = op_name(kind);
    rows.push_back(
        no_grad(row(op + "_empty_axis0", kind, kAll, sample_for(kind, {0, 3}), {{0}}, false)));
    rows.push_back(
        no_grad(row(op + "_empty_all", kind, kAll, sample_for(kind, {2, 0}), std::nullopt, true)));
  }
  for (Kind kind : {Kind::ArgMax, Kind::ArgMin}) {
    const std::string op = op_name(kind);
    rows.push_back(row(op + "_axis0", kind, kAll, ties(s), {{0}}, false));
    rows.push_back(row(op + "_axis1_keepdims", kind, kAll, ties(s), {{1}}, true));
    rows.push_back(row(op + "_axis_neg1", kind, kAll, ties(s), {{-1}}, false));
    rows.push_back(row(op + "_1d", kind, kAll, sample_for(kind, {37}), {{0}}, false));
    rows.push_back(row(op + "_random", kind, kAll, sample_for(kind, {5, 7}), {{1}}, false));
    rows.push_back(row(op + "_empty_output", kind, kAll, sample_for(kind, {0, 3}), {{1}}, false));
    rows.push_back(no_grad(row(op + "_nan", kind, kFloats, with_nans, {{1}}, false)));
    rows.push_back(no_grad(row(op + "_nan_axis0", kind, kFloats, with_nans, {{0}}, false)));
  }
  // Large float32 inputs: threads, full SIMD blocks, the row (inner axis) and column (outer axis)
  // kernels, and accuracy. Values in [0, 1], so the relative error is the sum's own: a naive
  // running float32 sum of 1M such values is off by ~4e-5; the pairwise sum (32 sequential adds
  // per SIMD lane, then a tree) stays near 1e-7, well inside rtol 1e-6 (its worst-case bound,
  // (32 + log2 n) * 2^-24 ~ 3e-6, assumes every rounding error has the same sign).
  struct Large {
    const char* name;
    Kind kind;
    Shape shape;
    AxisList axes;
  };
  const Large large[] = {
      {"sum_large_1d", Kind::Sum, {1000003}, std::nullopt},
      {"sum_large_rows", Kind::Sum, {1030, 1024}, {{1}}},
      {"sum_large_columns", Kind::Sum, {1024, 1030}, {{0}}},
      {"sum_large_middle", Kind::Sum, {8, 4099, 33}, {{1}}},
      {"sum_large_outer_inner", Kind::Sum, {300, 7, 500}, {{0, 2}}},
      {"sum_large_tall_narrow", Kind::Sum, {300007, 4}, {{0}}},
      {"mean_large_tall_narrow", Kind::Mean, {100003, 13}, {{0}}},
      {"max_large_tall_narrow", Kind::Max, {200003, 6}, {{-2}}},
      {"sum_large_short_rows", Kind::Sum, {250007, 4}, {{1}}},
      {"mean_large", Kind::Mean, {1000, 1001}, std::nullopt},
      {"max_large_columns", Kind::Max, {1024, 1030}, {{0}}},
      {"min_large", Kind::Min, {1000, 1001}, std::nullopt},
      {"argmax_large_columns", Kind::ArgMax, {1000, 1030}, {{0}}},
      {"argmin_large_rows", Kind::ArgMin, {1030, 1000}, {{1}}},
  };
  for (const Large& l : large) {
    OpRow r = row(l.name, l.kind, {DType::Float32}, unit_interval(l.shape), l.axes, false);
    r.rtol_float32 = 1e-6;
    r.atol_float32 = 0;
    r.differentiable = false;  // finite differences over 1M inputs would only slow the grad tests
    rows.push_back(std::move(r));
  }
  return rows;
}

ErrorRow error(std::string name, std::function<void()> call, std::vector<std::string> mentions) {
  return ErrorRow{std::move(name), std::move(call), std::move(mentions)};
}

std::vector<ErrorRow> make_errors() {
  const Tensor x = lanes::ones({2, 3});
  return {
      error("sum_bad_axis", [=] { lanes::sum(x, 2); }, {"sum", "axis 2", "(2, 3)"}),
      error("mean_bad_negative_axis", [=] { lanes::mean(x, -3); }, {"mean", "axis -3", "(2, 3)"}),
      error("prod_bad_axis_in_list",
            [=] {
              lanes::prod(x, {0, 5});
            },
            {"prod", "axis 5", "(2, 3)"}),
      error("sum_repeated_axis",
            [=] {
              lanes::sum(x, {0, -2});
            },
            {"sum", "repeated axis 0"}),
      error("max_repeated_axis",
            [=] {
              lanes::max(x, {1, 1});
            },
            {"max", "repeated axis 1"}),
      error("max_of_empty", [] { lanes::max(lanes::zeros({0})); }, {"max", "(0,)", "identity"}),
      error("min_of_empty_axis",
            [] {
              lanes::min(lanes::zeros({2, 0}), 1);
            },
            {"min", "(2, 0)", "identity"}),
      error("argmax_0d", [] { lanes::argmax(lanes::scalar(1.0), 0); }, {"argmax", "()"}),
      error("argmax_empty_axis",
            [] {
              lanes::argmax(lanes::zeros({0, 3}), 0);
            },
            {"argmax", "size 0", "(0, 3)"}),
      error("argmin_bad_axis", [=] { lanes::argmin(x, 5); }, {"argmin", "axis 5", "(2, 3)"}),
      error("argmin_bad_negative_axis", [=] { lanes::argmin(x, -3); }, {"argmin", "axis -3"}),
  };
}

static Rows rows{make_rows(), make_errors()};

}  // namespace
