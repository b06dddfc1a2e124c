// compile's graph passes (src/runtime/passes.cpp): each rewrite gives the same values as eager
// evaluation of the same function, and removes the nodes it is meant to remove.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>

#include "lanes/lanes.h"
#include "op_table.h"
#include "pass_checks.h"
#include "primitives/elementwise.h"
#include "primitives/reduce.h"

using namespace lanes;
using namespace pass_checks;

namespace {

// f's graph with its inputs turned into the constants `values`: every node then folds.
Graph with_constant_inputs(Graph g, const std::vector<Tensor>& values) {
  for (size_t i = 0; i < values.size(); ++i) g.constants.emplace_back(g.inputs[i], values[i]);
  g.inputs.clear();
  return g;
}

size_t constant_storage_bytes(const Graph& g) {
  size_t bytes = 0;
  for (const auto& c : g.constants) bytes += c.second.storage()->bytes();
  return bytes;
}

}  // namespace

TEST(Passes, TransposeOfTransposeIsOneTransposeOrNone) {
  const Tensor x = randn({2, 3, 4}, 1);
  auto back = [](const Tensor& v) { return transpose(transpose(v, {1, 2, 0}), {2, 0, 1}); };
  auto two = [](const Tensor& v) { return transpose(transpose(v, {1, 0, 2}), {0, 2, 1}); };
  expect_equal(compile(back)(x), back(x));
  expect_equal(compile(two)(x), two(x));
  const Graph none = optimized(back, x), one = optimized(two, x);
  EXPECT_TRUE(none.nodes.empty()) << none;
  ASSERT_EQ(one.nodes.size(), 1u) << one;
  EXPECT_EQ(describe(*one.nodes[0].prim), "transpose[permutation=(1, 2, 0)]");
}

TEST(Passes, BroadcastOfBroadcastIsOneBroadcast) {
  const Tensor x = randn({1, 3}, 2);
  auto f = [](const Tensor& v) {
    return broadcast_in_dim(broadcast_in_dim(v, {4, 3}, {0, 1}), {2, 4, 3}, {1, 2});
  };
  expect_equal(compile(f)(x), f(x));
  const Graph g = optimized(f, x);
  ASSERT_EQ(g.nodes.size(), 1u) << g;
  EXPECT_EQ(describe(*g.nodes[0].prim),
            "broadcast_in_dim[shape=(2, 4, 3), broadcast_dimensions=(1, 2)]");
}

TEST(Passes, BroadcastOfUnitReshapeIsOneBroadcast) {
  const Tensor x = randn({5}, 23), y = randn({5, 1}, 24), z = randn({5, 1, 1, 3}, 25);
  auto add_dim = [](const Tensor& v) {
    return broadcast_in_dim(reshape(v, {5, 1}), {5, 3}, {0, 1});
  };
  auto drop_dim = [](const Tensor& v) { return broadcast_in_dim(reshape(v, {5}), {5, 3}, {0}); };
  // Two size-1 dims of z would need output dims between 1 and 2: both nodes stay.
  auto no_room = [](const Tensor& v) {
    return broadcast_in_dim(reshape(v, {5, 3}), {2, 5, 3}, {1, 2});
  };
  expect_equal(compile(add_dim)(x), add_dim(x));
  expect_equal(compile(drop_dim)(y), drop_dim(y));
  expect_equal(compile(no_room)(z), no_room(z));
  const Graph a = optimized(add_dim, x), d = optimized(drop_dim, y);
  ASSERT_EQ(a.nodes.size(), 1u) << a;
  EXPECT_EQ(describe(*a.nodes[0].prim),
            "broadcast_in_dim[shape=(5, 3), broadcast_dimensions=(0,)]");
  ASSERT_EQ(d.nodes.size(), 1u) << d;
  EXPECT_EQ(describe(*d.nodes[0].prim),
            "broadcast_in_dim[shape=(5, 3), broadcast_dimensions=(0, 1)]");
  EXPECT_EQ(optimized(no_room, z).nodes.size(), 2u) << optimized(no_room, z);
}

