// vmap over the op table: for every op, every non-empty set of mapped inputs and several
// in_axes/out_axes, vmap(op) equals the per-example loop (eager ops, stacked), and no op falls
// back to the per-example loop; nested vmap (2 levels) likewise; an empty batch gives an empty
// result.
#include <gtest/gtest.h>

#include <cmath>

#include "op_table.h"

using namespace optable;
using lanes::AxisSpec;

namespace {

constexpr int64_t kBatch = 3;

// Compares two tensors of the same expected dtype; floats within the row's tolerance.
::testing::AssertionResult close(const Tensor& got, const Tensor& want, const OpRow& row) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape())
    return ::testing::AssertionFailure()
           << "got " << lanes::dtype_name(got.dtype()) << lanes::shape_str(got.shape())
           << ", expected " << lanes::dtype_name(want.dtype()) << lanes::shape_str(want.shape());
  const auto g = got.to_vector<double>(), w = want.to_vector<double>();
  const bool f32 = want.dtype() == DType::Float32, f64 = want.dtype() == DType::Float64;
  const double rtol = f32 ? 4 * row.rtol_float32 : f64 ? 1e-12 : 0;
  const double atol = f32 ? 4 * row.atol_float32 : f64 ? 1e-12 : 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (g[i] == w[i] || (std::isnan(g[i]) && std::isnan(w[i]))) continue;
    if (std::abs(g[i] - w[i]) <= atol + rtol * std::abs(w[i])) continue;
    return ::testing::AssertionFailure() << "element " << i << ": " << g[i] << " vs loop " << w[i];
  }
  return ::testing::AssertionSuccess();
}

