// vmap semantics beyond the op table: the seed examples, trees, axes, broadcasting of size-1
// axes, nesting, explain, the fallback for user primitives, and every error case.
#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "lanes/lanes.h"

using namespace lanes;

namespace {

Tensor randn(const Shape& shape, uint64_t seed) { return random::normal(random::key(seed), shape); }

// The loop vmap replaces: f on each slice along axis 0 of every argument, stacked.
template <class F>
Tensor loop0(const F& f, const Tensor& a) {
  std::vector<Tensor> out;
  for (int64_t b = 0; b < a.shape(0); ++b) out.push_back(f(squeeze(slice_axis(a, 0, b, b + 1), 0)));
  return stack(out, 0);
}
template <class F>
Tensor loop0(const F& f, const Tensor& a, const Tensor& c) {
  std::vector<Tensor> out;
  for (int64_t b = 0; b < a.shape(0); ++b)
    out.push_back(
        f(squeeze(slice_axis(a, 0, b, b + 1), 0), squeeze(slice_axis(c, 0, b, b + 1), 0)));
  return stack(out, 0);
}

void expect_close(const Tensor& got, const Tensor& want, double tol = 1e-5) {
  ASSERT_EQ(got.shape(), want.shape());
  ASSERT_EQ(got.dtype(), want.dtype());
  const auto g = got.to_vector<double>(), w = want.to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) ASSERT_NEAR(g[i], w[i], tol * (1 + std::abs(w[i]))) << i;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no lanes::Error)";
}

}  // namespace

// ---- the seed examples ------------------------------------------------------------------------

TEST(VmapSeed, OuterProductsOfMatrices) {
  const Tensor a = ones({100, 32, 32});
  const Tensor c = vmap([](const Tensor& m) { return tensordot(m, m, 0); })(a);
  EXPECT_EQ(c.shape(), (Shape{100, 32, 32, 32, 32}));
  EXPECT_EQ(sum(c).item<double>(), 100.0 * 32 * 32 * 32 * 32);
  const Tensor r = randn({5, 3, 4}, 1);
  auto f = [](const Tensor& m) { return tensordot(m, m, 0); };
  expect_close(vmap(f)(r), loop0(f, r));
}

TEST(VmapSeed, SqrtOfUint8Images) {
  std::vector<uint8_t> pixels(4 * 8 * 8);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 7 % 256);
  const Tensor images = tensor(pixels, {4, 8, 8});
  auto f = [](const Tensor& img) { return sqrt(img); };
  const Tensor got = vmap(f)(images);
  EXPECT_EQ(got.dtype(), kFloat32);
  expect_close(got, loop0(f, images));
}

TEST(VmapSeed, BatchedDot) {
  const Tensor a = randn({10, 32}, 2), b = randn({10, 32}, 3);
  auto f = [](const Tensor& x, const Tensor& y) { return dot(x, y); };
  const Tensor got = vmap(f)(a, b);
  EXPECT_EQ(got.shape(), (Shape{10}));
  expect_close(got, loop0(f, a, b));
}

// ---- axes, trees, broadcasting, nesting -------------------------------------------------------

TEST(Vmap, InAxesPerArgumentAndNone) {
  const Tensor x = randn({4, 6}, 4), w = randn({4, 5}, 5);
  // x mapped along axis 1 (6 examples of shape (4,)), w shared.
  const Tensor got =
      vmap([](const Tensor& v, const Tensor& m) { return matmul(v, m); }, in_axes(1, none))(x, w);
  EXPECT_EQ(got.shape(), (Shape{6, 5}));
  expect_close(got, matmul(transpose(x), w));
}

TEST(Vmap, OutAxesAndNegativeAxes) {
  const Tensor x = randn({3, 4, 5}, 6);
  auto f = [](const Tensor& m) { return exp(m); };  // per-example (3, 5) when mapping axis -2
  const Tensor got = vmap(f, -2, -1)(x);
  EXPECT_EQ(got.shape(), (Shape{3, 5, 4}));
  expect_close(got, moveaxis(exp(x), 1, 2));
}

struct Params {
  Tensor w, b;
};
LANES_TREE(Params, w, b)

