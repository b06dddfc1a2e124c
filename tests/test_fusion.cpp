// Elementwise fusion (compile's last pass): fused chains against float64 loops written here, over
// layouts, dtypes, thread counts, multiple outputs, in-place reuse and graphs where fusing
// carelessly would reorder work.
#include <gtest/gtest.h>

#include <cmath>

// The elementwise kernels (not public API), for the reuse rule.
#include "../src/kernels/elementwise.h"
#include "cast_reference.h"
#include "compiled_graph.h"
#include "expect_near.h"
#include "lanes/lanes.h"

using namespace lanes;

namespace {

// tanh(x * y + 1) * exp(-x), the chain most tests run.
Tensor chain(const Tensor& x, const Tensor& y) { return tanh(x * y + 1.0) * exp(-x); }
double chain_ref(double x, double y) { return std::tanh(x * y + 1.0) * std::exp(-x); }
}  // namespace

TEST(Fusion, ChainBecomesOneNodeAndMatchesFloat64) {
  for (DType dtype : {kFloat32, kFloat64}) {
    const Tensor x = randn({37, 129}, 1, dtype), y = randn({37, 129}, 2, dtype);
    const Graph g = compiled_graph(chain, x, y);
    EXPECT_EQ(count(g, "fused_elementwise"), 1) << g;
    EXPECT_EQ(count(g, "tanh") + count(g, "exp") + count(g, "mul"), 0) << g;
    const auto xs = x.to_vector<double>(), ys = y.to_vector<double>();
    std::vector<double> want(xs.size());
    for (size_t i = 0; i < xs.size(); ++i) want[i] = chain_ref(xs[i], ys[i]);
    expect_near(compile(chain)(x, y).to_vector<double>(), want, dtype == kFloat32 ? 1e-6 : 1e-14);
  }
}

TEST(Fusion, StridedTransposedAndBroadcastInputs) {
  const Tensor base = randn({64, 48}, 3);
  const Tensor xt = transpose(base, {1, 0});                               // (48, 64), transposed
  const Tensor y = slice(randn({48, 128}, 4), {0, 0}, {48, 128}, {1, 2});  // stride 2
  const Tensor row = randn({64}, 5);  // broadcast along rows inside f
  auto f = [](const Tensor& a, const Tensor& b, const Tensor& r) { return chain(a, b) + r; };
  const Tensor got = compile(f)(xt, y, row);
  const auto xs = xt.to_vector<double>(), ys = y.to_vector<double>(), rs = row.to_vector<double>();
  std::vector<double> want(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) want[i] = chain_ref(xs[i], ys[i]) + rs[i % 64];
  expect_near(got.to_vector<double>(), want, 1e-6);
}

TEST(Fusion, ShortRowsShareTilesAcrossOuterDims) {
  // Rows of 24 with operands broadcast along the middle and outer axes: a tile holds 42 rows, so
  // tiles start mid-way through the middle axis and span outer indices. Dense, broadcast and
  // strided operands, a bool condition, in float32 and float64.
  for (DType dtype : {kFloat32, kFloat64}) {
    const Tensor x = randn({13, 11, 24}, 40, dtype);
    const Tensor m = randn({13, 1, 24}, 41, dtype);
    const Tensor c = randn({1, 11, 24}, 42) > 0.0;
    const Tensor t = swapaxes(randn({13, 24, 11}, 43, dtype), 1, 2);  // strided rows
    auto f = [](const Tensor& a, const Tensor& b, const Tensor& k, const Tensor& s) {
      return where(k, tanh(a * b + 1.0), s * 2.0) - b;
    };
    const Graph g = compiled_graph(f, x, m, c, t);
    EXPECT_EQ(count(g, "fused_elementwise"), 1) << g;
    const auto xs = x.to_vector<double>(), ms = m.to_vector<double>(), ts = t.to_vector<double>();
    const auto cs = c.to_vector<double>();
    std::vector<double> want(xs.size());
    for (int64_t i = 0; i < 13; ++i)
      for (int64_t j = 0; j < 11; ++j)
        for (int64_t k = 0; k < 24; ++k) {
          const int64_t at = (i * 11 + j) * 24 + k;
          const double b = ms[i * 24 + k];
          want[at] = (cs[j * 24 + k] != 0 ? std::tanh(xs[at] * b + 1.0) : ts[at] * 2.0) - b;
        }
    expect_near(compile(f)(x, m, c, t).to_vector<double>(), want, dtype == kFloat32 ? 1e-6 : 1e-14);
  }
}