TEST(Passes, TransposeOfBroadcastIsABroadcastWhenOperandDimsStayInOrder) {
  const Tensor x = randn({3}, 3), y = randn({2, 3}, 4);
  auto f = [](const Tensor& v) { return transpose(broadcast_to(v, {4, 3}), {1, 0}); };
  auto g = [](const Tensor& v) { return transpose(broadcast_to(v, {4, 2, 3}), {0, 2, 1}); };
  expect_equal(compile(f)(x), f(x));
  expect_equal(compile(g)(y), g(y));
  const Graph fg = optimized(f, x);
  EXPECT_EQ(count(fg, "transpose"), 0) << fg;
  EXPECT_EQ(fg.nodes.size(), 1u) << fg;
  // (2, 3) would have to be transposed itself: no node would be saved, so both stay.
  const Graph gg = optimized(g, y);
  EXPECT_EQ(count(gg, "transpose"), 1) << gg;
  EXPECT_EQ(count(gg, "broadcast_in_dim"), 1) << gg;
}

TEST(Passes, ReshapeOfOrderPreservingViewsIsOneReshapeOrNone) {
  const Tensor x = randn({3, 4}, 5);
  // Insert a size-1 dim, move it to the front, take it away again: x.
  auto back = [](const Tensor& v) {
    return reshape(transpose(broadcast_in_dim(v, {3, 1, 4}, {0, 2}), {1, 0, 2}), {3, 4});
  };
  auto flat = [](const Tensor& v) { return reshape(expand_dims(v, 0), {12}); };
  // A transpose that moves non-unit dims changes the element order: it stays.
  auto swapped = [](const Tensor& v) { return reshape(transpose(v, {1, 0}), {12}); };
  expect_equal(compile(back)(x), back(x));
  expect_equal(compile(flat)(x), flat(x));
  expect_equal(compile(swapped)(x), swapped(x));
  EXPECT_TRUE(optimized(back, x).nodes.empty()) << optimized(back, x);
  EXPECT_EQ(optimized(flat, x).nodes.size(), 1u) << optimized(flat, x);
  EXPECT_EQ(optimized(swapped, x).nodes.size(), 2u) << optimized(swapped, x);
}

TEST(Passes, CastRoundTripsOnlyWhenExact) {
  const Tensor x = randn({5}, 6);
  auto round_trip = [](const Tensor& v) { return cast(cast(v, DType::Float64), DType::Float32); };
  auto to_int = [](const Tensor& v) { return cast(cast(v, DType::Float64), DType::Int32); };
  expect_equal(compile(round_trip)(x), round_trip(x));
  expect_equal(compile(to_int)(x * 10.0), to_int(x * 10.0));
  EXPECT_TRUE(optimized(round_trip, x).nodes.empty()) << optimized(round_trip, x);
  const Graph one = optimized(to_int, x);
  ASSERT_EQ(one.nodes.size(), 1u) << one;
  EXPECT_EQ(describe(*one.nodes[0].prim), describe(prim::Cast(DType::Int32)));
  // int32 -> float32 rounds 2^24 + 1: the round trip is not the identity and must stay.
  const Tensor big = tensor(std::vector<int32_t>{16777217, -3, 7}, {3});
  auto lossy = [](const Tensor& v) { return cast(cast(v, DType::Float32), DType::Int32); };
  expect_equal(compile(lossy)(big), lossy(big));
  EXPECT_EQ(big.to_vector<int32_t>()[0] - compile(lossy)(big).to_vector<int32_t>()[0], 1);
  EXPECT_EQ(count(optimized(lossy, big), "convert_element_type"), 2);
}

