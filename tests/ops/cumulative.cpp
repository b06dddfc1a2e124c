// Op-table rows of the cumulative scans (cumsum, cumprod, cummax, cummin, logcumsumexp): every
// axis position, reverse, lengths that are not powers of two, size-0 and size-1 axes, and
// cumprod with zeros in the input (its derivative must not divide by them). References are
// naive float64 running loops along the axis.
#include <cmath>
#include <limits>
#include <tuple>

#include "op_table.h"

using namespace optable;

namespace {

using Fn = Tensor (*)(const Tensor&, int64_t, bool);
using Step = std::function<double(double, double)>;  // (running value, next element)

// Runs `step` along `axis` (from the far end when reversed), starting each line at its first
// element.
Ref running(const Ref& x, int64_t axis, bool reverse, const Step& step) {
  if (axis < 0) axis += x.ndim();
  Ref out = x;
  const int64_t n = x.shape[axis];
  for (int64_t i = 0; i < x.numel(); ++i) {
    std::vector<int64_t> index = unravel(i, x.shape);
    if (index[axis] != (reverse ? n - 1 : 0)) continue;  // one line per starting element
    double acc = x.at(index);
    for (int64_t k = 1; k < n; ++k) {
      index[axis] = reverse ? n - 1 - k : k;
      acc = step(acc, x.at(index));
      out.at(index) = acc;
    }
  }
  return out;
}

DType result_dtype(const std::string& op, DType d) {
  if (op == "logcumsumexp" && !lanes::is_floating(d)) return DType::Float32;
  if ((op == "cumsum" || op == "cumprod") && d == DType::Bool) return DType::Int32;
  return d;
}

Step step_of(const std::string& op) {
  if (op == "cumsum") return [](double a, double b) { return a + b; };
  if (op == "cumprod") return [](double a, double b) { return a * b; };
  if (op == "cummax") return [](double a, double b) { return std::max(a, b); };
  if (op == "cummin") return [](double a, double b) { return std::min(a, b); };
  return [](double a, double b) { return std::log(std::exp(a) + std::exp(b)); };
}

OpRow scan_row(std::string name, std::string op, Fn fn, std::vector<DType> dtypes, Shape shape,
               int64_t axis, bool reverse, double lo = -2, double hi = 2) {
  OpRow r;
  r.name = std::move(name);
  r.op = op;
  r.dtypes = std::move(dtypes);
  r.sample = [=](DType d, Gen& g) { return std::vector<Tensor>{g.uniform(shape, d, lo, hi)}; };
  r.call = [=](const std::vector<Tensor>& in) { return fn(in[0], axis, reverse); };
  r.reference = [=](const std::vector<Ref>& in, DType d) {
    const DType out = result_dtype(op, d);
    const Ref y = running(in[0], axis, reverse, step_of(op));
    return Expected{lanes::is_floating(out) ? y : round_to(y, out), out};
  };
  r.rtol_float32 = 1e-5;
  r.atol_float32 = 1e-5;
  r.differentiable = true;
  return r;
}

// One op over the layouts every scan must handle.
void add_op(std::vector<OpRow>& rows, const std::string& op, Fn fn, std::vector<DType> dtypes,
            double lo, double hi) {
  rows.push_back(scan_row(op, op, fn, dtypes, {3, 5}, 1, false, lo, hi));
  rows.push_back(scan_row(op + "_axis0_reverse", op, fn, dtypes, {6, 2}, 0, true, lo, hi));
  rows.push_back(scan_row(op + "_axis_negative", op, fn, dtypes, {2, 7, 3}, -2, false, lo, hi));
  rows.push_back(scan_row(op + "_long_reverse", op, fn, kFloats, {2, 37}, -1, true, lo, hi));
  rows.push_back(scan_row(op + "_1d", op, fn, dtypes, {9}, 0, false, lo, hi));
  rows.push_back(scan_row(op + "_length1", op, fn, dtypes, {1, 4}, 0, true, lo, hi));
  rows.push_back(scan_row(op + "_zero_size", op, fn, dtypes, {0, 3}, 0, false, lo, hi));
}

// cumprod through zeros: one exact zero per line (two in the last), at varying places.
OpRow cumprod_zeros_row(std::string name, bool reverse) {
  OpRow r = scan_row(std::move(name), "cumprod", lanes::cumprod, kFloats, {4, 6}, 1, reverse);
  r.sample = [](DType d, Gen& g) {
    std::vector<double> mask(24, 1.0);
    for (int i : {2, 6, 11, 19, 21}) mask[i] = 0.0;
    const Tensor x = g.uniform({4, 6}, d, 0.5, 1.5) * lanes::cast(lanes::tensor(mask, {4, 6}), d);
    return std::vector<Tensor>{x};
  };
  return r;
}

std::vector<OpRow> all_rows() {
  std::vector<OpRow> rows;
  const std::vector<DType> sum_dtypes = kAll;  // bool counts in int32
  add_op(rows, "cumsum", lanes::cumsum, sum_dtypes, -3, 3);
  add_op(rows, "cumprod", lanes::cumprod, kSignedNumbers, -1.5, 1.5);
  add_op(rows, "cummax", lanes::cummax, kNumbers, -3, 3);
  add_op(rows, "cummin", lanes::cummin, kNumbers, -3, 3);
  add_op(rows, "logcumsumexp", lanes::logcumsumexp, kNumbers, -3, 3);
  rows.push_back(cumprod_zeros_row("cumprod_with_zeros", false));
  rows.push_back(cumprod_zeros_row("cumprod_with_zeros_reverse", true));
  // Large: the cumsum kernel's threads split blocks, and columns when the blocks are few.
  for (auto [name, shape, axis] :
       {std::tuple<const char*, Shape, int64_t>{"cumsum_large_rows", {200, 300}, 1},
        {"cumsum_large_columns", {300, 2, 500}, 0}}) {
    rows.push_back(scan_row(name, "cumsum", lanes::cumsum, kFloats, shape, axis, axis == 0));
    rows.back().rtol_float32 = rows.back().atol_float32 = 1e-4;  // float32 sums of 300 terms
    rows.back().differentiable = false;
  }
  // Large values: exp(x) overflows float32 and float64, logcumsumexp must not.
  rows.push_back(scan_row("logcumsumexp_large_values", "logcumsumexp", lanes::logcumsumexp, kFloats,
                          {2, 5}, 1, false, 700, 900));
  rows.back().reference = [](const std::vector<Ref>& in, DType d) {
    const Step stable = [](double a, double b) {
      const double m = std::max(a, b);
      return m + std::log(std::exp(a - m) + std::exp(b - m));
    };
    return Expected{running(in[0], 1, false, stable), d};
  };
  return rows;
}

std::vector<ErrorRow> error_rows() {
  const Tensor x = lanes::ones({2, 3});
  return {
      {"cumsum_axis_out_of_range", [x] { lanes::cumsum(x, 2); }, {"cumsum", "axis 2", "rank 2"}},
      {"cumprod_scalar", [] { lanes::cumprod(lanes::ones({})); }, {"cumprod", "()"}},
      {"cummax_undefined", [] { lanes::cummax(Tensor()); }, {"cummax", "undefined"}},
      {"logcumsumexp_axis", [x] { lanes::logcumsumexp(x, -3); }, {"logcumsumexp", "axis -3"}},
  };
}

Rows rows{all_rows(), error_rows()};

}  // namespace
