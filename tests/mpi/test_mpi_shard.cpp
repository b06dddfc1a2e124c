// vmap sharded across MPI ranks (lanes/distributed.h), run by ctest under mpirun -np 2 and -np 3.
// Every rank builds the same data from the global lane index, so each can compute the float64
// reference with explicit loops over all lanes; sizes cover uneven shards and ranks with no
// lanes. Errors raised on one rank must raise on every rank.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "expect_near.h"
#include "lanes/distributed.h"
#include "lanes/lanes.h"

namespace {

using lanes::DType;
using lanes::Tensor;
namespace dist = lanes::distributed;

constexpr int64_t kD = 3;

double value(int64_t lane, int64_t j) { return std::sin(0.7 * double(lane * kD + j) + 0.3) * 2.0; }

// Lanes [lo, hi) of the global data, (hi - lo, 3) float64.
Tensor lanes_data(int64_t lo, int64_t hi) {
  std::vector<double> v;
  for (int64_t l = lo; l < hi; ++l)
    for (int64_t j = 0; j < kD; ++j) v.push_back(value(l, j));
  return lanes::tensor(v, {hi - lo, kD});
}

lanes::VmapOptions sharded(lanes::ShardInputs inputs = lanes::ShardInputs::Whole) {
  lanes::VmapOptions o;
  o.axis_name = "b";
  o.shard = dist::world();
  o.shard_inputs = inputs;
  return o;
}

// Per lane: (x * 2, psum(x), pmean(x), pmax(x), pmin(x), axis_index, all_gather(x)[:, 0]).
auto collectives_fn = [](const Tensor& x) {
  return std::make_tuple(x * 2.0, lanes::psum(x, "b"), lanes::pmean(x, "b"), lanes::pmax(x, "b"),
                         lanes::pmin(x, "b"), lanes::axis_index("b"),
                         lanes::all_gather(x[0], "b", 0), lanes::all_gather(x, "b", -1));
};

struct Reference {
  std::vector<double> sum, mean, max, min;
};

Reference reference(int64_t b) {
  Reference r;
  for (int64_t j = 0; j < kD; ++j) {
    double s = 0, mx = -INFINITY, mn = INFINITY;
    for (int64_t l = 0; l < b; ++l) {
      s += value(l, j);
      mx = std::max(mx, value(l, j));
      mn = std::min(mn, value(l, j));
    }
    r.sum.push_back(s);
    r.mean.push_back(s / double(b));
    r.max.push_back(mx);
    r.min.push_back(mn);
  }
  return r;
}

std::vector<double> repeat(const std::vector<double>& v, int64_t times) {
  std::vector<double> out;
  for (int64_t k = 0; k < times; ++k) out.insert(out.end(), v.begin(), v.end());
  return out;
}

std::vector<double> vec(const Tensor& t) {
  return lanes::cast(t, DType::Float64).contiguous().to_vector<double>();
}

class Sizes : public testing::TestWithParam<int64_t> {};

// Every rank passes the whole batch and gets the whole result back.
TEST_P(Sizes, WholeBatchCollectivesEqualExplicitReductions) {
  const int64_t b = GetParam();
  const Tensor x = lanes_data(0, b);
  const Reference want = reference(b);
  auto v = lanes::vmap(collectives_fn, 0, 0, sharded());
  auto c = lanes::compile(v);
  for (int call = 0; call < 4; ++call) {  // eager, then the cached graph, then compiled
    const auto [twice, s, m, mx, mn, idx, g0, g] = call < 3 ? v(x) : c(x);
    expect_near(vec(twice), vec(x * 2.0), 0);
    expect_near(vec(s), repeat(want.sum, b), 1e-12);
    expect_near(vec(m), repeat(want.mean, b), 1e-12);
    expect_near(vec(mx), repeat(want.max, b), 0);
    expect_near(vec(mn), repeat(want.min, b), 0);
    std::vector<double> lanes_idx, first, gathered;
    for (int64_t l = 0; l < b; ++l) {
      lanes_idx.push_back(double(l));
      first.push_back(value(l, 0));
    }
    for (int64_t j = 0; j < kD; ++j)
      for (int64_t l = 0; l < b; ++l) gathered.push_back(value(l, j));
    expect_near(vec(idx), lanes_idx, 0);
    EXPECT_EQ(idx.dtype(), DType::Int32);
    expect_near(vec(g0), repeat(first, b), 0);
    ASSERT_EQ(g.shape(), (lanes::Shape{b, kD, b}));
    expect_near(vec(g), repeat(gathered, b), 0);
  }
}

// Each rank passes its own lanes: rank r holds r + 1 + k of them (uneven), the axis is all of
// them in rank order.
TEST_P(Sizes, LocalLanesCollectivesSpanEveryRank) {
  const int64_t k = GetParam() % 3;
  const int r = dist::rank(), n = dist::size();
  int64_t lo = 0, total = 0;
  for (int q = 0; q < n; ++q) {
    if (q < r) lo += q + 1 + k;
    total += q + 1 + k;
  }
  const int64_t mine = r + 1 + k;
  const Tensor x = lanes_data(lo, lo + mine);
  const Reference want = reference(total);
  auto v = lanes::vmap(collectives_fn, 0, 0, sharded(lanes::ShardInputs::Local));
  for (int call = 0; call < 3; ++call) {
    const auto [twice, s, m, mx, mn, idx, g0, g] = v(x);
    expect_near(vec(twice), vec(x * 2.0), 0);
    expect_near(vec(s), repeat(want.sum, mine), 1e-12);
    expect_near(vec(m), repeat(want.mean, mine), 1e-12);
    expect_near(vec(mx), repeat(want.max, mine), 0);
    std::vector<double> idx_want, first;
    for (int64_t l = lo; l < lo + mine; ++l) idx_want.push_back(double(l));
    for (int64_t l = 0; l < total; ++l) first.push_back(value(l, 0));
    expect_near(vec(idx), idx_want, 0);
    expect_near(vec(g0), repeat(first, mine), 0);
    ASSERT_EQ(g.shape(), (lanes::Shape{mine, kD, total}));
  }
}

// Data-parallel gradients: per lane the gradient of 0.5 (w . x - y)^2 in w, averaged over every
// rank's lanes with pmean; against the hand-derived float64 mean.
TEST_P(Sizes, PmeanOfPerExampleGradients) {
  const int64_t b = GetParam();
  const Tensor x = lanes_data(0, b);
  std::vector<double> yv;
  for (int64_t l = 0; l < b; ++l) yv.push_back(std::cos(double(l)));
  const Tensor y = lanes::tensor(yv, {b});
  const Tensor w = lanes::tensor(std::vector<double>{0.3, -0.2, 0.5}, {kD});
  auto loss = [](const Tensor& w, const Tensor& xi, const Tensor& yi) {
    const Tensor e = lanes::sum(w * xi) - yi;
    return e * e * 0.5;
  };
  auto step = [&](const Tensor& xi, const Tensor& yi) {
    return lanes::pmean(lanes::grad(loss)(w, xi, yi), "b");
  };
  // A mean over no lanes is 0 / 0: NaN, as numpy's and jax's.
  std::vector<double> want(kD, b == 0 ? NAN : 0.0);
  for (int64_t l = 0; l < b; ++l) {
    double e = -yv[size_t(l)];
    for (int64_t j = 0; j < kD; ++j) e += w.to_vector<double>()[size_t(j)] * value(l, j);
    for (int64_t j = 0; j < kD; ++j) want[size_t(j)] += e * value(l, j) / double(b);
  }
  auto v = lanes::vmap(step, 0, lanes::none, sharded());
  auto check = [&](const std::vector<double>& got) {
    if (b > 0) return expect_near(got, want, 1e-12);
    for (double g : got) EXPECT_TRUE(std::isnan(g)) << g;
  };
  for (int call = 0; call < 3; ++call) check(vec(v(x, y)));
  check(vec(lanes::compile(v)(x, y)));
}

INSTANTIATE_TEST_SUITE_P(Shard, Sizes, testing::Values(0, 1, 2, 5, 7, 12));

// ---- errors raised on one rank raise on every rank ---------------------------------------------

// Runs fn, expecting a lanes::Error on every rank whose message holds `here` on the failing rank
// and "rank <failing>" on the others.
void expect_all_raise(const std::function<void()>& fn, int failing, const std::string& here) {
  try {
    fn();
    ADD_FAILURE() << "rank " << dist::rank() << " raised nothing";
  } catch (const lanes::Error& e) {
    const std::string want =
        dist::rank() == failing ? here : "rank " + std::to_string(failing) + " of ";
    EXPECT_NE(std::string(e.what()).find(want), std::string::npos)
        << "rank " << dist::rank() << ": " << e.what();
  }
}

TEST(ShardErrors, OneRankFailingBeforeAnyCollective) {
  const int failing = dist::size() - 1;
  // The failing rank raises while tracing; the others meet its failure at their first psum.
  auto f = [&](const Tensor& x) {
    lanes::check(dist::rank() != failing, "the function refused on this rank");
    return lanes::psum(x, "b");
  };
  expect_all_raise([&] { lanes::vmap(f, 0, 0, sharded())(lanes_data(0, 5)); }, failing,
                   "refused on this rank");
  // Without collectives the others finish their lanes and meet it at the closing agreement.
  auto g = [&](const Tensor& x) {
    lanes::check(dist::rank() != failing, "the function refused on this rank");
    return x * 2.0;
  };
  expect_all_raise([&] { lanes::vmap(g, 0, 0, sharded())(lanes_data(0, 5)); }, failing,
                   "refused on this rank");
  // Every rank is in step afterwards.
  const Tensor s = lanes::vmap([](const Tensor& x) { return lanes::psum(x, "b"); }, 0, 0,
                               sharded())(lanes_data(0, 4));
  expect_near(vec(s[0]), reference(4).sum, 1e-12);
}

TEST(ShardErrors, BadInputOnOneRank) {
  // The last rank passes examples of another shape; every rank raises instead of MPI combining
  // buffers of different sizes.
  const int failing = dist::size() - 1;
  const Tensor x = dist::rank() == failing ? lanes::ones({4, kD + 1}, DType::Float64)
                                           : lanes::ones({4, kD}, DType::Float64);
  try {
    lanes::vmap([](const Tensor& e) { return lanes::psum(e, "b"); }, 0, 0, sharded())(x);
    ADD_FAILURE() << "no error";
  } catch (const lanes::Error& e) {
    EXPECT_NE(std::string(e.what()).find("per-example shapes or dtypes differ"), std::string::npos)
        << e.what();
  }
  // A different batch size with ShardInputs::Whole.
  const Tensor y = lanes::ones({dist::rank() == failing ? 5 : 4, kD}, DType::Float64);
  try {
    lanes::vmap([](const Tensor& e) { return lanes::psum(e, "b"); }, 0, 0, sharded())(y);
    ADD_FAILURE() << "no error";
  } catch (const lanes::Error& e) {
    EXPECT_NE(std::string(e.what()).find("every rank passes the whole batch"), std::string::npos)
        << e.what();
  }
}

TEST(ShardErrors, GradThroughAShardedVmapIsAClearError) {
  auto total = [](const Tensor& x) {
    return lanes::sum(
        lanes::vmap([](const Tensor& e) { return lanes::psum(e * e, "b"); }, 0, 0, sharded())(x));
  };
  try {
    lanes::grad(total)(lanes_data(0, 5));
    ADD_FAILURE() << "no error";
  } catch (const lanes::Error& e) {
    EXPECT_NE(std::string(e.what()).find("differentiate inside it"), std::string::npos) << e.what();
  }
}

}  // namespace

int main(int argc, char** argv) {
  lanes::distributed::init(&argc, &argv);
  testing::InitGoogleTest(&argc, argv);
  const int failed = RUN_ALL_TESTS();
  lanes::distributed::finalize();
  return failed;
}
