// Batch invariance (lanes/determinism.h): with set_batch_invariant(true), vmap(f)(xs)[i] ==
// f(xs[i]) bit for bit, for every op-table row, every float dtype, every set of mapped inputs and
// batch axes first or last, batch sizes 1, 2 and 5 (and 5 in chunks of 2; 1 and 5 under the
// sanitizers): batching never changes a result.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <set>

#include "op_table.h"
#include "same_bits.h"

using namespace optable;
using lanes::AxisSpec;

namespace {

// Batch sizes per case. Under the sanitizers (12x slower here, and CI's longest ASan test) batch 2
// is left out: batch 5 runs in chunks of 2, 2 and 1 lanes, so a 2-lane batch still runs, and the
// plain build runs all three.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_UNDEFINED__)
constexpr int64_t kBatches[] = {1, 5};
#else
constexpr int64_t kBatches[] = {1, 2, 5};
#endif

// Products take the batch-invariant kernel for the test (lanes/determinism.h).
class BatchInvariance : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { lanes::set_batch_invariant(true); }
  void TearDown() override { lanes::set_batch_invariant(false); }
  const OpRow& row() const {
    for (const OpRow& r : op_table())
      if (r.name == GetParam()) return r;
    throw std::logic_error("no row " + GetParam());
  }
};

TEST_P(BatchInvariance, VmapEqualsTheLoopBitForBit) {
  const OpRow& r = row();
  for (DType dtype : r.dtypes) {
    if (!lanes::is_floating(dtype) && dtype != r.dtypes.back()) continue;
    for (int64_t batch : kBatches) {
      Gen gen;
      std::vector<std::vector<Tensor>> examples;  // examples[b][k]
      for (int64_t b = 0; b < batch; ++b) examples.push_back(r.sample(dtype, gen));
      const size_t n = examples[0].size();
      if (n == 0) break;
      const size_t subsets = n > 3 ? 1 : (size_t{1} << n) - 1;
      for (size_t mask = 1; mask <= subsets; ++mask) {
        const size_t used = n > 3 ? (size_t{1} << n) - 1 : mask;
        for (bool last : {false, true}) {
          std::vector<Tensor> inputs;
          std::vector<AxisSpec> axes;
          for (size_t k = 0; k < n; ++k) {
            if (!(used >> k & 1)) {
              inputs.push_back(examples[0][k]);
              axes.emplace_back(lanes::none);
              continue;
            }
            const int64_t axis = last ? examples[0][k].ndim() : 0;
            std::vector<Tensor> column;
            for (int64_t b = 0; b < batch; ++b) column.push_back(examples[b][k]);
            inputs.push_back(lanes::stack(column, axis));
            axes.emplace_back(axis);
          }
          std::vector<Tensor> per_example;
          for (int64_t b = 0; b < batch; ++b) {
            std::vector<Tensor> args;
            for (size_t k = 0; k < n; ++k)
              args.push_back(used >> k & 1 ? examples[b][k] : examples[0][k]);
            per_example.push_back(r.call(args));
          }
          const Tensor want = lanes::stack(per_example, 0);
          SCOPED_TRACE(std::string(lanes::dtype_name(dtype)) + ", batch " + std::to_string(batch) +
                       ", mapped inputs mask " + std::to_string(used) +
                       (last ? ", batch axes last" : ", batch axes first"));
          Tensor got;
          ASSERT_NO_THROW(got = lanes::vmap(r.call, lanes::in_axes(AxisSpec(axes)))(inputs));
          EXPECT_TRUE(same_bits(got, want));
          if (batch < 5) continue;
          lanes::VmapOptions chunked;  // chunks of 2, 2 and 1 lanes
          chunked.chunk_size = 2;
          ASSERT_NO_THROW(
              got = lanes::vmap(r.call, lanes::in_axes(AxisSpec(axes)), 0, chunked)(inputs));
          EXPECT_TRUE(same_bits(got, want)) << "chunk_size 2";
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, BatchInvariance, ::testing::ValuesIn(row_names()),
                         [](const auto& info) { return info.param; });

}  // namespace

namespace {

// The column kernel starts each slot row from the first rows themselves: a NaN there must win
// (xsimd's batch a != a is false for NaN; MaxOp asks xsimd::isnan).
TEST(ReduceKernels, NanInTheFirstRowsOfAColumnReductionWins) {
  for (int64_t rows : {1, 3, 64, 100, 3000}) {
    std::vector<float> v(size_t(rows * 40), 1.0f);
    v[7] = NAN;  // row 0, column 7
    const Tensor x = lanes::tensor(v, {rows, 40});
    for (const Tensor& r : {lanes::max(x, 0), lanes::min(x, 0), lanes::sum(x, 0)}) {
      const auto got = r.to_vector<float>();
      for (int64_t c = 0; c < 40; ++c) EXPECT_EQ(std::isnan(got[size_t(c)]), c == 7) << rows;
    }
  }
}

// A row's leaf folds its slots in registers, the unused slots of a short row holding the identity
// (reduce_leaves.h); the column kernel folds the same slots as scalars. Both must give the same
// bits for every row length around the slot count, NaNs, infinities and signed zeros included,
// and the value the plain math gives.
TEST(ReduceKernels, RowsAndColumnsAgreeBitForBitOnEveryShortLength) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-2, 2);
  const float specials[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f};
  for (int64_t len = 1; len <= 140; ++len) {
    const int64_t rows = 6;
    std::vector<float> v(size_t(rows * len));
    for (float& x : v) x = u(rng);
    // Row 0 plain, row 1 all -0.0, rows 2-5 one special each at a random place.
    for (int64_t i = 0; i < len; ++i) v[size_t(len + i)] = -0.0f;
    for (int64_t r = 2; r < rows; ++r)
      v[size_t(r * len) + rng() % size_t(len)] = specials[size_t(r - 2 + len) % 5];
    const Tensor x = lanes::tensor(v, {rows, len});
    const Tensor xt = lanes::transpose(x, {1, 0}).contiguous();
    using Reduce = Tensor (*)(const Tensor&, const lanes::Axes&, bool);
    const Reduce ops[] = {lanes::sum, lanes::max, lanes::min, lanes::prod};
    for (Reduce op : ops) {
      const auto by_rows = op(x, {1}, false).to_vector<float>();
      const auto by_columns = op(xt, {0}, false).to_vector<float>();
      ASSERT_EQ(std::memcmp(by_rows.data(), by_columns.data(), by_rows.size() * sizeof(float)), 0)
          << "length " << len;
    }
    // The plain math: max and min of each row, its sum in float64, NaN where the row has one.
    const auto sums = lanes::sum(x, {1}).to_vector<float>();
    const auto maxes = lanes::max(x, {1}).to_vector<float>();
    for (int64_t r = 0; r < rows; ++r) {
      double sum = 0, max = -INFINITY;
      bool nan = false;
      for (int64_t i = 0; i < len; ++i) {
        const float e = v[size_t(r * len + i)];
        nan = nan || std::isnan(e);
        sum += e;
        max = std::max(max, double(e));
      }
      EXPECT_EQ(std::isnan(maxes[size_t(r)]), nan) << len << " " << r;
      if (!nan) EXPECT_EQ(double(maxes[size_t(r)]), max) << len << " " << r;
      if (!std::isnan(sum) && !std::isinf(sum))
        EXPECT_NEAR(sums[size_t(r)], sum, 1e-5 * double(len) * 2) << len << " " << r;
    }
    EXPECT_TRUE(std::signbit(sums[1])) << "a sum of -0.0s is -0.0, length " << len;
  }
}

}  // namespace

namespace {

// The batch-invariant order, written out: passes of 256 k's, each an FMA chain from -0, the
// passes' sums added in order (src/kernels/gemm_in_order.h).
template <class T>
T in_order(const std::vector<T>& a, const std::vector<T>& b, int64_t i, int64_t j, int64_t n,
           int64_t k) {
  T c = 0;
  for (int64_t p0 = 0; p0 < k; p0 += 256) {
    T pass = T(-0.0);
    for (int64_t p = p0; p < std::min(k, p0 + 256); ++p)
      pass = std::fma(a[size_t(i * k + p)], b[size_t(p * n + j)], pass);
    c = p0 == 0 ? pass : c + pass;
  }
  return c;
}

template <class T>
void expect_products_in_order() {
  lanes::set_batch_invariant(true);
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-1, 1);
  for (int64_t k : {1, 3, 31, 256, 257, 600})
    for (int64_t n : {1, 5, 16, 33, 100})
      for (int64_t m : {1, 2, 7, 13, 100}) {
        std::vector<T> a(size_t(m * k)), b(size_t(k * n));
        for (T& v : a) v = T(u(rng));
        for (T& v : b) v = T(u(rng));
        const auto got = lanes::matmul(lanes::tensor(a, {m, k}), lanes::tensor(b, {k, n}))
                             .template to_vector<T>();
        int64_t differ = 0;
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j)
            differ += got[size_t(i * n + j)] != in_order(a, b, i, j, n, k);
        EXPECT_EQ(differ, 0) << m << " x " << k << " x " << n;
      }
  lanes::set_batch_invariant(false);
}

