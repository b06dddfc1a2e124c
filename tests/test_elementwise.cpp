// Focused checks of the elementwise family beyond the op table: promotion and weak-scalar
// dtypes, integer corner cases that must not crash (division by zero, INT_MIN / -1, overflow),
// conversion rules, rounding ties, NaN propagation, and results that do not depend on layout or
// thread count.
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <cstring>
#include <vector>

#include "../src/kernels/elementwise.h"
#include "cast_reference.h"
#include "lanes/lanes.h"

namespace {

using lanes::DType;
using lanes::Tensor;

TEST(Elementwise, PromotionFollowsJax) {
  auto t = [](DType d) { return lanes::ones({2}, d); };
  EXPECT_EQ((t(DType::Int32) + t(DType::Float32)).dtype(), DType::Float32);
  EXPECT_EQ((t(DType::UInt8) + t(DType::Int32)).dtype(), DType::Int32);
  EXPECT_EQ((t(DType::Int64) + t(DType::Float32)).dtype(), DType::Float32);
  EXPECT_EQ((t(DType::Float32) + t(DType::Float64)).dtype(), DType::Float64);
  EXPECT_EQ((t(DType::Bool) + t(DType::Bool)).dtype(), DType::Bool);
  EXPECT_EQ((t(DType::Int32) / t(DType::Int32)).dtype(), DType::Float32);
  EXPECT_EQ((t(DType::Int64) / t(DType::Int64)).dtype(), DType::Float32);
  EXPECT_EQ(lanes::exp(t(DType::Int32)).dtype(), DType::Float32);
  EXPECT_EQ(lanes::sqrt(t(DType::Bool)).dtype(), DType::Float32);
  EXPECT_EQ((t(DType::Float64) < t(DType::Int32)).dtype(), DType::Bool);
}

TEST(Elementwise, WeakScalarsKeepTheTensorDtype) {
  auto t = [](DType d) { return lanes::ones({2}, d); };
  EXPECT_EQ((t(DType::Float32) * 2.0).dtype(), DType::Float32);
  EXPECT_EQ((2.0 * t(DType::Float32)).dtype(), DType::Float32);
  EXPECT_EQ((t(DType::Float64) * 2).dtype(), DType::Float64);
  EXPECT_EQ((t(DType::Int32) + 1).dtype(), DType::Int32);
  EXPECT_EQ((t(DType::Int64) + 1).dtype(), DType::Int64);
  EXPECT_EQ((t(DType::Int32) * 0.5).dtype(), DType::Float32);
  EXPECT_EQ((t(DType::Bool) + 1).dtype(), DType::Int32);
  EXPECT_EQ((t(DType::UInt8) + 1).dtype(), DType::UInt8);
  EXPECT_EQ((t(DType::Int32) / 2).dtype(), DType::Float32);
  // uint8 arithmetic wraps, as numpy.
  EXPECT_EQ((lanes::zeros({1}, DType::UInt8) - 1).item<int>(), 255);
  EXPECT_EQ((lanes::full({1}, 250, DType::UInt8) + 10).item<int>(), 4);
}

TEST(Elementwise, IntegerCornerCasesDoNotCrash) {
  using kernels_op = lanes::kernels::BinaryOp;
  const Tensor a = lanes::tensor(std::vector<int32_t>{7, -7, INT_MIN, 5, 0, INT_MIN});
  const Tensor b = lanes::tensor(std::vector<int32_t>{2, 2, -1, 0, 0, 1});
  // The div primitive on integers truncates toward zero; x / 0 == 0; INT_MIN / -1 wraps.
  EXPECT_EQ(lanes::kernels::binary(kernels_op::Div, a, b).to_vector<int32_t>(),
            (std::vector<int32_t>{3, -3, INT_MIN, 0, 0, INT_MIN}));
  const Tensor a64 = lanes::tensor(std::vector<int64_t>{LLONG_MIN, 9, -9});
  const Tensor b64 = lanes::tensor(std::vector<int64_t>{-1, 0, 4});
  EXPECT_EQ(lanes::kernels::binary(kernels_op::Div, a64, b64).to_vector<int64_t>(),
            (std::vector<int64_t>{LLONG_MIN, 0, -2}));
  const Tensor u = lanes::tensor(std::vector<uint8_t>{200, 7});
  const Tensor z = lanes::tensor(std::vector<uint8_t>{0, 2});
  EXPECT_EQ(lanes::kernels::binary(kernels_op::Div, u, z).to_vector<int>(),
            (std::vector<int>{0, 3}));
  // True division of integers by zero gives inf / nan, not a trap.
  const auto q = (a / b).to_vector<float>();
  EXPECT_TRUE(std::isinf(q[3]));
  EXPECT_TRUE(std::isnan(q[4]));
  // Overflow wraps (no signed-overflow UB).
  const Tensor big = lanes::tensor(std::vector<int32_t>{INT_MAX, INT_MIN});
  EXPECT_EQ((big + 1).to_vector<int32_t>(), (std::vector<int32_t>{INT_MIN, INT_MIN + 1}));
  EXPECT_EQ(lanes::negative(big).to_vector<int32_t>(), (std::vector<int32_t>{-INT_MAX, INT_MIN}));
  EXPECT_EQ(lanes::abs(big).to_vector<int32_t>(), (std::vector<int32_t>{INT_MAX, INT_MIN}));
  EXPECT_EQ((big * 2).to_vector<int32_t>(), (std::vector<int32_t>{-2, 0}));
  EXPECT_EQ(lanes::negative(lanes::tensor(std::vector<uint8_t>{1, 0})).to_vector<int>(),
            (std::vector<int>{255, 0}));
  // Integer powers.
  const Tensor base = lanes::tensor(std::vector<int32_t>{2, -3, 2, -1, 1, 0});
  const Tensor expo = lanes::tensor(std::vector<int32_t>{10, 3, -1, -3, -5, 0});
  EXPECT_EQ(lanes::pow(base, expo).to_vector<int32_t>(),
            (std::vector<int32_t>{1024, -27, 0, -1, 1, 1}));
}

// Every pair of dtypes over the edge values (NaN, infinities, -0, denormals, each integer type's
// bounds and their neighbours, large magnitudes) at sizes that put them in the SIMD body and in
// the tail, contiguous and strided, against the float64/int64 reference in cast_reference.h.
TEST(Elementwise, CastEveryPairOverEdgeValuesMatchesReference) {
  cast_ref::for_each_pair([](auto from, auto to) {
    using From = decltype(from);
    using To = decltype(to);
    const std::string pair = std::string(lanes::dtype_name(lanes::dtype_of<From>())) + " -> " +
                             lanes::dtype_name(lanes::dtype_of<To>());
    const int64_t num_edges = int64_t(cast_ref::edges<From>().size());
    for (int64_t n : cast_ref::kSizes) {
      // Small sizes start at every edge value, so each lands in every position of the tail.
      for (int64_t start = 0; start < (n <= 33 ? num_edges : 2); ++start) {
        std::vector<From> in;
        const Tensor x = cast_ref::edge_tensor<From>(n, start, &in);
        const Tensor y = lanes::cast(x, lanes::dtype_of<To>());
        ASSERT_EQ(y.dtype(), lanes::dtype_of<To>());
        const To* got = y.template data<To>();
        for (int64_t i = 0; i < n; ++i) {
          const To want = cast_ref::convert<To>(in[size_t(i)]);
          ASSERT_TRUE(cast_ref::same(got[i], want))
              << pair << " n=" << n << " i=" << i << ": " << cast_ref::show(in[size_t(i)])
              << " gave " << cast_ref::show(got[i]) << ", want " << cast_ref::show(want);
        }
      }
    }
    // Strided: the (2, 2050) transpose of a (2050, 2) buffer steps by 2 along its rows.
    std::vector<From> in;
    const Tensor x = cast_ref::edge_tensor<From>(4100, 3, &in);
    const Tensor y =
        lanes::cast(lanes::transpose(lanes::reshape(x, {2050, 2})), lanes::dtype_of<To>());
    const std::vector<To> got = y.template to_vector<To>();  // same dtype: the view itself
    for (int64_t r = 0; r < 2; ++r)
      for (int64_t c = 0; c < 2050; ++c)
        ASSERT_TRUE(cast_ref::same(To(got[size_t(r * 2050 + c)]),
                                   cast_ref::convert<To>(in[size_t(c * 2 + r)])))
            << pair << " strided (" << r << ", " << c << ")";
  });
}

// IEEE negation flips the sign bit: -(+0) is -0 and -(-0) is +0, through the SIMD body (n = 37
// covers full batches and the tail) and through a fused chain under compile, float32 and float64.
TEST(Elementwise, NegationOfZeroFlipsTheSign) {
  for (DType dt : {DType::Float32, DType::Float64}) {
    std::vector<double> v(37);
    for (size_t i = 0; i < v.size(); ++i) v[i] = i % 2 ? -0.0 : 0.0;
    const Tensor x = lanes::cast(lanes::tensor(v, {37}), dt);
    const Tensor eager = lanes::negative(x);
    const Tensor fused =
        lanes::compile([](const Tensor& t) { return lanes::negative(t) * 1.0; })(x);
    const auto e = lanes::cast(eager, DType::Float64).to_vector<double>();
    const auto f = lanes::cast(fused, DType::Float64).to_vector<double>();
    for (size_t i = 0; i < v.size(); ++i) {
      EXPECT_EQ(std::signbit(e[i]), !std::signbit(v[i])) << "eager element " << i;
      EXPECT_EQ(std::signbit(f[i]), !std::signbit(v[i])) << "fused element " << i;
    }
  }
}

TEST(Elementwise, CastRules) {
  const float nan = NAN;
  const Tensor f = lanes::tensor(std::vector<float>{-1.7f, 1.7f, nan, 1e10f, -1e10f, -0.0f, 300});
  EXPECT_EQ(lanes::cast(f, DType::Int32).to_vector<int32_t>(),
            (std::vector<int32_t>{-1, 1, 0, INT_MAX, INT_MIN, 0, 300}));
  EXPECT_EQ(lanes::cast(f, DType::UInt8).to_vector<int>(),
            (std::vector<int>{0, 1, 0, 255, 0, 0, 255}));
  EXPECT_EQ(lanes::cast(f, DType::Bool).to_vector<int>(), (std::vector<int>{1, 1, 1, 1, 1, 0, 1}));
  EXPECT_EQ(
      lanes::cast(lanes::tensor(std::vector<int32_t>{300, -1}), DType::UInt8).to_vector<int>(),
      (std::vector<int>{44, 255}));
  EXPECT_EQ(lanes::cast(lanes::tensor(std::vector<int64_t>{(1LL << 32) + 5}), DType::Int32)
                .item<int32_t>(),
            5);
  const Tensor x = lanes::ones({2, 3});
  EXPECT_EQ(lanes::cast(x, DType::Float32).storage(), x.storage());  // same dtype: no copy
}

TEST(Elementwise, RoundHalfToEvenAndNanPropagation) {
  const Tensor x = lanes::tensor(std::vector<float>{0.5f, 1.5f, 2.5f, -0.5f, -2.5f, 3.7f});
  EXPECT_EQ(lanes::round(x).to_vector<float>(), (std::vector<float>{0, 2, 2, -0.0f, -2, 4}));
  const float nan = NAN;
  const Tensor a = lanes::tensor(std::vector<float>{nan, 1, nan});
  const Tensor b = lanes::tensor(std::vector<float>{1, nan, nan});
  for (const Tensor& m : {lanes::maximum(a, b), lanes::minimum(a, b)})
    for (float v : m.to_vector<float>()) EXPECT_TRUE(std::isnan(v));
  EXPECT_TRUE(std::isnan(lanes::relu(lanes::scalar(nan)).item<float>()));
  const auto s = lanes::sign(lanes::tensor(std::vector<float>{-3, 0, 2, nan})).to_vector<float>();
  EXPECT_EQ(s[0], -1);
  EXPECT_EQ(s[1], 0);
  EXPECT_EQ(s[2], 1);
  EXPECT_TRUE(std::isnan(s[3]));
}

// A value gives the same bits wherever it sits: contiguous, strided, transposed, broadcast, in
// a SIMD body or tail, on one thread or several.
TEST(Elementwise, ResultsIndependentOfLayoutAndThreads) {
  const int64_t n = 257, m = 403;  // odd sizes: tails everywhere
  std::vector<float> v(n * m);
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(0.37f * i) * 30;
  const Tensor x = lanes::tensor(v, {n, m});
  const Tensor xt = lanes::transpose(lanes::transpose(x).contiguous());
  using UFn = Tensor (*)(const Tensor&);
  for (UFn f : std::vector<UFn>{lanes::exp, lanes::tanh, lanes::sigmoid, lanes::erf, lanes::sin}) {
    const Tensor want = f(x);
    const Tensor got_t = f(xt);
    const Tensor got_slice = f(lanes::slice_axis(x, 1, 1, m));
    // Bit for bit; got_t keeps xt's memory order (a transposed output), so compare by index.
    EXPECT_EQ(want.to_vector<float>(), got_t.to_vector<float>());
    EXPECT_EQ(got_t.strides(), xt.strides());
    const auto w = want.to_vector<float>(), s = got_slice.to_vector<float>();
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 1; j < m; ++j) ASSERT_EQ(w[i * m + j], s[i * (m - 1) + j - 1]);
    const int threads = lanes::num_threads();
    lanes::set_num_threads(1);
    const Tensor one_thread = f(x);
    lanes::set_num_threads(threads);
    EXPECT_EQ(0, std::memcmp(want.raw_data(), one_thread.raw_data(), n * m * sizeof(float)));
  }
  // Small transposed operands go by whole rows, large ones (above) by tiles: the same bits.
  const Tensor small = lanes::slice(x, {0, 0}, {40, 70});
  const Tensor small_t = lanes::transpose(lanes::transpose(small).contiguous());
  const Tensor sum = small + small_t, product = small * small;
  EXPECT_EQ((sum * 0.5).to_vector<float>(), small.contiguous().to_vector<float>());
  EXPECT_EQ((small_t * small_t).to_vector<float>(), product.to_vector<float>());
  // A broadcast scalar row equals the element computed alone.
  const Tensor row = lanes::broadcast_to(lanes::scalar(0.3f), {5, 1000});
  const auto e = lanes::exp(row).to_vector<float>();
  const float alone = lanes::exp(lanes::scalar(0.3f)).item<float>();
  for (float y : e) ASSERT_EQ(y, alone);
}

