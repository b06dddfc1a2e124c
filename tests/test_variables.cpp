// lanes::Variable: reads inside traced and compiled functions see the value of each call;
// compile's cache across assigns (same type: kept; new shape: retrace); assign inside a
// transform is an error naming the Variable; gradients with respect to Variables (against hand
// derivatives and the per-example loop); concurrent reads while a thread assigns.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "expect_near.h"
#include "lanes/lanes.h"

namespace {

using lanes::DType;
using lanes::Tensor;
using lanes::Variable;

std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }

TEST(Variable, ReadAssignAssignAdd) {
  Variable v(lanes::tensor(std::vector<float>{1, 2, 3}, {3}), "v");
  EXPECT_EQ(v.name(), "v");
  EXPECT_EQ(values(v.read()), (std::vector<double>{1, 2, 3}));
  v.assign_add(lanes::full({}, 10.0));  // broadcast
  EXPECT_EQ(values(v.read()), (std::vector<double>{11, 12, 13}));
  v.assign(lanes::zeros({2, 2}, DType::Float64));  // any shape and dtype
  EXPECT_EQ(v.shape(), (lanes::Shape{2, 2}));
  EXPECT_EQ(v.dtype(), DType::Float64);
  Variable alias = v;  // copies share the value
  alias.assign_add(lanes::ones({2, 2}, DType::Float64));
  EXPECT_EQ(values(v.read()), (std::vector<double>(4, 1.0)));
  EXPECT_THROW(v.assign_add(lanes::ones({3})), lanes::Error);
  EXPECT_THROW(Variable(Tensor(), "undefined"), lanes::Error);
}

TEST(Variable, CompiledReadsTheValueOfEachCall) {
  Variable w(lanes::full({3}, 2.0), "w");
  auto f = lanes::compile([&](const Tensor& x) { return x * w.read(); });
  const Tensor x = lanes::ones({3});
  EXPECT_EQ(values(f(x)), (std::vector<double>(3, 2.0)));
  w.assign(lanes::full({3}, 5.0));
  EXPECT_EQ(values(f(x)), (std::vector<double>(3, 5.0)));
  w.assign_add(lanes::full({3}, 1.0));
  EXPECT_EQ(values(f(x)), (std::vector<double>(3, 6.0)));
  EXPECT_EQ(f.cache_size(), 1u) << "same shape and dtype: no retrace";
  w.assign(lanes::full({1}, 7.0));  // a new shape (broadcasts against x): retrace
  EXPECT_EQ(values(f(x)), (std::vector<double>(3, 7.0)));
  EXPECT_EQ(f.cache_size(), 2u);
  w.assign(lanes::full({3}, 8.0));  // back to the first shape: its trace is reused
  EXPECT_EQ(values(f(x)), (std::vector<double>(3, 8.0)));
  EXPECT_EQ(f.cache_size(), 2u);
  w.assign(lanes::full({3}, 9.0, DType::Float64));  // a new dtype: retrace
  const Tensor y = f(x);
  EXPECT_EQ(y.dtype(), DType::Float64);
  EXPECT_EQ(values(y), (std::vector<double>(3, 9.0)));
  EXPECT_EQ(f.cache_size(), 3u);
}

TEST(Variable, VmapReadsTheValueAsAnUnmappedArgument) {
  Variable w(lanes::full({4, 2}, 1.0), "w");
  auto f = lanes::vmap([&](const Tensor& x) { return lanes::matmul(x, w.read()); });
  const Tensor xs = lanes::random::normal(lanes::random::key(0), {5, 4});
  for (int step = 0; step < 4; ++step) {
    w.assign(lanes::full({4, 2}, double(step)));
    const Tensor want = lanes::matmul(xs, w.read());
    expect_near(values(f(xs)), values(want));
  }
  EXPECT_EQ(f.cache_size(), 1u) << "assigns of one type keep the batched graph";
  auto compiled = lanes::compile(f);
  w.assign(lanes::full({4, 2}, 3.0));
  expect_near(values(compiled(xs)), values(lanes::matmul(xs, w.read())));
  w.assign(lanes::full({4, 2}, -1.0));
  expect_near(values(compiled(xs)), values(lanes::matmul(xs, w.read())));
}