TEST(Passes, DoubleNegationIsTheOperand) {
  const Tensor x = randn({4}, 7);
  const Tensor i = tensor(std::vector<int32_t>{INT32_MIN, -1, 0, 5}, {4});
  auto f = [](const Tensor& v) { return -(-v); };
  expect_equal(compile(f)(x), f(x));
  expect_equal(compile(f)(i), f(i));
  EXPECT_TRUE(optimized(f, x).nodes.empty()) << optimized(f, x);
  auto g = [](const Tensor& v) { return -(-(-v)); };
  EXPECT_EQ(optimized(g, x).nodes.size(), 1u) << optimized(g, x);
}

TEST(Passes, ArithmeticIdentitiesAreTheOperand) {
  const Tensor x = randn({2, 3}, 8);
  const Tensor ones_tensor = ones({2, 3});  // materialised, not a stride-0 broadcast
  std::vector<std::function<Tensor(const Tensor&)>> identities = {
      [](const Tensor& v) { return v * 1.0; },          [](const Tensor& v) { return 1.0 * v; },
      [](const Tensor& v) { return v + 0.0; },          [](const Tensor& v) { return 0.0 + v; },
      [](const Tensor& v) { return v - 0.0; },          [](const Tensor& v) { return v / 1.0; },
      [&](const Tensor& v) { return v * ones_tensor; },
  };
  for (size_t k = 0; k < identities.size(); ++k) {
    SCOPED_TRACE(k);
    expect_equal(compile(identities[k])(x), identities[k](x));
    EXPECT_TRUE(optimized(identities[k], x).nodes.empty()) << optimized(identities[k], x);
  }
  // Not identities: 0 - x, x * 2, x / 0 (division by one only on the right).
  std::vector<std::function<Tensor(const Tensor&)>> others = {
      [](const Tensor& v) { return 0.0 - v; },
      [](const Tensor& v) { return v * 2.0; },
      [](const Tensor& v) { return 1.0 / v; },
  };
  for (size_t k = 0; k < others.size(); ++k) {
    SCOPED_TRACE(k);
    expect_equal(compile(others[k])(x), others[k](x));
    EXPECT_EQ(optimized(others[k], x).nodes.size(), 1u) << optimized(others[k], x);
  }
  // float32 times a float64 one: promoted to float64, so only the cast remains.
  auto promoted = [](const Tensor& v) { return v * ones({2, 3}, DType::Float64); };
  expect_equal(compile(promoted)(x), promoted(x));
  EXPECT_EQ(count(optimized(promoted, x), "mul"), 0) << optimized(promoted, x);
}

TEST(Passes, IdentityPrimitivesAreTheOperand) {
  // Neither a cast to the same dtype nor a reduction over no axes comes out of the ops, which
  // skip them; rewrites (and other front ends) can produce them.
  Graph g;
  const ValueId x = g.add_value({{2, 3}, DType::Float32});
  const ValueId y = g.add_value({{2, 3}, DType::Float32});
  const ValueId z = g.add_value({{2, 3}, DType::Float32});
  g.inputs = {x};
  g.nodes.push_back({std::make_shared<prim::Cast>(DType::Float32), {x}, {y}});
  g.nodes.push_back(
      {std::make_shared<prim::Reduce>(prim::Reduce::Kind::Sum, std::vector<int64_t>{}), {y}, {z}});
  g.outputs = {z};
  const Graph opt = detail::optimize(g);
  EXPECT_TRUE(opt.nodes.empty()) << opt;
  const Tensor v = randn({2, 3}, 9);
  expect_equal(detail::execute(opt, {v})[0], v);
}

// A slice that keeps every element (a Jacobian's one block of one leaf, a vmap of it) runs as its
// operand; a slice that drops any element stays.
TEST(Passes, SliceOfEveryElementIsTheOperand) {
  const Tensor x = randn({4, 3}, 10);
  auto whole = [](const Tensor& v) { return slice_axis(v, -1, 0, 3) * 2.0; };
  auto part = [](const Tensor& v) { return slice_axis(v, -1, 0, 3, 2) * 2.0; };
  EXPECT_EQ(count(optimized(whole, x), "slice"), 0) << optimized(whole, x);
  EXPECT_EQ(count(optimized(vmap(whole), x), "slice"), 0) << optimized(vmap(whole), x);
  EXPECT_EQ(count(optimized(part, x), "slice"), 1) << optimized(part, x);
  expect_equal(compile(whole)(x), whole(x));
  expect_equal(compile(vmap(part))(x), vmap(part)(x));
}

