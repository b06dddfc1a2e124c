// Differential fuzzing (issue 17): random programs of 3-10 steps, each an op of the op table
// (tests/ops/*.cpp) or a control-flow construct (cond with a per-example predicate, while_loop
// with a data-dependent trip count, scan), over random shapes (size-0 and size-1 dims included),
// axes (negative included) and dtypes. Every check compares lanes against an independent
// reference, never against itself:
// - vmap (called three times: eager first sighting, then the cached optimized entry) and
//   compile(vmap) against the per-example loop of eager calls;
// - grad, jacrev and jacfwd against central finite differences in float64;
// - vmap(grad) against the finite-difference gradient of every example.
// A failure prints the seed and the program. The fixed seeds run in ctest; `test_fuzz --seconds N`
// (or LANES_FUZZ_SECONDS=N) then runs fresh seeds for N seconds, and `--seeds A:B` (or
// LANES_FUZZ_SEEDS=A:B) replaces the fixed range (CI's TSan job runs a smaller one).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <set>
#include <sstream>

#include "op_table.h"
#include "same_bits.h"

using namespace optable;

namespace {

struct Settings {
  uint64_t first = 0, last = 15000;  // the fixed seed range [first, last)
  double seconds = 0;                // then random seeds for this long
  bool print = false;                // print every program (--print)
};
Settings settings;

// ---- programs -----------------------------------------------------------------------------------

using Fn = std::function<Tensor(const Tensor&)>;

struct Step {
  std::string op;    // the op-table op (or control-flow construct) it exercises
  std::string text;  // how the program prints it
  Fn fn;
};

struct Program {
  uint64_t seed = 0;
  DType dtype = DType::Float64;
  Shape example;  // the per-example input shape
  int64_t in_axis = 0;
  std::vector<Tensor> examples;  // the batch (maybe empty)
  Tensor probe;                  // one more example: the result shape of an empty batch, grads
  std::vector<Step> steps;