TEST(Fusion, RowAndScalarSplatsAcrossTilesOfEveryRowCount) {
  // Rows of 100: a tile holds 10 of them and the last one 7, and a bias row and a scalar are the
  // same in every tile (loaded once a chunk). Rows of 3000 take tiles of part of a row, where the
  // bias register holds a different part each tile.
  for (int64_t len : {100, 3000})
    for (DType dtype : {kFloat32, kFloat64}) {
      const Tensor x = randn({37, len}, 44, dtype), bias = randn({len}, 45, dtype);
      auto f = [](const Tensor& a, const Tensor& b) { return -(a * b) * 3.0 + b; };
      const Graph g = compiled_graph(f, x, bias);
      EXPECT_EQ(count(g, "fused_elementwise"), 1) << g;
      const auto xs = x.to_vector<double>(), bs = bias.to_vector<double>();
      std::vector<double> want(xs.size());
      for (size_t i = 0; i < xs.size(); ++i) {
        const double b = bs[i % size_t(len)];
        want[i] = -(xs[i] * b) * 3.0 + b;
      }
      expect_near(compile(f)(x, bias).to_vector<double>(), want, dtype == kFloat32 ? 1e-6 : 1e-14);
    }
}

TEST(Fusion, IntermediatesReadElsewhereAreOutputs) {
  // a is read by the sum (outside the chain) and returned; b only inside the chain.
  auto f = [](const Tensor& x) {
    const Tensor a = exp(x) * 0.5;
    const Tensor b = a + 1.0;
    return std::make_tuple(a, sqrt(b) * a, sum(a));
  };
  const Tensor x = randn({1000}, 6);
  const auto [a, c, s] = compile(f)(x);
  const auto xs = x.to_vector<double>();
  std::vector<double> wa(xs.size()), wc(xs.size());
  double ws = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    wa[i] = std::exp(xs[i]) * 0.5;
    wc[i] = std::sqrt(wa[i] + 1.0) * wa[i];
    ws += wa[i];
  }
  expect_near(a.to_vector<double>(), wa, 1e-6);
  expect_near(c.to_vector<double>(), wc, 1e-6);
  EXPECT_NEAR(s.item<double>(), ws, 1e-4 * std::abs(ws));
}

TEST(Fusion, ReductionBetweenChainsKeepsOrder) {
  // exp(x) feeds a reduction whose result feeds the next elementwise op: one group may not
  // swallow both sides of the sum (that would need the sum before it was computed).
  auto f = [](const Tensor& x) {
    const Tensor e = exp(x - 1.0);
    return e / sum(e, {1}, true) * 2.0;
  };
  const Tensor x = randn({8, 300}, 7);
  const auto xs = x.to_vector<double>();
  std::vector<double> want(xs.size());
  for (int r = 0; r < 8; ++r) {
    double total = 0;
    for (int c = 0; c < 300; ++c) total += std::exp(xs[r * 300 + c] - 1.0);
    for (int c = 0; c < 300; ++c) want[r * 300 + c] = std::exp(xs[r * 300 + c] - 1.0) / total * 2;
  }
  expect_near(compile(f)(x).to_vector<double>(), want, 1e-6);
}

TEST(Fusion, MixedDtypesCastsAndSelect) {
  // The seed's uint8 image sqrt, and relu's derivative-style select on a comparison.
  std::vector<uint8_t> pixels(3 * 64 * 64);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = uint8_t((i * 37) % 255);
  const Tensor img = tensor(pixels, {64, 64, 3});
  auto root = [](const Tensor& x) { return cast(sqrt(cast(x, kFloat32)), kUInt8); };
  EXPECT_EQ(count(compiled_graph(root, img), "fused_elementwise"), 1);
  const auto got = compile(root)(img).to_vector<int64_t>();
  for (size_t i = 0; i < pixels.size(); ++i)
    ASSERT_EQ(got[i], int64_t(std::sqrt(float(pixels[i])))) << i;

  auto relu_grad = [](const Tensor& x, const Tensor& g) {
    return where(x > 0.0, g * 3.0, zeros_like(g)) + cast(x < -1.0, kFloat32);
  };
  const Tensor x = randn({5000}, 8), g = randn({5000}, 9);
  const auto xs = x.to_vector<double>(), gs = g.to_vector<double>();
  std::vector<double> want(xs.size());
  for (size_t i = 0; i < xs.size(); ++i)
    want[i] = (xs[i] > 0 ? gs[i] * 3 : 0.0) + (xs[i] < -1 ? 1.0 : 0.0);
  expect_near(compile(relu_grad)(x, g).to_vector<double>(), want, 1e-6);
}