TEST(Elementwise, ShortBroadcastRowsSplitBetweenThreads) {
  // (3, 1000, 20) rows of 20 against a (3, 1, 20) operand: 3000 rows split between threads in
  // the middle of a run along axis 1. Each element against a float64 loop, on 1 and 2 threads.
  const Tensor x = lanes::random::normal(lanes::random::key(7), {3, 1000, 20});
  const Tensor m = lanes::random::normal(lanes::random::key(8), {3, 1, 20});
  const auto xs = x.to_vector<double>(), ms = m.to_vector<double>();
  const int threads = lanes::num_threads();
  for (int t : {1, 2}) {
    lanes::set_num_threads(t);
    const auto prod = (x * m).to_vector<double>();
    const auto sel = lanes::where(m > 0.0, x, lanes::scalar(0.0f)).to_vector<double>();
    const auto th = lanes::tanh(lanes::broadcast_to(m, {3, 1000, 20})).to_vector<double>();
    for (size_t i = 0; i < xs.size(); ++i) {
      const double b = ms[i / 20000 * 20 + i % 20];
      ASSERT_NEAR(prod[i], xs[i] * b, 1e-6 * std::abs(xs[i] * b)) << i;
      ASSERT_EQ(sel[i], b > 0 ? xs[i] : 0.0) << i;
      ASSERT_NEAR(th[i], std::tanh(b), 1e-6) << i;
    }
  }
  lanes::set_num_threads(threads);
  // Rows shorter than a SIMD batch (10 and 3 elements) against a repeated row on either side,
  // with a ragged last chunk, in float32 and float64.
  for (DType dtype : {lanes::kFloat32, lanes::kFloat64})
    for (int64_t n : {10, 3}) {
      const Tensor a =
          lanes::cast(lanes::random::normal(lanes::random::key(9), {8, 333, n}), dtype);
      const Tensor b = lanes::cast(lanes::random::normal(lanes::random::key(10), {8, 1, n}), dtype);
      const auto as = a.to_vector<double>(), bs = b.to_vector<double>();
      const auto left = (a - b).to_vector<double>(), right = (b - a).to_vector<double>();
      for (size_t i = 0; i < as.size(); ++i) {
        const double bi = bs[i / (333 * n) * n + i % n];
        const double tol = dtype == lanes::kFloat32 ? 1e-6 * (std::abs(as[i]) + std::abs(bi)) : 0.0;
        ASSERT_NEAR(left[i], as[i] - bi, tol) << i;
        ASSERT_NEAR(right[i], bi - as[i], tol) << i;
      }
    }
}

