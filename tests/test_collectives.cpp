// Collectives over a named vmap axis (lanes/collectives.h), table-driven like the op table: each
// row is a per-lane function of x (4,) float64 using collectives over axis "i", with a float64
// reference computed from the stacked examples by explicit loops. The generic checks run every
// row eagerly (first call and cached calls), under compile, with in_axes 1, and - for the
// differentiable rows - vmap(grad), grad(vmap) and jvp against central finite differences of
// the total loss. Further tests: nested names, sizes, errors.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <ostream>

#include "expect_near.h"
#include "lanes/lanes.h"

namespace {

using lanes::DType;
using lanes::Tensor;
using Lanes = std::vector<std::vector<double>>;  // per lane, its values (flattened)

constexpr int64_t kB = 5, kD = 4;

struct Row {
  const char* name;
  std::function<Tensor(const Tensor&)> f;        // x (4,) -> per-lane output (axis "i")
  std::function<Lanes(const Lanes&)> reference;  // the stacked examples -> each lane's output
  bool differentiable = true;
};

void PrintTo(const Row& r, std::ostream* os) { *os << r.name; }

lanes::VmapOptions named(const std::string& name) {
  lanes::VmapOptions o;
  o.axis_name = name;
  return o;
}

// Lanes whose every entry is fn(lane index, position).
Lanes each(const Lanes& xs, const std::function<std::vector<double>(size_t)>& fn) {
  Lanes out;
  for (size_t l = 0; l < xs.size(); ++l) out.push_back(fn(l));
  return out;
}

std::vector<double> reduce_lanes(const Lanes& xs, double init,
                                 const std::function<double(double, double)>& op) {
  std::vector<double> r(xs[0].size(), init);
  for (const auto& x : xs)
    for (size_t j = 0; j < x.size(); ++j) r[j] = op(r[j], x[j]);
  return r;
}

std::vector<double> lane_sum(const Lanes& xs) {
  return reduce_lanes(xs, 0.0, [](double a, double b) { return a + b; });
}

const Tensor& weights() {  // a captured tensor
  static const Tensor w = lanes::tensor(std::vector<double>{0.5, -1.0, 2.0, 0.25}, {kD});
  return w;
}

const std::vector<Row>& rows() {
  static const std::vector<Row> all = {
      {"psum", [](const Tensor& x) { return lanes::psum(x * x, "i"); },
       [](const Lanes& xs) {
         Lanes sq = xs;
         for (auto& x : sq)
           for (double& v : x) v *= v;
         return each(xs, [&](size_t) { return lane_sum(sq); });
       }},
      {"pmean_centered", [](const Tensor& x) { return x - lanes::pmean(x, "i"); },
       [](const Lanes& xs) {
         const std::vector<double> s = lane_sum(xs);
         return each(xs, [&](size_t l) {
           std::vector<double> r = xs[l];
           for (size_t j = 0; j < r.size(); ++j) r[j] -= s[j] / double(xs.size());
           return r;
         });
       }},
      {"pmax", [](const Tensor& x) { return lanes::pmax(x, "i") * x; },
       [](const Lanes& xs) {
         const auto m =
             reduce_lanes(xs, -INFINITY, [](double a, double b) { return std::max(a, b); });
         return each(xs, [&](size_t l) {
           std::vector<double> r = xs[l];
           for (size_t j = 0; j < r.size(); ++j) r[j] *= m[j];
           return r;
         });
       }},
      {"pmin", [](const Tensor& x) { return lanes::pmin(lanes::sin(x), "i"); },
       [](const Lanes& xs) {
         Lanes s = xs;
         for (auto& x : s)
           for (double& v : x) v = std::sin(v);
         const auto m =
             reduce_lanes(s, INFINITY, [](double a, double b) { return std::min(a, b); });
         return each(xs, [&](size_t) { return m; });
       }},
      {"softmax_over_lanes",
       [](const Tensor& x) { return lanes::exp(x) / lanes::psum(lanes::exp(x), "i"); },
       [](const Lanes& xs) {
         Lanes e = xs;
         for (auto& x : e)
           for (double& v : x) v = std::exp(v);
         const auto s = lane_sum(e);
         return each(xs, [&](size_t l) {
           std::vector<double> r = e[l];
           for (size_t j = 0; j < r.size(); ++j) r[j] /= s[j];
           return r;
         });
       }},
      {"all_gather_0",
       [](const Tensor& x) { return lanes::all_gather(x * 2.0, "i") * lanes::sum(x); },
       [](const Lanes& xs) {
         return each(xs, [&](size_t l) {
           double s = 0;
           for (double v : xs[l]) s += v;
           std::vector<double> r;
           for (const auto& x : xs)
             for (double v : x) r.push_back(2 * v * s);
           return r;
         });
       }},
      {"all_gather_last",
       [](const Tensor& x) { return lanes::all_gather(lanes::tanh(x), "i", -1); },
       [](const Lanes& xs) {
         std::vector<double> r;  // (4, B): position j, lane k
         for (size_t j = 0; j < xs[0].size(); ++j)
           for (const auto& x : xs) r.push_back(std::tanh(x[j]));
         return each(xs, [&](size_t) { return r; });
       }},
      {"axis_index",
       [](const Tensor& x) {
         return x * lanes::cast(lanes::axis_index("i"), DType::Float64) + lanes::psum(x, "i");
       },
       [](const Lanes& xs) {
         const auto s = lane_sum(xs);
         return each(xs, [&](size_t l) {
           std::vector<double> r = xs[l];
           for (size_t j = 0; j < r.size(); ++j) r[j] = r[j] * double(l) + s[j];
           return r;
         });
       }},
      {"shared_operands",  // collectives of values no lane changes: a constant and a capture
       [](const Tensor& x) {
         return x + lanes::psum(weights() * 2.0, "i") +
                lanes::sum(lanes::all_gather(weights(), "i"), 0) +
                lanes::pmax(lanes::ones({kD}, DType::Float64), "i");
       },
       [](const Lanes& xs) {
         const auto w = weights().to_vector<double>();
         const double b = double(xs.size());
         return each(xs, [&](size_t l) {
           std::vector<double> r = xs[l];
           for (size_t j = 0; j < r.size(); ++j) r[j] += 2 * w[j] * b + w[j] * b + 1;
           return r;
         });
       }},
      {"int_psum_and_count",  // integers stay integers: a lane count is an exact psum of 1s
       [](const Tensor& x) {
         const Tensor q = lanes::cast(lanes::floor(x * 10.0), DType::Int32);
         const Tensor n = lanes::psum(lanes::full({kD}, 2, DType::Int32), "i");
         return lanes::cast(lanes::psum(q, "i") + n + lanes::pmax(q, "i"), DType::Float64);
       },
       [](const Lanes& xs) {
         std::vector<double> s(kD, 2.0 * double(xs.size())), m(kD, -INFINITY);
         for (const auto& x : xs)
           for (size_t j = 0; j < x.size(); ++j) {
             s[j] += std::floor(x[j] * 10);
             m[j] = std::max(m[j], std::floor(x[j] * 10));
           }
         for (size_t j = 0; j < s.size(); ++j) s[j] += m[j];
         return each(xs, [&](size_t) { return s; });
       },
       false},
      {"pmean_of_loss",  // a data-parallel loss: the lane's value against the mean over lanes
       [](const Tensor& x) { return lanes::pmean(lanes::sum(x * weights()) * x, "i") + x * x; },
       [](const Lanes& xs) {
         const auto w = weights().to_vector<double>();
         std::vector<double> m(xs[0].size(), 0.0);
         for (const auto& x : xs) {
           double s = 0;
           for (size_t j = 0; j < x.size(); ++j) s += x[j] * w[j];
           for (size_t j = 0; j < x.size(); ++j) m[j] += s * x[j] / double(xs.size());
         }
         return each(xs, [&](size_t l) {
           std::vector<double> r = m;
           for (size_t j = 0; j < r.size(); ++j) r[j] += xs[l][j] * xs[l][j];
           return r;
         });
       }},
  };
  return all;
}

// The stacked examples (B, 4), distinct and without ties.
Tensor examples() {
  std::vector<double> v;
  for (int64_t i = 0; i < kB * kD; ++i) v.push_back(std::sin(1.3 * double(i) + 0.4) * 1.5);
  return lanes::tensor(v, {kB, kD});
}

Lanes lanes_of(const Tensor& stacked) {
  Lanes out;
  const std::vector<double> v = stacked.contiguous().to_vector<double>();
  const size_t n = v.size() / size_t(stacked.shape()[0]);
  for (int64_t l = 0; l < stacked.shape()[0]; ++l)
    out.emplace_back(v.begin() + l * n, v.begin() + (l + 1) * n);
  return out;
}

std::vector<double> flat(const Lanes& xs) {
  std::vector<double> out;
  for (const auto& x : xs) out.insert(out.end(), x.begin(), x.end());
  return out;
}

class Collectives : public testing::TestWithParam<Row> {};

TEST_P(Collectives, VmapEqualsStackedReference) {
  const Row& row = GetParam();
  const Tensor x = examples();
  const std::vector<double> want = flat(row.reference(lanes_of(x)));
  auto v = lanes::vmap(row.f, 0, 0, named("i"));
  for (int call = 0; call < 3; ++call)  // first sighting, then the optimized cached graph
    expect_near(v(x).contiguous().to_vector<double>(), want, 1e-12);
  auto c = lanes::compile(v);
  expect_near(c(x).contiguous().to_vector<double>(), want, 1e-12);
  expect_near(c(x).contiguous().to_vector<double>(), want, 1e-12);
  auto t = lanes::vmap(row.f, 1, 0, named("i"));
  expect_near(t(lanes::transpose(x)).contiguous().to_vector<double>(), want, 1e-12);
}

// The total loss sum_l c . f_l(X) by vmap, and its gradient by central differences.
Tensor cotangent_weights(const Tensor& out) {
  std::vector<double> c;
  for (int64_t i = 0; i < out.numel(); ++i) c.push_back(std::cos(0.7 * double(i)));
  return lanes::tensor(c, out.shape());
}

class CollectiveGrads : public testing::TestWithParam<Row> {};

TEST_P(CollectiveGrads, GradientsMatchFiniteDifferences) {
  const Row& row = GetParam();
  const Tensor x = examples();
  const Tensor c = cotangent_weights(lanes::vmap(row.f, 0, 0, named("i"))(x)[0]);
  // Each lane's loss; under vmap the gradient of a lane's loss through a collective collects
  // every lane's cotangent (jax's convention), so vmap(grad) is the gradient of the total.
  auto lane_loss = [&](const Tensor& xi) { return lanes::sum(row.f(xi) * c); };
  auto total = [&](const Tensor& xs) {
    return lanes::sum(lanes::vmap(lane_loss, 0, 0, named("i"))(xs));
  };
  std::vector<double> fd;
  const std::vector<double> xv = x.to_vector<double>();
  const double h = 1e-6;
  for (size_t k = 0; k < xv.size(); ++k) {
    std::vector<double> p = xv, m = xv;
    p[k] += h;
    m[k] -= h;
    fd.push_back((total(lanes::tensor(p, x.shape())).item<double>() -
                  total(lanes::tensor(m, x.shape())).item<double>()) /
                 (2 * h));
  }
  auto per_lane = lanes::vmap(lanes::grad(lane_loss), 0, 0, named("i"));
  expect_near(per_lane(x).to_vector<double>(), fd, 1e-6);
  expect_near(per_lane(x).to_vector<double>(), fd, 1e-6);  // cached
  expect_near(lanes::compile(per_lane)(x).to_vector<double>(), fd, 1e-6);
  expect_near(lanes::grad(total)(x).to_vector<double>(), fd, 1e-6);
  // jvp along a direction t: the directional derivative of the total.
  std::vector<double> tv;
  double want = 0;
  for (size_t k = 0; k < xv.size(); ++k) {
    tv.push_back(std::sin(0.3 * double(k) + 1.0));
    want += tv.back() * fd[k];
  }
  const Tensor t = lanes::tensor(tv, x.shape());
  auto [y, dy] = lanes::jvp(total, std::tuple{x}, std::tuple{t});
  EXPECT_NEAR(dy.item<double>(), want, 1e-6 * (1 + std::abs(want)));
  // jvp inside the vmap: each lane's tangent of its loss; their sum is the same derivative.
  auto lane_jvp = [&](const Tensor& xi, const Tensor& ti) {
    return std::get<1>(lanes::jvp(lane_loss, std::tuple{xi}, std::tuple{ti}));
  };
  const Tensor dl = lanes::vmap(lane_jvp, 0, 0, named("i"))(x, t);
  EXPECT_NEAR(lanes::sum(dl).item<double>(), want, 1e-6 * (1 + std::abs(want)));
}

std::vector<Row> differentiable_rows() {
  std::vector<Row> out;
  for (const Row& r : rows())
    if (r.differentiable) out.push_back(r);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Table, Collectives, testing::ValuesIn(rows()),
                         [](const testing::TestParamInfo<Row>& i) { return i.param.name; });
INSTANTIATE_TEST_SUITE_P(Table, CollectiveGrads, testing::ValuesIn(differentiable_rows()),
                         [](const testing::TestParamInfo<Row>& i) { return i.param.name; });

// ---- nested names ------------------------------------------------------------------------------

// X (C=3, B=5, 4); the outer vmap "j" maps C, the inner "i" maps B.
Tensor nested_examples() {
  std::vector<double> v;
  for (int i = 0; i < 3 * kB * kD; ++i) v.push_back(std::cos(0.9 * i + 0.2));
  return lanes::tensor(v, {3, kB, kD});
}

double at(const std::vector<double>& v, int64_t c, int64_t b, int64_t j) {
  return v[(c * kB + b) * kD + j];
}

TEST(CollectivesNested, EachNameReducesItsOwnAxis) {
  const Tensor x = nested_examples();
  const std::vector<double> xv = x.to_vector<double>();
  auto inner = [](const Tensor& e) {
    return lanes::psum(e, "i") * 10.0 - lanes::psum(e, "j") +
           lanes::cast(lanes::axis_index("j") * 100 + lanes::axis_index("i"), DType::Float64);
  };
  auto outer = [&](const Tensor& row) { return lanes::vmap(inner, 0, 0, named("i"))(row); };
  auto both = lanes::vmap(outer, 0, 0, named("j"));
  std::vector<double> want;
  for (int64_t c = 0; c < 3; ++c)
    for (int64_t b = 0; b < kB; ++b)
      for (int64_t j = 0; j < kD; ++j) {
        double si = 0, sj = 0;
        for (int64_t k = 0; k < kB; ++k) si += at(xv, c, k, j);
        for (int64_t k = 0; k < 3; ++k) sj += at(xv, k, b, j);
        want.push_back(si * 10 - sj + double(c * 100 + b));
      }
  for (int call = 0; call < 3; ++call)
    expect_near(both(x).contiguous().to_vector<double>(), want, 1e-12);
  expect_near(lanes::compile(both)(x).contiguous().to_vector<double>(), want, 1e-12);
}

TEST(CollectivesNested, GatherAndMeanOverTheOuterAxisInsideTheInner) {
  const Tensor x = nested_examples();
  const std::vector<double> xv = x.to_vector<double>();
  // (C, 4) gathered over "j", per (c, b) lane; then pmean over both.
  auto inner = [](const Tensor& e) {
    return lanes::all_gather(e, "j", 1) +
           lanes::expand_dims(lanes::pmean(lanes::pmean(e, "i"), "j"), 1);
  };
  auto both = lanes::vmap([&](const Tensor& r) { return lanes::vmap(inner, 0, 0, named("i"))(r); },
                          0, 0, named("j"));
  const Tensor got = both(x).contiguous();
  ASSERT_EQ(got.shape(), (lanes::Shape{3, kB, kD, 3}));
  std::vector<double> want;
  for (int64_t c = 0; c < 3; ++c)
    for (int64_t b = 0; b < kB; ++b)
      for (int64_t j = 0; j < kD; ++j) {
        double m = 0;
        for (int64_t cc = 0; cc < 3; ++cc)
          for (int64_t bb = 0; bb < kB; ++bb) m += at(xv, cc, bb, j) / double(3 * kB);
        for (int64_t k = 0; k < 3; ++k) want.push_back(at(xv, k, b, j) + m);
      }
  expect_near(got.to_vector<double>(), want, 1e-12);
}

// An inner vmap over concrete data inside the outer one's function: its collective over the
// outer axis is recorded into the outer trace, not run from the inner vmap's cache.
TEST(CollectivesNested, InnerVmapOfConcreteDataReducesTheOuterAxis) {
  const Tensor data = lanes::arange(6, DType::Float64);  // 6 lanes of "i", concrete
  auto outer = [&](const Tensor& x) {
    auto g = [&](const Tensor& d) { return lanes::psum(d * x, "j"); };
    return lanes::vmap(g, 0, 0, named("i"))(data);
  };
  const Tensor x = lanes::tensor(std::vector<double>{1, 2, 3, 4}, {4});
  auto v = lanes::vmap(outer, 0, 0, named("j"));
  for (int call = 0; call < 3; ++call) {
    const std::vector<double> got = v(x).contiguous().to_vector<double>();  // (4, 6)
    std::vector<double> want;
    for (int l = 0; l < 4; ++l)
      for (int k = 0; k < 6; ++k) want.push_back(double(k) * 10.0);
    expect_near(got, want, 1e-12);
  }
}

TEST(CollectivesNested, SameNameShadowsTheOuterAxis) {
  const Tensor x = lanes::ones({2, 3}, DType::Float64);
  auto inner = [](const Tensor& e) { return lanes::psum(e, "i"); };
  auto v = lanes::vmap([&](const Tensor& r) { return lanes::vmap(inner, 0, 0, named("i"))(r); }, 0,
                       0, named("i"));
  expect_near(v(x).contiguous().to_vector<double>(), std::vector<double>(6, 3.0), 0);
}

TEST(CollectivesNested, VmapOfGradThroughOuterPmean) {
  // d/dw of the outer mean of the inner sums: each (c, b) lane gets 1/C.
  const Tensor x = nested_examples();
  auto loss = [](const Tensor& e) { return lanes::sum(lanes::pmean(e * e, "j")); };
  auto both = lanes::vmap(
      [&](const Tensor& r) { return lanes::vmap(lanes::grad(loss), 0, 0, named("i"))(r); }, 0, 0,
      named("j"));
  // Total loss: sum over (c, b) lanes of the mean over c of e^2 = B... the gradient of the sum
  // over every lane of mean_c(e_cb^2) with respect to e_cb is 3 * 2 e_cb / 3 = 2 e_cb.
  const std::vector<double> xv = x.to_vector<double>();
  std::vector<double> want;
  for (double v : xv) want.push_back(2 * v);
  expect_near(both(x).contiguous().to_vector<double>(), want, 1e-12);
}

// ---- errors ------------------------------------------------------------------------------------

void expect_error(const std::function<void()>& fn, const std::vector<std::string>& parts) {
  try {
    fn();
    FAIL() << "no lanes::Error";
  } catch (const lanes::Error& e) {
    for (const auto& p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what() << "\nmissing: " << p;
  }
}

TEST(CollectivesErrors, OutsideAnyVmap) {
  expect_error([] { lanes::psum(lanes::ones({3}), "i"); },
               {"psum", "'i'", "no named vmap is in scope"});
  expect_error([] { lanes::axis_index("batch"); }, {"axis_index", "'batch'"});
  // Inside an unnamed vmap it is just as unknown.
  expect_error(
      [] {
        lanes::vmap([](const Tensor& x) { return lanes::pmean(x, "i"); })(lanes::ones({3, 2}));
      },
      {"pmean", "'i'", "no named vmap"});
}

TEST(CollectivesErrors, UnknownNameListsTheNamesInScope) {
  auto inner = [](const Tensor& e) { return lanes::psum(e, "k"); };
  auto v = lanes::vmap([&](const Tensor& r) { return lanes::vmap(inner, 0, 0, named("i"))(r); }, 0,
                       0, named("j"));
  expect_error([&] { v(lanes::ones({2, 3})); }, {"psum", "'k'", "'i'", "'j'"});
}

TEST(CollectivesErrors, BadOperands) {
  auto v = [](auto f) { return lanes::vmap(f, 0, 0, named("i")); };
  expect_error(
      [&] {
        v([](const Tensor& x) { return lanes::pmean(x, "i"); })(lanes::ones({3, 2}, DType::Int32));
      },
      {"pmean", "'i'", "floating"});
  expect_error(
      [&] {
        v([](const Tensor& x) { return lanes::psum(x > 0.0, "i"); })(lanes::ones({3, 2}));
      },
      {"psum", "bool"});
  expect_error(
      [&] {
        v([](const Tensor& x) { return lanes::all_gather(x, "i", 3); })(lanes::ones({3, 2}));
      },
      {"all_gather", "gather_axis 3"});
}

TEST(CollectivesErrors, InsideControlFlowOfItsOwnVmap) {
  auto f = [](const Tensor& x) {
    return lanes::cond(
        x[0] > 0.0, [](const Tensor& v) { return lanes::psum(v, "i"); },
        [](const Tensor& v) { return v; }, x);
  };
  expect_error([&] { lanes::vmap(f, 0, 0, named("i"))(examples()); },
               {"psum", "'i'", "outside the control flow"});
}

TEST(CollectivesErrors, ChunkingDoesNotYetCompose) {
  lanes::VmapOptions o = named("i");
  o.chunk_size = 2;
  expect_error(
      [&] {
        lanes::vmap([](const Tensor& x) { return lanes::psum(x, "i"); }, 0, 0, o)(examples());
      },
      {"chunk", "collectives"});
}

// A collective over an outer axis passes through the inner vmap's batching of a cond; the outer
// vmap then meets it inside the cond it batches in turn, an error
// as above (or, when it batches the branch at run time, one naming the axis out of scope).
TEST(CollectivesErrors, OuterAxisInsideAnInnerCond) {
  auto inner = [](const Tensor& e) {
    return lanes::cond(
        e > 0.0, [](const Tensor& v) { return lanes::psum(v, "j"); },
        [](const Tensor& v) { return v * 0.0; }, e);
  };
  auto v = lanes::vmap([&](const Tensor& r) { return lanes::vmap(inner, 0, 0, named("i"))(r); }, 0,
                       0, named("j"));
  expect_error([&] { v(lanes::ones({2, 3}, DType::Float64)); }, {"psum", "'j'"});
}

}  // namespace
