// compile's passes over scans (src/runtime/scan_passes.cpp): what a loop's body passes through,
// repeats or could compute for all steps at once leaves the loop, and every value stays that of
// the same loop unrolled.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <utility>

#include "lanes/lanes.h"
#include "pass_checks.h"

using namespace lanes;
using namespace pass_checks;

namespace {

// The scans of the optimized graph: each one's carries (its params' "carry=N") and outputs.
std::vector<std::pair<int, size_t>> scans(const Graph& g) {
  std::vector<std::pair<int, size_t>> out;
  for (const Node& n : g.nodes)
    if (n.prim->name() == "scan") {
      const std::string p = n.prim->params();
      out.emplace_back(std::stoi(p.substr(p.find("carry=") + 6)), n.outputs.size());
    }
  return out;
}

// The body of the one scan in g whose params say `reverse` or not, as the runner optimizes it.
Graph body_of(const Graph& g, bool reverse) {
  for (const Node& n : g.nodes)
    if (n.prim->name() == "scan" &&
        (n.prim->params().find("reverse") != std::string::npos) == reverse)
      return detail::optimize(*n.prim->subgraphs().at(0).second);
  ADD_FAILURE() << "no scan in " << g;
  return {};
}

}  // namespace

// A loop's reverse pass computes the cotangents of its xs as ys; a gradient with respect to the
// weights alone never reads them, and the compiled reverse scan drops them and their products.
// (sin(xt): with xt itself, the cotangent of xt is a ys the weights' gradient reads too.)
TEST(ScanPasses, ScanDropsTheYsNothingReads) {
  const Tensor w = randn({4, 4}, 30), xs = randn({6, 4}, 31);
  auto loss = [](const Tensor& v, const Tensor& x) {
    auto step = [&](const Tensor& h, const Tensor& xt) {
      return std::make_pair(tanh(matmul(h, v) + sin(xt)), std::tuple<>{});
    };
    return sum(scan(step, zeros({4}), x).first);
  };
  auto unrolled = [](const Tensor& v, const Tensor& x) {
    Tensor h = zeros({4});
    for (int64_t t = 0; t < x.shape(0); ++t) h = tanh(matmul(h, v) + sin(x[t]));
    return sum(h);
  };
  auto reverse_outputs = [](const Graph& g) {
    size_t outputs = 0;
    for (const Node& n : g.nodes)
      if (n.prim->name() == "scan" && n.prim->params().find("reverse") != std::string::npos)
        outputs += n.outputs.size();
    return outputs;
  };
  const auto weights_only = [&](const Tensor& v, const Tensor& x) { return grad(loss)(v, x); };
  const auto both = [&](const Tensor& v, const Tensor& x) {
    const auto [dv, dx] = grad(loss, {0, 1})(v, x);
    return std::make_pair(dv, dx);
  };
  const Graph pruned = optimized(weights_only, w, xs), full = optimized(both, w, xs);
  ASSERT_GT(reverse_outputs(full), 0u) << full;
  EXPECT_EQ(reverse_outputs(pruned) + 1, reverse_outputs(full)) << pruned;
  expect_close(compile(weights_only)(w, xs), grad(unrolled)(w, xs));
  const auto [dv, dx] = compile(both)(w, xs);
  const auto [uv, ux] = grad(unrolled, {0, 1})(w, xs);
  expect_close(dv, uv);
  expect_close(dx, ux);
}

// A carry the body returns unchanged leaves the scan (its final value is its initial one), a ys
// the body returns twice is computed once, and a ys that is a step of the xs is the xs; the
// values read outside stay right.
TEST(ScanPasses, ScanDropsPassedThroughCarriesAndRepeatedYs) {
  const Tensor k0 = randn({4}, 32), xs = randn({5, 4}, 33);
  auto f = [](const Tensor& k, const Tensor& x) {
    using Carry = std::pair<Tensor, Tensor>;
    auto step = [](const Carry& c, const Tensor& xt) {
      const Tensor h = tanh(c.first * c.second + xt);
      return std::make_pair(Carry{h, c.second}, std::make_tuple(h, h, xt));
    };
    const auto [carry, ys] = scan(step, Carry{zeros({4}), k}, x);
    const auto& [y1, y2, y3] = ys;
    return std::make_tuple(carry.first, carry.second * 2.0, y1 + y2 * 3.0 + sin(y3));
  };
  auto unrolled = [](const Tensor& k, const Tensor& x) {
    Tensor h = zeros({4});
    std::vector<Tensor> hs;
    for (int64_t t = 0; t < x.shape(0); ++t) hs.push_back(h = tanh(h * k + x[t]));
    const Tensor ys = stack(hs, 0);
    return std::make_tuple(h, k * 2.0, ys * 4.0 + sin(x));
  };
  const Graph g = optimized(f, k0, xs);
  ASSERT_EQ(scans(g).size(), 1u) << g;
  EXPECT_EQ(scans(g)[0], std::make_pair(1, size_t{2})) << g;  // carry h, one ys
  const auto [h, k2, ys] = compile(f)(k0, xs);
  const auto [uh, uk2, uys] = unrolled(k0, xs);
  expect_close(h, uh);
  expect_close(k2, uk2);
  expect_close(ys, uys);
  // The gradient's reverse scan carries the cotangent of k and keeps no pass-through either.
  auto loss = [&](const Tensor& k, const Tensor& x) {
    const auto [a, b, c] = f(k, x);
    return sum(a) + sum(b) + sum(c * c);
  };
  auto unrolled_loss = [&](const Tensor& k, const Tensor& x) {
    const auto [a, b, c] = unrolled(k, x);
    return sum(a) + sum(b) + sum(c * c);
  };
  expect_close(compile(grad(loss))(k0, xs), grad(unrolled_loss)(k0, xs));
}