TEST(Elementwise, OutputsFollowTheirOperandsMemoryOrder) {
  // A transposed (dense) operand gives a transposed output: the op runs in memory order. With a
  // broadcast or a row-major partner, values still match a float64 loop element by element.
  const Tensor base = lanes::random::normal(lanes::random::key(11), {6, 50, 40});
  const Tensor t = lanes::swapaxes(base, 1, 2);  // (6, 40, 50), strides (2000, 1, 40)
  const Tensor row = lanes::random::normal(lanes::random::key(12), {6, 1, 1});
  const Tensor plain = lanes::random::normal(lanes::random::key(13), {6, 40, 50});
  const auto ts = t.to_vector<double>(), rs = row.to_vector<double>();
  const auto ps = plain.to_vector<double>();
  const Tensor square = t * t, scaled = row * t, mixed = t - plain, e = lanes::exp(t);
  EXPECT_EQ(square.strides(), t.strides());
  EXPECT_EQ(scaled.strides(), t.strides());
  EXPECT_EQ(e.strides(), t.strides());
  const auto sq = square.to_vector<double>(), sc = scaled.to_vector<double>();
  const auto mx = mixed.to_vector<double>(), ex = e.to_vector<double>();
  for (size_t i = 0; i < ts.size(); ++i) {
    ASSERT_NEAR(sq[i], ts[i] * ts[i], 1e-6 * (1 + ts[i] * ts[i])) << i;
    ASSERT_NEAR(sc[i], rs[i / 2000] * ts[i], 1e-6 * (1 + std::abs(ts[i]))) << i;
    ASSERT_NEAR(mx[i], ts[i] - ps[i], 1e-6 * (1 + std::abs(ts[i]) + std::abs(ps[i]))) << i;
    ASSERT_NEAR(ex[i], std::exp(ts[i]), 1e-6 * std::exp(ts[i])) << i;
  }
}

