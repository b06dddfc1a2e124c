// Products with small N and K run through libxsmm's kernels (src/kernels/matmul_xsmm.h), one per
// 64-row block of M plus one for the remainder, over every matrix of a batch. Checked against
// float64 loops at the block edges (M = 63, 64, 65), at the size bounds (beyond which products go
// to OpenBLAS), in every operand layout BLAS accepts (row- and column-major, rows further apart
// than their length, broadcast batch dims), and under vmap of jacrev.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

// The kernel's call counters (not part of the public API).
#include "../src/kernels/matmul.h"
#include "lanes/lanes.h"

using namespace lanes;

namespace {

// Values in [-1, 1) that are not short binary fractions, so that rounding shows.
Tensor sample(const Shape& shape, DType dtype, uint64_t seed) {
  std::vector<double> v(shape_numel(shape));
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
  for (double& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = double(s >> 11) / double(1ull << 53) * 2.0 - 1.0;
  }
  return cast(tensor(v, shape), dtype);
}

// The product of (batch, m, k) and (batch, k, n) values in float64 loops, and the sum of the
// products' magnitudes per output element (what rounding errors scale with).
struct Reference {
  std::vector<double> value, magnitude;
};

Reference naive(const std::vector<double>& a, const std::vector<double>& b, int64_t batch,
                int64_t m, int64_t n, int64_t k) {
  Reference r{std::vector<double>(batch * m * n, 0.0), std::vector<double>(batch * m * n, 0.0)};
  for (int64_t i = 0; i < batch; ++i)
    for (int64_t r0 = 0; r0 < m; ++r0)
      for (int64_t p = 0; p < k; ++p) {
        const double x = a[(i * m + r0) * k + p];
        double* value = &r.value[(i * m + r0) * n];
        double* magnitude = &r.magnitude[(i * m + r0) * n];
        const double* y = &b[(i * k + p) * n];
        for (int64_t c = 0; c < n; ++c) value[c] += x * y[c], magnitude[c] += std::abs(x * y[c]);
      }
  return r;
}

// Every element within the worst-case rounding of a k-term float sum (2 k eps of the magnitudes,
// plus an absolute floor for exact cancellations).
void expect_close(const Tensor& got_tensor, const Reference& want, DType dtype, int64_t k,
                  const std::string& what) {
  const std::vector<double> got = got_tensor.to_vector<double>();
  ASSERT_EQ(got.size(), want.value.size()) << what;
  const double eps = dtype == kFloat32 ? 0x1p-24 : 0x1p-53;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want.value[i], 2.0 * double(k) * eps * want.magnitude[i] + 1e-30)
        << what << " at " << i;
}

// x (rows x cols, last two dims) stored with its rows `pad` elements longer than they are.
Tensor with_padded_rows(const Tensor& x, int64_t pad) {
  Shape shape = x.shape();
  shape.back() = pad;
  const Tensor wide = concatenate({x, zeros(shape, x.dtype())}, -1);
  Shape start(x.ndim(), 0);
  return slice(wide, start, x.shape());
}

// x (rows x cols, last two dims) as every other row of a matrix twice as tall: rows 2 cols apart.
Tensor every_other_row(const Tensor& x) {
  Shape tall = x.shape();
  tall[tall.size() - 2] *= 2;
  tall.back() = x.shape().back();
  return slice_axis(reshape(concatenate({x, x}, -1), tall), -2, 0, tall[tall.size() - 2], 2);
}

// x stored column-major in its last two dims: a transposed view of a contiguous transpose.
Tensor column_major(const Tensor& x) { return swapaxes(swapaxes(x, -1, -2).contiguous(), -1, -2); }

// What counters a product changed: (GEMM calls, products through libxsmm).
template <class F>
std::pair<int64_t, int64_t> count(F&& f) {
  const kernels::DotCounters before = kernels::dot_counters();
  f();
  const kernels::DotCounters after = kernels::dot_counters();
  return {after.gemm_calls - before.gemm_calls, after.xsmm_products - before.xsmm_products};
}

// Whether libxsmm should take an (m x k) @ (k x n) product (kernels/matmul_xsmm.h's rule).
bool expect_xsmm(int64_t m, int64_t n, int64_t k, bool rhs_column_major) {
  return m >= 2 && n >= 2 && k >= 2 && n <= 1024 && k <= 1024 && n * k <= 65536 &&
         (!rhs_column_major || (m >= 32 && m * n * k < (int64_t{1} << 22)));
}

