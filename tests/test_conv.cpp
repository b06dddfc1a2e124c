// Convolution derivatives beyond the op table (tests/ops/conv.cpp has the values, first-order
// derivatives and vmap of conv2d and conv_transpose2d): the derivative primitives' own batching
// rules for every mapped/unmapped combination, second-order derivatives (derivatives of the
// transposed-conv and weight-gradient rules), and the weight gradient against a float64 loop on
// shapes that take each of the kernel's work-splitting paths.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <ostream>

#include "lanes/lanes.h"

namespace {

using lanes::DType;
using lanes::Shape;
using lanes::Tensor;

struct Case {
  const char* name;
  Shape x, w;
  lanes::Conv2dOptions conv;  // the params (conv2d's, or conv_transpose2d's without output_padding)
  bool transpose;             // the op is conv_transpose2d with the same params
  std::vector<int64_t> output_padding{0, 0};
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

Tensor apply(const Case& c, const Tensor& x, const Tensor& w) {
  if (!c.transpose) return lanes::conv2d(x, w, c.conv);
  lanes::ConvTranspose2dOptions t{c.conv.stride, c.conv.padding, c.output_padding, c.conv.dilation,
                                  c.conv.groups};
  return lanes::conv_transpose2d(x, w, t);
}

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"conv_strided_padded", {2, 4, 7, 6}, {6, 2, 3, 2}, {{2, 1}, {1, 1}, {1, 1}, 2}, false},
      {"conv_dilated", {1, 3, 8, 7}, {2, 3, 2, 3}, {{1, 2}, {0, 2}, {2, 1}, 1}, false},
      {"transpose_strided", {2, 4, 3, 4}, {4, 3, 3, 3}, {{2, 2}, {1, 0}, {1, 1}, 2}, true, {1, 0}},
      {"transpose_dilated", {1, 2, 4, 3}, {2, 3, 2, 3}, {{1, 2}, {0, 1}, {2, 1}, 1}, true, {1, 1}},
  };
  return all;
}

lanes::Tensor uniform(const Shape& s, uint64_t seed) {
  return lanes::random::uniform(lanes::random::key(seed), s, -1.0, 1.0, DType::Float64);
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  const auto x = a.to_vector<double>(), y = b.to_vector<double>();
  double m = 0;
  for (size_t i = 0; i < x.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]));
  return m;
}

double dot_all(const Tensor& a, const Tensor& b) { return lanes::sum(a * b).item<double>(); }

class ConvDerivatives : public ::testing::TestWithParam<Case> {};

// vmap of the vjp over every subset of {x, w, cotangent} mapped: the batching rules of the
// transposed conv (cotangent, weight) and of the weight gradient (input, cotangent) in every
// combination, against the loop of vjps.
TEST_P(ConvDerivatives, VmapOfVjpMatchesLoopForEveryMappedSubset) {
  const Case& c = GetParam();
  const int64_t batch = 3;
  const Tensor y0 = apply(c, uniform(c.x, 1), uniform(c.w, 2));
  std::vector<Tensor> xs, ws, cts;
  for (int64_t b = 0; b < batch; ++b) {
    xs.push_back(uniform(c.x, 10 + b));
    ws.push_back(uniform(c.w, 20 + b));
    cts.push_back(uniform(y0.shape(), 30 + b));
  }
  auto vjp_both = [&](const Tensor& x, const Tensor& w, const Tensor& ct) {
    auto [y, back] =
        lanes::vjp([&](const Tensor& a, const Tensor& b) { return apply(c, a, b); }, x, w);
    return back(ct);
  };
  for (int mask = 1; mask < 8; ++mask) {
    SCOPED_TRACE("mapped mask " + std::to_string(mask));
    const bool mx = mask & 1, mw = mask & 2, mc = mask & 4;
    std::vector<Tensor> dx_loop, dw_loop;
    for (int64_t b = 0; b < batch; ++b) {
      auto [dx, dw] = vjp_both(xs[mx ? b : 0], ws[mw ? b : 0], cts[mc ? b : 0]);
      dx_loop.push_back(dx);
      dw_loop.push_back(dw);
    }
    auto arg = [](const std::vector<Tensor>& v, bool mapped) {
      return mapped ? lanes::stack(v, 0) : v[0];
    };
    auto spec = [](bool mapped) {
      return mapped ? lanes::AxisSpec(0) : lanes::AxisSpec(lanes::none);
    };
    auto batched = lanes::vmap(vjp_both, lanes::in_axes(spec(mx), spec(mw), spec(mc)));
    auto [dx, dw] = batched(arg(xs, mx), arg(ws, mw), arg(cts, mc));
    EXPECT_LT(max_abs_diff(dx, lanes::stack(dx_loop, 0)), 1e-12);
    EXPECT_LT(max_abs_diff(dw, lanes::stack(dw_loop, 0)), 1e-12);
    const lanes::Explanation e = lanes::explain(batched, arg(xs, mx), arg(ws, mw), arg(cts, mc));
    EXPECT_TRUE(e.fallbacks.empty()) << e;
  }
}

