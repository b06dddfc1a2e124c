// How dot_general reaches BLAS: operands whose layout BLAS can read (row- or column-major, any
// leading dimension, stride-0 batch dims) are not copied; with no batch dims every lhs free dim
// folds into one GEMM (vmap's `x_b @ W`); batches run as one GEMM per matrix. Values are checked
// against naive loops here too, since the counters alone would not catch a wrong leading dim.
#include <gtest/gtest.h>

#include <cmath>

// The kernel's call counters (not part of the public API).
#include "../src/kernels/matmul.h"
#include "lanes/lanes.h"

using namespace lanes;

namespace {

Tensor sample(const Shape& shape, DType dtype = kFloat32, uint64_t seed = 1) {
  std::vector<double> v(shape_numel(shape));
  for (size_t i = 0; i < v.size(); ++i) v[i] = double((i * 7 + seed * 13) % 11) - 5.0;
  return cast(tensor(v, shape), dtype);
}

// C = A @ B for 2-d tensors, in float64 loops.
std::vector<double> naive(const Tensor& a, const Tensor& b) {
  const auto x = a.to_vector<double>(), y = b.to_vector<double>();
  const int64_t n = a.shape(0), k = a.shape(1), m = b.shape(1);
  std::vector<double> c(n * m, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = 0; j < m; ++j) c[i * m + j] += x[i * k + p] * y[p * m + j];
  return c;
}

// Runs f and returns (GEMM calls, copied elements) it caused.
template <class F>
kernels::DotCounters count(F&& f) {
  const kernels::DotCounters before = kernels::dot_counters();
  f();
  const kernels::DotCounters after = kernels::dot_counters();
  return {after.gemm_calls - before.gemm_calls, after.copied_elements - before.copied_elements};
}

TEST(Matmul, TransposedOperandsGoToBlasWithoutCopies) {
  const Tensor a = sample({5, 3}), b = sample({4, 5}, kFloat32, 2);
  Tensor c;
  const auto n = count([&] { c = matmul(transpose(a), transpose(b)); });  // both column-major
  EXPECT_EQ(n.gemm_calls, 1);
  EXPECT_EQ(n.copied_elements, 0);
  EXPECT_EQ(c.to_vector<double>(), naive(transpose(a).contiguous(), transpose(b).contiguous()));
}

TEST(Matmul, RowsWithALeadingDimensionAreNotCopied) {
  // Every other column of a wider matrix: row stride 8, column stride 1.
  const Tensor wide = sample({6, 8}), b = sample({4, 3}, kFloat64, 3);
  const Tensor a = cast(slice(wide, {0, 2}, {6, 6}), kFloat64);  // cast copies; slice again
  const Tensor a_view = slice(cast(wide, kFloat64), {0, 2}, {6, 6});
  Tensor c;
  const auto n = count([&] { c = matmul(a_view, b); });
  EXPECT_EQ(n.copied_elements, 0);
  EXPECT_EQ(c.to_vector<double>(), naive(a, b));
}

TEST(Matmul, UnevenlySpacedOperandIsCopiedOnce) {
  const Tensor a = slice(sample({6, 8}), {0, 0}, {6, 8}, {1, 2});  // column stride 2
  const Tensor b = sample({4, 3});
  Tensor c;
  const auto n = count([&] { c = matmul(a, b); });
  EXPECT_EQ(n.gemm_calls, 1);
  EXPECT_EQ(n.copied_elements, a.numel());
  EXPECT_EQ(c.to_vector<double>(), naive(a.contiguous(), b));
}

TEST(Matmul, FreeDimsFoldIntoOneGemm) {
  const Tensor x = sample({8, 16, 32}), w = sample({32, 24}, kFloat32, 2);
  Tensor c;
  const auto n = count([&] { c = matmul(x, w); });
  EXPECT_EQ(n.gemm_calls, 1);
  EXPECT_EQ(n.copied_elements, 0);
  EXPECT_EQ(c.shape(), (Shape{8, 16, 24}));
  EXPECT_EQ(c.to_vector<double>(), naive(reshape(x, {128, 32}), w));
}

TEST(Matmul, VmapOfVectorTimesMatrixIsOneGemm) {
  const Tensor w = sample({32, 24}, kFloat32, 2);
  auto f = [&](const Tensor& x) { return matmul(x, w); };
  for (int64_t axis : {0, 1}) {  // x_b is (B, D), or (D, B) read column-major
    const Tensor xb = axis == 0 ? sample({50, 32}) : transpose(sample({50, 32}));
    Tensor c;
    const auto n = count([&] { c = vmap(f, axis)(xb); });
    EXPECT_EQ(n.gemm_calls, 1) << "axis " << axis;
    EXPECT_EQ(n.copied_elements, 0) << "axis " << axis;
    EXPECT_EQ(c.to_vector<double>(), naive(axis == 0 ? xb : transpose(xb).contiguous(), w));
  }
}

TEST(Matmul, BroadcastBatchDimsAreNotCopied) {
  const Tensor a = sample({2, 1, 3, 4}), b = sample({5, 4, 2}, kFloat32, 2);
  Tensor c;
  const auto n = count([&] { c = matmul(a, b); });
  EXPECT_EQ(n.gemm_calls, 10);
  EXPECT_EQ(n.copied_elements, 0);
  ASSERT_EQ(c.shape(), (Shape{2, 5, 3, 2}));
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 5; ++j) {
      const Tensor ai = reshape(slice(a, {i, 0, 0, 0}, {i + 1, 1, 3, 4}), {3, 4});
      const Tensor bj = reshape(slice(b, {j, 0, 0}, {j + 1, 4, 2}), {4, 2});
      const Tensor cij = reshape(slice(c, {i, j, 0, 0}, {i + 1, j + 1, 3, 2}), {3, 2});
      EXPECT_EQ(cij.to_vector<double>(), naive(ai, bj));
    }
}

