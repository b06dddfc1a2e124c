// The op table (PyTorch's OpInfo, DESIGN.md "Testing"): one row per op with a sample-input
// generator and an independent float64 reference written as naive loops. Generic tests
// (test_ops.cpp) run every row over every dtype it supports and several memory layouts of its
// inputs (contiguous, strided, transposed, broadcast); later transforms (vmap, grad) run over the
// same rows. A new op is tested by adding one row in tests/ops/<family>.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "lanes/lanes.h"

namespace optable {

using lanes::DType;
using lanes::Shape;
using lanes::Tensor;

/// A reference value: float64 data in row-major order, computed by the test, never by lanes.
struct Ref {
  Shape shape;
  std::vector<double> data;

  Ref() = default;
  Ref(Shape s, std::vector<double> d) : shape(std::move(s)), data(std::move(d)) {}
  explicit Ref(Shape s, double fill = 0.0);  // shape filled with `fill`
  static Ref of(const Tensor& t);            // t's values (any layout) as float64
  int64_t numel() const { return static_cast<int64_t>(data.size()); }
  int64_t ndim() const { return static_cast<int64_t>(shape.size()); }
  double& at(const std::vector<int64_t>& index);
  double at(const std::vector<int64_t>& index) const;
};

/// Row-major flat index <-> multi-index.
std::vector<int64_t> unravel(int64_t flat, const Shape& shape);
int64_t ravel(const std::vector<int64_t>& index, const Shape& shape);
/// numpy broadcasting of shapes (the test's own, independent of lanes).
Shape broadcast_shapes(const Shape& a, const Shape& b);
/// r read at `out_index` of a broadcast result of rank >= r.ndim() (numpy rules).
double at_broadcast(const Ref& r, const std::vector<int64_t>& out_index);

/// Elementwise reference helpers: f applied with numpy broadcasting.
Ref map1(const Ref& x, const std::function<double(double)>& f);
Ref map2(const Ref& a, const Ref& b, const std::function<double(double, double)>& f);
Ref map3(const Ref& a, const Ref& b, const Ref& c,
         const std::function<double(double, double, double)>& f);

/// Rounds every value as storing it in `dtype` would (float32 rounding, integer truncation with
/// wrap-around avoided by the samples, bool as != 0). References call it where the op's result is
/// defined by that dtype (e.g. integer division).
Ref round_to(const Ref& r, DType dtype);

/// Deterministic sample data.
struct Gen {
  std::mt19937_64 rng{12345};
  /// Uniform values in [lo, hi) (integers: [lo, hi], bool: fair coin) stored as `dtype`.
  Tensor uniform(const Shape& shape, DType dtype, double lo = -2.0, double hi = 2.0);
  /// Uniform values, avoiding |x| < min_abs (for divisors, logs of |x|, ...).
  Tensor nonzero(const Shape& shape, DType dtype, double min_abs = 0.5, double max_abs = 2.0);
};

/// The expected result of a row: values and dtype.
struct Expected {
  Ref value;
  DType dtype;
};

struct OpRow {
  std::string name;           // unique: "add", "sum_axis1_keepdims", ...
  std::string op;             // the API function it tests: "sum"
  std::vector<DType> dtypes;  // each is passed to `sample`
  std::function<std::vector<Tensor>(DType, Gen&)> sample;
  std::function<Tensor(const std::vector<Tensor>&)> call;             // the public API
  std::function<Expected(const std::vector<Ref>&, DType)> reference;  // float64 loops
  double rtol_float32 = 2e-6;  // |got - want| <= atol + rtol * |want|
  double atol_float32 = 1e-6;
  bool differentiable = false;  // for the autodiff checks of the next issues
};

/// An input that must be rejected with a lanes::Error whose message mentions every `mentions`.
struct ErrorRow {
  std::string name;
  std::function<void()> call;
  std::vector<std::string> mentions;
};

std::vector<OpRow>& op_table();
std::vector<ErrorRow>& error_table();
/// Every row's name, in table order: the parameters of the suites that run over the rows.
std::vector<std::string> row_names();

/// Registers rows at static-initialisation time: `static optable::Rows rows{{...}, {...}};`.
struct Rows {
  Rows(std::vector<OpRow> rows, std::vector<ErrorRow> errors = {});
};

inline const std::vector<DType> kFloats = {DType::Float32, DType::Float64};
inline const std::vector<DType> kSignedNumbers = {DType::Int32, DType::Int64, DType::Float32,
                                                  DType::Float64};
inline const std::vector<DType> kNumbers = {DType::UInt8, DType::Int32, DType::Int64,
                                            DType::Float32, DType::Float64};
inline const std::vector<DType> kAll = {DType::Bool,  DType::UInt8,   DType::Int32,
                                        DType::Int64, DType::Float32, DType::Float64};

}  // namespace optable