  Tensor run(const Tensor& x) const {
    Tensor y = x;
    for (const Step& s : steps) y = s.fn(y);
    return y;
  }
  std::string str() const {
    std::ostringstream os;
    os << "seed " << seed << ": x " << lanes::dtype_name(dtype) << lanes::shape_str(example)
       << ", batch " << examples.size() << " at in_axis " << in_axis << "\n";
    for (const Step& s : steps) os << "  x = " << s.text << "\n";
    return os.str();
  }
};

struct Rng {
  std::mt19937_64 gen;
  int64_t below(int64_t n) { return n <= 0 ? 0 : int64_t(gen() % uint64_t(n)); }
  bool coin(int64_t one_in = 2) { return below(one_in) == 0; }
  int64_t axis(int64_t rank) {  // a valid axis of `rank`, negative half the time
    const int64_t a = below(rank);
    return coin() ? a - rank : a;
  }
};

std::string shape_text(const Shape& s) { return lanes::shape_str(s); }

// A shape that broadcasts against `s`: a suffix of it with some dims made 1 (maybe 0-d).
Shape broadcastable(const Shape& s, Rng& r) {
  Shape out(s.end() - r.below(int64_t(s.size()) + 1), s.end());
  for (int64_t& d : out)
    if (r.coin(3)) d = 1;
  return out;
}

Step unary(Rng& r) {
  static const std::vector<std::pair<const char*, Tensor (*)(const Tensor&)>> ops = {
      {"sin", lanes::sin},         {"cos", lanes::cos},           {"tanh", lanes::tanh},
      {"sigmoid", lanes::sigmoid}, {"negative", lanes::negative}, {"exp", lanes::exp},
      {"square", lanes::square}};
  const auto& [name, fn] = ops[r.below(int64_t(ops.size()))];
  return {name, std::string(name) + "(x)", [fn = fn](const Tensor& x) { return fn(x); }};
}

// x op c for a captured constant c of a broadcastable shape (float, or int32: promotion).
Step binary(const Shape& s, DType dtype, Rng& r, Gen& gen) {
  static const std::vector<std::pair<const char*, Tensor (*)(const Tensor&, const Tensor&)>> ops = {
      {"add", lanes::add},
      {"subtract", lanes::subtract},
      {"multiply", lanes::multiply},
      {"divide", lanes::divide}};
  const auto& [name, fn] = ops[r.below(int64_t(ops.size()))];
  const Shape cs = broadcastable(s, r);
  const bool divide = std::string(name) == "divide";
  const DType cd = r.coin(4) ? DType::Int32 : dtype;
  const Tensor c = divide ? gen.nonzero(cs, cd, 1.0, 2.0) : gen.uniform(cs, cd, -2, 2);
  const bool left = !divide && r.coin();
  std::string text = std::string(name) + (left ? "(c, x)" : "(x, c)") + ", c " +
                     lanes::dtype_name(cd) + shape_text(cs);
  return {name, text, [fn = fn, c, left](const Tensor& x) { return left ? fn(c, x) : fn(x, c); }};
}

Step reduction(const Shape& s, Rng& r) {
  static const std::vector<
      std::pair<const char*, Tensor (*)(const Tensor&, const lanes::Axes&, bool)>>
      ops = {{"sum", lanes::sum},
             {"mean", lanes::mean},
             {"max", lanes::max},
             {"logsumexp", lanes::logsumexp}};
  const auto& [name, fn] = ops[r.below(int64_t(ops.size()))];
  const bool all = s.empty() || r.coin(4), keep = r.coin();
  const int64_t axis = all ? 0 : r.axis(int64_t(s.size()));
  std::string text = std::string(name) + "(x, " + (all ? "all" : std::to_string(axis)) +
                     (keep ? ", keepdims)" : ")");
  return {name, text, [fn = fn, all, axis, keep](const Tensor& x) {
            return all ? fn(x, lanes::Axes{}, keep) : fn(x, axis, keep);
          }};
}

Step reshaping(const Shape& s, Rng& r) {
  const int64_t rank = int64_t(s.size());
  switch (r.below(4)) {
    case 0: {
      const int64_t a = r.coin() ? r.below(rank + 1) : r.below(rank + 1) - rank - 1;
      return {"expand_dims", "expand_dims(x, " + std::to_string(a) + ")",
              [a](const Tensor& x) { return lanes::expand_dims(x, a); }};
    }
    case 1: {
      std::vector<int64_t> perm(s.size());
      for (int64_t i = 0; i < rank; ++i) perm[i] = i;
      std::shuffle(perm.begin(), perm.end(), r.gen);
      std::string text = "transpose(x, {";
      for (int64_t p : perm) text += std::to_string(p) + ",";
      return {"transpose", text + "})",
              [perm](const Tensor& x) { return lanes::transpose(x, perm); }};
    }
    case 2: {  // to (numel) or to (d0 * d1, rest...)
      Shape to = {lanes::shape_numel(s)};
      if (rank >= 2 && r.coin()) {
        to = Shape(s.begin() + 1, s.end());
        to[0] *= s[0];
      }
      return {"reshape", "reshape(x, " + shape_text(to) + ")",
              [to](const Tensor& x) { return lanes::reshape(x, to); }};
    }
    default: {
      const int64_t k = r.below(3);  // 0: the result is empty from here on
      Shape to = s;
      to.insert(to.begin(), k);
      return {"broadcast_to", "broadcast_to(x, " + shape_text(to) + ")",
              [to](const Tensor& x) { return lanes::broadcast_to(x, to); }};
    }
  }
}

Step slicing(const Shape& s, Rng& r) {
  const int64_t rank = int64_t(s.size());
  const int64_t axis = r.axis(rank), d = s[size_t(axis < 0 ? axis + rank : axis)];
  switch (r.below(3)) {
    case 0: {
      const int64_t start = r.below(d + 1), stop = start + r.below(d - start + 1),
                    step = 1 + r.below(2);
      return {"slice_axis",
              "slice_axis(x, " + std::to_string(axis) + ", " + std::to_string(start) + ", " +
                  std::to_string(stop) + ", " + std::to_string(step) + ")",
              [=](const Tensor& x) { return lanes::slice_axis(x, axis, start, stop, step); }};
    }
    case 1: {
      Shape lo(s.size()), hi(s.size());
      for (size_t i = 0; i < s.size(); ++i) lo[i] = r.below(2), hi[i] = r.below(2);
      return {"pad", "pad(x, " + shape_text(lo) + ", " + shape_text(hi) + ")",
              [lo, hi](const Tensor& x) { return lanes::pad(x, lo, hi); }};
    }
    default:
      return {"concatenate", "concatenate({x, sin(x)}, " + std::to_string(axis) + ")",
              [axis](const Tensor& x) {
                return lanes::concatenate({x, lanes::sin(x)}, axis);
              }};
  }
}

Step linear(const Shape& s, DType dtype, Rng& r, Gen& gen) {
  if (r.coin()) {
    const int64_t a = r.axis(int64_t(s.size()));
    return {"softmax", "softmax(x, " + std::to_string(a) + ")",
            [a](const Tensor& x) { return lanes::softmax(x, a); }};
  }
  const Tensor w = gen.uniform({s.back(), 1 + r.below(3)}, dtype, -1, 1);
  return {"matmul", "matmul(x, w " + shape_text(w.shape()) + ")",
          [w](const Tensor& x) { return lanes::matmul(x, w); }};
}

// The last two axes as images (P, 1, H, W): conv2d or conv_transpose2d (its input gradient) with
// random strides, padding and kernel sizes; geometries with no output are rejected by lanes.
Step convolution(const Shape& s, DType dtype, Rng& r, Gen& gen) {
  const int64_t rank = int64_t(s.size()), h = s[size_t(rank - 2)], w = s[size_t(rank - 1)];
  int64_t images = 1;
  for (int64_t i = 0; i < rank - 2; ++i) images *= s[size_t(i)];
  const Shape as_images = {images, 1, h, w};
  const std::vector<int64_t> stride = {1 + r.below(2), 1 + r.below(3)},
                             padding = {r.below(2), r.below(2)};
  const int64_t out = 1 + r.below(2), kh = 1 + r.below(2), kw = 1 + r.below(3);
  const std::string geometry = ", stride {" + std::to_string(stride[0]) + "," +
                               std::to_string(stride[1]) + "}, padding {" +
                               std::to_string(padding[0]) + "," + std::to_string(padding[1]) +
                               "}) of reshape(x, " + shape_text(as_images) + ")";
  if (r.coin()) {
    lanes::Conv2dOptions o;
    o.stride = stride, o.padding = padding;
    const Tensor k = gen.uniform({out, 1, kh, kw}, dtype, -1, 1);
    return {"conv2d", "conv2d(w " + shape_text(k.shape()) + geometry,
            [=](const Tensor& x) { return lanes::conv2d(lanes::reshape(x, as_images), k, o); }};
  }
  lanes::ConvTranspose2dOptions o;
  o.stride = stride, o.padding = padding;
  o.output_padding = {r.below(stride[0]), r.below(stride[1])};
  const Tensor k = gen.uniform({1, out, kh, kw}, dtype, -1, 1);
  return {
      "conv_transpose2d",
      "conv_transpose2d(w " + shape_text(k.shape()) + ", output_padding {" +
          std::to_string(o.output_padding[0]) + "," + std::to_string(o.output_padding[1]) + "}" +
          geometry,
      [=](const Tensor& x) { return lanes::conv_transpose2d(lanes::reshape(x, as_images), k, o); }};
}

// take along an axis with captured int32 indices, or where with a captured mask.
Step selection(const Shape& s, DType dtype, Rng& r, Gen& gen) {
  const int64_t rank = int64_t(s.size()), axis = r.axis(rank);
  const int64_t d = s[size_t(axis < 0 ? axis + rank : axis)];
  if (d > 0 && r.coin()) {
    const Tensor idx = gen.uniform({r.below(4)}, DType::Int32, 0, double(d - 1));
    return {"take",
            "take(x, indices " + shape_text(idx.shape()) + ", " + std::to_string(axis) + ")",
            [=](const Tensor& x) { return lanes::take(x, idx, axis); }};
  }
  const Tensor mask = gen.uniform(broadcastable(s, r), DType::Bool);
  const Tensor c = gen.uniform(broadcastable(s, r), dtype, -1, 1);
  return {"where",
          "where(mask " + shape_text(mask.shape()) + ", x, c " + shape_text(c.shape()) + ")",
          [=](const Tensor& x) { return lanes::where(mask, x, c); }};
}

Step control_flow(const Shape& s, Rng& r) {
  // Thresholds off the round values that softmax sums and the like land on exactly, where the
  // rounding of the batched reduction would legitimately pick the other branch or trip count.
  const double c = double(r.below(5)) / 2 - 0.9;
  switch (s.empty() ? r.below(2) : r.below(3)) {
    case 0:
      return {"cond", "cond(sum(x) > " + std::to_string(c) + ", sin(x) * 2, x * x - 1)",
              [c](const Tensor& x) {
                return lanes::cond(
                    lanes::sum(x) > c, [](const Tensor& v) { return lanes::sin(v) * 2.0; },
                    [](const Tensor& v) { return v * v - 1.0; }, x);
              }};
    case 1:  // a trip count that differs per example
      return {"while_loop",
              "while_loop(i < clip(floor(2.3 sum |x| + 0.35), 0, 4)): x = 0.8 x + 0.3 sin(x)",
              [](const Tensor& x) {
                using C = std::tuple<Tensor, Tensor, Tensor>;
                const Tensor total = lanes::sum(lanes::abs(x)) * 2.3 + 0.35;
                const Tensor n = lanes::clip(lanes::floor(total), 0, 4);
                const C init(lanes::zeros({}, x.dtype()), n, x);
                const C out = lanes::while_loop(
                    [](const C& k) { return std::get<0>(k) < std::get<1>(k); },
                    [](const C& k) {
                      const Tensor& v = std::get<2>(k);
                      return C(std::get<0>(k) + 1.0, std::get<1>(k), v * 0.8 + lanes::sin(v) * 0.3);
                    },
                    init);
                return std::get<2>(out);
              }};
    default:  // over the leading axis: carry = tanh(carry / 2 + x_t), y_t = 1.5 carry
      return {"scan", "scan over axis 0: carry = tanh(carry / 2 + x_t), y_t = 1.5 carry",
              [](const Tensor& x) {
                const Tensor init = lanes::sum(x, 0) * 0.0;  // shape x.shape[1:], even if empty
                auto body = [](const Tensor& carry, const Tensor& xt) {
                  const Tensor next = lanes::tanh(carry * 0.5 + xt);
                  return std::make_pair(next, next * 1.5);
                };
                return lanes::scan(body, init, x).second;
              }};
  }
}

Step random_step(const Shape& s, DType dtype, Rng& r, Gen& gen) {
  const bool ranked = !s.empty();
  switch (r.below(10)) {
    case 0:
    case 1:
      return unary(r);
    case 2:
      return binary(s, dtype, r, gen);
    case 3:
      return reduction(s, r);
    case 4:
      return reshaping(s, r);
    case 5:
      return ranked ? slicing(s, r) : unary(r);
    case 6:
      return ranked ? linear(s, dtype, r, gen) : binary(s, dtype, r, gen);
    case 7:
      return ranked ? selection(s, dtype, r, gen) : unary(r);
    case 8:
      return s.size() >= 2 ? convolution(s, dtype, r, gen) : binary(s, dtype, r, gen);
    default:
      return control_flow(s, r);
  }
}

Shape random_shape(Rng& r) {
  static const int64_t dims[] = {0, 1, 1, 2, 2, 3, 4};
  Shape s(size_t(r.below(4)));
  for (int64_t& d : s) d = dims[r.below(7)];
  if (lanes::shape_numel(s) == 0 && !r.coin(3)) s.clear();  // empty inputs: about 1 in 10
  return s;
}

bool tame(const Tensor& y) {  // finite and small: finite differences stay meaningful
  if (!lanes::is_floating(y.dtype()) || y.numel() > 64) return false;
  for (double v : y.to_vector<double>())
    if (!std::isfinite(v) || std::abs(v) > 1e3) return false;
  return true;
}

// Draws steps and keeps those that every example (and the probe) accepts with a tame result; the
// per-example values found on the way are the loop reference.
Program generate(uint64_t seed, std::vector<Tensor>& loop) {
  Program p;
  p.seed = seed;
  Rng r{std::mt19937_64(seed)};
  Gen gen;
  gen.rng.seed(seed * 7919 + 1);
  p.dtype = r.coin(4) ? DType::Float32 : DType::Float64;
  p.example = random_shape(r);
  const int64_t batch = r.coin(8) ? 0 : 1 + r.below(3);
  const int64_t rank = int64_t(p.example.size());
  p.in_axis = r.coin() ? r.below(rank + 1) : r.below(rank + 1) - rank - 1;
  for (int64_t b = 0; b < batch; ++b)
    p.examples.push_back(gen.uniform(p.example, p.dtype, -1.5, 1.5));
  p.probe = gen.uniform(p.example, p.dtype, -1.5, 1.5);
  std::vector<Tensor> values = p.examples;
  values.push_back(p.probe);
  const size_t length = size_t(3 + r.below(8));
  for (int attempt = 0; attempt < 100 && p.steps.size() < length; ++attempt) {
    Step step = random_step(values.back().shape(), p.dtype, r, gen);
    std::vector<Tensor> next;
    try {
      for (const Tensor& v : values) next.push_back(step.fn(v));
    } catch (const lanes::Error&) {  // not valid here (max over an empty axis, ...)
      continue;
    }
    bool ok = true;
    for (const Tensor& v : next) ok = ok && tame(v);
    if (!ok) continue;
    values = std::move(next);
    p.steps.push_back(std::move(step));
  }
  loop.assign(values.begin(), values.end() - 1);
  return p;
}

// ---- checks -------------------------------------------------------------------------------------

int64_t positive(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

// `xs` stacked at `axis` (of the stacked rank); an empty batch gives a 0-size axis there.
Tensor stacked(const std::vector<Tensor>& xs, const Shape& example, DType dtype, int64_t axis) {
  const int64_t at = positive(axis, int64_t(example.size()) + 1);
  if (!xs.empty()) return lanes::stack(xs, at);
  Shape s = example;
  s.insert(s.begin() + at, 0);
  return lanes::zeros(s, dtype);
}

::testing::AssertionResult close(const Tensor& got, const Tensor& want, double rtol) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape())
    return ::testing::AssertionFailure()
           << "got " << lanes::dtype_name(got.dtype()) << lanes::shape_str(got.shape())
           << ", expected " << lanes::dtype_name(want.dtype()) << lanes::shape_str(want.shape());
  const auto g = got.to_vector<double>(), w = want.to_vector<double>();
  double scale = 1;
  for (double v : w) scale = std::max(scale, std::abs(v));
  for (size_t i = 0; i < g.size(); ++i)
    if (!(std::abs(g[i] - w[i]) <= rtol * scale))
      return ::testing::AssertionFailure()
             << "element " << i << ": " << g[i] << ", expected " << w[i];
  return ::testing::AssertionSuccess();
}