void expect_assign_error(const std::function<void()>& f, const std::string& what) {
  try {
    f();
    ADD_FAILURE() << what << ": no error";
  } catch (const lanes::Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("Variable 'weights'"), std::string::npos) << what << ": " << msg;
    EXPECT_NE(msg.find("assign"), std::string::npos) << what << ": " << msg;
  }
}

TEST(Variable, AssignInsideATransformIsAnErrorNamingIt) {
  Variable v(lanes::zeros({3}), "weights");
  const Tensor xs = lanes::ones({2, 3});
  expect_assign_error(
      [&] {
        lanes::vmap([&](const Tensor& x) {
          v.assign(x);
          return x;
        })(xs);
      },
      "vmap");
  expect_assign_error(
      [&] {
        lanes::grad([&](const Tensor& x) {
          v.assign_add(x);
          return lanes::sum(x);
        })(lanes::ones({3}));
      },
      "grad");
  expect_assign_error(
      [&] {
        lanes::compile([&](const Tensor& x) {
          v.assign(x);
          return x;
        })(lanes::ones({3}));
      },
      "compile");
  EXPECT_EQ(values(v.read()), (std::vector<double>(3, 0.0))) << "nothing was assigned";
}

// loss = sum((x @ w + b - y)^2) / 2: dw = x^T r, db = sum of r over rows, r = x @ w + b - y.
struct Regression {
  Variable w{lanes::random::normal(lanes::random::key(1), {3, 2}, DType::Float64), "w"};
  Variable b{lanes::full({2}, 0.5, DType::Float64), "b"};
  Tensor x = lanes::random::normal(lanes::random::key(2), {4, 3}, DType::Float64);
  Tensor y = lanes::random::normal(lanes::random::key(3), {4, 2}, DType::Float64);
  Tensor loss(const Tensor& xs, const Tensor& ys) const {
    return lanes::l2_loss(lanes::matmul(xs, w.read()) + b.read() - ys);
  }
};

TEST(VariableGrad, GradientsPerVariable) {
  Regression m;
  auto loss = [&](const Tensor& xs, const Tensor& ys) { return m.loss(xs, ys); };
  const std::vector<Tensor> g = lanes::grad(loss, {m.w, m.b})(m.x, m.y);
  ASSERT_EQ(g.size(), 2u);
  const Tensor r = lanes::matmul(m.x, m.w.read()) + m.b.read() - m.y;
  expect_near(values(g[0]), values(lanes::matmul(lanes::transpose(m.x, {1, 0}), r)), 1e-12);
  expect_near(values(g[1]), values(lanes::sum(r, {0})), 1e-12);
  const auto [value, g2] = lanes::value_and_grad(loss, {m.w, m.b})(m.x, m.y);
  expect_near(values(value), values(m.loss(m.x, m.y)), 1e-12);
  expect_near(values(g2[1]), values(g[1]), 0);
}

// An SGD step compiled: the gradient uses each call's weights, and the loss falls.
TEST(VariableGrad, CompiledOptimizerStep) {
  Regression m;
  auto loss = [&](const Tensor& xs, const Tensor& ys) { return m.loss(xs, ys); };
  auto grads = lanes::compile(lanes::value_and_grad(loss, {m.w, m.b}));
  double previous = 1e300;
  for (int step = 0; step < 20; ++step) {
    const auto [value, g] = grads(m.x, m.y);
    // The same as the uncompiled gradient at the current weights.
    const std::vector<Tensor> eager = lanes::grad(loss, {m.w, m.b})(m.x, m.y);
    expect_near(values(g[0]), values(eager[0]), 1e-12);
    EXPECT_LT(value.item<double>(), previous);
    previous = value.item<double>();
    m.w.assign_add(g[0] * -0.05);
    m.b.assign_add(g[1] * -0.05);
  }
  EXPECT_EQ(grads.cache_size(), 1u);
}

// Per-example gradients with respect to Variables: vmap over the examples of grad(f, vars).
TEST(VariableGrad, PerExampleAgainstTheLoop) {
  Regression m;
  auto loss = [&](const Tensor& xi, const Tensor& yi) { return m.loss(xi, yi); };
  auto per_example = [&](const Tensor& xi, const Tensor& yi) {
    return lanes::grad(loss, {m.w, m.b})(xi, yi);
  };
  const std::vector<Tensor> batched = lanes::vmap(per_example)(m.x, m.y);
  for (int64_t i = 0; i < 4; ++i) {
    const std::vector<Tensor> one = per_example(m.x[i], m.y[i]);
    expect_near(values(batched[0][i]), values(one[0]), 1e-12);
    expect_near(values(batched[1][i]), values(one[1]), 1e-12);
  }
}

