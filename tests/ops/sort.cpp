// Op-table rows of sorting: sort, argsort and top_k over all dtypes, along every axis position,
// with ties (stability: equal values keep index order), NaN (sorted last), k = 0 and k = n, and
// size-0 inputs. The reference ranks each element by counting, independent of any sort: an
// element's place is the number of elements before it in the order (strictly smaller, or equal
// with a lower index).
#include <cmath>
#include <limits>

#include "op_table.h"

using namespace optable;

namespace {

// Whether element (value a, index i) goes before (b, j) in the stable order; NaN last.
bool goes_before(double a, int64_t i, double b, int64_t j, bool descending) {
  if (std::isnan(a) || std::isnan(b)) {
    if (std::isnan(a) != std::isnan(b)) return std::isnan(b);
    return i < j;
  }
  if (a != b) return descending ? a > b : a < b;
  return i < j;
}

// For each line along `axis`: the indices in sorted order (first `k` of them; k < 0: all), and
// the values at them.
std::pair<Ref, Ref> sorted_ref(const Ref& x, int64_t axis, bool descending, int64_t k = -1) {
  if (axis < 0) axis += x.ndim();
  const int64_t n = x.shape[axis];
  Shape shape = x.shape;
  shape[axis] = k < 0 ? n : k;
  Ref idx(shape), val(shape);
  for (int64_t f = 0; f < x.numel(); ++f) {
    std::vector<int64_t> at = unravel(f, x.shape);
    const int64_t i = at[axis];
    const double v = x.data[f];
    int64_t place = 0;
    for (int64_t j = 0; j < n; ++j) {
      std::vector<int64_t> other = at;
      other[axis] = j;
      place += goes_before(x.at(other), j, v, i, descending);
    }
    if (place >= shape[axis]) continue;
    at[axis] = place;
    idx.at(at) = double(i);
    val.at(at) = v;
  }
  return {idx, val};
}

enum class Out { Values, Indices };

OpRow sort_row(std::string name, std::string op, std::vector<DType> dtypes, Shape shape,
               int64_t axis, bool ties = false) {
  OpRow r;
  r.name = std::move(name);
  r.op = op;
  r.dtypes = std::move(dtypes);
  r.sample = [=](DType d, Gen& g) {
    const Tensor x = g.uniform(shape, d, -2, 2);
    return std::vector<Tensor>{ties ? lanes::round(x) : x};
  };
  r.call = [=](const std::vector<Tensor>& in) {
    return op == "sort" ? lanes::sort(in[0], axis) : lanes::argsort(in[0], axis);
  };
  r.reference = [=](const std::vector<Ref>& in, DType d) {
    auto [idx, val] = sorted_ref(in[0], axis, false);
    return op == "sort" ? Expected{val, d} : Expected{idx, DType::Int64};
  };
  r.differentiable = op == "sort" && !ties;
  return r;
}

OpRow top_k_row(std::string name, Out out, std::vector<DType> dtypes, Shape shape, int64_t k,
                bool ties = false) {
  OpRow r = sort_row(std::move(name), "top_k", std::move(dtypes), shape, -1, ties);
  r.call = [=](const std::vector<Tensor>& in) {
    auto [values, indices] = lanes::top_k(in[0], k);
    return out == Out::Values ? values : indices;
  };
  r.reference = [=](const std::vector<Ref>& in, DType d) {
    auto [idx, val] = sorted_ref(in[0], -1, true, k);
    return out == Out::Values ? Expected{val, d} : Expected{idx, DType::Int64};
  };
  r.differentiable = out == Out::Values && !ties;
  return r;
}

// A float row with NaNs among the values: they sort last.
OpRow with_nans(OpRow r) {
  auto sample = r.sample;
  r.sample = [sample](DType d, Gen& g) {
    std::vector<Tensor> in = sample(d, g);
    const Tensor nan = lanes::full(in[0].shape(), std::numeric_limits<double>::quiet_NaN(), d);
    in[0] = lanes::where(in[0] > 1.0, nan, in[0]);
    return in;
  };
  r.differentiable = false;
  return r;
}

std::vector<OpRow> all_rows() {
  std::vector<OpRow> rows;
  for (const std::string op : {"sort", "argsort"}) {
    rows.push_back(sort_row(op, op, kAll, {3, 6}, -1));
    rows.push_back(sort_row(op + "_axis0", op, kAll, {5, 3}, 0));
    rows.push_back(sort_row(op + "_middle_axis", op, kNumbers, {2, 5, 3}, 1));
    rows.push_back(sort_row(op + "_ties", op, kAll, {4, 9}, 1, true));
    rows.push_back(sort_row(op + "_1d_long", op, kFloats, {300}, 0));
    rows.push_back(sort_row(op + "_zero_size", op, kAll, {0, 4}, -1));
    rows.push_back(sort_row(op + "_empty_axis", op, kAll, {3, 0}, 1));
    rows.push_back(with_nans(sort_row(op + "_nan", op, kFloats, {3, 7}, -1)));
  }
  for (Out out : {Out::Values, Out::Indices}) {
    const std::string name = out == Out::Values ? "top_k_values" : "top_k_indices";
    rows.push_back(top_k_row(name, out, kAll, {4, 7}, 3));
    rows.push_back(top_k_row(name + "_ties", out, kAll, {3, 8}, 5, true));
    rows.push_back(top_k_row(name + "_k_all", out, kNumbers, {2, 3, 5}, 5));
    rows.push_back(top_k_row(name + "_k0", out, kNumbers, {3, 4}, 0));
    rows.push_back(top_k_row(name + "_1d", out, kFloats, {6}, 2));
  }
  return rows;
}

std::vector<ErrorRow> error_rows() {
  const Tensor x = lanes::ones({2, 3});
  return {
      {"sort_scalar", [] { lanes::sort(lanes::ones({})); }, {"sort", "()"}},
      {"argsort_axis_out_of_range", [x] { lanes::argsort(x, 2); }, {"argsort", "axis 2"}},
      {"top_k_k_too_large", [x] { lanes::top_k(x, 4); }, {"top_k", "k = 4", "(2, 3)"}},
      {"top_k_negative_k", [x] { lanes::top_k(x, -1); }, {"top_k", "k = -1"}},
      {"top_k_scalar", [] { lanes::top_k(lanes::ones({}), 1); }, {"top_k", "()"}},
  };
}

Rows rows{all_rows(), error_rows()};

}  // namespace