void check_batched(const Program& p, const std::vector<Tensor>& loop) {
  const double rtol = p.dtype == DType::Float32 ? 2e-4 : 1e-10;
  const Tensor xs = stacked(p.examples, p.example, p.dtype, p.in_axis);
  const Tensor y0 = p.run(p.probe);
  const Tensor want = stacked(loop, y0.shape(), y0.dtype(), 0);
  auto f = [&p](const Tensor& x) { return p.run(x); };
  const auto batched = lanes::vmap(f, p.in_axis);
  for (int call = 0; call < 3; ++call)  // eager first sighting, then the cached entry
    EXPECT_TRUE(close(batched(xs), want, rtol)) << "vmap, call " << call;
  const auto compiled = lanes::compile(lanes::vmap(f, p.in_axis));
  for (int call = 0; call < 2; ++call)
    EXPECT_TRUE(close(compiled(xs), want, rtol)) << "compile(vmap), call " << call;
}

// d f_j / d x_i by central differences, jac[i][j]; empty where f is not smooth at x (the two
// step sizes disagree: a cond or trip count switching, a max tie), which the checks then skip.
std::vector<std::vector<double>> fd_jacobian(const Program& p, const Tensor& x) {
  const std::vector<double> x0 = x.to_vector<double>();
  auto at = [&](size_t i, double h) {
    std::vector<double> v = x0;
    v[i] += h;
    return p.run(lanes::tensor(v, x.shape())).to_vector<double>();
  };
  std::vector<std::vector<double>> jac(x0.size());
  for (size_t i = 0; i < x0.size(); ++i) {
    const auto a = at(i, 1e-6), b = at(i, -1e-6), c = at(i, 1e-5), d = at(i, -1e-5);
    std::vector<double> col(a.size());
    bool smooth = true;
    for (size_t j = 0; j < a.size(); ++j) {
      col[j] = (a[j] - b[j]) / 2e-6;
      const double coarse = (c[j] - d[j]) / 2e-5;
      smooth = smooth && std::abs(col[j] - coarse) <= 1e-5 * (1 + std::abs(coarse));
    }
    if (smooth) jac[i] = std::move(col);
  }
  return jac;
}