// A uint8 -> op -> uint8 chain maps its bytes through a table of the op's 256 results
// (fused_convert.cpp, with AVX-512 VBMI): every byte value, at lengths that end in the 64-byte
// body and in the masked tail, in one tile and in several, must come out as the three eager
// kernels give it.
TEST(Fusion, ByteChainsEqualTheEagerStepsForEveryByte) {
  using Unary = Tensor (*)(const Tensor&);
  const Unary ops[] = {
      [](const Tensor& x) { return sqrt(x); }, [](const Tensor& x) { return exp(x); },
      [](const Tensor& x) { return log1p(x); }, [](const Tensor& x) { return tanh(x) * 1.0; },
      [](const Tensor& x) { return floor(x); }};
  for (Unary op : ops) {
    auto chain = [op](const Tensor& x) { return cast(op(cast(x, kFloat32)), kUInt8); };
    for (int64_t n : {1, 63, 64, 65, 255, 256, 1000, 1024, 1031, 5000}) {
      std::vector<uint8_t> bytes(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) bytes[size_t(i)] = uint8_t((i * 167 + n) % 256);
      const Tensor x = tensor(bytes, {n});
      const auto fused = compile(chain)(x).to_vector<int64_t>();
      const auto eager = chain(x).to_vector<int64_t>();
      ASSERT_EQ(fused, eager) << "length " << n;
    }
  }
}

// convert[float32] -> op -> convert[to] under compile (one fused loop for uint8/int32 on either
// side, the steps one by one otherwise) for every pair of dtypes around the op, over the edge
// values at sizes that put them in the SIMD body and the tail, against cast_reference.h's float64
// reference of each conversion and the op in float32.
TEST(Fusion, ConversionsAroundAUnaryOpOverEdgeValuesMatchReference) {
  struct Op {
    const char* name;
    Tensor (*f)(const Tensor&);
    float (*ref)(float);
  };
  const Op ops[] = {
      {"sqrt", [](const Tensor& x) { return sqrt(x); }, [](float v) { return std::sqrt(v); }},
      {"abs", [](const Tensor& x) { return abs(x); }, [](float v) { return std::fabs(v); }},
      {"floor", [](const Tensor& x) { return floor(x); }, [](float v) { return std::floor(v); }}};
  cast_ref::for_each_pair([&](auto from, auto to) {
    using From = decltype(from);
    using To = decltype(to);
    for (const Op& op : ops) {
      auto f = [&](const Tensor& x) { return cast(op.f(cast(x, kFloat32)), dtype_of<To>()); };
      const std::string what = std::string(dtype_name(dtype_of<From>())) + " -> " + op.name +
                               " -> " + dtype_name(dtype_of<To>());
      for (int64_t n : cast_ref::kSizes) {
        std::vector<From> in;
        const Tensor x = cast_ref::edge_tensor<From>(n, n, &in);
        if (n == 33 && !(std::is_same_v<From, float> && std::is_same_v<To, float>))
          EXPECT_EQ(count(compiled_graph(f, x), "fused_elementwise"), 1)
              << what << compiled_graph(f, x);
        const Tensor y = compile(f)(x);
        ASSERT_EQ(y.dtype(), dtype_of<To>()) << what;
        const std::vector<To> got = y.template to_vector<To>();
        for (int64_t i = 0; i < n; ++i) {
          const To want = cast_ref::convert<To>(op.ref(cast_ref::convert<float>(in[size_t(i)])));
          ASSERT_TRUE(cast_ref::same(To(got[size_t(i)]), want))
              << what << " n=" << n << " i=" << i << ": " << cast_ref::show(in[size_t(i)])
              << " gave " << cast_ref::show(To(got[size_t(i)])) << ", want "
              << cast_ref::show(want);
        }
      }
    }
  });
}

