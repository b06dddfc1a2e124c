// Control flow (lanes/control_flow.h) under every transform, against independent references:
// plain C++ loops in float64, per-example loops, finite differences and hand-derived formulas.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "lanes/lanes.h"

namespace {

using lanes::DType;
using lanes::Shape;
using lanes::Tensor;

Tensor f64(std::vector<double> v) { return lanes::tensor(v, {int64_t(v.size())}); }

std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }

void expect_near(const Tensor& got, const std::vector<double>& want, double tol, const char* what) {
  const auto g = values(got);
  ASSERT_EQ(g.size(), want.size()) << what;
  for (size_t i = 0; i < g.size(); ++i)
    EXPECT_NEAR(g[i], want[i], tol * (1 + std::abs(want[i]))) << what << " element " << i;
}

lanes::VmapOptions with(lanes::CondStrategy c) {
  lanes::VmapOptions o;
  o.cond = c;
  return o;
}
lanes::VmapOptions with(lanes::LoopStrategy l) {
  lanes::VmapOptions o;
  o.loop = l;
  return o;
}

const lanes::CondStrategy kConds[] = {lanes::CondStrategy::Select, lanes::CondStrategy::Partition,
                                      lanes::CondStrategy::Auto};
const lanes::LoopStrategy kLoops[] = {lanes::LoopStrategy::Mask, lanes::LoopStrategy::Compact,
                                      lanes::LoopStrategy::Auto};

// ---- cond -------------------------------------------------------------------------------------

// sqrt where x > 0, else 0: jax's select leaks NaN into the gradient at x < 0.
Tensor safe_sqrt(const Tensor& x) {
  return lanes::cond(
      x > 0.0, [](const Tensor& v) { return lanes::sqrt(v); },
      [](const Tensor& v) { return v * 0.0; }, x);
}

TEST(Cond, EagerRunsOnlyTheTakenBranch) {
  // The false branch indexes past the end: running it would throw.
  auto f = [](const Tensor& x) {
    return lanes::cond(
        lanes::sum(x) > 0.0, [](const Tensor& v) { return v * 2.0; },
        [](const Tensor& v) {
          return lanes::take(v, lanes::tensor(std::vector<int32_t>{7, 8, 9}));
        },
        x);
  };
  expect_near(f(f64({1, 2, 3})), {2, 4, 6}, 0, "true branch");
  EXPECT_THROW(f(f64({-1, -2, -3})), lanes::Error);
}

TEST(Cond, BranchesMustAgree) {
  const Tensor x = f64({1, 2, 3});
  try {
    lanes::cond(
        x[0] > 0.0, [](const Tensor& v) { return v; }, [](const Tensor& v) { return v[0]; }, x);
    FAIL() << "no error";
  } catch (const lanes::Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("the true branch"), std::string::npos) << m;
    EXPECT_NE(m.find("(3,)"), std::string::npos) << m;
    EXPECT_NE(m.find("()"), std::string::npos) << m;
  }
  EXPECT_THROW(lanes::cond(
                   x, [](const Tensor& v) { return v; }, [](const Tensor& v) { return v; }, x),
               lanes::Error);
}