// Compares got[i * stride + j * step] with want(i, j) over the smooth columns of jac.
template <class Want>
::testing::AssertionResult matches_fd(const std::vector<double>& got,
                                      const std::vector<std::vector<double>>& jac, size_t stride,
                                      size_t step, const Want& want) {
  for (size_t i = 0; i < jac.size(); ++i) {
    if (jac[i].empty()) continue;
    for (size_t j = 0; j < (step == 0 ? 1 : jac[i].size()); ++j) {
      const double w = want(i, j), g = got[i * stride + j * step];
      if (!(std::abs(g - w) <= 2e-5 * (1 + std::abs(w))))
        return ::testing::AssertionFailure() << "input element " << i << ", output element " << j
                                             << ": " << g << ", finite differences " << w;
    }
  }
  return ::testing::AssertionSuccess();
}

void check_derivatives(const Program& p) {
  const Tensor y0 = p.run(p.probe);
  Gen gen;
  gen.rng.seed(p.seed);
  const Tensor w = gen.uniform(y0.shape(), DType::Float64, -1, 1);
  const std::vector<double> wv = w.to_vector<double>();
  auto f = [&p](const Tensor& x) { return p.run(x); };
  auto loss = [&p, w](const Tensor& x) { return lanes::sum(p.run(x) * w); };
  const size_t n = size_t(p.probe.numel()), m = wv.size();
  // grad and the Jacobians at the probe.
  const auto jac = fd_jacobian(p, p.probe);
  auto jt_w = [&](const std::vector<std::vector<double>>& J) {
    return [&J, &wv](size_t i, size_t) {
      double s = 0;
      for (size_t j = 0; j < J[i].size(); ++j) s += J[i][j] * wv[j];
      return s;
    };
  };
  const Tensor g = lanes::grad(loss)(p.probe);
  ASSERT_EQ(g.shape(), p.example) << "grad";
  EXPECT_TRUE(matches_fd(g.to_vector<double>(), jac, 1, 0, jt_w(jac))) << "grad";
  auto entry = [&](size_t i, size_t j) { return jac[i][j]; };
  const Tensor jr = lanes::jacrev(f)(p.probe), jf = lanes::jacfwd(f)(p.probe);
  EXPECT_EQ(jr.numel(), int64_t(n * m)) << "jacrev";
  EXPECT_EQ(jf.numel(), int64_t(n * m)) << "jacfwd";
  if (jr.numel() == int64_t(n * m))  // jac[i][j] is jr[j, i]
    EXPECT_TRUE(matches_fd(jr.to_vector<double>(), jac, 1, n, entry)) << "jacrev";
  if (jf.numel() == int64_t(n * m))
    EXPECT_TRUE(matches_fd(jf.to_vector<double>(), jac, 1, n, entry)) << "jacfwd";
  // vmap(grad): every example against its own finite differences.
  const Tensor xs = stacked(p.examples, p.example, p.dtype, p.in_axis);
  const Tensor gs = lanes::vmap(lanes::grad(loss), p.in_axis)(xs);
  Shape want_shape = p.example;
  want_shape.insert(want_shape.begin(), int64_t(p.examples.size()));
  ASSERT_EQ(gs.shape(), want_shape) << "vmap(grad)";
  const auto got = gs.to_vector<double>();
  for (size_t b = 0; b < p.examples.size(); ++b) {
    const auto jb = fd_jacobian(p, p.examples[b]);
    const std::vector<double> row(got.begin() + int64_t(b * n), got.begin() + int64_t((b + 1) * n));
    EXPECT_TRUE(matches_fd(row, jb, 1, 0, jt_w(jb))) << "vmap(grad), example " << b;
  }
}

