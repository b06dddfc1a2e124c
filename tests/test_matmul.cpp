// How dot_general reaches BLAS: operands whose layout BLAS can read (row- or column-major, any
// leading dimension, stride-0 batch dims) are not copied; with no batch dims every lhs free dim
// folds into one GEMM (vmap's `x_b @ W`); batches run as one GEMM per matrix. Values are checked
// against naive loops here too, since the counters alone would not catch a wrong leading dim.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>

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
  return {after.gemm_calls - before.gemm_calls, after.copied_elements - before.copied_elements,
          after.xsmm_products - before.xsmm_products};
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

// W @ v_b, a layer written for one example, comes out batch-major (as V @ W^T), so what reads
// its rows (the next layer, a cond's partition, vmap's output) takes them in place; also inside a
// batch of matrices (nbatch > 0: w is (3, 24, 32), v_b (50, 3, 32)).
TEST(Matmul, VmapOfMatrixTimesVectorIsBatchMajor) {
  const Tensor w = sample({24, 32}, kFloat32, 3);
  auto f = [&](const Tensor& v) { return matmul(w, v); };
  for (int64_t axis : {0, 1}) {
    const Tensor vb = axis == 0 ? sample({50, 32}) : transpose(sample({50, 32}));
    Tensor c;
    const auto n = count([&] { c = vmap(f, axis)(vb); });
    EXPECT_EQ(n.gemm_calls, 1) << "axis " << axis;
    EXPECT_EQ(n.copied_elements, 0) << "axis " << axis;
    EXPECT_TRUE(c.is_contiguous()) << "axis " << axis;
    const Tensor rows = axis == 0 ? vb : transpose(vb).contiguous();
    EXPECT_EQ(c.to_vector<double>(), naive(rows, transpose(w).contiguous()));
  }
  const Tensor ws = sample({3, 24, 32}, kFloat32, 4), vs = sample({50, 3, 32}, kFloat32, 5);
  auto g = [&](const Tensor& v) { return matmul(ws, expand_dims(v, 2)); };  // (3, 24, 1)
  auto h = [&](const Tensor& v) {
    return dot_general(ws, v, DotDims{{2}, {1}, {0}, {0}});  // (3, 24)
  };
  const Tensor got = vmap(h)(vs), loop_g = vmap(g)(vs);
  for (int64_t b = 0; b < 50; ++b)
    for (int64_t m = 0; m < 3; ++m)
      EXPECT_EQ(got[b][m].to_vector<double>(), naive(ws[m], expand_dims(vs[b][m], 1)))
          << b << " " << m;
  EXPECT_EQ(got.to_vector<double>(), reshape(loop_g, {50, 3, 24}).to_vector<double>());
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

// ---- degenerate products (M, N or K of 1): the hand loops of src/kernels/matmul_small.cpp ----

// A (B, M, K) x (B, K, N) in float64 loops, over any views.
std::vector<double> naive_batched(const Tensor& a, const Tensor& b) {
  const auto x = a.contiguous().to_vector<double>(), y = b.contiguous().to_vector<double>();
  const int64_t nb = a.shape(0), m = a.shape(1), k = a.shape(2), n = b.shape(2);
  std::vector<double> c(nb * m * n, 0.0);
  for (int64_t i = 0; i < nb; ++i)
    for (int64_t r = 0; r < m; ++r)
      for (int64_t p = 0; p < k; ++p)
        for (int64_t j = 0; j < n; ++j)
          c[(i * m + r) * n + j] += x[(i * m + r) * k + p] * y[(i * k + p) * n + j];
  return c;
}

// A (B, R, C) view of sample values in one of five layouts: contiguous, transposed (the last two
// dims swapped), batch last (batch stride 1), every other column (column stride 2), and one
// matrix broadcast over the batch (batch stride 0).
Tensor layout(int which, int64_t nb, int64_t r, int64_t c, DType dtype, uint64_t seed) {
  switch (which) {
    case 0:
      return sample({nb, r, c}, dtype, seed);
    case 1:
      return transpose(sample({nb, c, r}, dtype, seed), {0, 2, 1});
    case 2:
      return transpose(sample({r, c, nb}, dtype, seed), {2, 0, 1});
    case 3:
      return slice(sample({nb, r, 2 * c}, dtype, seed), {0, 0, 0}, {nb, r, 2 * c}, {1, 1, 2});
    default:
      return broadcast_to(sample({1, r, c}, dtype, seed), {nb, r, c});
  }
}

// Every layout of either operand, for (M, K, N) shapes that each take a path of the small
// kernel, float32 and float64: exact (the sample values are small integers), and never copied.
TEST(Matmul, DegenerateProductsInEveryLayout) {
  struct Case {
    int64_t nb, m, k, n;
  };
  const Case cases[] = {
      {37, 1, 67, 1}, {1, 1, 67, 1},  // dot products
      {5, 1, 67, 33}, {1, 1, 7, 45},  // M == 1: row sums (rhs contiguous along N) or dots
      {5, 33, 67, 1}, {1, 45, 7, 1},  // N == 1
      {5, 33, 1, 45}, {1, 7, 1, 3},   // K == 1: outer products
      {4, 1, 1, 1},   {3, 1, 1, 9},   // K == 1 with a vector: rows of b scaled
      {3, 9, 1, 1},   {1, 45, 1, 1},  // K == N == 1: a's column scaled
  };
  for (DType dtype : {kFloat32, kFloat64})
    for (const Case& t : cases)
      for (int la = 0; la < 5; ++la)
        for (int lb = 0; lb < 5; ++lb) {
          const Tensor a = layout(la, t.nb, t.m, t.k, dtype, 1);
          const Tensor b = layout(lb, t.nb, t.k, t.n, dtype, 2);
          Tensor c;
          const auto n = count([&] { c = matmul(a, b); });
          const std::string what =
              detail::concat(dtype_name(dtype), " (", t.nb, ", ", t.m, ", ", t.k, ") x (", t.nb,
                             ", ", t.k, ", ", t.n, ") layouts ", la, " ", lb);
          ASSERT_EQ(c.shape(), (Shape{t.nb, t.m, t.n})) << what;
          EXPECT_EQ(c.to_vector<double>(), naive_batched(a, b)) << what;
          EXPECT_EQ(n.copied_elements, 0) << what;
          EXPECT_EQ(n.gemm_calls, 1) << what;
        }
}

// Large enough to split between threads: many dot products, a row-sum GEMV whose single matrix
// is split into column blocks, and an outer product over 64 MB (streaming stores) with rows
// that are not vector-aligned.
TEST(Matmul, LargeDegenerateProducts) {
  const std::pair<Shape, Shape> shapes[] = {
      {{4096, 1, 512}, {4096, 512, 1}}, {{1, 1, 50}, {1, 50, 3001}}, {{2, 2049, 1}, {2, 1, 4099}},
      {{3, 1, 1}, {3, 1, 70001}},       {{3, 70001, 1}, {3, 1, 1}},
  };
  for (DType dtype : {kFloat32, kFloat64})
    for (const auto& [sa, sb] : shapes) {
      const Tensor a = sample(sa, dtype, 3), b = sample(sb, dtype, 4);
      EXPECT_EQ(matmul(a, b).to_vector<double>(), naive_batched(a, b))
          << dtype_name(dtype) << " " << fmt(sa) << " x " << fmt(sb);
    }
}

// vmap(dot) is one call of the dot-product loop, whichever axis the examples are mapped on.
TEST(Matmul, VmapOfDotIsOneCallWithoutCopies) {
  auto f = [](const Tensor& x, const Tensor& y) { return dot(x, y); };
  for (int64_t axis : {0, 1}) {
    const Tensor xs = axis == 0 ? sample({300, 40}) : sample({40, 300});
    const Tensor ys = sample({300, 40}, kFloat32, 2);
    Tensor c;
    const auto n = count([&] { c = vmap(f, in_axes(axis, 0))(xs, ys); });
    EXPECT_EQ(n.gemm_calls, 1) << "axis " << axis;
    EXPECT_EQ(n.copied_elements, 0) << "axis " << axis;
    const Tensor x3 = reshape(axis == 0 ? xs : transpose(xs).contiguous(), {300, 1, 40});
    EXPECT_EQ(c.to_vector<double>(), naive_batched(x3, reshape(ys, {300, 40, 1})));
  }
}

// jacrev maps the backward pass over the rows of the identity. The vjp rule of dot_general
// returns the cotangents of both operands; those of the captured weights are dead (n, n, n)
// outer products that vmap must not run: 1 matrix-vector product forward (the output itself is
// not needed, so its product is dead too) and 2 GEMMs backward.
TEST(Matmul, JacrevRunsNoDeadCotangentProducts) {
  const int64_t n = 24;
  const Tensor w1 = sample({n, n}, kFloat64, 1) * 0.1, w2 = sample({n, n}, kFloat64, 2) * 0.1;
  const Tensor x = sample({n}, kFloat64, 3) * 0.1;
  auto mlp = [&](const Tensor& v) { return matmul(w2, tanh(matmul(w1, v))); };
  Tensor jac;
  const auto calls = count([&] { jac = jacrev(mlp)(x); });
  EXPECT_EQ(calls.gemm_calls, 3);
  // J = W2 diag(1 - tanh(W1 x)^2) W1, in float64 loops.
  const auto a = w1.to_vector<double>(), b = w2.to_vector<double>(), v = x.to_vector<double>();
  std::vector<double> d(n), want(n * n, 0.0);
  for (int64_t i = 0; i < n; ++i) {
    double h = 0;
    for (int64_t j = 0; j < n; ++j) h += a[i * n + j] * v[j];
    d[i] = 1 - std::tanh(h) * std::tanh(h);
  }
  for (int64_t i = 0; i < n; ++i)
    for (int64_t p = 0; p < n; ++p)
      for (int64_t j = 0; j < n; ++j) want[i * n + j] += b[i * n + p] * d[p] * a[p * n + j];
  const auto got = jac.to_vector<double>();
  for (int64_t i = 0; i < n * n; ++i) ASSERT_NEAR(got[i], want[i], 1e-12) << i;
}

}  // namespace