TEST(Cond, VmapEveryStrategyMatchesTheLoopBitForBit) {
  // 2 sqrt(v) + w on examples with v[0] > 0, v * v - w otherwise; w shared.
  auto f = [](const Tensor& v, const Tensor& w) {
    return lanes::cond(
        v[0] > 0.0, [](const Tensor& a, const Tensor& b) { return lanes::sqrt(a) * 2.0 + b; },
        [](const Tensor& a, const Tensor& b) { return a * a - b; }, v, w);
  };
  const Tensor xs = lanes::random::normal(lanes::random::key(3), {37, 4}, DType::Float64);
  const Tensor w = f64({0.5, -1, 2, 3});
  std::vector<double> want;
  const auto x = values(xs), wv = values(w);
  for (int b = 0; b < 37; ++b)
    for (int j = 0; j < 4; ++j) {
      const double a = x[b * 4 + j];
      want.push_back(x[b * 4] > 0 ? std::sqrt(a) * 2 + wv[j] : a * a - wv[j]);
    }
  std::vector<std::vector<double>> got;
  for (auto s : kConds) {
    const Tensor y = lanes::vmap(f, lanes::in_axes(0, lanes::none), 0, with(s))(xs, w);
    ASSERT_EQ(y.shape(), (Shape{37, 4}));
    got.push_back(values(y));
    // NaN where the sqrt branch is not taken would show here; the loop has none.
    for (size_t i = 0; i < want.size(); ++i)
      if (!std::isnan(want[i])) EXPECT_NEAR(got.back()[i], want[i], 1e-12) << i;
  }
  for (size_t k = 1; k < got.size(); ++k)
    for (size_t i = 0; i < want.size(); ++i)
      if (!std::isnan(want[i])) EXPECT_EQ(got[k][i], got[0][i]);
}

TEST(Cond, PerExampleGradientsNeverSeeTheUntakenBranch) {
  const Tensor x = f64({-1, 4, 9});
  for (auto s : kConds) {
    const Tensor g = lanes::vmap(lanes::grad(safe_sqrt), 0, 0, with(s))(x);
    expect_near(g, {0, 0.25, 1.0 / 6}, 1e-14, "vmap(grad)");
    auto total = [s](const Tensor& v) {
      return lanes::sum(lanes::vmap(safe_sqrt, 0, 0, with(s))(v));
    };
    expect_near(lanes::grad(total)(x), {0, 0.25, 1.0 / 6}, 1e-14, "grad(vmap)");
  }
}

TEST(Cond, UnbatchedPredicateStaysControlFlow) {
  auto f = [](const Tensor& v, const Tensor& flag) {
    return lanes::cond(
        flag > 0.0, [](const Tensor& a) { return a * 3.0; }, [](const Tensor& a) { return -a; }, v);
  };
  const Tensor xs = f64({1, 2, 3, 4});
  auto batched = lanes::vmap(f, lanes::in_axes(0, lanes::none));
  expect_near(batched(xs, lanes::scalar(1.0, DType::Float64)), {3, 6, 9, 12}, 0, "true");
  expect_near(batched(xs, lanes::scalar(-1.0, DType::Float64)), {-1, -2, -3, -4}, 0, "false");
  std::ostringstream os;
  os << lanes::make_graph(batched)(xs, lanes::scalar(1.0, DType::Float64));
  EXPECT_NE(os.str().find("cond[branches="), std::string::npos) << os.str();
  EXPECT_EQ(os.str().find("lanes="), std::string::npos) << os.str();  // not a lane node
  EXPECT_NE(os.str().find("branch 1 = { lambda"), std::string::npos) << os.str();
}

TEST(Cond, SwitchClampsAndNestedVmapAndJvp) {
  std::vector<std::function<Tensor(const Tensor&)>> branches{
      [](const Tensor& v) { return v + 1.0; }, [](const Tensor& v) { return v * v; },
      [](const Tensor& v) { return lanes::sin(v); }};
  auto f = [&](const Tensor& i, const Tensor& v) { return lanes::switch_case(i, branches, v); };
  const Tensor idx = lanes::tensor(std::vector<int32_t>{-5, 0, 1, 2, 9, 1}, {2, 3});
  const Tensor xs = lanes::tensor(std::vector<double>{0.5, 1, 2, 3, 4, 5}, {2, 3});
  const Tensor y = lanes::vmap(lanes::vmap(f))(idx, xs);
  const std::vector<double> want{1.5, 2, 4, std::sin(3.0), std::sin(4.0), 25};
  expect_near(y, want, 1e-15, "nested vmap switch");
  // jvp of the per-example function, vmapped: d/dv of each branch.
  auto tangent = [&](const Tensor& i, const Tensor& v) {
    return lanes::jvp([&](const Tensor& a) { return f(i, a); }, std::make_tuple(v),
                      std::make_tuple(lanes::ones_like(v)))
        .second;
  };
  const Tensor t = lanes::vmap(lanes::vmap(tangent))(idx, xs);
  expect_near(t, {1, 1, 4, std::cos(3.0), std::cos(4.0), 10}, 1e-15, "jvp");
}

