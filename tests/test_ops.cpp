// Generic tests over the op table (op_table.h): every op, every dtype it supports, every layout
// of its inputs, against the row's float64 reference; and every error row.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>

#include "op_table.h"

using namespace optable;

namespace {

// The same values in another memory layout, so kernels see strided and stride-0 inputs.
enum class Layout { Contiguous, Strided, Transposed, Broadcast };
const char* layout_name(Layout l) {
  switch (l) {
    case Layout::Contiguous:
      return "contiguous";
    case Layout::Strided:
      return "strided";
    case Layout::Transposed:
      return "transposed";
    case Layout::Broadcast:
      return "broadcast";
  }
  return "?";
}

// Every other element of a buffer twice the size; the gaps hold NaN (floats) or zero.
Tensor strided_copy(const Tensor& x) {
  const Tensor c = x.contiguous();
  const size_t size = lanes::dtype_size(x.dtype());
  Tensor big = Tensor::empty({2 * x.numel()}, x.dtype());
  auto* dst = static_cast<char*>(big.raw_mutable_data());
  std::memset(dst, 0, 2 * x.numel() * size);
  if (x.dtype() == DType::Float32)
    for (int64_t i = 0; i < x.numel(); ++i) big.mutable_data<float>()[2 * i + 1] = NAN;
  if (x.dtype() == DType::Float64)
    for (int64_t i = 0; i < x.numel(); ++i) big.mutable_data<double>()[2 * i + 1] = NAN;
  const auto* src = static_cast<const char*>(c.raw_data());
  for (int64_t i = 0; i < x.numel(); ++i) std::memcpy(dst + 2 * i * size, src + i * size, size);
  lanes::Strides strides = lanes::contiguous_strides(x.shape());
  for (auto& s : strides) s *= 2;
  return big.view(x.shape(), strides, 0);
}

// Returns false when the layout does not apply to x (it would equal the contiguous case).
bool relayout(const Tensor& x, Layout layout, Tensor& out) {
  switch (layout) {
    case Layout::Contiguous:
      out = x.contiguous();
      return true;
    case Layout::Strided:
      if (x.numel() < 2) return false;
      out = strided_copy(x);
      return true;
    case Layout::Transposed:
      if (x.ndim() < 2) return false;
      out = lanes::transpose(lanes::transpose(x).contiguous());
      return true;
    case Layout::Broadcast:
      if (x.ndim() < 1 || x.shape(0) < 2) return false;
      out = lanes::broadcast_to(lanes::slice_axis(x, 0, 0, 1), x.shape());
      return true;
  }
  return false;
}

::testing::AssertionResult matches(const Tensor& got, const Expected& want, const OpRow& row) {
  if (got.dtype() != want.dtype)
    return ::testing::AssertionFailure() << "dtype " << lanes::dtype_name(got.dtype())
                                         << ", expected " << lanes::dtype_name(want.dtype);
  if (got.shape() != want.value.shape)
    return ::testing::AssertionFailure() << "shape " << lanes::shape_str(got.shape())
                                         << ", expected " << lanes::shape_str(want.value.shape);
  const std::vector<double> values = got.to_vector<double>();
  const bool f32 = want.dtype == DType::Float32, f64 = want.dtype == DType::Float64;
  const double rtol = f32 ? row.rtol_float32 : f64 ? std::max(1e-13, row.rtol_float32 * 1e-8) : 0;
  const double atol = f32 ? row.atol_float32 : f64 ? std::max(1e-13, row.atol_float32 * 1e-8) : 0;
  for (size_t i = 0; i < values.size(); ++i) {
    const double g = values[i], w = want.value.data[i];
    if (std::isnan(w) && std::isnan(g)) continue;
    if (g == w) continue;
    if (std::abs(g - w) <= atol + rtol * std::abs(w)) continue;
    return ::testing::AssertionFailure()
           << "element " << i << " (index " << lanes::shape_str(unravel(i, want.value.shape))
           << ") is " << g << ", expected " << w << " (diff " << g - w << ")";
  }
  return ::testing::AssertionSuccess();
}

class OpTable : public ::testing::TestWithParam<std::string> {
 protected:
  const OpRow& row() const {
    for (const OpRow& r : op_table())
      if (r.name == GetParam()) return r;
    throw std::logic_error("no row " + GetParam());
  }
};

TEST_P(OpTable, MatchesFloat64Reference) {
  const OpRow& r = row();
  for (DType dtype : r.dtypes) {
    Gen gen;
    const std::vector<Tensor> inputs = r.sample(dtype, gen);
    std::vector<Ref> refs;
    for (const Tensor& x : inputs) refs.push_back(Ref::of(x));
    for (Layout layout :
         {Layout::Contiguous, Layout::Strided, Layout::Transposed, Layout::Broadcast}) {
      // One input at a time in the layout (all inputs at once for the contiguous case).
      for (size_t k = 0; k < inputs.size(); ++k) {
        std::vector<Tensor> args = inputs;
        std::vector<Ref> arg_refs = refs;
        if (!relayout(inputs[k], layout, args[k])) continue;
        arg_refs[k] = Ref::of(args[k]);
        SCOPED_TRACE(std::string(lanes::dtype_name(dtype)) + ", input " + std::to_string(k) + " " +
                     layout_name(layout));
        Tensor got;
        ASSERT_NO_THROW(got = r.call(args));
        EXPECT_TRUE(matches(got, r.reference(arg_refs, dtype), r));
        if (layout == Layout::Contiguous) break;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, OpTable, ::testing::ValuesIn(row_names()),
                         [](const auto& info) { return info.param; });

class ErrorTable : public ::testing::TestWithParam<std::string> {};

TEST_P(ErrorTable, ThrowsLanesErrorNamingTheProblem) {
  for (const ErrorRow& e : error_table()) {
    if (e.name != GetParam()) continue;
    try {
      e.call();
      ADD_FAILURE() << "no lanes::Error thrown";
    } catch (const lanes::Error& err) {
      const std::string msg = err.what();
      for (const std::string& m : e.mentions)
        EXPECT_NE(msg.find(m), std::string::npos)
            << "message \"" << msg << "\" lacks \"" << m << "\"";
    }
  }
}

std::vector<std::string> error_names() {
  std::vector<std::string> names;
  for (const ErrorRow& e : error_table()) names.push_back(e.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(Ops, ErrorTable, ::testing::ValuesIn(error_names()),
                         [](const auto& info) { return info.param; });

TEST(OpTableMeta, RowNamesAreUniqueIdentifiers) {
  std::set<std::string> seen;
  for (const std::string& n : row_names()) {
    EXPECT_TRUE(seen.insert(n).second) << "duplicate row " << n;
    for (char c : n) EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c)) || c == '_') << n;
  }
  seen.clear();
  for (const std::string& n : error_names()) EXPECT_TRUE(seen.insert(n).second) << n;
}

// Every op of the public API (lanes/ops.h, lanes/random.h) has at least one row.
TEST(OpTableMeta, EveryApiOpHasARow) {
  // clang-format off
  const std::vector<std::string> api = {
      "arange", "eye", "iota", "add", "subtract", "multiply", "divide", "pow", "maximum",
      "minimum", "atan2", "negative", "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "tanh",
      "sigmoid", "sin", "cos", "erf", "abs", "sign", "floor", "ceil", "round", "square", "relu",
      "clip", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
      "logical_and", "logical_or", "logical_not", "where", "cast", "sum", "mean", "prod", "max",
      "min", "argmax", "argmin", "dot_general", "matmul", "dot", "outer", "tensordot", "reshape",
      "flatten", "transpose", "moveaxis", "swapaxes", "expand_dims", "squeeze", "broadcast_to",
      "broadcast_in_dim", "concatenate", "stack", "slice", "slice_axis", "pad", "gather", "take",
      "scatter_add", "one_hot", "softmax", "log_softmax", "logsumexp", "l2_loss",
      "softmax_cross_entropy", "conv2d", "conv_transpose2d", "random_uniform", "random_normal",
      "random_bernoulli", "flip", "cumsum", "cumprod", "cummax", "cummin", "logcumsumexp",
      "sort", "argsort", "top_k", "searchsorted", "pad_interior", "scatter", "einsum"};
  // clang-format on
  std::set<std::string> covered;
  for (const OpRow& r : op_table()) covered.insert(r.op);
  for (const std::string& op : api) EXPECT_TRUE(covered.count(op)) << "no op-table row for " << op;
}

}  // namespace