// Readers on several threads call a compiled function while the main thread assigns: every
// result is one whole value (never a mix), and they increase.
TEST(VariableThreads, ConcurrentReadsSeeWholeValues) {
  Variable v(lanes::full({1000}, 0.0), "counter");
  auto f = lanes::compile([&](const Tensor& x) { return x + v.read(); });
  const Tensor x = lanes::zeros({1000});
  f(x);
  std::atomic<bool> done{false}, mixed{false}, decreased{false};
  std::atomic<int> calls{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t)
    readers.emplace_back([&, compiled = t % 2 == 0] {  // half through compile, half read()
      double last = -1;
      while (!done.load()) {
        const std::vector<float> y = (compiled ? f(x) : v.read()).to_vector<float>();
        for (float e : y) mixed = mixed || e != y[0];
        decreased = decreased || y[0] < last;
        last = y[0];
        ++calls;
      }
    });
  for (int k = 1; k <= 200 || calls.load() < 2000; ++k) v.assign(lanes::full({1000}, double(k)));
  done = true;
  for (std::thread& t : readers) t.join();
  EXPECT_FALSE(mixed.load());
  EXPECT_FALSE(decreased.load());
  EXPECT_EQ(f.cache_size(), 1u);
}

// A read inside a loop body is the value of the call (the same on every iteration).
TEST(Variable, ReadInsideAScanBody) {
  Variable step(lanes::full({}, 2.0), "step");
  auto run = lanes::compile([&](const Tensor& x0) {
    return lanes::fori_loop(
        0, 5, [&](const Tensor&, const Tensor& x) { return x + step.read(); }, x0);
  });
  EXPECT_EQ(run(lanes::zeros({})).item<float>(), 10.0f);
  step.assign(lanes::full({}, 3.0));
  EXPECT_EQ(run(lanes::zeros({})).item<float>(), 15.0f);
}

}  // namespace

namespace {

// The README's snippet: per-example gradients over a Variable through dropout, then a step.
TEST(VariableGrad, ReadmeSnippet) {
  lanes::random::Generator gen(42);
  Variable w(lanes::random::normal(lanes::random::key(0), {784, 10}) * 0.01, "w");
  auto loss = [&](const Tensor& x, const Tensor& y) {
    const Tensor h = lanes::dropout(lanes::matmul(x, w.read()), 0.1, gen, /*training=*/true);
    return lanes::softmax_cross_entropy(h, y);
  };
  lanes::VmapOptions opt;
  opt.randomness = lanes::Randomness::Different;
  auto step = lanes::compile(lanes::vmap(lanes::grad(loss, {w}), 0, 0, opt));
  const Tensor xs = lanes::random::normal(lanes::random::key(1), {8, 784});
  const Tensor ys = lanes::random::randint(lanes::random::key(2), {8}, 0, 10);
  const Tensor w0 = w.read();
  std::vector<Tensor> g = step(xs, ys);
  ASSERT_EQ(g[0].shape(), (lanes::Shape{8, 784, 10}));
  // Example 3 alone, with the generator of its lane.
  const lanes::random::Key k = lanes::random::fold_in(lanes::random::key(42), 0);
  const auto lane = lanes::random::Generator::from_key(lanes::random::fold_in(k, 3));
  auto one = [&](const Tensor& wi) {
    const Tensor h = lanes::dropout(lanes::matmul(xs[3], wi), 0.1, lane, true);
    return lanes::softmax_cross_entropy(h, ys[3]);
  };
  expect_near(values(g[0][3]), values(lanes::grad(one)(w0)), 1e-5);
  w.assign_add(lanes::mean(g[0], {0}) * -0.1);
  EXPECT_EQ(gen.counter(), 1u);
  g = step(xs, ys);  // reads the new w, draws the next key
  EXPECT_EQ(gen.counter(), 2u);
  EXPECT_EQ(step.cache_size(), 1u);
}

}  // namespace