int failed_parts() {  // failures recorded so far in the running test
  return ::testing::UnitTest::GetInstance()->current_test_info()->result()->total_part_count();
}

// Runs one seed; returns whether every check passed.
bool run_seed(uint64_t seed) {
  std::vector<Tensor> loop;
  Program p;
  try {
    p = generate(seed, loop);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "seed " << seed << ": generating the program threw " << e.what();
    return false;
  }
  if (settings.print) std::printf("%s", p.str().c_str());
  SCOPED_TRACE(p.str());
  const int before = failed_parts();
  try {
    check_batched(p, loop);
    // Finite differences need float64 and few enough inputs to stay quick.
    if (p.dtype == DType::Float64 && p.probe.numel() <= 24) check_derivatives(p);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw " << e.what();
  }
  return failed_parts() == before;
}

// ---- the same bits everywhere (lanes/determinism.h) --------------------------------------------

// With batch invariance on: the per-example loop's bits under every cond and loop strategy, chunk
// sizes 1, 2, B - 1 and B, 1 and 2 threads, eager and compiled. Off: the same bits on repeated
// calls and at 1 and 2 threads.
void check_same_bits(const Program& p) {
  const Tensor xs = stacked(p.examples, p.example, p.dtype, p.in_axis);
  auto f = [&p](const Tensor& x) { return p.run(x); };
  auto with = [&](lanes::CondStrategy c, lanes::LoopStrategy l, std::optional<int64_t> chunk) {
    lanes::VmapOptions o;
    o.cond = c, o.loop = l, o.chunk_size = chunk;
    return lanes::vmap(f, p.in_axis, 0, o);
  };
  using C = lanes::CondStrategy;
  using L = lanes::LoopStrategy;
  const int64_t batch = int64_t(p.examples.size());
  const Tensor first = with(C::Auto, L::Auto, {})(xs);  // invariance off
  lanes::set_num_threads(1);
  EXPECT_TRUE(same_bits(with(C::Auto, L::Auto, {})(xs), first)) << "1 thread";
  lanes::set_num_threads(2);
  EXPECT_TRUE(same_bits(with(C::Auto, L::Auto, {})(xs), first)) << "a second call";
  lanes::set_batch_invariant(true);
  std::vector<Tensor> loop;  // the per-example loop, its products in the invariant order too
  for (const Tensor& x : p.examples) loop.push_back(p.run(x));
  const Tensor y0 = p.run(p.probe);
  const Tensor want = stacked(loop, y0.shape(), y0.dtype(), 0);
  for (C c : {C::Auto, C::Select, C::Partition})
    for (L l : {L::Auto, L::Mask, L::Compact})
      EXPECT_TRUE(same_bits(with(c, l, {})(xs), want)) << "strategies " << int(c) << int(l);
  for (int64_t chunk : {int64_t{1}, int64_t{2}, batch - 1, batch})
    if (chunk >= 1) EXPECT_TRUE(same_bits(with(C::Auto, L::Auto, chunk)(xs), want)) << chunk;
  lanes::set_num_threads(1);
  EXPECT_TRUE(same_bits(with(C::Auto, L::Auto, {})(xs), want)) << "1 thread";
  lanes::set_num_threads(2);
  EXPECT_TRUE(same_bits(lanes::compile(with(C::Auto, L::Auto, {}))(xs), want)) << "compiled";
  lanes::set_batch_invariant(false);
}