// Second order, through the derivative rules of the derivative primitives: for
// h(x, w) = sum(sin(op(x, w))), the jvp of the gradient matches central differences of the
// gradient, and the vjp of the gradient agrees with that jvp (<v, H u> both ways).
TEST_P(ConvDerivatives, SecondOrderMatchesFiniteDifferences) {
  const Case& c = GetParam();
  const Tensor x = uniform(c.x, 3), w = uniform(c.w, 4);
  const Tensor ux = uniform(c.x, 5), uw = uniform(c.w, 6);
  const Tensor vx = uniform(c.x, 7), vw = uniform(c.w, 8);
  auto h = [&](const Tensor& a, const Tensor& b) { return lanes::sum(lanes::sin(apply(c, a, b))); };
  auto g = [&](const Tensor& a, const Tensor& b) { return lanes::grad(h, {0, 1})(a, b); };
  auto [gv, hu] = lanes::jvp(g, std::make_tuple(x, w), std::make_tuple(ux, uw));
  const double eps = 1e-5;
  auto [gpx, gpw] = g(x + ux * eps, w + uw * eps);
  auto [gmx, gmw] = g(x - ux * eps, w - uw * eps);
  const Tensor fd_x = (gpx - gmx) / (2 * eps), fd_w = (gpw - gmw) / (2 * eps);
  EXPECT_LT(max_abs_diff(std::get<0>(hu), fd_x), 1e-7);
  EXPECT_LT(max_abs_diff(std::get<1>(hu), fd_w), 1e-7);
  // Reverse over reverse: the vjp of the gradient with cotangent (vx, vw).
  auto [g2, back] = lanes::vjp(g, x, w);
  auto [hvx, hvw] = back(std::make_tuple(vx, vw));
  const double lhs = dot_all(vx, std::get<0>(hu)) + dot_all(vw, std::get<1>(hu));
  const double rhs = dot_all(hvx, ux) + dot_all(hvw, uw);
  EXPECT_NEAR(lhs, rhs, 1e-9 * (1 + std::abs(lhs)));
}

INSTANTIATE_TEST_SUITE_P(Conv, ConvDerivatives, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return std::string(info.param.name); });

// ---- the weight gradient against a float64 loop ----------------------------------------------

// dw[o, c, ki, kj] = sum_{n, oh, ow} ct[n, o, oh, ow] x[n, g Cg + c, oh s - p + ki d, ...].
std::vector<double> weight_grad_ref(const Tensor& xt, const Tensor& ctt, const Shape& ws,
                                    const lanes::Conv2dOptions& o) {
  const auto x = xt.to_vector<double>(), ct = ctt.to_vector<double>();
  const int64_t N = xt.shape(0), C = xt.shape(1), H = xt.shape(2), W = xt.shape(3);
  const int64_t O = ws[0], Cg = ws[1], kH = ws[2], kW = ws[3], OH = ctt.shape(2), OW = ctt.shape(3),
                Og = O / o.groups;
  std::vector<double> dw(O * Cg * kH * kW, 0.0);
  for (int64_t oc = 0; oc < O; ++oc)
    for (int64_t c = 0; c < Cg; ++c)
      for (int64_t ki = 0; ki < kH; ++ki)
        for (int64_t kj = 0; kj < kW; ++kj) {
          double s = 0;
          for (int64_t n = 0; n < N; ++n)
            for (int64_t oh = 0; oh < OH; ++oh)
              for (int64_t ow = 0; ow < OW; ++ow) {
                const int64_t ih = oh * o.stride[0] - o.padding[0] + ki * o.dilation[0];
                const int64_t iw = ow * o.stride[1] - o.padding[1] + kj * o.dilation[1];
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                s += ct[((n * O + oc) * OH + oh) * OW + ow] *
                     x[((n * C + oc / Og * Cg + c) * H + ih) * W + iw];
              }
          dw[((oc * Cg + c) * kH + ki) * kW + kj] = s;
        }
  return dw;
}