// a @ b for (batch, m, k) and (batch, k, n) operands (no batch dim when batch == 0) in each
// layout, against one float64 reference.
void check_layouts(int64_t batch, int64_t m, int64_t n, int64_t k, DType dtype) {
  const int64_t b1 = std::max<int64_t>(batch, 1);
  Shape as{m, k}, bs{k, n};
  if (batch) as.insert(as.begin(), batch), bs.insert(bs.begin(), batch);
  const Tensor a = sample(as, dtype, uint64_t(m * 1000 + k)),
               b = sample(bs, dtype, uint64_t(n * 1000 + k + 7));
  const Reference want = naive(a.to_vector<double>(), b.to_vector<double>(), b1, m, n, k);
  struct Case {
    const char* name;
    Tensor a, b;
    bool rhs_column_major;
  };
  const std::vector<Case> cases = {
      {"row-major", a, b, false},
      {"lhs column-major", column_major(a), b, false},
      {"rhs column-major", a, column_major(b), true},
      {"both column-major", column_major(a), column_major(b), true},
      {"padded rows", with_padded_rows(a, 3), with_padded_rows(b, 5), false},
      {"row-strided", every_other_row(a), every_other_row(b), false},
  };
  for (const Case& c : cases) {
    const std::string what = std::string(c.name) + " batch " + std::to_string(batch) + " (" +
                             std::to_string(m) + ", " + std::to_string(n) + ", " +
                             std::to_string(k) + ") " + dtype_name(dtype);
    Tensor got;
    const auto [gemms, xsmm] = count([&] { got = matmul(c.a, c.b); });
    if (m > 1 && n > 1 && k > 1) {
      EXPECT_EQ(gemms, batch ? batch : 1) << what;
      EXPECT_EQ(xsmm, expect_xsmm(m, n, k, c.rhs_column_major) ? gemms : 0) << what;
    }
    expect_close(got, want, dtype, k, what);
  }
}

TEST(MatmulXsmm, BlockEdgesAndSizesInEveryLayout) {
  for (DType dtype : {kFloat32, kFloat64})
    for (int64_t m : {1, 63, 64, 65, 3200})
      for (int64_t n : {1, 16, 32, 33, 128, 129})
        for (int64_t k : {1, 16, 32, 33, 128, 129})
          for (int64_t batch : {0, 3}) {
            if (batch && m == 3200) continue;  // the batch is the 64-row edges' business
            check_layouts(batch, m, n, k, dtype);
          }
}

// The bounds: N and K up to 1024, K x N up to 65536 elements; beyond, OpenBLAS.
TEST(MatmulXsmm, LargestSmallSizesAndTheFirstLargeOnes) {
  for (DType dtype : {kFloat32, kFloat64}) {
    for (int64_t nk : {256, 257}) check_layouts(2, 130, nk, nk, dtype);
    for (int64_t nk : {64, 65}) {
      check_layouts(0, 65, 1024, nk, dtype);
      check_layouts(0, 65, nk, 1024, dtype);
    }
    check_layouts(0, 65, 1025, 16, dtype);
    check_layouts(0, 65, 16, 1025, dtype);
  }
}

// One block of rows (M <= 64) with work enough for two threads splits its columns in halves:
// every layout still matches the reference, and a chain after the product (its epilogue, told of
// the rows once both halves are done) gives the bits of the unfused ops.
TEST(MatmulXsmm, OneBlockOfRowsSplitsItsColumnsInHalves) {
  for (DType dtype : {kFloat32, kFloat64}) {
    for (int64_t m : {32, 64}) check_layouts(0, m, 512, 128, dtype);
    const Tensor h = sample({64, 128}, dtype, 3), w = sample({128, 512}, dtype, 4);
    const Tensor bias = sample({512}, dtype, 5);
    auto cell = [](const Tensor& x, const Tensor& v, const Tensor& b) {
      return tanh(matmul(x, v) + b);
    };
    EXPECT_EQ(compile(cell)(h, w, bias).to_vector<double>(), cell(h, w, bias).to_vector<double>());
  }
}

// Few rows with a column-major rhs stay on OpenBLAS (the rhs copy would not pay); from 32 rows
// the rhs is copied row-major, once when the batch shares it.
TEST(MatmulXsmm, ColumnMajorRhsIsCopiedOncePerMatrix) {
  for (int64_t m : {2, 31, 32, 33}) check_layouts(3, m, 32, 24, kFloat32);
  const Tensor a = sample({4, 40, 24}, kFloat64, 1), w = sample({32, 24}, kFloat64, 2);
  const Tensor shared = broadcast_to(transpose(w), {4, 24, 32});  // batch stride 0, column-major
  Tensor got;
  const auto [gemms, xsmm] = count([&] { got = matmul(a, shared); });
  EXPECT_EQ(gemms, 4);
  EXPECT_EQ(xsmm, 4);
  const std::vector<double> wt = transpose(w).contiguous().to_vector<double>();
  std::vector<double> b;
  for (int i = 0; i < 4; ++i) b.insert(b.end(), wt.begin(), wt.end());
  expect_close(got, naive(a.to_vector<double>(), b, 4, 40, 32, 24), kFloat64, 24, "shared rhs");
}