// The op's float32 result is also an output: the conversion after it cannot join the loop (the
// register must reach memory), the one before still does. Strided and multi-row inputs too.
TEST(Fusion, ConvertingLoopWithSharedIntermediateAndStridedInput) {
  std::vector<uint8_t> pixels(4099 * 2);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = uint8_t((i * 37) % 256);
  const Tensor img = transpose(tensor(pixels, {4099, 2}));  // (2, 4099), stepping by 2
  auto f = [](const Tensor& x) {
    const Tensor r = sqrt(cast(x, kFloat32));
    return std::vector<Tensor>{cast(r * 16.0, kUInt8), r, cast(r, kInt32)};
  };
  const std::vector<Tensor> got = compile(f)(img);
  const auto a = got[0].to_vector<int64_t>(), c = got[2].to_vector<int64_t>();
  const auto b = got[1].to_vector<float>();
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t k = 0; k < 4099; ++k) {
      const size_t i = size_t(r * 4099 + k);
      const float s = std::sqrt(float(pixels[size_t(k * 2 + r)]));
      ASSERT_EQ(b[i], s) << i;
      ASSERT_EQ(a[i], int64_t(cast_ref::convert<uint8_t>(s * 16.0f))) << i;
      ASSERT_EQ(c[i], int64_t(s)) << i;
    }
}

TEST(Fusion, LargeOutputsStreamAndThreadCountDoesNotMatter) {
  // 3M + 7 float32: over the non-temporal store threshold, with a ragged tail.
  const Tensor x = randn({3 * 1024 * 1024 + 7}, 10), y = randn({3 * 1024 * 1024 + 7}, 11);
  const int threads = num_threads();
  set_num_threads(1);
  const auto one = compile(chain)(x, y).to_vector<float>();
  set_num_threads(2);
  const auto two = compile(chain)(x, y).to_vector<float>();
  set_num_threads(threads);
  ASSERT_EQ(one, two);
  const auto xs = x.to_vector<double>(), ys = y.to_vector<double>();
  for (size_t i = 0; i < xs.size(); i += 997) ASSERT_NEAR(two[i], chain_ref(xs[i], ys[i]), 1e-5);
  ASSERT_NEAR(two.back(), chain_ref(xs.back(), ys.back()), 1e-5);
}

TEST(Fusion, ReusesDeadInputBuffersInPlace) {
  // The matmul's result dies in the chain: the fused node writes its output there, so the call
  // holds one (n, n) buffer at a time besides the inputs and the result.
  const int64_t n = 1024;  // 4 MiB per buffer
  const Tensor a = randn({n, n}, 12), b = randn({n, n}, 13);
  auto f = [](const Tensor& p, const Tensor& q) { return tanh(matmul(p, q) * 0.1) + 1.0; };
  auto fast = compile(f);
  const Tensor warm = fast(a, b);
  reset_peak_memory();
  const size_t before = memory_stats().live_bytes;
  const Tensor got = fast(a, b);
  const size_t used = memory_stats().peak_bytes - before;
  EXPECT_LE(used, size_t(n * n * 4)) << "peak above one buffer: the chain did not reuse the input";
  const Tensor want = matmul(a, b);  // the reference: float64 formula on the GEMM's result
  const auto w = want.to_vector<double>(), g = got.to_vector<double>();
  for (size_t i = 0; i < w.size(); i += 101) ASSERT_NEAR(g[i], std::tanh(w[i] * 0.1) + 1.0, 1e-5);
  // The user's inputs are never overwritten.
  expect_near(a.to_vector<double>(), randn({n, n}, 12).to_vector<double>(), 0);
}

TEST(Fusion, ASingleElementwiseNodeReusesItsDeadInput) {
  // exp alone between two products is no fused group; its input dies there, so the plain
  // kernel writes into that buffer too. A kernel called on a caller's only copy never does.
  const int64_t n = 1024;
  const Tensor a = randn({n, n}, 19, kFloat32) * 0.03, b = randn({n, n}, 20, kFloat32);
  auto f = [](const Tensor& p, const Tensor& q) { return sum(exp(matmul(p, q)), 1); };
  auto fast = compile(f);
  const Tensor warm = fast(a, b);
  reset_peak_memory();
  const size_t before = memory_stats().live_bytes;
  const Tensor got = fast(a, b);
  EXPECT_LE(memory_stats().peak_bytes - before, size_t(n * n * 4) + 64 * 1024);
  const auto m = matmul(a, b).to_vector<double>(), g = got.to_vector<double>();
  for (int64_t i = 0; i < n; i += 37) {
    double want = 0;
    for (int64_t j = 0; j < n; ++j) want += std::exp(m[i * n + j]);
    ASSERT_NEAR(g[i], want, 1e-4 * want) << i;
  }
  const Tensor only = randn({4}, 21, kFloat32);
  const std::vector<float> kept = only.to_vector<float>();
  const Tensor e = kernels::unary(kernels::UnaryOp::Exp, only);
  EXPECT_EQ(only.to_vector<float>(), kept);
  EXPECT_NE(e.storage(), only.storage());
}