struct WeightCase {
  const char* name;
  Shape x, w;
  lanes::Conv2dOptions conv;
};

void PrintTo(const WeightCase& c, std::ostream* os) { *os << c.name; }

class ConvWeightGradient : public ::testing::TestWithParam<WeightCase> {};

// In float32 against float64: the vjp's weight cotangent, summed over the examples.
TEST_P(ConvWeightGradient, MatchesFloat64Loop) {
  const WeightCase& c = GetParam();
  const Tensor x = lanes::cast(uniform(c.x, 40), DType::Float32);
  const Tensor w = lanes::cast(uniform(c.w, 41), DType::Float32);
  auto f = [&](const Tensor& v) { return lanes::conv2d(x, v, c.conv); };
  auto [y, back] = lanes::vjp(f, w);
  const Tensor ct = lanes::cast(uniform(y.shape(), 42), DType::Float32);
  const Tensor dw = std::get<0>(back(ct));
  ASSERT_EQ(dw.shape(), c.w);
  ASSERT_EQ(dw.dtype(), DType::Float32);
  const auto want = weight_grad_ref(x, ct, c.w, c.conv);
  const auto got = dw.to_vector<double>();
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-4 * (1 + std::abs(want[i]))) << "element " << i;
}

INSTANTIATE_TEST_SUITE_P(
    Conv, ConvWeightGradient,
    ::testing::Values(
        // Many examples, one group: examples side by side, per-thread partial sums.
        WeightCase{"batch_sum", {64, 16, 14, 14}, {32, 16, 5, 5}, {{2, 2}, {2, 2}, {1, 1}, 1}},
        // Many groups of one example each (vmap's per-example weight gradients): whole groups
        // per thread.
        WeightCase{"groups_of_one", {1, 48, 9, 9}, {96, 3, 3, 3}, {{2, 2}, {1, 1}, {1, 1}, 16}},
        // One large example: threaded GEMM and im2col, in row tiles.
        WeightCase{"one_large", {1, 64, 40, 40}, {8, 64, 5, 5}, {{1, 1}, {0, 0}, {1, 1}, 1}},
        // 1x1: the input is the im2col matrix.
        WeightCase{"pointwise", {20, 6, 5, 7}, {4, 3, 1, 1}, {{1, 1}, {0, 0}, {1, 1}, 2}},
        // The cotangent covers fewer positions than the input allows (rows no window reached).
        WeightCase{"leftover_rows", {3, 2, 8, 9}, {3, 2, 3, 2}, {{3, 2}, {0, 1}, {2, 1}, 1}}),
    [](const auto& info) { return std::string(info.param.name); });

// ---- values over a sweep of small geometries, against float64 loops -------------------------

// y[n, o, oh, ow] = sum_{c, ki, kj} x[n, g Cg + c, oh s - p + ki d, ...] w[o, c, ki, kj].
std::vector<double> conv_ref(const Tensor& xt, const Tensor& wt, const lanes::Conv2dOptions& o,
                             int64_t OH, int64_t OW) {
  const auto x = xt.to_vector<double>(), w = wt.to_vector<double>();
  const int64_t N = xt.shape(0), C = xt.shape(1), H = xt.shape(2), W = xt.shape(3);
  const int64_t O = wt.shape(0), Cg = wt.shape(1), kH = wt.shape(2), kW = wt.shape(3),
                Og = O / o.groups;
  std::vector<double> y(N * O * OH * OW, 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oc = 0; oc < O; ++oc)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double s = 0;
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t ki = 0; ki < kH; ++ki)
              for (int64_t kj = 0; kj < kW; ++kj) {
                const int64_t ih = oh * o.stride[0] - o.padding[0] + ki * o.dilation[0];
                const int64_t iw = ow * o.stride[1] - o.padding[1] + kj * o.dilation[1];
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                s += x[((n * C + oc / Og * Cg + c) * H + ih) * W + iw] *
                     w[((oc * Cg + c) * kH + ki) * kW + kj];
              }
          y[((n * O + oc) * OH + oh) * OW + ow] = s;
        }
  return y;
}