TEST(Elementwise, BroadcastingShapes) {
  const Tensor a = lanes::ones({3, 1, 5});
  const Tensor b = lanes::ones({4, 1});
  EXPECT_EQ((a + b).shape(), (lanes::Shape{3, 4, 5}));
  EXPECT_EQ((lanes::scalar(1.0f) * b).shape(), (lanes::Shape{4, 1}));
  EXPECT_EQ(lanes::where(lanes::ones({4, 5}, DType::Bool), a, 0.0f * b).shape(),
            (lanes::Shape{3, 4, 5}));
  const Tensor empty = lanes::ones({0, 3});
  EXPECT_EQ(lanes::exp(empty + lanes::ones({3})).shape(), (lanes::Shape{0, 3}));
}

TEST(Elementwise, PrimitiveNamesInGraphs) {
  EXPECT_STREQ(lanes::kernels::unary_name(lanes::kernels::UnaryOp::Logistic), "logistic");
  EXPECT_STREQ(lanes::kernels::binary_name(lanes::kernels::BinaryOp::Atan2), "atan2");
  EXPECT_FALSE(lanes::kernels::binary_accepts(lanes::kernels::BinaryOp::Sub, DType::Bool));
  EXPECT_TRUE(lanes::kernels::is_comparison(lanes::kernels::BinaryOp::Ge));
}

}  // namespace