TEST(Vmap, TreesOfArgumentsAndResults) {
  const Tensor x = randn({5, 3}, 7);
  const Params p{randn({5, 3, 2}, 8), randn({2}, 9)};
  // Per-leaf axes: w mapped (an ensemble of weights), b shared.
  auto f = [](const Tensor& xi, const Params& pi) {
    const Tensor y = matmul(xi, pi.w) + pi.b;
    return std::make_tuple(y, std::map<std::string, Tensor>{{"sum", sum(y)}});
  };
  auto [y, m] = vmap(f, in_axes(0, {0, none}), {1, {0}})(x, p);
  EXPECT_EQ(y.shape(), (Shape{2, 5}));
  EXPECT_EQ(m.at("sum").shape(), (Shape{5}));
  for (int64_t i = 0; i < 5; ++i) {
    const Tensor xi = squeeze(slice_axis(x, 0, i, i + 1), 0);
    const Tensor wi = squeeze(slice_axis(p.w, 0, i, i + 1), 0);
    const Tensor want = matmul(xi, wi) + p.b;
    expect_close(squeeze(slice_axis(y, 1, i, i + 1), 1), want);
    expect_close(squeeze(slice_axis(m.at("sum"), 0, i, i + 1), 0), sum(want));
  }
  // Vectors and pairs as arguments.
  const std::vector<Tensor> xs{x, x * 2.0};
  const Tensor s = vmap([](const std::vector<Tensor>& v) { return v[0] + v[1]; })(xs);
  expect_close(s, x * 3.0);
  const auto pr = std::make_pair(x, x);
  expect_close(vmap([](const std::pair<Tensor, Tensor>& q) { return q.first * q.second; })(pr),
               x * x);
}

TEST(Vmap, SizeOneAxisBroadcasts) {
  const Tensor x = randn({1, 4}, 10), y = randn({6, 4}, 11);
  const Tensor got = vmap([](const Tensor& a, const Tensor& b) { return a * b; })(x, y);
  expect_close(got, x * y);
}

TEST(Vmap, AxisSizeWhenNothingIsMapped) {
  VmapOptions options;
  options.axis_size = 3;
  const Tensor c = randn({2}, 12);
  const Tensor got = vmap([](const Tensor& v) { return v * 2.0; }, none, 0, options)(c);
  EXPECT_EQ(got.shape(), (Shape{3, 2}));
  expect_close(got, broadcast_to(c * 2.0, {3, 2}));
}

TEST(Vmap, NestedWithDifferentAxes) {
  const Tensor x = randn({3, 4, 5}, 13);
  auto f = [](const Tensor& v) { return sum(tanh(v)); };
  // Inner maps axis 1 of (4, 5) i.e. the 5; outer maps axis 0 (the 3).
  const Tensor got = vmap(vmap(f, 1), 0)(x);
  EXPECT_EQ(got.shape(), (Shape{3, 5}));
  expect_close(got, sum(tanh(x), 1));
  // Three levels.
  const Tensor got3 = vmap(vmap(vmap([](const Tensor& s) { return s * s; })))(x);
  expect_close(got3, x * x);
}

TEST(Vmap, CapturedTensorsAreConstantsAndStayUnbatched) {
  const Tensor w = randn({8, 3}, 14);
  const Tensor x = randn({16, 8}, 15);
  auto f = [&](const Tensor& v) { return matmul(v, w); };
  expect_close(vmap(f)(x), matmul(x, w));
  const Explanation e = explain(vmap(f), x);
  EXPECT_TRUE(e.broadcasts.empty()) << e;  // W is never broadcast to the batch
  EXPECT_EQ(e.materialized_bytes(), 0) << e;
  int dots = 0;
  for (const Node& n : e.batched.nodes) dots += n.prim->name() == "dot_general";
  EXPECT_EQ(dots, 1) << e;  // one GEMM with the batch folded into M
}

TEST(Vmap, ElementwiseWithUnbatchedOperandCopiesNothing) {
  const Tensor b = randn({8}, 16), x = randn({32, 8}, 17);
  auto f = [&](const Tensor& v) { return v * b + 1.0; };
  expect_close(vmap(f)(x), x * b + 1.0);
  const Explanation e = explain(vmap(f), x);
  EXPECT_EQ(e.materialized_bytes(), 0) << e;
  EXPECT_TRUE(e.fallbacks.empty()) << e;
}