// The transposed convolution scatters: out[n, g Og + o, ih, iw] += x[n, c, h, w] w[c, o, ki, kj]
// at ih = h s - p + ki d (PyTorch's weight layout (C_in, C_out / groups, kH, kW)). Positions no
// input reaches stay zero.
std::vector<double> transpose_ref(const Tensor& xt, const Tensor& wt,
                                  const lanes::ConvTranspose2dOptions& o, int64_t OH, int64_t OW) {
  const auto x = xt.to_vector<double>(), w = wt.to_vector<double>();
  const int64_t N = xt.shape(0), C = xt.shape(1), H = xt.shape(2), W = xt.shape(3);
  const int64_t Og = wt.shape(1), kH = wt.shape(2), kW = wt.shape(3), Cg = C / o.groups,
                O = Og * o.groups;
  std::vector<double> y(N * O * OH * OW, 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t v = 0; v < W; ++v)
          for (int64_t oc = 0; oc < Og; ++oc)
            for (int64_t ki = 0; ki < kH; ++ki)
              for (int64_t kj = 0; kj < kW; ++kj) {
                const int64_t ih = h * o.stride[0] - o.padding[0] + ki * o.dilation[0];
                const int64_t iw = v * o.stride[1] - o.padding[1] + kj * o.dilation[1];
                if (ih < 0 || ih >= OH || iw < 0 || iw >= OW) continue;
                y[((n * O + c / Cg * Og + oc) * OH + ih) * OW + iw] +=
                    x[((n * C + c) * H + h) * W + v] * w[((c * Og + oc) * kH + ki) * kW + kj];
              }
  return y;
}

// Every stride up to 3 against every padding up to 2 on images narrower than the stride: the
// staged layout once skipped the stride phases past min(stride, width), so conv2d read zeros for
// real pixels and conv_transpose2d (conv2d's input gradient) left output elements uninitialized.
TEST(ConvGeometrySweep, ValuesMatchFloat64Loops) {
  uint64_t seed = 60;
  int cases = 0;
  for (int64_t sh : {1, 2, 3})
    for (int64_t sw : {1, 2, 3})
      for (int64_t ph : {0, 1, 2})
        for (int64_t pw : {0, 1, 2})
          for (int64_t H : {1, 2, 4})
            for (int64_t W : {1, 3})
              for (int64_t k : {1, 2}) {
                const lanes::Conv2dOptions o{{sh, sw}, {ph, pw}, {1, k}, 1};
                const Tensor x = uniform({2, 2, H, W}, seed++), w = uniform({3, 2, k, 2}, seed++);
                const int64_t OH = (H + 2 * ph - (k - 1) - 1) / sh + 1;
                const int64_t OW = (W + 2 * pw - k * 1 - 1) / sw + 1;
                if (H + 2 * ph >= k && W + 2 * pw >= k + 1) {
                  const Tensor y = lanes::conv2d(x, w, o);
                  const auto want = conv_ref(x, w, o, OH, OW);
                  const auto got = y.to_vector<double>();
                  ASSERT_EQ(got.size(), want.size());
                  for (size_t i = 0; i < got.size(); ++i)
                    ASSERT_NEAR(got[i], want[i], 1e-12)
                        << "conv2d stride " << sh << "," << sw << " padding " << ph << "," << pw
                        << " image " << H << "x" << W << " element " << i;
                }
                const lanes::ConvTranspose2dOptions t{{sh, sw}, {ph, pw}, {0, 0}, {1, k}, 1};
                const Tensor ct = uniform({2, 3, H, W}, seed++);
                const int64_t TH = (H - 1) * sh - 2 * ph + (k - 1) + 1;
                const int64_t TW = (W - 1) * sw - 2 * pw + k * 1 + 1;
                if (TH <= 0 || TW <= 0) continue;
                const Tensor z = lanes::conv_transpose2d(ct, w, t);
                const auto want = transpose_ref(ct, w, t, TH, TW);
                const auto got = z.to_vector<double>();
                ASSERT_EQ(got.size(), want.size());
                for (size_t i = 0; i < got.size(); ++i)
                  ASSERT_NEAR(got[i], want[i], 1e-12)
                      << "conv_transpose2d stride " << sh << "," << sw << " padding " << ph << ","
                      << pw << " image " << H << "x" << W << " element " << i;
                ++cases;
              }
  EXPECT_EQ(cases, 461);  // the transposed geometries with a non-empty output
}