// A gradient with respect to a loop's weights: the reverse scan no longer carries the weights'
// cotangent accumulators its body passed through (their terms leave as ys, summed after it), so
// no zero is added to the per-step products' sum.
TEST(ScanPasses, ReverseScanCarriesNoWeightAccumulatorItPassesThrough) {
  const Tensor w = randn({4, 4}, 34), xs = randn({6, 4}, 35);
  auto loss = [](const Tensor& v, const Tensor& x) {
    auto step = [&](const Tensor& h, const Tensor& xt) {
      return std::make_pair(tanh(matmul(h, v) + xt), std::tuple<>{});
    };
    return sum(scan(step, randn({4}, 36), x).first);
  };
  auto unrolled = [](const Tensor& v, const Tensor& x) {
    Tensor h = randn({4}, 36);
    for (int64_t t = 0; t < x.shape(0); ++t) h = tanh(matmul(h, v) + x[t]);
    return sum(h);
  };
  const Graph g = optimized(grad(loss), w, xs);
  const auto found = scans(g);
  ASSERT_EQ(found.size(), 2u) << g;
  EXPECT_EQ(found[1].first, 1) << g;  // the reverse scan carries the cotangent of h alone
  expect_close(compile(grad(loss))(w, xs), grad(unrolled)(w, xs));
}

// A product of an xs step with a const (an RNN's x_t W_x) runs once over all steps before the
// loop, the steps folded into one GEMM: the body keeps only the product of its carry. The values,
// and the gradient (whose reverse scan reads that product's steps as an xs), are those of the
// unrolled loop, with the xs on either side of the product.
TEST(ScanPasses, ProductsOfAnXsStepWithAConstRunOnceBeforeTheLoop) {
  const Tensor w = randn({4, 4}, 40), xs = randn({6, 3, 5}, 41);
  const Tensor u_right = randn({5, 4}, 42), u_left = randn({4, 3}, 43);
  auto check = [&](const Tensor& u, auto cell, const Tensor& h0) {
    auto loss = [=](const Tensor& v, const Tensor& x) {
      auto step = [&](const Tensor& h, const Tensor& xt) {
        return std::make_pair(cell(w, v, h, xt), std::tuple<>{});
      };
      return sum(scan(step, h0, x).first);
    };
    auto unrolled = [=](const Tensor& v, const Tensor& x) {
      Tensor h = h0;
      for (int64_t t = 0; t < x.shape(0); ++t) h = cell(w, v, h, x[t]);
      return sum(h);
    };
    const Graph g = optimized(loss, u, xs);
    EXPECT_EQ(count(g, "dot_general"), 1) << g;             // the stacked x_t products
    EXPECT_EQ(count(body_of(g, false), "dot_general"), 1);  // the carry's
    expect_close(compile(loss)(u, xs), unrolled(u, xs));
    expect_close(compile(grad(loss))(u, xs), grad(unrolled)(u, xs));
  };
  check(
      u_right,
      [](const Tensor& w, const Tensor& v, const Tensor& h, const Tensor& xt) {
        return tanh(matmul(h, w) + matmul(xt, v));  // (3, 5) @ (5, 4)
      },
      randn({3, 4}, 44));
  check(
      u_left,
      [](const Tensor& w, const Tensor& v, const Tensor& h, const Tensor& xt) {
        return tanh(matmul(w, h) + matmul(v, xt));  // (4, 3) @ (3, 5): the steps come out second
      },
      randn({4, 5}, 45));
}