TEST(Fusion, VmapGradOfMlpMatchesUncompiled) {
  const Tensor w1 = randn({16, 32}, 14), w2 = randn({32, 4}, 15);
  auto loss = [&](const Tensor& x) { return sum(square(tanh(matmul(tanh(matmul(x, w1)), w2)))); };
  const Tensor xs = randn({64, 16}, 16);
  auto per_example = vmap(grad(loss));
  const Graph g = compiled_graph(per_example, xs);
  // Chains after a product run as its epilogue (test_dot_epilogue.cpp).
  EXPECT_GE(count(g, "fused_elementwise") + count(g, "dot_epilogue"), 1) << g;
  const auto want = per_example(xs).to_vector<double>();
  expect_near(compile(per_example)(xs).to_vector<double>(), want, 1e-5);
}

TEST(Fusion, InPlaceOutputWaitsForLaterReadersOfItsBuffer) {
  // m dies in the chain and becomes the buffer of exp(m), which is an output; a later step still
  // reads m, so exp(m) may only be written there after that step has read the tile.
  const int64_t n = 1024;
  const Tensor a = randn({n, n}, 17, kFloat32) * 0.05, b = randn({n, n}, 18, kFloat32);
  auto f = [](const Tensor& p, const Tensor& q) {
    const Tensor m = matmul(p, q);
    const Tensor e = exp(m);
    return std::make_tuple(e, e * m - m);
  };
  const auto [e, g] = compile(f)(a, b);
  const auto m = matmul(a, b).to_vector<double>();
  const auto ev = e.to_vector<double>(), gv = g.to_vector<double>();
  for (size_t i = 0; i < m.size(); i += 7) {
    ASSERT_NEAR(ev[i], std::exp(m[i]), 1e-5 * std::exp(m[i])) << i;
    ASSERT_NEAR(gv[i], std::exp(m[i]) * m[i] - m[i], 1e-4 * (1 + std::abs(m[i]) * std::exp(m[i])))
        << i;
  }
}

// ---- tail reductions ------------------------------------------------------------------------

TEST(Fusion, TailSumRunsInTheChainsPass) {
  const Tensor x = randn({300, 517}, 30), y = randn({300, 517}, 31);
  auto f = [](const Tensor& a, const Tensor& b) { return sum(chain(a, b), -1); };
  const Graph g = compiled_graph(f, x, y);
  EXPECT_EQ(count(g, "fused_elementwise"), 1) << g;
  EXPECT_EQ(count(g, "reduce_sum"), 0) << g;
  const auto got = compile(f)(x, y).to_vector<double>();
  const auto xs = x.to_vector<double>(), ys = y.to_vector<double>();
  std::vector<double> want(300, 0.0);
  for (size_t i = 0; i < xs.size(); ++i) want[i / 517] += chain_ref(xs[i], ys[i]);
  expect_near(got, want, 1e-5);
}

TEST(Fusion, TailReductionsOverStridedAndBroadcastOperandsAndInFloat64) {
  // The last two dims reduced; z transposed, b broadcast along them: per-input strides.
  const Tensor x = randn({12, 20, 30}, 32, kFloat64), z = randn({12, 30, 20}, 33, kFloat64);
  const Tensor b = randn({12, 1, 1}, 34, kFloat64);
  auto f = [](const Tensor& p, const Tensor& q, const Tensor& r) {
    return std::make_tuple(sum(tanh(p + r) * swapaxes(q, 1, 2), {1, 2}),
                           max(exp(p * 0.5) - r, {1, 2}));
  };
  const Graph g = compiled_graph(f, x, z, b);
  EXPECT_EQ(count(g, "reduce_sum") + count(g, "reduce_max"), 0) << g;
  const auto [s, m] = compile(f)(x, z, b);
  const auto xs = x.to_vector<double>(), zs = z.to_vector<double>(), bs = b.to_vector<double>();
  for (int64_t i = 0; i < 12; ++i) {
    double want_s = 0, want_m = -INFINITY;
    for (int64_t j = 0; j < 20; ++j)
      for (int64_t k = 0; k < 30; ++k) {
        const double xv = xs[(i * 20 + j) * 30 + k], zv = zs[(i * 30 + k) * 20 + j];
        want_s += std::tanh(xv + bs[i]) * zv;
        want_m = std::max(want_m, std::exp(xv * 0.5) - bs[i]);
      }
    EXPECT_NEAR(s.to_vector<double>()[i], want_s, 1e-10 * (1 + std::abs(want_s)));
    EXPECT_EQ(m.to_vector<double>()[i], want_m);
  }
}