TEST(Fuzz, StepsAreOpTableOps) {
  std::set<std::string> table;
  for (const OpRow& row : op_table()) table.insert(row.op);
  const std::set<std::string> control = {"cond", "while_loop", "scan"};
  for (uint64_t seed = 0; seed < 50; ++seed) {
    std::vector<Tensor> loop;
    for (const Step& s : generate(seed, loop).steps)
      EXPECT_TRUE(table.count(s.op) || control.count(s.op)) << s.op << " is not in the op table";
  }
}

// Every fixed seed would take 15 more evaluations each: a slice of them.
TEST(Fuzz, SameBitsUnderEveryStrategyChunkAndThreadCount) {
  int failures = 0;
  for (uint64_t seed = settings.first; seed < settings.last && failures < 5; seed += 5) {
    std::vector<Tensor> loop;
    const Program p = generate(seed, loop);
    SCOPED_TRACE(p.str());
    const int before = failed_parts();
    try {
      check_same_bits(p);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "threw " << e.what();
    }
    lanes::set_batch_invariant(false);
    failures += failed_parts() != before;
  }
}

TEST(Fuzz, FixedSeeds) {
  int failures = 0;
  for (uint64_t seed = settings.first; seed < settings.last && failures < 5; ++seed)
    failures += !run_seed(seed);
}

TEST(Fuzz, RandomSeedsForSeconds) {
  if (settings.seconds <= 0) GTEST_SKIP() << "pass --seconds N or LANES_FUZZ_SECONDS=N";
  const auto start = std::chrono::steady_clock::now();
  std::random_device device;
  int failures = 0, programs = 0;
  while (failures < 5 &&
         std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() <
             settings.seconds) {
    failures += !run_seed((uint64_t(device()) << 32) | device());
    ++programs;
  }
  std::printf("fuzz: %d random programs, %d failing\n", programs, failures);
}

void parse_seeds(const std::string& range) {  // "A:B"
  const size_t colon = range.find(':');
  settings.first = std::stoull(range.substr(0, colon));
  settings.last = std::stoull(range.substr(colon + 1));
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (const char* s = std::getenv("LANES_FUZZ_SECONDS")) settings.seconds = std::atof(s);
  if (const char* s = std::getenv("LANES_FUZZ_SEEDS")) parse_seeds(s);
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--print") settings.print = true;
    if (i + 1 == argc) break;
    if (a == "--seconds")
      settings.seconds = std::atof(argv[++i]);
    else if (a == "--seeds")
      parse_seeds(argv[++i]);
  }
  return RUN_ALL_TESTS();
}