TEST(Vmap, StackedWeightsBesideASharedInputAreABatchedProduct) {
  // An ensemble layer: x shared, W_b mapped with its model axis outside K. The batch rule makes
  // it a product batched over the models (a stride-0 view of x), result models first; a mapped
  // vector (W @ t_b) still folds into one product without batch dims.
  const Tensor w = randn({4, 24, 16}, 60), x = randn({5, 24}, 61), t = randn({4, 24}, 62);
  auto layer = [](const Tensor& wi, const Tensor& xi) { return matmul(xi, wi); };
  const auto batched = vmap(layer, in_axes(0, none));
  std::ostringstream graph;
  graph << make_graph(batched)(w, x);
  EXPECT_NE(graph.str().find("lhs_batch=(0,), rhs_batch=(0,)"), std::string::npos) << graph.str();
  std::vector<Tensor> per_model;
  for (int64_t b = 0; b < 4; ++b)
    per_model.push_back(matmul(x, squeeze(slice_axis(w, 0, b, b + 1), 0)));
  expect_close(batched(w, x), stack(per_model, 0));
  std::ostringstream folded;
  folded << make_graph(vmap(layer, in_axes(0, none)))(t, x);
  EXPECT_NE(folded.str().find("lhs_batch=(), rhs_batch=()"), std::string::npos) << folded.str();
  expect_close(vmap(layer, in_axes(0, none))(t, x),
               loop0([&](const Tensor& ti) { return matmul(x, ti); }, t));
}

TEST(Vmap, MakeGraphPrintsLikeAJaxpr) {
  const Graph g = make_graph([](const Tensor& v) { return exp(v) * 2.0; })(zeros({3}));
  std::ostringstream os;
  os << g;
  EXPECT_NE(os.str().find("exp"), std::string::npos) << os.str();
  EXPECT_NE(os.str().find("a:f32[3]"), std::string::npos) << os.str();
  EXPECT_EQ(g.inputs.size(), 1u);
  EXPECT_EQ(g.outputs.size(), 1u);
}

// ---- the fallback, through user primitives ----------------------------------------------------

namespace {
// A user primitive: cumulative sum along the last axis, float32 (eval only).
class RowCumsum : public Primitive {
 public:
  std::string name() const override { return "row_cumsum"; }
  std::vector<TensorType> infer(const std::vector<TensorType>& in) const override {
    check(in.size() == 1 && in[0].dtype == kFloat32 && !in[0].shape.empty(),
          "row_cumsum: expects one float32 tensor of rank >= 1");
    return {in[0]};
  }
  std::vector<Tensor> eval(const std::vector<Tensor>& in) const override {
    const Tensor x = in[0].contiguous();
    Tensor out = Tensor::empty(x.shape(), kFloat32);
    const int64_t n = x.shape().back();
    const float* src = x.data<float>();
    float* dst = out.mutable_data<float>();
    for (int64_t r = 0; r < x.numel() / std::max<int64_t>(n, 1); ++r) {
      float acc = 0;
      for (int64_t i = 0; i < n; ++i) dst[r * n + i] = acc += src[r * n + i];
    }
    return {out};
  }
};
// The same with a batching rule: rows are independent, so the batch may be any leading dim.
class RowCumsumWithRule : public RowCumsum {
 public:
  std::string name() const override { return "row_cumsum_with_rule"; }
  std::vector<Batched> batch(const std::vector<Batched>& in, int64_t) const override {
    const Tensor x = moveaxis(in[0].value, in[0].dim, 0);
    return {{lanes::bind(shared_from_this(), {x})[0], 0}};
  }
};
Tensor row_cumsum(const Tensor& x) { return bind1(std::make_shared<RowCumsum>(), {x}); }
Tensor row_cumsum_ruled(const Tensor& x) {
  return bind1(std::make_shared<RowCumsumWithRule>(), {x});
}
}  // namespace