TEST(Fusion, TailMaxPropagatesNan) {
  std::vector<float> v(16 * 100, 1.0f);
  v[3 * 100 + 50] = NAN;
  const Tensor x = tensor(v, {16, 100});
  auto f = [](const Tensor& a) { return max(a * 2.0, -1); };
  EXPECT_EQ(count(compiled_graph(f, x), "reduce_max"), 0);
  const auto got = compile(f)(x).to_vector<float>();
  for (int64_t i = 0; i < 16; ++i) {
    if (i == 3)
      EXPECT_TRUE(std::isnan(got[i]));
    else
      EXPECT_EQ(got[i], 2.0f);
  }
}

TEST(Fusion, TailReductionsStayApartWhereTheyDoNotPay) {
  const Tensor x = randn({64, 200}, 35), small = randn({64, 10}, 36);
  // The operand is also an output; the reduction is over a leading axis; rows are 10 long.
  auto shared = [](const Tensor& a) {
    const Tensor e = exp(a);
    return std::make_tuple(e, sum(e, -1));
  };
  auto leading = [](const Tensor& a) { return sum(exp(a), 0); };
  auto short_rows = [](const Tensor& a) { return sum(exp(a), -1); };
  EXPECT_EQ(count(compiled_graph(shared, x), "reduce_sum"), 1);
  EXPECT_EQ(count(compiled_graph(leading, x), "reduce_sum"), 1);
  EXPECT_EQ(count(compiled_graph(short_rows, small), "reduce_sum"), 1);
  const auto [e, s] = compile(shared)(x);
  expect_near(s.to_vector<double>(), sum(exp(x), -1).to_vector<double>(), 1e-6);
  expect_near(compile(leading)(x).to_vector<double>(), sum(exp(x), 0).to_vector<double>(), 1e-6);
}

TEST(Fusion, SiblingChainsReadingOneInputRunAsOnePass) {
  // Two chains of x that never read each other (an LSTM step's gate gradients): one pass.
  auto f = [](const Tensor& x, const Tensor& y, const Tensor& z) {
    return std::make_tuple(tanh(x) * y, exp(-x) + z);
  };
  for (DType dtype : {kFloat32, kFloat64}) {
    const Tensor x = randn({100, 32}, 60, dtype), y = randn({100, 32}, 61, dtype);
    const Tensor z = randn({100, 32}, 62, dtype);
    const Graph g = compiled_graph(f, x, y, z);
    EXPECT_EQ(count(g, "fused_elementwise"), 1) << g;
    const auto [a, b] = compile(f)(x, y, z);
    const auto xs = x.to_vector<double>(), ys = y.to_vector<double>(), zs = z.to_vector<double>();
    std::vector<double> wa(xs.size()), wb(xs.size());
    for (size_t i = 0; i < xs.size(); ++i) {
      wa[i] = std::tanh(xs[i]) * ys[i];
      wb[i] = std::exp(-xs[i]) + zs[i];
    }
    const double tol = dtype == kFloat32 ? 1e-6 : 1e-14;
    expect_near(a.to_vector<double>(), wa, tol);
    expect_near(b.to_vector<double>(), wb, tol);
  }
}

TEST(Fusion, SiblingsStayApartWhenTheLaterReadsTheEarlier) {
  // The second chain reads sum(a): one pass for both would need the sum before a exists.
  auto f = [](const Tensor& x, const Tensor& y) {
    const Tensor a = tanh(x) * y;
    return std::make_tuple(a, exp(x) * sum(a) + y);
  };
  const Tensor x = randn({50, 20}, 65), y = randn({50, 20}, 66);
  EXPECT_EQ(count(compiled_graph(f, x, y), "fused_elementwise"), 2);
  const auto [a, b] = compile(f)(x, y);
  const auto xs = x.to_vector<double>(), ys = y.to_vector<double>();
  std::vector<double> wa(xs.size()), wb(xs.size());
  double total = 0;
  for (size_t i = 0; i < xs.size(); ++i) total += wa[i] = std::tanh(xs[i]) * ys[i];
  for (size_t i = 0; i < xs.size(); ++i) wb[i] = std::exp(xs[i]) * total + ys[i];
  expect_near(a.to_vector<double>(), wa, 1e-6);
  expect_near(b.to_vector<double>(), wb, 1e-4);
}