// jax#2947: vmap of a cond whose untaken branch holds a loop that never ends for those lanes
// hangs under select. Auto partitions around a loop: each lane runs only its own branch.
TEST(Cond, UntakenLoopNeverRuns) {
  auto count_down = [](const Tensor& v) {  // ends only for v a non-negative whole number
    return lanes::while_loop([](const Tensor& c) { return c != 0.0; },
                             [](const Tensor& c) { return c - 1.0; }, v);
  };
  auto f = [&](const Tensor& x) {
    return lanes::cond(
        x >= 0.0, [&](const Tensor& v) { return count_down(v) + v * v; },
        [](const Tensor& v) { return v * 2.0; }, x);
  };
  for (auto s : {lanes::CondStrategy::Auto, lanes::CondStrategy::Partition}) {
    expect_near(lanes::vmap(f, 0, 0, with(s))(f64({3, -1.5, 0, -7})), {9, -3, 0, -14}, 0, "value");
    expect_near(lanes::vmap(lanes::grad(f), 0, 0, with(s))(f64({3, -1.5, 0, -7})), {7, 2, 1, 2}, 0,
                "grad");
  }
}

// Issue 26, item 7: Select runs a branch that holds a loop on its own lanes only. b = -2 is a
// fixed point of b * 1.5 + 1, so running the loop on that lane would never end (jax#2947). Also
// with nearly every lane in the loop's branch (the partition used to run such a branch on all).
TEST(Cond, SelectNeverRunsALoopOnAnUntakenLane) {
  auto f = [](const Tensor& v) {
    return lanes::cond(
        v > 0.0,
        [](const Tensor& a) {
          return lanes::while_loop([](const Tensor& b) { return b < 100.0; },
                                   [](const Tensor& b) { return b * 1.5 + 1.0; }, a);
        },
        [](const Tensor& a) { return a * 2.0; }, v);
  };
  auto reference = [](double v) {
    if (v <= 0) return v * 2;
    while (v < 100) v = v * 1.5 + 1;
    return v;
  };
  for (int64_t B : {2, 40}) {
    std::vector<double> xs, want;
    for (int64_t b = 0; b < B; ++b) xs.push_back(b == 1 ? -2.0 : 0.5 + double(b));
    for (double x : xs) want.push_back(reference(x));
    for (auto s : kConds) expect_near(lanes::vmap(f, 0, 0, with(s))(f64(xs)), want, 0, "select");
  }
  std::ostringstream os;
  os << lanes::explain(lanes::vmap(f, 0, 0, with(lanes::CondStrategy::Select)), f64({0.5, -2}));
  EXPECT_NE(os.str().find("runs on its own lanes only"), std::string::npos) << os.str();
}

// Partition's paths: a cheap branch most lanes take runs on every lane as the base the others
// are written into; a branch with a loop (never the base) taken by nearly every lane still runs
// on its own lanes only; a few lanes are gathered. Each against the per-example loop.
TEST(Cond, PartitionPathsMatchTheLoop) {
  auto halve_until_small = [](const Tensor& v) {
    return lanes::while_loop([](const Tensor& c) { return lanes::abs(c) > 1.0; },
                             [](const Tensor& c) { return c * 0.5; }, v);
  };
  auto f = [&](const Tensor& x) {
    return lanes::cond(
        x > 0.0, [&](const Tensor& v) { return halve_until_small(v * 10.0) + v; },
        [](const Tensor& v) { return v * 3.0; }, x);
  };
  for (int64_t positives : {33, 1, 17}) {
    std::vector<double> xs;
    for (int64_t b = 0; b < 34; ++b)
      xs.push_back(b < positives ? 0.1 * double(b + 1) : -0.5 * double(b));
    std::vector<double> want;
    for (double x : xs) {
      if (x <= 0) {
        want.push_back(x * 3);
        continue;
      }
      double c = x * 10;
      while (std::abs(c) > 1) c *= 0.5;
      want.push_back(c + x);
    }
    for (auto s : kConds)
      expect_near(lanes::vmap(f, 0, 0, with(s))(f64(xs)), want, 0, "partition paths");
  }
}

