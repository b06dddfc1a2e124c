// What control flow checks before it traces (issue 26, items 1 and 6):
// - trees whose structure is not fixed by the C++ type (vector sizes, map keys): branches and
//   loop bodies must return the structure they were given, or a lanes::Error names both sides
//   (leaves used to be matched by position, silently);
// - undefined tensors: the error names the op and the argument;
// - collectives inside a while_loop whose lanes stop on their own: over the vmap's own axis the
//   documented "sits inside a cond, while_loop or scan" message (item 3); over an outer axis, in
//   an operand or carry, they work (item 2).
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "lanes/lanes.h"

namespace {

using lanes::Tensor;
using VV = std::vector<std::vector<Tensor>>;
using Dict = std::map<std::string, Tensor>;

Tensor f64(std::vector<double> v) { return lanes::tensor(v, {int64_t(v.size())}); }

// Runs fn, expects a lanes::Error whose message holds every needle.
template <class Fn>
void expect_error(Fn fn, const std::vector<std::string>& needles) {
  try {
    fn();
    FAIL() << "no error";
  } catch (const lanes::Error& e) {
    const std::string m = e.what();
    for (const std::string& n : needles) EXPECT_NE(m.find(n), std::string::npos) << m;
  }
}

TEST(TreeStructure, CondNestedVectorsOfOtherSizesRaise) {
  const Tensor x = f64({1, 2});
  auto run = [&] {
    return lanes::cond(
        x[0] < 0.0,
        [](const Tensor& v) {
          return VV{{v, v * 2.0}, {v * 3.0}};
        },
        [](const Tensor& v) {
          return VV{{-v}, {v * -2.0, v * -3.0}};
        },
        x);
  };
  expect_error(run,
               {"cond", "the true branch", "the false branch", "[[*, *], [*]]", "[[*], [*, *]]"});
}

TEST(TreeStructure, CondMapsWithOtherKeysRaise) {
  const Tensor x = f64({1, 2});
  auto run = [&] {
    return lanes::cond(
        x[0] > 0.0,
        [](const Tensor& v) {
          return Dict{{"a", v}};
        },
        [](const Tensor& v) {
          return Dict{{"b", -v}};
        },
        x);
  };
  expect_error(run, {"cond", "{a: *}", "{b: *}"});
}

TEST(TreeStructure, CondUnderVmapRaisesToo) {
  auto f = [](const Tensor& x) {
    return lanes::cond(
        x > 0.0,
        [](const Tensor& v) {
          return Dict{{"a", v}};
        },
        [](const Tensor& v) {
          return Dict{{"b", -v}};
        },
        x);
  };
  expect_error([&] { return lanes::vmap(f)(f64({1, -2})); }, {"cond", "{a: *}", "{b: *}"});
}

TEST(TreeStructure, SwitchNamesBothBranches) {
  using Fn = std::function<std::vector<Tensor>(const Tensor&)>;
  std::vector<Fn> branches = {[](const Tensor& v) {
                                return std::vector<Tensor>{v, v};
                              },
                              [](const Tensor& v) {
                                return std::vector<Tensor>{v, v};
                              },
                              [](const Tensor& v) { return std::vector<Tensor>{v}; }};
  const Tensor i = lanes::tensor(std::vector<int32_t>{1}, {});
  expect_error([&] { return lanes::switch_case(i, branches, f64({1})); },
               {"switch_case", "branch 0", "branch 2", "[*, *]", "[*]"});
}

TEST(TreeStructure, EqualStructuresStillRunAndMatchTheLoop) {
  const Tensor x = f64({1, -2});
  auto f = [](const Tensor& v) {
    return lanes::cond(
        v > 0.0,
        [](const Tensor& a) {
          return VV{{a, a * 2.0}, {a * 3.0}};
        },
        [](const Tensor& a) {
          return VV{{-a, a * -2.0}, {a * -3.0}};
        },
        v);
  };
  const VV got = lanes::vmap(f)(x);
  ASSERT_EQ(got.size(), 2u);
  ASSERT_EQ(got[0].size(), 2u);
  ASSERT_EQ(got[1].size(), 1u);
  const double xs[] = {1, -2};
  for (int i = 0; i < 2; ++i) {
    const double s = xs[i] > 0 ? 1 : -1;
    EXPECT_EQ(got[0][0].to_vector<double>()[i], s * xs[i]);
    EXPECT_EQ(got[0][1].to_vector<double>()[i], s * 2 * xs[i]);
    EXPECT_EQ(got[1][0].to_vector<double>()[i], s * 3 * xs[i]);
  }
}

TEST(TreeStructure, WhileAndScanCarriesKeepTheirStructure) {
  const VV init{{f64({1}), f64({2})}, {f64({3})}};
  expect_error(
      [&] {
        return lanes::while_loop([](const VV& c) { return c[0][0][0] < 10.0; },
                                 [](const VV& c) {
                                   return VV{{c[0][0] * 2.0}, {c[0][1], c[1][0]}};
                                 },
                                 init);
      },
      {"while_loop", "the initial carry", "[[*, *], [*]]", "[[*], [*, *]]"});
  auto step = [](const VV& c, const Tensor& x) {
    return std::pair<VV, Tensor>(VV{{c[0][0] + x}, {c[0][1], c[1][0]}}, x);
  };
  expect_error(
      [&] {
        return lanes::scan(step, init, f64({1, 2, 3}));
      },
      {"scan", "the initial carry", "[[*, *], [*]]", "[[*], [*, *]]"});
}

TEST(UndefinedInputs, NameTheOpAndTheArgument) {
  const Tensor x = f64({1, 2}), none;
  auto same = [](const Tensor& v) { return v; };
  expect_error([&] { return lanes::cond(none, same, same, x); }, {"cond: pred is an undefined"});
  expect_error([&] { return lanes::cond(x[0] > 0.0, same, same, none); },
               {"cond: operand is an undefined"});
  expect_error(
      [&] {
        return lanes::cond(
            x[0] > 0.0, [](const Tensor& a, const Tensor&) { return a; },
            [](const Tensor& a, const Tensor&) { return a; }, x, none);
      },
      {"cond: operand leaf 1 is an undefined"});
  expect_error([&] { return x[none]; }, {"x[i]: the index i is an undefined"});
  expect_error([&] { return none[lanes::tensor(std::vector<int32_t>{0}, {})]; },
               {"x[i]: x is an undefined"});
  expect_error([&] { return none[0]; }, {"x is an undefined"});
  expect_error([&] { return lanes::dynamic_slice(x, {none}, {1}); },
               {"dynamic_slice: start 0 is an undefined"});
  expect_error([&] { return lanes::dynamic_slice(none, {}, {}); },
               {"dynamic_slice: x is an undefined"});
  expect_error(
      [&] {
        return lanes::while_loop([](const Tensor& c) { return c[0] < 3.0; },
                                 [](const Tensor& c) { return c + 1.0; }, none);
      },
      {"while_loop: init is an undefined"});
  auto step = [](const Tensor& c, const Tensor& xi) {
    return std::pair<Tensor, Tensor>(c + xi, xi);
  };
  expect_error([&] { return lanes::scan(step, x, none); }, {"scan: xs is an undefined"});
  using Fn = std::function<Tensor(const Tensor&)>;
  expect_error([&] { return lanes::switch_case(none, std::vector<Fn>{same}, x); },
               {"switch_case: index is an undefined"});
}

TEST(CollectivesInLaneLoops, OwnAxisGivesTheDocumentedMessage) {
  lanes::VmapOptions o;
  o.axis_name = "b";
  auto f = [](const Tensor& x) {
    return lanes::while_loop([](const Tensor& c) { return c < 10.0; },
                             [](const Tensor& c) { return c + lanes::psum(c, "b") * 0.0 + 1.0; },
                             x);
  };
  expect_error(
      [&] {
        return lanes::vmap(f, 0, 0, o)(f64({1, 5}));
      },
      {"psum over axis 'b' sits inside a cond, while_loop or scan", "outside the control"});
}

// An outer axis reaching the body as a carry (issue 26, item 2): each inner lane adds
// psum(w) = 3 until it reaches 10, as it does when w is captured.
TEST(CollectivesInLaneLoops, OuterAxisInACarryOrCapturedWorks) {
  lanes::VmapOptions o;
  o.axis_name = "outer";
  using Carry = std::pair<Tensor, Tensor>;
  auto as_carry = [](const Tensor& x, const Tensor& w) {
    return lanes::while_loop([](const Carry& c) { return c.first < 10.0; },
                             [](const Carry& c) {
                               return Carry(c.first + lanes::psum(c.second, "outer"), c.second);
                             },
                             Carry(x, w))
        .first;
  };
  auto carried = [&](const Tensor& w) {
    return lanes::vmap(as_carry, lanes::in_axes(0, lanes::none))(f64({1, 5}), w);
  };
  auto captured = [&](const Tensor& w) {
    auto inner = [&](const Tensor& x) {
      return lanes::while_loop([](const Tensor& c) { return c < 10.0; },
                               [&](const Tensor& c) { return c + lanes::psum(w, "outer"); }, x);
    };
    return lanes::vmap(inner)(f64({1, 5}));
  };
  const std::vector<double> want{10, 11, 10, 11};
  for (lanes::LoopStrategy s :
       {lanes::LoopStrategy::Auto, lanes::LoopStrategy::Mask, lanes::LoopStrategy::Compact}) {
    o.loop = s;
    EXPECT_EQ(lanes::vmap(carried, 0, 0, o)(f64({1, 2})).to_vector<double>(), want) << int(s);
    EXPECT_EQ(lanes::vmap(captured, 0, 0, o)(f64({1, 2})).to_vector<double>(), want) << int(s);
  }
}

// The trip count differs along the outer axis too: an inner lane runs while any of its outer
// examples does, the finished ones keeping their carry, and psum sees every outer example's
// carry at each step (jax's masked loop). Reference: that lockstep loop, written out.
TEST(CollectivesInLaneLoops, OuterAxisWithPerOuterTripCounts) {
  lanes::VmapOptions o;
  o.axis_name = "outer";
  using Carry = std::pair<Tensor, Tensor>;
  auto f = [](const Tensor& x, const Tensor& limit) {
    return lanes::while_loop([](const Carry& c) { return c.first < c.second; },
                             [](const Carry& c) {
                               return Carry(c.first + 1.0 + lanes::psum(c.first, "outer") * 0.01,
                                            c.second);
                             },
                             Carry(x, limit))
        .first;
  };
  const std::vector<double> xs{0, 2}, limits{3, 6};  // inner lanes; outer examples
  auto inner = [&](const Tensor& limit) {
    return lanes::vmap(f, lanes::in_axes(0, lanes::none))(f64(xs), limit);
  };
  const Tensor got = lanes::vmap(inner, 0, 0, o)(f64(limits));
  std::vector<double> want(4);
  for (size_t i = 0; i < xs.size(); ++i) {
    std::vector<double> c{xs[i], xs[i]};  // this inner lane's carry in each outer example
    while (c[0] < limits[0] || c[1] < limits[1]) {
      const double total = c[0] + c[1];
      for (size_t e = 0; e < 2; ++e)
        if (c[e] < limits[e]) c[e] = c[e] + 1.0 + total * 0.01;
    }
    want[i] = c[0], want[2 + i] = c[1];
  }
  const auto g = got.to_vector<double>();
  for (size_t k = 0; k < 4; ++k) EXPECT_NEAR(g[k], want[k], 1e-12) << k;
}

// The cond: the outer value reaches the branch as an operand.
TEST(CollectivesInLaneConds, OuterAxisInAnOperandWorks) {
  lanes::VmapOptions o;
  o.axis_name = "outer";
  auto f = [](const Tensor& x, const Tensor& w) {
    return lanes::cond(
        x[0] > 0.0, [](const Tensor& v, const Tensor& ww) { return v * lanes::psum(ww, "outer"); },
        [](const Tensor& v, const Tensor&) { return v; }, x, w);
  };
  const Tensor xs = lanes::tensor(std::vector<double>{1, 2, -1, 3, 4, 5}, {3, 2});
  auto inner = [&](const Tensor& w) {
    return lanes::vmap(f, lanes::in_axes(0, lanes::none))(xs, w);
  };
  for (lanes::CondStrategy s :
       {lanes::CondStrategy::Auto, lanes::CondStrategy::Select, lanes::CondStrategy::Partition}) {
    o.cond = s;
    const Tensor got = lanes::vmap(inner, 0, 0, o)(f64({1, 2}));  // psum(w) = 3
    const std::vector<double> lanes{3, 6, -1, 3, 12, 15};
    std::vector<double> want = lanes;
    want.insert(want.end(), lanes.begin(), lanes.end());
    EXPECT_EQ(got.to_vector<double>(), want) << int(s);
  }
}

}  // namespace