TEST(Fusion, ConcatenateOfAChainsValuesIsWrittenByItsPass) {
  // Three values of one chain joined along each axis: the pass writes each part in its place,
  // rows apart but along axis 0. y's broadcast keeps the (7, 13) rows of 24 from merging, so a
  // tile's 42 rows cross the outer index and the rows are found by walking, not by one stride.
  for (DType dtype : {kFloat32, kFloat64})
    for (int64_t axis : {0, 1, 2}) {
      const Tensor x = randn({7, 13, 24}, 67, dtype), y = randn({7, 1, 24}, 68, dtype);
      auto f = [axis](const Tensor& a, const Tensor& b) {
        const Tensor t = tanh(a) * b;
        return concatenate({t, exp(-a) + t, a * b}, axis);
      };
      const Graph g = compiled_graph(f, x, y);
      EXPECT_EQ(count(g, "concatenate"), 0) << g;
      EXPECT_EQ(count(g, "fused_elementwise"), 1) << g;
      const auto xs = x.to_vector<double>(), ys = y.to_vector<double>();
      const int64_t dims[3] = {7, 13, 24};
      std::vector<double> want(3 * xs.size());
      for (int64_t i = 0; i < 7; ++i)
        for (int64_t j = 0; j < 13; ++j)
          for (int64_t k = 0; k < 24; ++k) {
            const double a = xs[size_t((i * 13 + j) * 24 + k)], b = ys[size_t(i * 24 + k)];
            const double t = std::tanh(a) * b, parts[3] = {t, std::exp(-a) + t, a * b};
            for (int64_t p = 0; p < 3; ++p) {
              int64_t at[3] = {i, j, k}, shape[3] = {7, 13, 24};
              at[axis] += p * dims[axis];
              shape[axis] *= 3;
              want[size_t((at[0] * shape[1] + at[1]) * shape[2] + at[2])] = parts[p];
            }
          }
      expect_near(compile(f)(x, y).to_vector<double>(), want, dtype == kFloat32 ? 1e-6 : 1e-14);
    }
}

TEST(Fusion, APartReadElsewhereKeepsItsConcatenate) {
  auto f = [](const Tensor& x) {
    const Tensor t = tanh(x) * 2.0;
    return std::make_tuple(concatenate({t, t + x}, 1), t);
  };
  const Tensor x = randn({30, 16}, 69);
  EXPECT_EQ(count(compiled_graph(f, x), "concatenate"), 1);
  const auto [joined, t] = compile(f)(x);
  const auto xs = x.to_vector<double>();
  std::vector<double> want(2 * xs.size()), wt(xs.size());
  for (int64_t r = 0; r < 30; ++r)
    for (int64_t c = 0; c < 16; ++c) {
      const double v = std::tanh(xs[size_t(r * 16 + c)]) * 2.0;
      wt[size_t(r * 16 + c)] = want[size_t(r * 32 + c)] = v;
      want[size_t(r * 32 + 16 + c)] = v + xs[size_t(r * 16 + c)];
    }
  expect_near(joined.to_vector<double>(), want, 1e-6);
  expect_near(t.to_vector<double>(), wt, 1e-6);
}

TEST(Fusion, PartsWhoseElementsWouldLieApartKeepTheirConcatenate) {
  // (6, 1) parts joined along axis 1: each part's elements are 2 apart in the result, which the
  // pass does not write; the concatenate stays and the values are right.
  auto f = [](const Tensor& x) {
    const Tensor t = tanh(x) * 2.0;
    return concatenate({t, t + x}, 1);
  };
  const Tensor x = randn({6, 1}, 70);
  EXPECT_EQ(count(compiled_graph(f, x), "concatenate"), 1);
  const auto xs = x.to_vector<double>();
  std::vector<double> want;
  for (double v : xs) want.insert(want.end(), {std::tanh(v) * 2.0, std::tanh(v) * 2.0 + v});
  expect_near(compile(f)(x).to_vector<double>(), want, 1e-6);
}