TEST(Cond, HessianThroughCond) {
  // f = sum(x^3) if x[0] > 0 else sum(sin x): Hessian diag(6x) or diag(-sin x).
  auto f = [](const Tensor& x) {
    return lanes::cond(
        x[0] > 0.0, [](const Tensor& v) { return lanes::sum(v * v * v); },
        [](const Tensor& v) { return lanes::sum(lanes::sin(v)); }, x);
  };
  const Tensor h1 = lanes::hessian(f)(f64({1, 2}));
  expect_near(h1, {6, 0, 0, 12}, 1e-12, "cubic");
  const Tensor h2 = lanes::hessian(f)(f64({-1, 2}));
  expect_near(h2, {std::sin(1.0), 0, 0, -std::sin(2.0)}, 1e-12, "sin");
}

// ---- while_loop ---------------------------------------------------------------------------------

// Newton's iteration for sqrt(a) until |x^2 - a| <= 1e-12 a, counting steps.
std::tuple<Tensor, Tensor> newton(const Tensor& a) {
  using C = std::tuple<Tensor, Tensor>;
  return lanes::while_loop(
      [a](const C& c) {
        const Tensor& x = std::get<0>(c);
        return lanes::abs(x * x - a) > a * 1e-12;
      },
      [a](const C& c) {
        const Tensor& x = std::get<0>(c);
        return C((x + a / x) * 0.5, std::get<1>(c) + 1);
      },
      C(a + 1.0, lanes::scalar(0, DType::Int32)));
}

std::pair<double, int> newton_ref(double a) {
  double x = a + 1;
  int n = 0;
  while (std::abs(x * x - a) > 1e-12 * a) {
    x = (x + a / x) * 0.5;
    ++n;
  }
  return {x, n};
}

TEST(While, EagerAndVmapEveryStrategyMatchTheLoop) {
  const std::vector<double> as{1e-3, 2, 10, 1e6, 0.5, 7e4, 3, 1e8, 9};
  auto [x, n] = newton(lanes::scalar(2.0, DType::Float64));
  EXPECT_EQ(x.item<double>(), newton_ref(2).first);
  EXPECT_EQ(n.item<int>(), newton_ref(2).second);
  for (auto s : kLoops) {
    auto [xs, ns] = lanes::vmap(newton, 0, 0, with(s))(f64(as));
    const auto xv = values(xs);
    const auto nv = ns.to_vector<int32_t>();
    for (size_t i = 0; i < as.size(); ++i) {
      EXPECT_EQ(xv[i], newton_ref(as[i]).first) << "lane " << i;
      EXPECT_EQ(nv[i], newton_ref(as[i]).second) << "lane " << i;
    }
  }
}