TEST(Passes, FoldsNodesWhoseInputsAreConstants) {
  auto f = [](const Tensor& v, const Tensor& w) {
    return std::make_tuple(exp(v) * 2.0 + sum(v), transpose(matmul(v, w)));
  };
  const Tensor v = randn({3, 4}, 10), w = randn({4, 2}, 11);
  const Graph g = detail::optimize(with_constant_inputs(make_graph(f)(v, w), {v, w}));
  EXPECT_TRUE(g.nodes.empty()) << g;
  const auto out = detail::execute(g, {});
  const auto [a, b] = f(v, w);
  expect_equal(out[0], a);
  expect_close(out[1], b);
}

TEST(Passes, FoldingKeepsLargeResultsAsNodesButFoldsViews) {
  auto f = [](const Tensor& s) { return exp(broadcast_to(s, {1024, 1024})); };  // 4 MiB
  auto small = [](const Tensor& s) { return exp(broadcast_to(s, {16, 16})); };
  const Tensor s = tensor(std::vector<float>{0.5f}, {});
  const Graph g = detail::optimize(with_constant_inputs(make_graph(f)(s), {s}));
  // The broadcast folds into a stride-0 view of the scalar; exp stays a node.
  ASSERT_EQ(g.nodes.size(), 1u) << g;
  EXPECT_EQ(g.nodes[0].prim->name(), "exp");
  EXPECT_LT(constant_storage_bytes(g), 1024u);
  expect_equal(detail::execute(g, {})[0], f(s));
  const Graph gs = detail::optimize(with_constant_inputs(make_graph(small)(s), {s}));
  EXPECT_TRUE(gs.nodes.empty()) << gs;
  expect_equal(detail::execute(gs, {})[0], small(s));
}

TEST(Passes, EqualConstantsAreOneValue) {
  // Each `* 2.0` makes its own constant; once they are one value the products are one node.
  auto f = [](const Tensor& v) { return v * 2.0 + v * 2.0; };
  const Tensor x = randn({5}, 12);
  expect_equal(compile(f)(x), f(x));
  const Graph g = optimized(f, x);
  EXPECT_EQ(count(g, "mul"), 1) << g;
  EXPECT_EQ(g.constants.size(), 1u) << g;
}

TEST(Passes, TransposeOfDotGeneralSwapsTheOperands) {
  const Tensor a = randn({2, 3, 5}, 13), b = randn({2, 5, 4}, 14);
  auto f = [](const Tensor& l, const Tensor& r) {
    return transpose(dot_general(l, r, {{2}, {1}, {0}, {0}}), {0, 2, 1});
  };
  auto outer_t = [](const Tensor& l, const Tensor& r) {
    return transpose(dot_general(l, r, {}), {3, 4, 5, 0, 1, 2});
  };
  expect_close(compile(f)(a, b), f(a, b));
  expect_equal(compile(outer_t)(a, b), outer_t(a, b));
  for (const Graph& g : {optimized(f, a, b), optimized(outer_t, a, b)}) {
    EXPECT_EQ(count(g, "transpose"), 0) << g;
    EXPECT_EQ(g.nodes.size(), 1u) << g;
  }
  // A permutation that is not a swap of the two free blocks stays (cubes: the types would fit).
  auto other = [](const Tensor& l, const Tensor& r) {
    return transpose(dot_general(l, r, {{2}, {1}, {0}, {0}}), {1, 0, 2});
  };
  const Tensor c = randn({2, 2, 2}, 21), d = randn({2, 2, 2}, 22);
  expect_close(compile(other)(c, d), other(c, d));
  EXPECT_EQ(count(optimized(other, c, d), "transpose"), 1);
}

