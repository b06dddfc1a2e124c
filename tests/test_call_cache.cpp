// Transforms under an enclosing trace (grad or jacrev inside vmap) record one call node whose
// body is cached by the traced graph of f: the body must be reused when f is the same function,
// rebuilt when what f captures changes, and inlined by every transform and pass that meets it.
// References are closed-form derivatives of f(x) = sum(tanh(W x) * s) in float64 loops.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "expect_near.h"
#include "lanes/lanes.h"

using namespace lanes;

namespace {
Tensor randn(const Shape& shape, uint64_t seed) { return random::normal(random::key(seed), shape); }

constexpr int64_t kN = 5;

// f(x) = sum_i s tanh(z_i), z = W x; grad_j = sum_i s (1 - t_i^2) W_ij;
// hessian_jk = sum_i s (-2 t_i (1 - t_i^2)) W_ij W_ik.
struct Reference {
  std::vector<double> w;
  double s;
  std::vector<double> tanh_z(const std::vector<double>& x) const {
    std::vector<double> t(kN);
    for (int64_t i = 0; i < kN; ++i) {
      double z = 0;
      for (int64_t j = 0; j < kN; ++j) z += w[i * kN + j] * x[j];
      t[i] = std::tanh(z);
    }
    return t;
  }
  std::vector<double> grad(const std::vector<double>& x) const {
    const auto t = tanh_z(x);
    std::vector<double> g(kN, 0.0);
    for (int64_t i = 0; i < kN; ++i)
      for (int64_t j = 0; j < kN; ++j) g[j] += s * (1 - t[i] * t[i]) * w[i * kN + j];
    return g;
  }
  // Of the vector s tanh(W x): d_i / dx_j = s (1 - t_i^2) W_ij.
  std::vector<double> jacobian(const std::vector<double>& x) const {
    const auto t = tanh_z(x);
    std::vector<double> jac(kN * kN);
    for (int64_t i = 0; i < kN; ++i)
      for (int64_t j = 0; j < kN; ++j) jac[i * kN + j] = s * (1 - t[i] * t[i]) * w[i * kN + j];
    return jac;
  }
  std::vector<double> hessian(const std::vector<double>& x) const {
    const auto t = tanh_z(x);
    std::vector<double> h(kN * kN, 0.0);
    for (int64_t i = 0; i < kN; ++i)
      for (int64_t j = 0; j < kN; ++j)
        for (int64_t k = 0; k < kN; ++k)
          h[j * kN + k] += s * -2 * t[i] * (1 - t[i] * t[i]) * w[i * kN + j] * w[i * kN + k];
    return h;
  }
};

// The reference applied to each row of xs (kN wide), concatenated.
template <class R>
std::vector<double> per_row(const Tensor& xs, R rule) {
  const auto all = xs.to_vector<double>();
  std::vector<double> out;
  for (size_t r = 0; r < all.size() / kN; ++r) {
    const auto v = rule(std::vector<double>(all.begin() + r * kN, all.begin() + (r + 1) * kN));
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

// What grad(f) records when called on a traced input.
template <class G>
Graph traced_call(const G& g) {
  detail::TraceScope scope;
  const Tensor x = scope.input({{kN}, kFloat32});
  return scope.finish({g(x)});
}
}  // namespace

bool is_one_call(const Graph& g) {
  return g.nodes.size() == 1 && g.nodes[0].prim->name() == "call";
}

TEST(CallCache, GradUnderATraceBecomesOneCallOfASharedBody) {
  const Tensor w = randn({kN, kN}, 1);
  double s = 1.5;
  auto f = [&](const Tensor& x) { return sum(tanh(matmul(w, x)) * s); };
  const Tensor x = randn({kN}, 2);
  // The first sighting records the derivative in place; the second builds the body, which a
  // grad of an equal function then shares, whichever object it is.
  const Graph first = traced_call(grad(f));
  EXPECT_FALSE(is_one_call(first));
  const Graph second = traced_call(grad(f));
  ASSERT_TRUE(is_one_call(second));
  const Graph third = traced_call(grad(f));
  ASSERT_TRUE(is_one_call(third));
  EXPECT_EQ(second.nodes[0].prim->params(), third.nodes[0].prim->params());
  const auto want = Reference{w.to_vector<double>(), s}.grad(x.to_vector<double>());
  expect_near(eval_graph(first, {x})[0].to_vector<double>(), want);
  expect_near(eval_graph(second, {x})[0].to_vector<double>(), want);
  // Another captured scalar (keyed by value): another key, so in place again, then a new body.
  s = 0.5;
  EXPECT_FALSE(is_one_call(traced_call(grad(f))));
  const Graph scaled = traced_call(grad(f));
  ASSERT_TRUE(is_one_call(scaled));
  EXPECT_NE(scaled.nodes[0].prim->params(), second.nodes[0].prim->params());
  expect_near(eval_graph(scaled, {x})[0].to_vector<double>(),
              Reference{w.to_vector<double>(), s}.grad(x.to_vector<double>()));
  // make_graph shows the operations, not the call.
  std::ostringstream printed;
  printed << make_graph([&](const Tensor& v) { return grad(f)(v) * 2.0; })(x);
  EXPECT_EQ(printed.str().find("call"), std::string::npos) << printed.str();
  EXPECT_NE(printed.str().find("tanh"), std::string::npos) << printed.str();
}

TEST(CallCache, TransformsBuiltInsideTheMappedFunctionHitTheVmapCache) {
  const Tensor w = randn({kN, kN}, 80);
  auto f = [&](const Tensor& x) { return sum(tanh(matmul(w, x)) * 3.0); };
  const Reference ref{w.to_vector<double>(), 3.0};
  const Tensor xs = randn({6, kN}, 81);
  const auto want = per_row(xs, [&](const std::vector<double>& x) { return ref.grad(x); });
  auto inside = vmap([&](const Tensor& x) { return grad(f)(x); });  // a new grad every trace
  auto held = vmap(grad(f));
  for (int call = 0; call < 5; ++call) {
    expect_near(inside(xs).to_vector<double>(), want);
    expect_near(held(xs).to_vector<double>(), want);
  }
  EXPECT_EQ(inside.cache_size(), 1u);
  EXPECT_EQ(held.cache_size(), 1u);
}

TEST(CallCache, LargeCapturesAreKeyedByAddressAndPinned) {
  // A capture over 64 KiB is keyed by its storage's address, which a body pins: a tensor made
  // anew every call never matches an old body, even where the allocator hands an address out
  // again, and nothing old is kept alive (a key is built into a body only when seen twice).
  const Tensor w = randn({kN, kN}, 70);
  Tensor big = randn({kN, 4096}, 71);  // 80 KiB, used with the traced x: a constant of f's graph
  auto f = [&](const Tensor& x) { return sum(tanh(matmul(w, x))) + sum(matmul(x, big)); };
  auto batched = vmap(grad(f));
  const Tensor xs = randn({3, kN}, 72);
  const Reference ref{w.to_vector<double>(), 1.0};
  for (int call = 0; call < 12; ++call) {
    if (call >= 4) big = randn({kN, 4096}, 73 + call);  // anew every call from the fifth on
    // d/dx_j of sum(x @ big) is the sum of row j of big.
    const auto b = big.to_vector<double>();
    auto with_rows = [&](const std::vector<double>& x) {
      auto g = ref.grad(x);
      for (int64_t j = 0; j < kN; ++j)
        for (int64_t k = 0; k < 4096; ++k) g[j] += b[j * 4096 + k];
      return g;
    };
    expect_near(batched(xs).to_vector<double>(), per_row(xs, with_rows));
  }
  EXPECT_EQ(batched.cache_size(), 1u);  // the first four calls' graph; the others were new
}

TEST(CallCache, PerExampleGradientsFollowNewCaptures) {
  Tensor w = randn({kN, kN}, 10);
  double s = 1.0;
  auto f = [&](const Tensor& x) { return sum(tanh(matmul(w, x)) * s); };
  auto batched = vmap(grad(f));
  const Tensor xs = randn({7, kN}, 11);
  for (int call = 0; call < 8; ++call) {
    if (call == 3) s = -2.0;
    if (call == 5) w = randn({kN, kN}, 12);
    const Reference ref{w.to_vector<double>(), s};
    expect_near(batched(xs).to_vector<double>(),
                per_row(xs, [&](const std::vector<double>& x) { return ref.grad(x); }));
  }
  // grad with respect to one of several arguments, the others mapped or shared.
  auto loss = [&](const Tensor& v, const Tensor& x) { return sum(tanh(matmul(w, x + v)) * s); };
  const Tensor v = randn({kN}, 13);
  auto by_x = vmap(grad(loss, 1), in_axes(none, 0));
  const Reference ref{w.to_vector<double>(), s};
  const Tensor shifted = xs + v;
  for (int call = 0; call < 3; ++call)
    expect_near(by_x(v, xs).to_vector<double>(),
                per_row(shifted, [&](const std::vector<double>& x) { return ref.grad(x); }));
}

TEST(CallCache, NestedTransformsInlineTheirCalls) {
  const Tensor w = randn({kN, kN}, 20);
  const double s = 0.75;
  auto f = [&](const Tensor& x) { return sum(tanh(matmul(w, x)) * s); };
  const Reference ref{w.to_vector<double>(), s};
  const Tensor xs = randn({4, kN}, 21);
  auto hessians = [&](const std::vector<double>& x) { return ref.hessian(x); };
  // jacrev inside jacfwd inside vmap: calls nested in the bodies of calls.
  auto per_example_hessian = vmap(hessian(f));
  for (int call = 0; call < 3; ++call)
    expect_near(per_example_hessian(xs).to_vector<double>(), per_row(xs, hessians));
  // The passes of compile inline the call before they optimize.
  auto compiled = compile(vmap(grad(f)));
  for (int call = 0; call < 2; ++call)
    expect_near(compiled(xs).to_vector<double>(),
                per_row(xs, [&](const std::vector<double>& x) { return ref.grad(x); }));
  // Reverse mode through a call: d/dx sum(grad f(x)) is the row sums of the Hessian.
  auto sum_of_grads = [&](const Tensor& x) { return sum(grad(f)(x)); };
  const Tensor x = randn({kN}, 22);
  const auto h = ref.hessian(x.to_vector<double>());
  std::vector<double> want(kN, 0.0);
  for (int64_t j = 0; j < kN; ++j)
    for (int64_t k = 0; k < kN; ++k) want[k] += h[j * kN + k];
  for (int call = 0; call < 2; ++call) expect_near(grad(sum_of_grads)(x).to_vector<double>(), want);
  // Forward mode through one: the Hessian-vector product.
  const Tensor d = randn({kN}, 23);
  const auto dv = d.to_vector<double>();
  std::vector<double> hvp(kN, 0.0);
  for (int64_t j = 0; j < kN; ++j)
    for (int64_t k = 0; k < kN; ++k) hvp[j] += h[j * kN + k] * dv[k];
  for (int call = 0; call < 2; ++call)
    expect_near(jvp(grad(f), std::tuple{x}, std::tuple{d}).second.to_vector<double>(), hvp);
}

TEST(CallCache, JacobiansFollowNewPointsAndCaptures) {
  Tensor w = randn({kN, kN}, 40);
  double s = 2.0;
  auto f = [&](const Tensor& x) { return tanh(matmul(w, x)) * s; };
  auto g = [&](const Tensor& v, const Tensor& x) { return tanh(matmul(w, x + v)) * s; };
  auto rev = jacrev(f);
  auto fwd = jacfwd(f);
  auto rev_of_x = jacrev(g, 1);
  auto per_example = vmap(jacrev(f));
  const Tensor v = randn({kN}, 41);
  for (int call = 0; call < 6; ++call) {
    if (call == 4) w = randn({kN, kN}, 42);
    if (call == 5) s = -1.0;
    const Tensor x = randn({kN}, 43 + call % 2);
    const Reference ref{w.to_vector<double>(), s};
    const auto want = ref.jacobian(x.to_vector<double>());
    expect_near(rev(x).to_vector<double>(), want);
    expect_near(fwd(x).to_vector<double>(), want);
    expect_near(rev_of_x(v, x - v).to_vector<double>(), want);
    const Tensor xs = randn({3, kN}, 50 + call);
    expect_near(per_example(xs).to_vector<double>(),
                per_row(xs, [&](const std::vector<double>& p) { return ref.jacobian(p); }));
  }
}

TEST(CallCache, JacobiansAtNewPointsReuseTheirBatchedGraph) {
  const Tensor w = randn({kN, kN}, 60);
  auto f = [&](const Tensor& x) { return tanh(matmul(w, x)) * 0.5; };
  const Reference ref{w.to_vector<double>(), 0.5};
  auto rev = jacrev(f);
  auto fwd = jacfwd(f);
  for (int call = 0; call < 5; ++call) {
    const Tensor x = randn({kN}, 61 + call);  // a new point every call
    const auto want = ref.jacobian(x.to_vector<double>());
    expect_near(rev(x).to_vector<double>(), want);
    expect_near(fwd(x).to_vector<double>(), want);
  }
  // The point is an argument of the batched graph, not a constant of it: one graph each.
  EXPECT_EQ(rev.cache.size(), 1u);
  EXPECT_EQ(fwd.cache.size(), 1u);
}

// A Jacobian's batched graph takes its identity basis as a constant, so the passes fold a
// captured W @ I to W when it is built (before, a kernel found the identity on every call).
// Either way the fold must keep IEEE semantics: with an inf in W, the products with the
// identity's zeros are NaN, as in the references: forward mode's column j is sum over k of
// W_ik I_kj (row 3 is NaN), reverse mode's row i is sum over k of I_ik W_kj (column 7 is NaN),
// as jax's jacfwd and jacrev give.
TEST(CallCache, JacobiansFoldTheirBasisWithoutChangingInfOrNan) {
  const int64_t n = 160;  // W @ I large enough for the kernels' identity shortcut
  std::vector<float> values = randn({n, n}, 70).to_vector<float>();
  values[3 * n + 7] = INFINITY;
  const Tensor w = tensor(values, {n, n});
  auto f = [&](const Tensor& x) { return matmul(w, x) * 2.0; };
  auto fwd = jacfwd(f);
  auto rev = jacrev(f);
  for (int call = 0; call < 4; ++call) {  // the batched graph is built on the second call
    const Tensor x = randn({n}, 71 + call);
    const auto got_fwd = fwd(x).to_vector<double>(), got_rev = rev(x).to_vector<double>();
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double want_fwd = 0, want_rev = 0;
        for (int64_t k = 0; k < n; ++k) {
          want_fwd += double(values[i * n + k]) * (k == j ? 2.0 : 0.0);
          want_rev += (i == k ? 2.0 : 0.0) * double(values[k * n + j]);
        }
        for (auto [got, want] :
             {std::pair{got_fwd[i * n + j], want_fwd}, std::pair{got_rev[i * n + j], want_rev}}) {
          if (!std::isfinite(want))
            ASSERT_TRUE(std::isnan(want) ? std::isnan(got) : got == want)
                << i << "," << j << " call " << call << ": " << got << " for " << want;
          else
            ASSERT_NEAR(got, want, 1e-5 * (1 + std::abs(want)))
                << i << "," << j << " call " << call;
        }
      }
  }
}

// jvp under a trace is one call, as vjp's pullback is; vmap of it over primals, over tangents
// or both follows new captures. Reference: the tangent of s tanh(W x) along v is J(x) v.
TEST(CallCache, JvpUnderATraceIsOneCallAndFollowsCaptures) {
  Tensor w = randn({kN, kN}, 80);
  double s = 1.5;
  auto f = [&](const Tensor& x) { return tanh(matmul(w, x)) * s; };
  auto tangent = [&](const Tensor& x, const Tensor& v) {
    return jvp(f, std::tuple{x}, std::tuple{v}).second;
  };
  auto along_ones = [&](const Tensor& x) { return tangent(x, ones({kN})); };
  traced_call(along_ones);  // a first sighting runs the rules in place; the second builds the body
  const Graph traced = traced_call(along_ones);
  EXPECT_TRUE(is_one_call(traced)) << traced;
  auto both = vmap(tangent);
  auto over_x = vmap(tangent, in_axes(0, none));
  auto over_v = vmap(tangent, in_axes(none, 0));
  for (int call = 0; call < 6; ++call) {
    if (call == 4) w = randn({kN, kN}, 81);
    if (call == 5) s = -0.5;
    const Reference ref{w.to_vector<double>(), s};
    auto jv = [&](const std::vector<double>& x, const std::vector<double>& v) {
      const auto jac = ref.jacobian(x);
      std::vector<double> out(kN, 0.0);
      for (int64_t i = 0; i < kN; ++i)
        for (int64_t j = 0; j < kN; ++j) out[i] += jac[i * kN + j] * v[j];
      return out;
    };
    const Tensor xs = randn({3, kN}, 82 + call), vs = randn({3, kN}, 90 + call);
    const Tensor x = randn({kN}, 98 + call), v = randn({kN}, 99 + call);
    const auto xs_d = xs.to_vector<double>(), vs_d = vs.to_vector<double>();
    std::vector<double> want_both, want_x, want_v;
    for (int64_t b = 0; b < 3; ++b) {
      const std::vector<double> xb(xs_d.begin() + b * kN, xs_d.begin() + (b + 1) * kN);
      const std::vector<double> vb(vs_d.begin() + b * kN, vs_d.begin() + (b + 1) * kN);
      for (double y : jv(xb, vb)) want_both.push_back(y);
      for (double y : jv(xb, v.to_vector<double>())) want_x.push_back(y);
      for (double y : jv(x.to_vector<double>(), vb)) want_v.push_back(y);
    }
    expect_near(both(xs, vs).to_vector<double>(), want_both);
    expect_near(over_x(xs, v).to_vector<double>(), want_x);
    expect_near(over_v(x, vs).to_vector<double>(), want_v);
  }
}

TEST(CallCache, PullbacksUnderVmapAreOneCall) {
  const Tensor w = randn({kN, kN}, 100);
  double s = 1.25;
  auto f = [&](const Tensor& x) { return tanh(matmul(w, x)) * s; };
  // jax's Jacobian idiom: vmap of the pullback over the rows of the identity.
  auto row = [&](const Tensor& x, const Tensor& e) { return std::get<0>(vjp(f, x).second(e)); };
  auto rows = vmap(row, in_axes(none, 0));
  const Tensor x = randn({kN}, 101), eye_n = eye(kN);
  for (int call = 0; call < 6; ++call) {
    if (call == 3) s = -0.5;
    expect_near(rows(x, eye_n).to_vector<double>(),
                Reference{w.to_vector<double>(), s}.jacobian(x.to_vector<double>()));
  }
  // Traced: the forward pass is recorded in place, the backward pass is one call.
  detail::TraceScope scope;
  const Tensor tx = scope.input({{kN}, kFloat32}), te = scope.input({{kN}, kFloat32});
  const Graph g = scope.finish({row(tx, te)});
  int calls = 0;
  for (const Node& n : g.nodes) calls += n.prim->name() == "call";
  EXPECT_EQ(calls, 1) << g;
  // A zero (undefined) cotangent, as the library passes inside (a user's is an error), has no
  // type to key, and gives zeros.
  auto zero_row = [&](const Tensor& v, const Tensor& e) {
    return detail::linearize_call(f, {0}, v).second.backward({Tensor()})[0] + e;
  };
  const Tensor es = randn({3, kN}, 102);
  expect_near(vmap(zero_row, in_axes(none, 0))(x, es).to_vector<double>(), es.to_vector<double>());
}

TEST(CallCache, ExplainSeesTheRulesOnEveryCall) {
  const Tensor w = randn({kN, kN}, 90);
  auto batched = vmap(jacrev([&](const Tensor& x) { return tanh(matmul(w, x)); }));
  const Tensor xs = randn({4, kN}, 91);
  const Explanation first = explain(batched, xs);    // no body built yet: the rules run
  for (int call = 0; call < 3; ++call) batched(xs);  // now the body is cached
  const Explanation second = explain(batched, xs);
  EXPECT_FALSE(first.broadcasts.empty());
  EXPECT_EQ(first.broadcasts.size(), second.broadcasts.size());
  EXPECT_EQ(first.example.nodes.size(), second.example.nodes.size());
  for (const Node& n : first.example.nodes) EXPECT_NE(n.prim->name(), "call");
}

TEST(CallCache, ErrorsNameTheTransform) {
  const Tensor xs = randn({3, kN}, 30);
  auto vector_valued = vmap(grad([](const Tensor& x) { return tanh(x); }));
  try {
    vector_valued(xs);
    FAIL() << "expected lanes::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("grad: the function must return a 0-d float tensor"),
              std::string::npos)
        << e.what();
  }
  auto expect_error = [](auto f, const std::string& what) {
    try {
      f();
      FAIL() << "expected lanes::Error: " << what;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  auto to_int = [](const Tensor& x) { return cast(x, kInt32); };
  expect_error([&] { vmap(jacrev(to_int))(xs); }, "jacrev: the function must return one float");
  expect_error([&] { jacfwd(to_int)(randn({kN}, 31)); }, "jacfwd: the function must return one");
  expect_error(
      [&] { jacfwd([](const Tensor& x) { return cast(x, kFloat32); })(ones({3}, kInt32)); },
      "jacfwd: the argument must be a float tensor");
}