// Many lanes finishing over many iterations, so Compact compacts again and again (with padding
// rows, write-backs of finished lanes, and a per-lane vector const gathered with them), and
// carries of every row width the compaction copies: a float64, a float32 vector, a bool and an
// int32. Each lane must equal the same loop run on that example alone.
TEST(While, RepeatedCompactionsKeepEveryLane) {
  using C = std::tuple<Tensor, Tensor, Tensor, Tensor>;  // x, v (3,), flipped, n
  auto f = [](const Tensor& a, const Tensor& w) {
    return lanes::while_loop(
        [a](const C& c) { return lanes::abs(std::get<0>(c) * std::get<0>(c) - a) > a * 1e-12; },
        [a, w](const C& c) {
          const auto& [x, v, flipped, n] = c;
          return C((x + a / x) * 0.5, v * 0.5f + w, lanes::logical_not(flipped), n + 1);
        },
        C(a + 1.0, lanes::zeros({3}, DType::Float32), lanes::full({}, 0.0, DType::Bool),
          lanes::scalar(0, DType::Int32)));
  };
  const int64_t B = 3000;
  const Tensor a =
      lanes::pow(lanes::scalar(10.0, DType::Float64),
                 lanes::random::uniform(lanes::random::key(7), {B}, -6.0, 12.0, DType::Float64));
  const Tensor w = lanes::random::normal(lanes::random::key(8), {B, 3});
  for (auto s : kLoops) {
    const C got = lanes::vmap(f, 0, 0, with(s))(a, w);
    for (int64_t i = 0; i < B; i += 7) {
      const C want = f(a[i], w[i]);
      ASSERT_EQ(std::get<0>(got)[i].item<double>(), std::get<0>(want).item<double>()) << i;
      ASSERT_EQ(std::get<1>(got)[i].to_vector<float>(), std::get<1>(want).to_vector<float>()) << i;
      ASSERT_EQ(std::get<2>(got)[i].item<bool>(), std::get<2>(want).item<bool>()) << i;
      ASSERT_EQ(std::get<3>(got)[i].item<int32_t>(), std::get<3>(want).item<int32_t>()) << i;
    }
  }
}

TEST(While, ExplainNamesTheStrategy) {
  auto f = [](const Tensor& a) { return std::get<0>(newton(a)); };
  std::ostringstream os;
  os << lanes::explain(lanes::vmap(f, 0, 0, with(lanes::LoopStrategy::Compact)),
                       f64({1, 2, 1e8, 4, 5, 6, 7, 8}));
  EXPECT_NE(os.str().find("each stopping on its own: compact"), std::string::npos) << os.str();
}

// y = x^k with k the number of doublings until y > 100 (data-dependent trip count).
Tensor power_until(const Tensor& x) {
  using C = std::tuple<Tensor, Tensor>;
  auto r = lanes::while_loop(
      [](const C& c) { return std::get<0>(c) < 100.0; },
      [](const C& c) { return C(std::get<0>(c) * std::get<1>(c), std::get<1>(c)); }, C(x, x));
  return std::get<0>(r);
}

TEST(While, ReverseModeRecordsTheTripCount) {
  // x = 1.5: 1.5^12 > 100 first, so y = x^12 and dy/dx = 12 x^11 (the trip count is locally
  // constant); x = 3: y = x^5.
  for (auto [x, k] : {std::pair{1.5, 12}, std::pair{3.0, 5}, std::pair{11.0, 2}}) {
    const double g = lanes::grad(power_until)(lanes::scalar(x, DType::Float64)).item<double>();
    EXPECT_NEAR(g, k * std::pow(x, k - 1), 1e-9 * k * std::pow(x, k - 1)) << x;
  }
  // Per-example gradients with a different trip count per lane, every strategy.
  for (auto s : kLoops) {
    const Tensor g = lanes::vmap(lanes::grad(power_until), 0, 0, with(s))(f64({1.5, 3, 11}));
    expect_near(g, {12 * std::pow(1.5, 11), 5 * std::pow(3.0, 4), 2 * 11.0}, 1e-12, "vmap(grad)");
  }
  // jvp agrees.
  const Tensor t = lanes::jvp(power_until, std::make_tuple(lanes::scalar(3.0, DType::Float64)),
                              std::make_tuple(lanes::scalar(1.0, DType::Float64)))
                       .second;
  EXPECT_NEAR(t.item<double>(), 5 * std::pow(3.0, 4), 1e-9);
}