TEST(Passes, VmapOfGradOfMlpIsSmallerAndUnchanged) {
  using Params = std::tuple<Tensor, Tensor, Tensor, Tensor>;
  const Params p{randn({8, 16}, 15), randn({16}, 16), randn({16, 3}, 17), randn({3}, 18)};
  auto loss = [](const Params& q, const Tensor& x, const Tensor& y) {
    const auto& [w1, b1, w2, b2] = q;
    const Tensor h = tanh(matmul(x, w1) + b1);
    return l2_loss(matmul(h, w2) + b2 - y) * 1.0;
  };
  auto per_example = vmap(grad(loss), in_axes(none, 0, 0));
  const Tensor x = randn({6, 8}, 19), y = randn({6, 3}, 20);
  const auto got = compile(per_example)(p, x, y);
  const auto want = per_example(p, x, y);
  expect_close(std::get<0>(got), std::get<0>(want));
  expect_close(std::get<1>(got), std::get<1>(want));
  expect_close(std::get<2>(got), std::get<2>(want));
  expect_close(std::get<3>(got), std::get<3>(want));
  const Graph raw = make_graph(per_example)(p, x, y);
  const Graph opt = detail::optimize(raw);
  EXPECT_LT(opt.nodes.size(), raw.nodes.size()) << opt;
  EXPECT_EQ(detail::optimize(opt).nodes.size(), opt.nodes.size());  // one sweep is enough
  EXPECT_EQ(count(opt, "transpose"), 0) << opt;  // per-example weight gradients: swapped dots
}

// ---- every op of the op table (op_table.h) ------------------------------------------------------

namespace {
const optable::OpRow& row_named(const std::string& name) {
  for (const optable::OpRow& r : optable::op_table())
    if (r.name == name) return r;
  throw std::logic_error("no row " + name);
}

std::vector<std::string> row_names(bool differentiable_only) {
  std::vector<std::string> names;
  for (const optable::OpRow& r : optable::op_table())
    if (r.differentiable || !differentiable_only) names.push_back(r.name);
  return names;
}
}  // namespace

class PassesOverOpTable : public ::testing::TestWithParam<std::string> {};
class PassesOverDerivatives : public ::testing::TestWithParam<std::string> {};

// Compiled (rewritten) and fully folded (every input a constant) give eager's values.
TEST_P(PassesOverOpTable, CompiledAndFoldedEqualEager) {
  const optable::OpRow& r = row_named(GetParam());
  for (DType dtype : r.dtypes) {
    SCOPED_TRACE(dtype_name(dtype));
    optable::Gen gen;
    const std::vector<Tensor> inputs = r.sample(dtype, gen);
    const Tensor want = r.call(inputs);
    const double tol = dtype == DType::Float32 ? 1e-5 : 1e-12;
    expect_close(compile(r.call)(inputs), want, tol);
    const Graph folded = detail::optimize(with_constant_inputs(make_graph(r.call)(inputs), inputs));
    expect_close(detail::execute(folded, {})[0], want, tol);
  }
}

namespace {
// One example's cotangent of row r's input k for output cotangent v: what vmap and compile map.
auto vjp_of_input(const optable::OpRow& r, size_t k) {
  return [&r, k](const std::vector<Tensor>& args, const Tensor& v) {
    auto f = [&](const Tensor& x) {
      std::vector<Tensor> a = args;
      a[k] = x;
      return r.call(a);
    };
    return std::get<0>(vjp(f, args[k]).second(v));
  };
}
}  // namespace