// A large product with the identity copies the other factor instead of running a GEMM, in either
// position and layout; a near-identity still multiplies, and an inf makes the NaNs IEEE gives.
TEST(Matmul, ProductsWithTheIdentity) {
  const int64_t n = 160;
  const Tensor w = sample({n, n}, kFloat32, 4), i = eye(n);
  for (const Tensor& x : {w, transpose(w)}) {
    Tensor c;
    auto calls = count([&] { c = matmul(i, x); });
    EXPECT_EQ(calls.gemm_calls, 0);
    EXPECT_EQ(c.to_vector<double>(), naive(i, x.contiguous()));
    calls = count([&] { c = matmul(x, transpose(i)); });
    EXPECT_EQ(calls.gemm_calls, 0);
    EXPECT_EQ(c.to_vector<double>(), naive(x.contiguous(), i));
  }
  std::vector<double> near(n * n, 0.0);
  for (int64_t k = 0; k < n; ++k) near[k * n + k] = 1.0;
  near[(n - 1) * n + 3] = 2.0;  // the last row differs
  const Tensor almost = cast(tensor(near, {n, n}), kFloat32);
  auto calls = count([&] { EXPECT_EQ(matmul(almost, w).to_vector<double>(), naive(almost, w)); });
  EXPECT_EQ(calls.gemm_calls, 1);
  std::vector<double> v = w.to_vector<double>();
  v[5 * n + 7] = INFINITY;
  const Tensor with_inf = cast(tensor(v, {n, n}), kFloat32);
  const std::vector<double> got = matmul(i, with_inf).to_vector<double>(),
                            want = naive(i, with_inf);
  for (int64_t k = 0; k < n * n; ++k)
    EXPECT_TRUE(got[k] == want[k] || (std::isnan(got[k]) && std::isnan(want[k]))) << k;
  EXPECT_TRUE(std::isnan(got[0 * n + 7]));  // 0 * inf in row 0, column 7
  // float64 too: a NaN anywhere in the other factor makes its row of zeros' products NaN.
  v = w.to_vector<double>();
  v[9 * n + 2] = NAN;
  const std::vector<double> got64 = matmul(eye(n, kFloat64), tensor(v, {n, n})).to_vector<double>();
  EXPECT_TRUE(std::isnan(got64[0 * n + 2]));
  // -0.0 is a zero: an identity holding some is still the identity (no GEMM), and exact.
  std::vector<double> signed_zeros = near;
  signed_zeros[(n - 1) * n + 3] = -0.0;
  const Tensor eye_with_negative_zeros = tensor(signed_zeros, {n, n});
  const Tensor w64 = cast(w, kFloat64);
  calls = count([&] {
    EXPECT_EQ(matmul(eye_with_negative_zeros, w64).to_vector<double>(),
              naive(eye_with_negative_zeros, w64));
  });
  EXPECT_EQ(calls.gemm_calls, 0);
}