// Where a mapped input's batch axis goes: 0, the last axis (as a positive index), or -1.
enum class AxisMode { First, Last, Negative };
int64_t axis_for(AxisMode m, int64_t example_rank) {
  switch (m) {
    case AxisMode::First:
      return 0;
    case AxisMode::Last:
      return example_rank;
    case AxisMode::Negative:
      return -1;
  }
  return 0;
}
int64_t positive(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

class VmapOps : public ::testing::TestWithParam<std::string> {
 protected:
  const OpRow& row() const {
    for (const OpRow& r : op_table())
      if (r.name == GetParam()) return r;
    throw std::logic_error("no row " + GetParam());
  }
};

TEST_P(VmapOps, MatchesPerExampleLoop) {
  const OpRow& r = row();
  const DType dtype = r.dtypes.back();  // the widest dtype the op supports
  Gen gen;
  std::vector<std::vector<Tensor>> examples;  // examples[b][k]
  for (int64_t b = 0; b < kBatch; ++b) examples.push_back(r.sample(dtype, gen));
  const size_t n = examples[0].size();
  if (n == 0) {  // nothing to map (iota, arange): the size comes from options.axis_size
    lanes::VmapOptions options;
    options.axis_size = kBatch;
    auto batched =
        lanes::vmap(r.call, lanes::in_axes(AxisSpec(std::vector<AxisSpec>{})), 0, options);
    const Tensor one = r.call({});
    EXPECT_TRUE(close(batched(std::vector<Tensor>{}), lanes::stack({one, one, one}, 0), r));
    return;
  }
  const size_t subsets = n > 4 ? 1 : (size_t{1} << n) - 1;
  for (size_t mask = 1; mask <= subsets; ++mask) {
    const size_t used = n > 4 ? (size_t{1} << n) - 1 : mask;
    for (AxisMode mode : {AxisMode::First, AxisMode::Last, AxisMode::Negative}) {
      std::vector<Tensor> inputs;
      std::vector<AxisSpec> axes;
      for (size_t k = 0; k < n; ++k) {
        if (!(used >> k & 1)) {
          inputs.push_back(examples[0][k]);
          axes.emplace_back(lanes::none);
          continue;
        }
        const int64_t rank = examples[0][k].ndim();
        const int64_t axis = axis_for(mode, rank);
        std::vector<Tensor> column;
        for (int64_t b = 0; b < kBatch; ++b) column.push_back(examples[b][k]);
        inputs.push_back(lanes::stack(column, positive(axis, rank + 1)));
        axes.emplace_back(axis);
      }
      // The loop: one eager call per example, stacked at the out axis.
      std::vector<Tensor> per_example;
      for (int64_t b = 0; b < kBatch; ++b) {
        std::vector<Tensor> args;
        for (size_t k = 0; k < n; ++k)
          args.push_back(used >> k & 1 ? examples[b][k] : examples[0][k]);
        per_example.push_back(r.call(args));
      }
      const int64_t out_rank = per_example[0].ndim() + 1;
      const int64_t out_axis = mode == AxisMode::First ? 0 : -1;
      const Tensor want = lanes::stack(per_example, positive(out_axis, out_rank));

      SCOPED_TRACE("mapped inputs mask " + std::to_string(used) + ", axis mode " +
                   std::to_string(int(mode)));
      // One argument (the vector of inputs) with one axis per leaf.
      auto batched = lanes::vmap(r.call, lanes::in_axes(AxisSpec(axes)), out_axis);
      Tensor got;
      ASSERT_NO_THROW(got = batched(inputs));
      EXPECT_TRUE(close(got, want, r));
      const lanes::Explanation e = lanes::explain(batched, inputs);
      EXPECT_TRUE(e.fallbacks.empty()) << "fell back to the per-example loop:\n" << e;
      EXPECT_EQ(e.materialized_bytes(), 0) << e;
    }
    if (n > 4) break;
  }
}

TEST_P(VmapOps, NestedMatchesDoubleLoop) {
  const OpRow& r = row();
  const DType dtype = r.dtypes.back();
  Gen gen;
  constexpr int64_t kOuter = 2;
  std::vector<std::vector<std::vector<Tensor>>> ex(kOuter);  // ex[i][j][k]
  for (auto& inner : ex)
    for (int64_t j = 0; j < kBatch; ++j) inner.push_back(r.sample(dtype, gen));
  const size_t n = ex[0][0].size();
  if (n == 0) return;  // covered by MatchesPerExampleLoop through options.axis_size
  // Every input mapped at both levels: outer axis 0, inner axis -1 (of the example).
  std::vector<Tensor> inputs;
  for (size_t k = 0; k < n; ++k) {
    std::vector<Tensor> outer;
    for (int64_t i = 0; i < kOuter; ++i) {
      std::vector<Tensor> inner;
      for (int64_t j = 0; j < kBatch; ++j) inner.push_back(ex[i][j][k]);
      outer.push_back(lanes::stack(inner, ex[0][0][k].ndim()));
    }
    inputs.push_back(lanes::stack(outer, 0));
  }
  std::vector<Tensor> rows;
  for (int64_t i = 0; i < kOuter; ++i) {
    std::vector<Tensor> cols;
    for (int64_t j = 0; j < kBatch; ++j) cols.push_back(r.call(ex[i][j]));
    rows.push_back(lanes::stack(cols, 0));
  }
  const Tensor want = lanes::stack(rows, 0);
  auto inner = lanes::vmap(r.call, lanes::in_axes(AxisSpec(std::vector<AxisSpec>(n, -1))));
  auto outer = lanes::vmap(inner, 0);
  Tensor got;
  ASSERT_NO_THROW(got = outer(inputs));
  EXPECT_TRUE(close(got, want, r));
}

// x's examples stacked at `axis` for a batch of none: shape x.shape with 0 inserted at axis.
Tensor no_examples(const Tensor& x, int64_t axis) {
  Shape s = x.shape();
  s.insert(s.begin() + positive(axis, x.ndim() + 1), 0);
  return lanes::zeros(s, x.dtype());
}

// An empty batch (B = 0), as in jax: every op, for every set of mapped inputs, gives an empty
// result with the per-example output's shape and dtype and the batch axis of size 0.
TEST_P(VmapOps, EmptyBatchGivesAnEmptyResultOfTheExampleType) {
  const OpRow& r = row();
  const DType dtype = r.dtypes.back();
  Gen gen;
  const std::vector<Tensor> example = r.sample(dtype, gen);
  const Tensor one = r.call(example);  // the loop's type of one example
  auto expect_empty = [&](const Tensor& got, int64_t out_axis) {
    Shape want = one.shape();
    want.insert(want.begin() + positive(out_axis, one.ndim() + 1), 0);
    EXPECT_EQ(got.shape(), want);
    EXPECT_EQ(got.dtype(), one.dtype());
  };
  const size_t n = example.size();
  if (n == 0) {
    lanes::VmapOptions options;
    options.axis_size = 0;
    auto batched =
        lanes::vmap(r.call, lanes::in_axes(AxisSpec(std::vector<AxisSpec>{})), 0, options);
    Tensor got;
    ASSERT_NO_THROW(got = batched(std::vector<Tensor>{}));
    expect_empty(got, 0);
    return;
  }
  const size_t subsets = n > 4 ? 1 : (size_t{1} << n) - 1;
  for (size_t mask = 1; mask <= subsets; ++mask) {
    const size_t used = n > 4 ? (size_t{1} << n) - 1 : mask;
    for (AxisMode mode : {AxisMode::First, AxisMode::Negative}) {
      std::vector<Tensor> inputs;
      std::vector<AxisSpec> axes;
      for (size_t k = 0; k < n; ++k) {
        const bool mapped = used >> k & 1;
        const int64_t axis = axis_for(mode, example[k].ndim());
        inputs.push_back(mapped ? no_examples(example[k], axis) : example[k]);
        axes.push_back(mapped ? AxisSpec(axis) : AxisSpec(lanes::none));
      }
      const int64_t out_axis = mode == AxisMode::First ? 0 : -1;
      SCOPED_TRACE("mapped inputs mask " + std::to_string(used) + ", axis mode " +
                   std::to_string(int(mode)));
      Tensor got;
      ASSERT_NO_THROW(got = lanes::vmap(r.call, lanes::in_axes(AxisSpec(axes)), out_axis)(inputs));
      expect_empty(got, out_axis);
    }
    if (n > 4) break;
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, VmapOps, ::testing::ValuesIn(row_names()),
                         [](const auto& info) { return info.param; });

}  // namespace