// Per-example vjp (vmap of vjp) compiled equals it uncompiled: the graphs batching and autodiff
// make, through every rewrite.
TEST_P(PassesOverDerivatives, CompiledPerExampleVjpEqualsUncompiled) {
  const optable::OpRow& r = row_named(GetParam());
  optable::Gen gen;
  std::vector<std::vector<Tensor>> ex;
  for (int b = 0; b < 3; ++b) ex.push_back(r.sample(DType::Float64, gen));
  if (!is_floating(r.call(ex[0]).dtype())) GTEST_SKIP() << "integer output";
  std::vector<Tensor> stacked;
  for (size_t j = 0; j < ex[0].size(); ++j)
    stacked.push_back(stack({ex[0][j], ex[1][j], ex[2][j]}));
  const Tensor cts = gen.uniform(stack({r.call(ex[0]), r.call(ex[1]), r.call(ex[2])}).shape(),
                                 DType::Float64, -1.0, 1.0);
  for (size_t k = 0; k < ex[0].size(); ++k) {
    if (ex[0][k].dtype() != DType::Float64) continue;  // indices, labels: not differentiated
    SCOPED_TRACE("input " + std::to_string(k));
    auto per_example = vjp_of_input(r, k);
    expect_close(compile(vmap(per_example))(stacked, cts), vmap(per_example)(stacked, cts), 1e-12);
  }
}

// An empty batch (B = 0) through compile: vmap of the op, and (differentiable rows) vmap of its
// vjp, with every input mapped, give an empty result of the per-example type.
namespace {
Tensor no_examples(const Tensor& x) {
  Shape s = x.shape();
  s.insert(s.begin(), 0);
  return zeros(s, x.dtype());
}
void expect_type(const Tensor& got, const Tensor& example) {
  EXPECT_EQ(got.shape(), no_examples(example).shape());
  EXPECT_EQ(got.dtype(), example.dtype());
}
}  // namespace

TEST_P(PassesOverOpTable, CompiledEmptyBatchIsEmpty) {
  const optable::OpRow& r = row_named(GetParam());
  optable::Gen gen;
  const std::vector<Tensor> example = r.sample(r.dtypes.back(), gen);
  if (example.empty()) GTEST_SKIP() << "nothing to map";
  std::vector<Tensor> stacked;
  for (const Tensor& x : example) stacked.push_back(no_examples(x));
  Tensor got;
  ASSERT_NO_THROW(got = compile(vmap(r.call))(stacked));
  expect_type(got, r.call(example));
}