// select with broadcast, strided and transposed operands: every layout takes the chunked SIMD
// blend; each element is compared with the plain ternary.
TEST(Elementwise, SelectOverEveryLayout) {
  const int64_t n = 37, m = 1100;  // rows longer than a gather chunk, odd tails
  std::vector<float> v(n * m), w(n * m);
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(0.1f * i), w[i] = std::cos(0.3f * i);
  const Tensor x = lanes::tensor(v, {n, m}), y = lanes::tensor(w, {n, m});
  const Tensor cond = x > 0.0;
  const Tensor zero = lanes::broadcast_to(lanes::scalar(0.0f), {n, m});
  const Tensor y_t = lanes::transpose(lanes::transpose(y).contiguous());
  const Tensor wide = lanes::concatenate({x, y}, 1);
  const Tensor x_strided = lanes::slice(wide, {0, 0}, {n, 2 * m}, {1, 2});  // every other column
  const auto c = cond.to_vector<bool>();
  const auto xs = x_strided.to_vector<float>();
  for (const auto& [a, b] : std::vector<std::pair<Tensor, Tensor>>{
           {zero, y}, {x, zero}, {x_strided, y_t}, {zero, y_t}}) {
    const auto got = lanes::where(cond, a, b).to_vector<float>();
    const auto av = a.to_vector<float>(), bv = b.to_vector<float>();
    for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], c[i] ? av[i] : bv[i]) << i;
  }
  // A broadcast scalar branch on either side, in float64 too (the splat blend).
  const Tensor y64 = lanes::cast(y, DType::Float64);
  const Tensor splat = lanes::broadcast_to(lanes::scalar(-2.5, DType::Float64), {n, m});
  const auto y64v = y64.to_vector<double>();
  const auto left = lanes::where(cond, splat, y64).to_vector<double>();
  const auto right = lanes::where(cond, y64, splat).to_vector<double>();
  for (size_t i = 0; i < left.size(); ++i) {
    ASSERT_EQ(left[i], c[i] ? -2.5 : y64v[i]) << i;
    ASSERT_EQ(right[i], c[i] ? y64v[i] : -2.5) << i;
  }
  const auto strided_cond =
      lanes::where(lanes::slice(wide, {0, 0}, {n, 2 * m}, {1, 2}) > 0.0, x, y);
  const auto got = strided_cond.to_vector<float>();
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], xs[i] > 0 ? v[i] : w[i]) << i;
}