TEST(VmapFallback, UserPrimitiveWithoutRuleRunsPerExample) {
  const Tensor x = randn({6, 5}, 18);
  auto f = [](const Tensor& v) { return row_cumsum(v * 2.0); };
  expect_close(vmap(f)(x), loop0(f, x));
  const Explanation e = explain(vmap(f), x);
  ASSERT_EQ(e.fallbacks.size(), 1u) << e;
  EXPECT_EQ(e.fallbacks[0], "row_cumsum");
  // Nested: the fallback of the fallback still computes the right thing.
  const Tensor x3 = randn({2, 3, 4}, 19);
  const Tensor got = vmap(vmap(f))(x3);
  for (int64_t i = 0; i < 2; ++i)
    expect_close(squeeze(slice_axis(got, 0, i, i + 1), 0),
                 loop0(f, squeeze(slice_axis(x3, 0, i, i + 1), 0)));
}

TEST(VmapFallback, ErrorModeThrowsNamingThePrimitive) {
  VmapOptions options;
  options.fallback = Fallback::Error;
  const Tensor x = randn({6, 5}, 20);
  const std::string msg = error_of([&] { vmap(row_cumsum, 0, 0, options)(x); });
  EXPECT_NE(msg.find("row_cumsum"), std::string::npos) << msg;
  EXPECT_NE(msg.find("no batching rule"), std::string::npos) << msg;
}

TEST(VmapFallback, UserPrimitiveWithRuleUsesIt) {
  VmapOptions options;
  options.fallback = Fallback::Error;
  const Tensor x = randn({5, 6}, 21);
  const Tensor got = vmap(row_cumsum_ruled, 1, 1, options)(x);  // maps the last axis
  expect_close(got, transpose(loop0(row_cumsum, transpose(x))));
  EXPECT_TRUE(explain(vmap(row_cumsum_ruled, 1), x).fallbacks.empty());
}

// ---- errors -----------------------------------------------------------------------------------