TEST(While, DynamicForiLoopGradient) {
  // sum_{i=lo}^{hi-1} i * x^2 with Tensor bounds: gradient 2 x sum(i).
  auto f = [](const Tensor& x, const Tensor& hi) {
    return lanes::fori_loop(
        lanes::scalar(1, DType::Int32), hi,
        [&](const Tensor& i, const Tensor& acc) {
          return acc + lanes::cast(i, DType::Float64) * x * x;
        },
        lanes::scalar(0.0, DType::Float64));
  };
  const Tensor x = lanes::scalar(1.5, DType::Float64);
  EXPECT_NEAR(f(x, lanes::scalar(5, DType::Int32)).item<double>(), 10 * 2.25, 1e-12);
  const Tensor g = lanes::vmap(lanes::grad(f), lanes::in_axes(0, 0))(
      f64({1.5, 2}), lanes::tensor(std::vector<int32_t>{5, 3}));
  expect_near(g, {2 * 1.5 * 10, 2 * 2 * 3}, 1e-12, "per-lane trip counts");
}

Tensor power_until(const Tensor& x);

// Each malformed construct is a lanes::Error that names what is wrong.
TEST(ControlFlowErrors, NameWhatIsWrong) {
  auto expect_error = [](const std::function<void()>& fn, std::vector<std::string> mentions) {
    try {
      fn();
      ADD_FAILURE() << "no error; expected one mentioning " << mentions[0];
    } catch (const lanes::Error& e) {
      for (const std::string& m : mentions)
        EXPECT_NE(std::string(e.what()).find(m), std::string::npos) << m << " in: " << e.what();
    }
  };
  const Tensor x = f64({1, 2, 3});
  expect_error(
      [&] {
        lanes::while_loop([](const Tensor& c) { return lanes::sum(c) < 10.0; },
                          [](const Tensor& c) {
                            return lanes::concatenate({c, c});
                          },
                          x);
      },
      {"while_loop", "carry leaf 0", "(6,)", "(3,)"});
  expect_error(
      [&] {
        lanes::while_loop([](const Tensor& c) { return c < 10.0; },
                          [](const Tensor& c) { return c; }, x);
      },
      {"while_loop's cond_fn", "0-d bool", "(3,)"});
  expect_error(
      [&] {
        lanes::while_loop([](const Tensor& c) { return lanes::sum(c); },
                          [](const Tensor& c) { return c; }, x);
      },
      {"while_loop's cond_fn", "float64"});
  expect_error(
      [&] {
        std::vector<std::function<Tensor(const Tensor&)>> b{[](const Tensor& v) { return v; }};
        lanes::switch_case(lanes::scalar(1.0, DType::Float64), b, x);
      },
      {"switch_case", "index", "float64"});
  expect_error(
      [&] {
        std::vector<std::function<Tensor(const Tensor&)>> b{
            [](const Tensor& v) { return v; },
            [](const Tensor& v) { return lanes::cast(v, DType::Float32); }};
        lanes::switch_case(lanes::scalar(1, DType::Int32), b, x);
      },
      {"branch 1", "float32", "branch 0", "float64"});
  expect_error(
      [&] {
        lanes::fori_loop(
            lanes::scalar(0.0, DType::Float64), lanes::scalar(3, DType::Int32),
            [](const Tensor&, const Tensor& c) { return c; }, x);
      },
      {"fori_loop", "bounds", "float64"});
  expect_error(
      [&] {
        auto step = [](const Tensor& c, const std::vector<Tensor>&) {
          return std::make_pair(c, c);
        };
        lanes::scan(step, x, std::vector<Tensor>{});
      },
      {"scan", "options.length"});
  expect_error([&] { x[3]; }, {"x[3]", "out of range", "3"});
  expect_error([&] { lanes::hessian(power_until)(lanes::scalar(3.0, DType::Float64)); },
               {"while_loop", "second order", "fori_loop"});
  expect_error([&] { x[lanes::scalar(1.0, DType::Float64)]; }, {"x[i]", "integer"});
  expect_error([&] { lanes::dynamic_slice(x, {lanes::scalar(0, DType::Int32)}, {4}); },
               {"dynamic_slice", "size 4"});
}