// Every length of a row's SIMD tail (masked loads and stores on AVX-512), float32 and float64:
// contiguous, times a scalar, rows times a per-row scalar, and a unary; each element equals the
// same operation on that element alone (an element in a full batch), and a slice that ends
// before its storage does reads nothing past its end.
TEST(Elementwise, EveryTailLengthMatchesTheElementAlone) {
  for (DType dtype : {lanes::kFloat32, lanes::kFloat64}) {
    const Tensor s = lanes::cast(lanes::tensor(std::vector<double>{0.5, -1.5, 3.0}, {3}), dtype);
    for (int64_t n = 1; n <= 40; ++n) {
      std::vector<double> a(n + 8), b(n);
      for (int64_t i = 0; i < n + 8; ++i) a[i] = 0.1 * double(i) - 1.3;
      for (int64_t i = 0; i < n; ++i) b[i] = 2.0 - 0.07 * double(i);
      const Tensor big = lanes::cast(lanes::tensor(a, {n + 8}), dtype);
      const Tensor x = lanes::slice_axis(big, 0, 0, n);
      const Tensor y = lanes::cast(lanes::tensor(b, {n}), dtype);
      const auto sum = (x + y).to_vector<double>(), scaled = (x * 3.0).to_vector<double>();
      const auto e = lanes::exp(x).to_vector<double>();
      const auto rows =
          (lanes::broadcast_to(x, {3, n}) * lanes::expand_dims(s, 1)).to_vector<double>();
      const auto sv = s.to_vector<double>();
      for (int64_t i = 0; i < n; ++i) {
        const Tensor xi = lanes::slice_axis(x, 0, i, i + 1);
        const Tensor yi = lanes::slice_axis(y, 0, i, i + 1);
        ASSERT_EQ(sum[i], (xi + yi).item<double>()) << n << " " << i;
        ASSERT_EQ(scaled[i], (xi * 3.0).item<double>()) << n << " " << i;
        ASSERT_EQ(e[i], lanes::exp(xi).item<double>()) << n << " " << i;
        ASSERT_NEAR(sum[i], a[i] + b[i], 1e-5 * (1 + std::abs(a[i] + b[i])));
        for (int64_t r = 0; r < 3; ++r)
          ASSERT_EQ(rows[r * n + i], (xi * lanes::slice_axis(s, 0, r, r + 1)).item<double>());
      }
    }
  }
}