// The reproducer: W = 1, stride 2, padding 1 lies in stride phase 1 only.
TEST(ConvGeometrySweep, TransposeZeroesPositionsNoInputReaches) {
  lanes::ConvTranspose2dOptions t;
  t.stride = {1, 2};
  t.padding = {0, 1};
  const Tensor y = lanes::conv_transpose2d(lanes::ones({1, 3, 2}, DType::Float64),
                                           lanes::ones({1, 1, 1, 1}, DType::Float64), t);
  ASSERT_EQ(y.shape(), (Shape{1, 3, 1}));
  // Output column 0 is padded position 1, which input column w reaches at 2 w: never.
  for (double v : y.to_vector<double>()) EXPECT_EQ(v, 0.0);
}

// Found by test_fuzz (seed 1108): conv_transpose2d of an input of height or width 0 has outputs
// (all padding), but its input gradient, conv2d cut to the input's size, met a kernel bigger than
// the cotangent and threw, and the kernel offset a null pointer (UBSan). Its value is zeros and
// every derivative an empty tensor of the input's shape.
TEST(ConvEmptyImage, TransposeOfZeroHeightOrWidthHasEmptyInputGradient) {
  lanes::ConvTranspose2dOptions t;
  t.stride = {1, 2};
  const Tensor w = lanes::ones({1, 2, 2, 3}, DType::Float64);
  auto f = [&](const Tensor& x) { return lanes::conv_transpose2d(x, w, t); };
  auto loss = [&](const Tensor& x) { return lanes::sum(f(x)); };
  for (const Shape& s : {Shape{1, 1, 0, 2}, Shape{2, 1, 2, 0}}) {
    SCOPED_TRACE(lanes::shape_str(s));
    const Tensor x = lanes::ones(s, DType::Float64);
    for (double v : f(x).to_vector<double>()) EXPECT_EQ(v, 0.0);  // all padding
    EXPECT_EQ(lanes::grad(loss)(x).shape(), s);
    // The weight's gradient sums over no input pixel: zero.
    auto by_weight = [&](const Tensor& k) { return lanes::sum(lanes::conv_transpose2d(x, k, t)); };
    for (double v : lanes::grad(by_weight)(w).to_vector<double>()) EXPECT_EQ(v, 0.0);
    Shape jac = f(x).shape();
    jac.insert(jac.end(), s.begin(), s.end());
    EXPECT_EQ(lanes::jacrev(f)(x).shape(), jac);
    Shape batched = s;
    batched.insert(batched.begin(), 3);
    EXPECT_EQ(lanes::vmap(lanes::grad(loss))(lanes::ones(batched, DType::Float64)).shape(),
              batched);
  }
}

// Results do not depend on the thread count (work splitting differs, sums are the same up to
// rounding in float64).
TEST(ConvThreads, OneThreadMatchesAll) {
  const Tensor x = uniform({64, 8, 10, 10}, 50), w = uniform({8, 8, 3, 3}, 51);
  const lanes::Conv2dOptions o{{2, 2}, {1, 1}, {1, 1}, 1};
  auto run = [&] {
    auto [y, back] =
        lanes::vjp([&](const Tensor& a, const Tensor& b) { return lanes::conv2d(a, b, o); }, x, w);
    auto [dx, dw] = back(lanes::sin(y));
    return std::make_tuple(y, dx, dw);
  };
  const int threads = lanes::num_threads();
  lanes::set_num_threads(1);
  const auto one = run();
  lanes::set_num_threads(threads);
  const auto all = run();
  EXPECT_LT(max_abs_diff(std::get<0>(one), std::get<0>(all)), 1e-12);
  EXPECT_LT(max_abs_diff(std::get<1>(one), std::get<1>(all)), 1e-12);
  EXPECT_LT(max_abs_diff(std::get<2>(one), std::get<2>(all)), 1e-12);
}

}  // namespace