// x @ W_b with the model axis of W_b outside its K axis (an eager ensemble): each model's block of
// output columns is written in place, rows (models x width) apart.
TEST(MatmulXsmm, SharedInputTimesStackedWeightsWritesColumnBlocks) {
  for (DType dtype : {kFloat32, kFloat64}) {
    const int64_t models = 3, m = 130, k = 48, width = 40;
    const Tensor x = sample({m, k}, dtype, 5), w = sample({models, k, width}, dtype, 6);
    Tensor y;
    const auto [gemms, xsmm] = count([&] { y = dot_general(x, w, DotDims{{1}, {1}, {}, {}}); });
    EXPECT_EQ(gemms, models);
    EXPECT_EQ(xsmm, models);
    ASSERT_EQ(y.shape(), (Shape{m, models, width}));
    // The reference: x times the (k, models x width) matrix of the weights side by side.
    const Tensor side_by_side = reshape(transpose(w, {1, 0, 2}).contiguous(), {k, models * width});
    const Reference want =
        naive(x.to_vector<double>(), side_by_side.to_vector<double>(), 1, m, models * width, k);
    expect_close(y, want, dtype, k, std::string("column blocks ") + dtype_name(dtype));
  }
}

// Per-example Jacobians of a tanh MLP (width 32, so every product has N = K = 32): the forward
// products have M = the batch, the backward ones M = batch x 32 identity rows with the weights
// transposed. Against J = prod_k diag(1 - h_k^2) W_k^T, in float64 loops.
TEST(MatmulXsmm, VmapOfJacrevOfAnMlp) {
  const int64_t width = 32, depth = 3, examples = 50;
  for (DType dtype : {kFloat32, kFloat64}) {
    std::vector<Tensor> ws, bs;
    for (int64_t i = 0; i < depth; ++i) {
      ws.push_back(sample({width, width}, dtype, 10 + i) * (1.5 / std::sqrt(double(width))));
      bs.push_back(sample({width}, dtype, 20 + i) * 0.1);
    }
    const Tensor xs = sample({examples, width}, dtype, 30);
    auto mlp = [&](const Tensor& x) {
      Tensor h = x;
      for (int64_t i = 0; i < depth; ++i) h = tanh(matmul(h, ws[i]) + bs[i]);
      return h;
    };
    Tensor jac;
    const auto [gemms, xsmm] = count([&] { jac = vmap(jacrev(mlp))(xs); });
    EXPECT_GT(xsmm, 0);
    EXPECT_LE(xsmm, gemms);
    ASSERT_EQ(jac.shape(), (Shape{examples, width, width}));
    const std::vector<double> got = jac.to_vector<double>(), x = xs.to_vector<double>();
    std::vector<std::vector<double>> w, b;
    for (int64_t i = 0; i < depth; ++i)
      w.push_back(ws[i].to_vector<double>()), b.push_back(bs[i].to_vector<double>());
    const double tol = dtype == kFloat32 ? 2e-5 : 1e-13;
    for (int64_t e = 0; e < examples; ++e) {
      std::vector<double> h(x.begin() + e * width, x.begin() + (e + 1) * width);
      std::vector<double> j(width * width, 0.0);  // dh/dx, starting from the identity
      for (int64_t r = 0; r < width; ++r) j[r * width + r] = 1.0;
      for (int64_t i = 0; i < depth; ++i) {
        std::vector<double> z = b[i], next(width * width, 0.0);
        for (int64_t p = 0; p < width; ++p)
          for (int64_t c = 0; c < width; ++c) z[c] += h[p] * w[i][p * width + c];
        for (int64_t c = 0; c < width; ++c) h[c] = std::tanh(z[c]);
        for (int64_t r = 0; r < width; ++r)  // next[r, :] = (1 - h_r^2) sum_p W[p, r] j[p, :]
          for (int64_t p = 0; p < width; ++p)
            for (int64_t c = 0; c < width; ++c)
              next[r * width + c] += (1 - h[r] * h[r]) * w[i][p * width + r] * j[p * width + c];
        j = next;
      }
      for (int64_t r = 0; r < width * width; ++r)
        ASSERT_NEAR(got[e * width * width + r], j[r], tol) << dtype_name(dtype) << " " << e;
    }
  }
}

}  // namespace