// Concatenates and fused tiles copy short rows with vector moves and a masked tail
// (kernels/copy_bytes.h): every part width from 1 to 70 elements and every element size, against
// the parts' values element by element.
TEST(Elementwise, ShortRowCopiesOfEveryWidthKeepEveryElement) {
  const int64_t rows = 9;
  for (DType dtype : {lanes::kBool, lanes::kUInt8, lanes::kFloat32, lanes::kFloat64}) {
    for (int64_t w = 1; w <= 70; ++w) {
      std::vector<Tensor> parts;
      for (int64_t k = 0; k < 3; ++k) {
        const int64_t width = w + k;  // three different widths, so every tail offset occurs
        std::vector<double> v(size_t(rows * width));
        for (size_t i = 0; i < v.size(); ++i) v[i] = double((i * 7 + size_t(k) * 3) % 5);
        parts.push_back(lanes::cast(lanes::tensor(v, {rows, width}), dtype));
      }
      const auto got = lanes::concatenate(parts, 1).to_vector<double>();
      const int64_t total = 3 * w + 3;
      ASSERT_EQ(int64_t(got.size()), rows * total);
      int64_t at = 0;
      for (const Tensor& p : parts) {
        const auto want = p.to_vector<double>();
        const int64_t width = p.shape(1);
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t c = 0; c < width; ++c)
            ASSERT_EQ(got[size_t(r * total + at + c)], want[size_t(r * width + c)])
                << lanes::dtype_name(dtype) << " w=" << w << " r=" << r << " c=" << c;
        at += width;
      }
      // A fused select whose mask is broadcast over the middle dim is gathered row by row.
      const Tensor mask = lanes::expand_dims(parts[0] != lanes::zeros_like(parts[0]), 1);
      const Tensor x = lanes::cast(lanes::arange(rows * 2 * w), lanes::kFloat32);
      auto f = [&](const Tensor& xs) {
        return lanes::where(mask, lanes::reshape(xs, {rows, 2, w}) * 2.0f, -1.0f);
      };
      const auto fused = lanes::compile(f)(x).to_vector<double>();
      const auto mv = parts[0].to_vector<double>();
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t m = 0; m < 2; ++m)
          for (int64_t c = 0; c < w; ++c) {
            const double want = mv[size_t(r * w + c)] != 0 ? 2.0 * double((r * 2 + m) * w + c) : -1;
            ASSERT_EQ(fused[size_t((r * 2 + m) * w + c)], want) << "w=" << w << " r=" << r;
          }
    }
  }
}