TEST(VmapErrors, InconsistentSizesNameEveryArgument) {
  const Tensor a = zeros({3, 2}), b = zeros({4, 2});
  const std::string msg =
      error_of([&] { vmap([](const Tensor& x, const Tensor& y) { return x + y; })(a, b); });
  EXPECT_NE(msg.find("inconsistent sizes"), std::string::npos) << msg;
  EXPECT_NE(msg.find("argument 0 of shape (3, 2) has size 3 at axis 0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("argument 1 of shape (4, 2) has size 4 at axis 0"), std::string::npos) << msg;
}

TEST(VmapErrors, AxisSizeThatDisagreesWithTheArguments) {
  VmapOptions options;
  options.axis_size = 5;
  const std::string msg = error_of([&] {
    vmap([](const Tensor& x) { return x; }, 0, 0, options)(zeros({3, 2}));
  });
  EXPECT_NE(msg.find("options.axis_size is 5"), std::string::npos) << msg;
  EXPECT_NE(msg.find("argument 0 of shape (3, 2) has size 3 at axis 0"), std::string::npos) << msg;
}

TEST(VmapErrors, AxisOutOfRange) {
  const std::string msg = error_of([] {
    vmap([](const Tensor& x) { return x; }, 2)(zeros({3, 2}));
  });
  EXPECT_NE(msg.find("in_axes 2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("argument 0 of shape (3, 2)"), std::string::npos) << msg;
}

TEST(VmapErrors, InAxesThatDoNotMatchTheArguments) {
  auto f = [](const Tensor& x, const Tensor& y) { return x + y; };
  std::string msg = error_of([&] { vmap(f, in_axes(0, 0, 0))(zeros({2}), zeros({2})); });
  EXPECT_NE(msg.find("in_axes has 3 entries"), std::string::npos) << msg;
  msg = error_of([&] { vmap(f, in_axes({0, 1}, 0))(zeros({2}), zeros({2})); });
  EXPECT_NE(msg.find("argument 0"), std::string::npos) << msg;
  auto g = [](const std::pair<Tensor, Tensor>& p) { return p.first; };
  msg = error_of([&] { vmap(g, in_axes({0, 0, 0}))(std::make_pair(zeros({2}), zeros({2}))); });
  EXPECT_NE(msg.find("has 3 entries but the value has 2 children"), std::string::npos) << msg;
}

TEST(VmapErrors, BatchedOutputWithOutAxesNone) {
  const std::string msg = error_of([] {
    vmap([](const Tensor& x) { return x * 2.0; }, 0, none)(zeros({3, 2}));
  });
  EXPECT_NE(msg.find("out_axes is none"), std::string::npos) << msg;
  // An output that does not depend on the mapped input may be unmapped.
  const Tensor c = ones({2});
  const Tensor got = vmap([&](const Tensor&) { return c; }, 0, none)(zeros({3, 2}));
  EXPECT_EQ(got.shape(), (Shape{2}));
}

TEST(VmapErrors, NothingMappedWithoutAxisSize) {
  const std::string msg =
      error_of([] { vmap([](const Tensor& x) { return x; }, none)(zeros({2})); });
  EXPECT_NE(msg.find("axis_size"), std::string::npos) << msg;
}

TEST(VmapErrors, ReadingValuesInsideVmapAndEscapedTracers) {
  std::string msg =
      error_of([] { vmap([](const Tensor& x) { return x * x.item<float>(); })(zeros({3})); });
  EXPECT_NE(msg.find("traced tensor"), std::string::npos) << msg;
  Tensor leaked;
  vmap([&](const Tensor& x) {
    leaked = x;
    return x;
  })(zeros({3}));
  msg = error_of([&] { exp(leaked); });
  EXPECT_NE(msg.find("escaped"), std::string::npos) << msg;
  // State is intact afterwards.
  expect_close(vmap([](const Tensor& x) { return x + 1.0; })(zeros({3})), ones({3}));
}

// in_axes for any number of arguments: eight here, with a per-leaf spec among them.
TEST(VmapAxes, InAxesTakesAnyNumberOfArguments) {
  using lanes::Tensor;
  auto f = [](const Tensor& a, const Tensor& b, const Tensor& c, const Tensor& d, const Tensor& e,
              const std::pair<Tensor, Tensor>& p, const Tensor& g,
              const Tensor& h) { return a + b + c + d + e + p.first + p.second + g + h; };
  const Tensor x = lanes::tensor(std::vector<float>{1, 2, 3}, {3});
  const Tensor row = lanes::tensor(std::vector<float>{10, 20, 30}, {1, 3});
  const Tensor one = lanes::scalar(100.0f);
  const Tensor y = lanes::vmap(
      f, lanes::in_axes(0, 0, lanes::none, 0, 0, lanes::AxisSpec{0, lanes::none}, 1, 0))(
      x, x, one, x, x, std::make_pair(x, one), row, x);
  // Example i: 6 x[i] + 2 * 100 + row[0, i] (mapped at axis 1).
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{216, 232, 248}));
}

// AxisSpec::deferred: out_axes decided once f is traced (the Python bindings' pytrees).
TEST(Vmap, DeferredOutAxesAreDecidedAfterTracing) {
  using Leaves = std::vector<Tensor>;
  std::function<Leaves(const Leaves&)> f = [](const Leaves& in) {
    return Leaves{in[0] * 2.0f, sum(in[0]), in[1]};
  };
  size_t outputs_seen = 0;
  const AxisSpec out = AxisSpec::deferred([&] {
    outputs_seen = 3;  // what a binding reads from the trace it just made
    return AxisSpec(std::vector<AxisSpec>{1, 0, none});
  });
  const Tensor xs = reshape(arange(6), {3, 2}), w = tensor(std::vector<float>{5, 7});
  const Leaves r = vmap(f, in_axes(AxisSpec(std::vector<AxisSpec>{0, none})), out)(Leaves{xs, w});
  EXPECT_EQ(outputs_seen, 3u);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].shape(), (Shape{2, 3}));  // batch axis placed at 1
  EXPECT_EQ(r[0].to_vector<float>(), (std::vector<float>{0, 4, 8, 2, 6, 10}));
  EXPECT_EQ(r[1].to_vector<float>(), (std::vector<float>{1, 5, 9}));
  EXPECT_EQ(r[2].to_vector<float>(), (std::vector<float>{5, 7}));  // unmapped
}