// ---- scan / fori_loop / map
// ----------------------------------------------------------------------

// h_t = tanh(W h_{t-1} + x_t); ys = h_t; loss = sum(h_T) + sum(ys).
Tensor rnn_loss(const Tensor& w, const Tensor& xs) {
  auto step = [&w](const Tensor& h, const Tensor& x) {
    const Tensor n = lanes::tanh(lanes::matmul(w, h) + x);
    return std::make_pair(n, n * 0.5);
  };
  auto [h, ys] = lanes::scan(step, lanes::zeros({3}, DType::Float64), xs);
  return lanes::sum(h) + lanes::sum(ys);
}

double rnn_ref(const std::vector<double>& w, const std::vector<double>& xs, int T) {
  std::vector<double> h(3, 0.0);
  double ys = 0;
  for (int t = 0; t < T; ++t) {
    std::vector<double> n(3);
    for (int i = 0; i < 3; ++i) {
      double s = xs[t * 3 + i];
      for (int j = 0; j < 3; ++j) s += w[i * 3 + j] * h[j];
      n[i] = std::tanh(s);
      ys += n[i] * 0.5;
    }
    h = n;
  }
  return h[0] + h[1] + h[2] + ys;
}

TEST(Scan, ValueGradientAndVmapMatchReferences) {
  const Tensor w = lanes::random::normal(lanes::random::key(1), {3, 3}, DType::Float64) * 0.5;
  const Tensor xs = lanes::random::normal(lanes::random::key(2), {6, 3}, DType::Float64);
  const auto wv = values(w), xv = values(xs);
  EXPECT_NEAR(rnn_loss(w, xs).item<double>(), rnn_ref(wv, xv, 6), 1e-12);
  // Gradient w.r.t. W and xs by central differences on the reference.
  auto [gw, gx] = lanes::grad(rnn_loss, {0, 1})(w, xs);
  const auto gwv = values(gw), gxv = values(gx);
  const double h = 1e-6;
  for (int i = 0; i < 9; ++i) {
    auto a = wv, b = wv;
    a[i] += h;
    b[i] -= h;
    EXPECT_NEAR(gwv[i], (rnn_ref(a, xv, 6) - rnn_ref(b, xv, 6)) / (2 * h), 1e-7) << "dW " << i;
  }
  for (int i = 0; i < 18; ++i) {
    auto a = xv, b = xv;
    a[i] += h;
    b[i] -= h;
    EXPECT_NEAR(gxv[i], (rnn_ref(wv, a, 6) - rnn_ref(wv, b, 6)) / (2 * h), 1e-7) << "dx " << i;
  }
  // Per-example gradients w.r.t. the shared W over a batch of sequences, and compiled.
  const Tensor batch = lanes::random::normal(lanes::random::key(4), {5, 6, 3}, DType::Float64);
  auto per_example = lanes::vmap(lanes::grad(rnn_loss), lanes::in_axes(lanes::none, 0));
  const Tensor g = per_example(w, batch);
  const Tensor gc = lanes::compile(per_example)(w, batch);
  for (int b = 0; b < 5; ++b) {
    const Tensor one = lanes::grad(rnn_loss)(w, batch[b]);
    expect_near(g[b], values(one), 1e-12, "vmap(grad(scan))");
    expect_near(gc[b], values(one), 1e-12, "compile(vmap(grad(scan)))");
  }
  // jvp agrees with vjp: <grad, v> = jvp in direction v.
  const Tensor v = lanes::random::normal(lanes::random::key(5), {3, 3}, DType::Float64);
  const double dir = lanes::jvp([&](const Tensor& a) { return rnn_loss(a, xs); },
                                std::make_tuple(w), std::make_tuple(v))
                         .second.item<double>();
  EXPECT_NEAR(dir, lanes::sum(gw * v).item<double>(), 1e-10);
}