// x @ W_b with the model axis of W_b outside its K axis, as an eager product (under vmap the
// batch rule makes it a batched product instead): one GEMM per model filling its output
// columns, no copy of the weights; the result equals the per-model products, for M and N of
// several dims too.
TEST(Matmul, SharedInputTimesStackedWeightsRunsOneGemmPerModel) {
  for (DType dtype : {kFloat32, kFloat64}) {
    const Tensor x = sample({3, 5, 24}, dtype, 2);      // M = (3, 5), K = 24
    const Tensor w = sample({4, 24, 2, 16}, dtype, 3);  // models, K, N = (2, 16)
    Tensor y;
    const auto calls = count([&] { y = dot_general(x, w, DotDims{{2}, {1}, {}, {}}); });
    EXPECT_EQ(calls.gemm_calls, 4);
    EXPECT_EQ(calls.copied_elements, 0);
    ASSERT_EQ(y.shape(), (Shape{3, 5, 4, 2, 16}));
    const Tensor xm = reshape(x, {15, 24});
    const std::vector<double> got = y.to_vector<double>();
    for (int64_t j = 0; j < 4; ++j) {
      const Tensor wj = reshape(squeeze(slice_axis(w, 0, j, j + 1), 0), {24, 32});
      const std::vector<double> want = naive(xm, wj);  // (15, 32)
      for (int64_t r = 0; r < 15; ++r)
        for (int64_t c = 0; c < 32; ++c)
          ASSERT_EQ(got[(r * 4 + j) * 32 + c], want[r * 32 + c]) << j << " " << r << " " << c;
    }
  }
}