// Many small GEMMs run in parallel over the batch; the result must not depend on it.
TEST(Matmul, LargeBatchMatchesPerMatrixProducts) {
  for (DType dtype : {kFloat32, kFloat64, kInt32, kInt64}) {
    const Tensor a = sample({300, 8, 16}, dtype), b = sample({300, 16, 8}, dtype, 2);
    Tensor c;
    const auto n = count([&] { c = matmul(a, b); });
    EXPECT_EQ(n.gemm_calls, 300);
    const auto got = c.to_vector<double>();
    for (int64_t i = 0; i < 300; i += 37) {
      const auto want = naive(reshape(slice(a, {i, 0, 0}, {i + 1, 8, 16}), {8, 16}),
                              reshape(slice(b, {i, 0, 0}, {i + 1, 16, 8}), {16, 8}));
      for (size_t j = 0; j < want.size(); ++j) ASSERT_EQ(got[i * 64 + j], want[j]);
    }
  }
}

TEST(Matmul, IntegerOverflowWrapsLikeTheStoredType) {
  // 200 * 200 * 2 = 80000 wraps modulo 256 for uint8 and is exact for int32.
  const Tensor a = full({1, 2}, 200, kUInt8), b = full({2, 1}, 200, kUInt8);
  EXPECT_EQ(matmul(a, b).item<int64_t>(), 80000 % 256);
  EXPECT_EQ(matmul(cast(a, kInt32), cast(b, kInt32)).item<int64_t>(), 80000);
}

TEST(Matmul, BoolIsLogical) {
  const Tensor a = tensor(std::vector<bool>{true, false, false, false}, {2, 2});
  const Tensor b = tensor(std::vector<bool>{true, true, true, false}, {2, 2});
  const Tensor c = matmul(a, b);
  EXPECT_EQ(c.dtype(), kBool);
  EXPECT_EQ(c.to_vector<double>(), (std::vector<double>{1, 1, 0, 0}));
}

TEST(Matmul, DegenerateSizes) {
  for (DType dtype : {kFloat32, kFloat64, kInt32, kUInt8}) {
    const Tensor zero_k = matmul(sample({3, 0}, dtype), sample({0, 4}, dtype));
    EXPECT_EQ(zero_k.shape(), (Shape{3, 4}));
    EXPECT_EQ(zero_k.to_vector<double>(), std::vector<double>(12, 0.0));
    EXPECT_EQ(matmul(sample({0, 3}, dtype), sample({3, 4}, dtype)).shape(), (Shape{0, 4}));
    EXPECT_EQ(matmul(sample({2, 0, 3}, dtype), sample({2, 3, 4}, dtype)).shape(), (Shape{2, 0, 4}));
    EXPECT_EQ(matmul(sample({0, 2, 3}, dtype), sample({3, 4}, dtype)).shape(), (Shape{0, 2, 4}));
    EXPECT_EQ(dot(sample({0}, dtype), sample({0}, dtype)).item<double>(), 0.0);
  }
}

TEST(Matmul, VmapBothMappedIsABatchOfGemms) {
  const Tensor a = sample({6, 3, 4}), b = sample({4, 6, 5}, kFloat32, 2);  // b mapped on axis 1
  auto f = [](const Tensor& x, const Tensor& y) { return matmul(x, y); };
  Tensor c;
  const auto n = count([&] { c = vmap(f, in_axes(0, 1))(a, b); });
  EXPECT_EQ(n.gemm_calls, 6);
  EXPECT_EQ(n.copied_elements, 0);
  for (int64_t i = 0; i < 6; ++i) {
    const Tensor ai = reshape(slice(a, {i, 0, 0}, {i + 1, 3, 4}), {3, 4});
    const Tensor bi = reshape(slice(b, {0, i, 0}, {4, i + 1, 5}), {4, 5});
    const Tensor ci = reshape(slice(c, {i, 0, 0}, {i + 1, 3, 5}), {3, 5});
    EXPECT_EQ(ci.to_vector<double>(), naive(ai, bi));
  }
}

TEST(Matmul, ContractingPairsAreReorderedToAvoidCopies) {
  // lhs (3, 4, 5) contracted over dims (2, 1) with rhs dims (1, 0): read in the order (1, 2)
  // both are evenly spaced, so neither is copied.
  const Tensor a = sample({3, 4, 5}), b = sample({4, 5, 2}, kFloat32, 2);
  Tensor c;
  const auto n = count([&] { c = dot_general(a, b, {{2, 1}, {1, 0}, {}, {}}); });
  EXPECT_EQ(n.copied_elements, 0);
  EXPECT_EQ(c.to_vector<double>(), naive(reshape(a, {3, 20}), reshape(b, {20, 2})));
}

}  // namespace