TEST_P(PassesOverDerivatives, CompiledPerExampleVjpOfAnEmptyBatchIsEmpty) {
  const optable::OpRow& r = row_named(GetParam());
  optable::Gen gen;
  const std::vector<Tensor> example = r.sample(DType::Float64, gen);
  const Tensor y = r.call(example);
  if (!is_floating(y.dtype())) GTEST_SKIP() << "integer output";
  std::vector<Tensor> stacked;
  for (const Tensor& x : example) stacked.push_back(no_examples(x));
  for (size_t k = 0; k < example.size(); ++k) {
    if (example[k].dtype() != DType::Float64) continue;
    SCOPED_TRACE("input " + std::to_string(k));
    auto per_example = vjp_of_input(r, k);
    Tensor got;
    ASSERT_NO_THROW(got = compile(vmap(per_example))(stacked, no_examples(y)));
    expect_type(got, example[k]);
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, PassesOverOpTable, ::testing::ValuesIn(row_names(false)),
                         [](const auto& info) { return info.param; });
INSTANTIATE_TEST_SUITE_P(Ops, PassesOverDerivatives, ::testing::ValuesIn(row_names(true)),
                         [](const auto& info) { return info.param; });

// The cotangent of slices side by side is a sum of zero-padded slabs: it becomes one concatenate
// of the parts (no pad, no add), in any order of the sum; slabs that overlap, leave a gap or
// differ in two axes stay a sum. Results are bit-identical to eager (no -0.0 in these inputs).
TEST(Passes, SumOfAdjacentPaddedSlabsIsOneConcatenate) {
  const Tensor x = randn({5, 12}, 11);
  auto gates = [](const Tensor& v) {  // four gates of width 3, used differently
    const Tensor i = slice_axis(v, 1, 0, 3), f = slice_axis(v, 1, 3, 6);
    const Tensor g = slice_axis(v, 1, 6, 9), o = slice_axis(v, 1, 9, 12);
    return sum(sigmoid(i) * tanh(g) + f * f + exp(o));
  };
  auto g = grad(gates);
  const Graph opt = optimized(g, x);
  EXPECT_EQ(count(opt, "pad"), 0) << opt;
  EXPECT_EQ(count(opt, "concatenate"), 1) << opt;
  EXPECT_EQ(count(opt, "add"), 0) << opt;
  expect_equal(compile(g)(x), g(x));
  // Overlapping slabs ([0, 6) and [3, 9)) and a gap ([0, 3) and [6, 9)) keep their sum.
  auto overlap = [](const Tensor& v) {
    return sum(sin(slice_axis(v, 1, 0, 6)) + 0.0 * sum(v)) + sum(cos(slice_axis(v, 1, 3, 9)));
  };
  auto gap = [](const Tensor& v) {
    return sum(sin(slice_axis(v, 1, 0, 3))) + sum(cos(slice_axis(v, 1, 6, 9)));
  };
  auto keeps_its_sum = [&](auto h) {
    const Graph kept = optimized(h, x);
    EXPECT_EQ(count(kept, "concatenate"), 0) << kept;
    expect_close(compile(h)(x), h(x));
  };
  keeps_its_sum(grad(overlap));
  keeps_its_sum(grad(gap));
}

// A carry that accumulates the slabs one by one, (acc + pad(a)) + pad(b) ..., as a reverse scan's
// bias cotangent does: the slabs join into one concatenate added once, whichever side of each
// add they are on. Bit-identical to eager (no -0.0 in these inputs).
TEST(Passes, SlabsAddedOneByOneToAnotherValueAreOneConcatenate) {
  const Tensor acc = randn({5, 12}, 12), parts = randn({5, 12}, 13);
  auto accumulate = [](const Tensor& a, const Tensor& v) {
    Tensor total = a;
    for (int64_t k = 0; k < 4; ++k) {
      const Tensor slab =
          pad(exp(slice_axis(v, 1, 3 * k, 3 * k + 3)), {0, 3 * k}, {0, 9 - 3 * k}, 0.0);
      total = k % 2 ? total + slab : slab + total;
    }
    return total;
  };
  const Graph opt = optimized(accumulate, acc, parts);
  EXPECT_EQ(count(opt, "pad"), 0) << opt;
  EXPECT_EQ(count(opt, "concatenate"), 1) << opt;
  EXPECT_EQ(count(opt, "add"), 1) << opt;
  expect_equal(compile(accumulate)(acc, parts), accumulate(acc, parts));
}

TEST(Passes, NestedConcatenatesAlongOneAxisAreOne) {
  const Tensor a = randn({2, 3}, 1), b = randn({2, 4}, 2), c = randn({2, 5}, 3);
  auto f = [](const Tensor& x, const Tensor& y, const Tensor& z) {
    const Tensor inner = concatenate({y, exp(z)}, 1);
    return concatenate({x, concatenate({inner, x}, 1)}, 1);
  };
  const Graph opt = optimized(f, a, b, c);
  EXPECT_EQ(count(opt, "concatenate"), 1) << opt;
  expect_equal(compile(f)(a, b, c), f(a, b, c));
  // Along different axes they stay nested.
  auto g = [](const Tensor& x, const Tensor& y) {
    return concatenate({concatenate({x, y}, 1), concatenate({y, x}, 1)}, 0);
  };
  EXPECT_EQ(count(optimized(g, a, b), "concatenate"), 3);
  expect_equal(compile(g)(a, b), g(a, b));
}

// A large product with a captured weight is marked as having a finite factor, checked once at
// compile: the kernel then skips that factor's scan when the other is the identity (jacrev's
// pullback of the identity's rows). The values stay those of the product: the weight itself for
// the identity, a GEMM otherwise, and a weight holding an inf is not marked, so the identity's
// zeros still make its column NaN as IEEE does.
TEST(Passes, FiniteConstantFactorsAreCheckedOnceAtCompile) {
  const int64_t n = 160;
  const Tensor w = randn({n, n}, 37);
  std::vector<double> v = w.to_vector<double>();
  v[5 * n + 7] = INFINITY;
  const Tensor with_inf = cast(tensor(v, {n, n}), kFloat32);
  const Tensor not_identity = eye(n) + randn({n, n}, 38) * 0.01;
  for (const bool finite : {true, false}) {
    const Tensor weight = finite ? w : with_inf;
    auto left = [weight](const Tensor& e) { return matmul(e, weight); };
    auto right = [weight](const Tensor& e) { return matmul(weight, e); };
    const Graph gl = optimized(left, eye(n)), gr = optimized(right, eye(n));
    ASSERT_EQ(gl.nodes.size(), 1u) << gl;
    ASSERT_EQ(gr.nodes.size(), 1u) << gr;
    const std::string pl = gl.nodes[0].prim->params(), pr = gr.nodes[0].prim->params();
    EXPECT_EQ(pl.find("finite_rhs") != std::string::npos, finite) << pl;
    EXPECT_EQ(pr.find("finite_lhs") != std::string::npos, finite) << pr;
    for (const Tensor& e : {eye(n), not_identity}) {
      expect_equal(compile(left)(e), left(e));
      expect_equal(compile(right)(e), right(e));
    }
    if (finite) expect_equal(compile(left)(eye(n)), weight);
    if (!finite) EXPECT_TRUE(std::isnan(compile(left)(eye(n)).to_vector<double>()[0 * n + 7]));
  }
  // Below the kernel's threshold for the identity test (~128^3), nothing is marked.
  const Tensor small = randn({64, 64}, 39);
  const Graph g = optimized([small](const Tensor& e) { return matmul(e, small); }, eye(64));
  EXPECT_EQ(g.nodes[0].prim->params().find("finite"), std::string::npos) << g;
}

// x W^T with a constant W (a dot_general contracting W's dim 1, as autodiff writes it) reads a
// (K, N) copy of W made at compile where libxsmm runs the product (no copy per call; the same
// kernel, so the same bits as eager); a product for oneDNN keeps W as it is.
TEST(Passes, ConstantRhsReadTransposedIsStoredInRowOrderForLibxsmm) {
  for (const int64_t m : {100, 300}) {
    const bool xsmm = m == 100;
    const int64_t k = xsmm ? 32 : 256, n = xsmm ? 48 : 256;
    const Tensor w = randn({n, k}, 41), x = randn({m, k}, 42);
    auto f = [w](const Tensor& a) { return tanh(dot_general(a, w, DotDims{{1}, {1}, {}, {}})); };
    const Graph g = optimized(f, x);
    const Node* dot = nullptr;
    for (const Node& node : g.nodes)
      if (node.prim->name() == "dot_general") dot = &node;
    ASSERT_NE(dot, nullptr) << g;
    const std::string contracting = xsmm ? "rhs_contracting=(0,)" : "rhs_contracting=(1,)";
    EXPECT_NE(dot->prim->params().find(contracting), std::string::npos) << g;
    const Tensor* rhs = nullptr;
    for (const auto& [v, t] : g.constants)
      if (v == dot->inputs[1]) rhs = &t;
    ASSERT_NE(rhs, nullptr) << g;
    EXPECT_TRUE(rhs->is_contiguous());
    EXPECT_EQ(rhs->shape(), xsmm ? (Shape{k, n}) : (Shape{n, k}));
    const Tensor got = compile(f)(x);
    expect_equal(got, f(x));
    const Tensor want = tanh(matmul(cast(x, kFloat64), transpose(cast(w, kFloat64))));
    expect_close(got, cast(want, kFloat32), 1e-4);  // float32 sums of up to 256 products
  }
}