// Bitwise ops on every integer dtype against the same op on each pair of C++ integers, eager and
// compiled (a fused chain); on bools the logical ops; floats are a clear error.
TEST(Elementwise, BitwiseOpsMatchIntegerArithmetic) {
  const std::vector<double> av = {0, 1, 5, 6, 77, 100, 127, -1, -6, -128},
                            bv = {3, 12, 5, 9, 54, 27, 1, 64, -3, 7};
  for (DType dtype : {lanes::kInt32, lanes::kInt64, lanes::kUInt8}) {
    const Tensor a = lanes::cast(lanes::tensor(av, {10}), dtype);
    const Tensor b = lanes::cast(lanes::tensor(bv, {10}), dtype);
    auto chain = [](const Tensor& x, const Tensor& y) {
      return lanes::bitwise_xor(lanes::bitwise_and(x, y),
                                lanes::bitwise_not(lanes::bitwise_or(x, y)));
    };
    const auto x = a.to_vector<int64_t>(), y = b.to_vector<int64_t>();
    const auto got_and = lanes::bitwise_and(a, b).to_vector<int64_t>();
    const auto got_or = lanes::bitwise_or(a, b).to_vector<int64_t>();
    const auto got_xor = lanes::bitwise_xor(a, b).to_vector<int64_t>();
    const auto got_not = lanes::bitwise_not(a).to_vector<int64_t>();
    const auto eager = chain(a, b).to_vector<int64_t>();
    const auto compiled = lanes::compile(chain)(a, b).to_vector<int64_t>();
    EXPECT_EQ(lanes::bitwise_not(a).dtype(), dtype);
    for (size_t i = 0; i < x.size(); ++i) {
      // The reference wraps each result to the dtype, as the kernel's integers do.
      auto wrap = [&](int64_t v) {
        if (dtype == lanes::kUInt8) return int64_t(uint8_t(v));
        if (dtype == lanes::kInt32) return int64_t(int32_t(v));
        return v;
      };
      EXPECT_EQ(got_and[i], wrap(x[i] & y[i])) << lanes::dtype_name(dtype) << " " << i;
      EXPECT_EQ(got_or[i], wrap(x[i] | y[i])) << lanes::dtype_name(dtype) << " " << i;
      EXPECT_EQ(got_xor[i], wrap(x[i] ^ y[i])) << lanes::dtype_name(dtype) << " " << i;
      EXPECT_EQ(got_not[i], wrap(~x[i])) << lanes::dtype_name(dtype) << " " << i;
      EXPECT_EQ(eager[i], wrap((x[i] & y[i]) ^ ~(x[i] | y[i])));
      EXPECT_EQ(compiled[i], eager[i]);
    }
  }
  const Tensor p = lanes::tensor(std::vector<double>{1, 1, 0, 0}, {4}) != 0.0;
  const Tensor q = lanes::tensor(std::vector<double>{1, 0, 1, 0}, {4}) != 0.0;
  EXPECT_EQ(lanes::bitwise_and(p, q).to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 0, 0}));
  EXPECT_EQ(lanes::bitwise_xor(p, q).to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 1, 0}));
  EXPECT_EQ(lanes::bitwise_not(p).to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 1, 1}));
  EXPECT_EQ(lanes::bitwise_and(p, q).dtype(), lanes::kBool);
  EXPECT_THROW(lanes::bitwise_or(lanes::ones({3}), lanes::ones({3})), lanes::Error);
  EXPECT_THROW(lanes::bitwise_not(lanes::ones({3})), lanes::Error);
}