TEST(Scan, ReverseAndLengthErrors) {
  auto cumsum = [](const Tensor& xs, bool reverse) {
    lanes::ScanOptions o;
    o.reverse = reverse;
    auto step = [](const Tensor& c, const Tensor& x) { return std::make_pair(c + x, c + x); };
    return lanes::scan(step, lanes::scalar(0.0, DType::Float64), xs, o).second;
  };
  expect_near(cumsum(f64({1, 2, 3}), false), {1, 3, 6}, 0, "forward");
  expect_near(cumsum(f64({1, 2, 3}), true), {6, 5, 3}, 0, "reverse");
  auto two = [](const Tensor& c, const std::pair<Tensor, Tensor>& x) {
    return std::make_pair(c + x.first + x.second, c);
  };
  EXPECT_THROW(lanes::scan(two, lanes::scalar(0.0, DType::Float64),
                           std::make_pair(f64({1, 2}), f64({1, 2, 3}))),
               lanes::Error);
  auto grows = [](const Tensor& c, const Tensor& x) {
    return std::make_pair(lanes::concatenate({c, x}), x);
  };
  EXPECT_THROW(lanes::scan(grows, f64({0}), lanes::ones({3, 1}, DType::Float64)), lanes::Error);
}

TEST(ForiLoop, StaticCounterStaysUnmappedAndIndexes) {
  // sum_i x[i] * i over a static range, per example; x[i] is a slice with i unmapped.
  auto f = [](const Tensor& x) {
    return lanes::fori_loop(
        0, 4,
        [&](const Tensor& i, const Tensor& acc) {
          return acc + x[i] * lanes::cast(i, DType::Float64);
        },
        lanes::scalar(0.0, DType::Float64));
  };
  const Tensor xs = lanes::tensor(std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8}, {2, 4});
  expect_near(lanes::vmap(f)(xs), {0 + 2 + 6 + 12, 0 + 6 + 14 + 24}, 0, "value");
  expect_near(lanes::vmap(lanes::grad(f))(xs), {0, 1, 2, 3, 0, 1, 2, 3}, 0, "grad");
  std::ostringstream os;
  os << lanes::explain(lanes::vmap(f), xs);
  EXPECT_EQ(os.str().find("lanes="), std::string::npos) << os.str();  // no lane node: a scan
}

TEST(Map, SequentialAndChunkedMatchTheLoop) {
  const Tensor xs = lanes::random::normal(lanes::random::key(9), {10, 3}, DType::Float64);
  auto f = [](const Tensor& x) { return lanes::sum(lanes::exp(x)); };
  std::vector<double> want;
  for (int b = 0; b < 10; ++b) want.push_back(f(xs[b]).item<double>());
  expect_near(lanes::map(f, xs), want, 1e-15, "sequential");
  lanes::MapOptions o;
  o.batch_size = 4;
  expect_near(lanes::map(f, xs, o), want, 1e-15, "chunks of 4");
}

TEST(DynamicSlice, BatchedStartsMatchTheLoop) {
  auto f = [](const Tensor& x, const Tensor& s) {
    const Tensor part = lanes::dynamic_slice(x, {s, lanes::scalar(1, DType::Int32)}, {2, 2});
    return lanes::dynamic_update_slice(x, part * 10.0, {s + 1, lanes::scalar(0, DType::Int32)});
  };
  const Tensor x = lanes::reshape(lanes::arange(12, DType::Float64), {4, 3});
  const Tensor starts = lanes::tensor(std::vector<int32_t>{0, 1, 3});  // 3 clamps to 2
  const Tensor y = lanes::vmap(f, lanes::in_axes(lanes::none, 0))(x, starts);
  for (int b = 0; b < 3; ++b) expect_near(y[b], values(f(x, starts[b])), 0, "lane");
  // Reference for lane 0 by hand: rows 1-2, cols 0-1 become 10 * x[0:2, 1:3].
  expect_near(y[0], {0, 1, 2, 10, 20, 5, 40, 50, 8, 9, 10, 11}, 0, "by hand");
}

}  // namespace