// A large product with the identity skips the GEMM only where the chains would give the other
// factor's values exactly (finite, no zeros); with zeros it runs the chains.
TEST(BatchInvariantProducts, IdentityFactorsGiveTheChainsBits) {
  lanes::set_batch_invariant(true);
  const int64_t n = 192;
  std::vector<double> eye(size_t(n * n), 0.0), x(size_t(n * n));
  for (int64_t i = 0; i < n; ++i) eye[size_t(i * n + i)] = 1.0;
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(-1, 1);
  for (double& v : x) v = u(rng);
  for (bool zeros : {false, true}) {
    if (zeros) x[5] = -0.0, x[700] = 0.0;
    const auto got =
        lanes::matmul(lanes::tensor(eye, {n, n}), lanes::tensor(x, {n, n})).to_vector<double>();
    int64_t differ = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const double want = in_order(eye, x, i, j, n, n), g = got[size_t(i * n + j)];
        differ += std::memcmp(&want, &g, sizeof g) != 0;
      }
    EXPECT_EQ(differ, 0) << "zeros " << zeros;
  }
  lanes::set_batch_invariant(false);
}

TEST(BatchInvariantProducts, FollowThePassOrderFloat32) { expect_products_in_order<float>(); }
TEST(BatchInvariantProducts, FollowThePassOrderFloat64) { expect_products_in_order<double>(); }

}  // namespace
