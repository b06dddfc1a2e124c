// vmap over Ragged arguments by padding (RaggedStrategy::Pad, src/transforms/masking.h) and
// Auto's choice, against the per-example loop in float64.
#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "lanes/lanes.h"

using namespace lanes;

namespace {

Tensor example(Shape shape, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> normal;
  std::vector<double> v(size_t(shape_numel(shape)));
  for (double& x : v) x = normal(gen);
  return tensor(v, shape);
}

Ragged sequences(const std::vector<int64_t>& lengths, int64_t d, uint32_t seed) {
  std::vector<Tensor> xs;
  for (size_t i = 0; i < lengths.size(); ++i) xs.push_back(example({lengths[i], d}, seed + i));
  return Ragged(xs);
}

void expect_close(const Tensor& got, const Tensor& want, double tol = 1e-12) {
  ASSERT_EQ(got.shape(), want.shape());
  ASSERT_EQ(got.dtype(), want.dtype());
  const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(w[i]) || std::isinf(w[i])) {  // an empty example's mean or max
      EXPECT_TRUE(std::isnan(w[i]) ? std::isnan(g[i]) : g[i] == w[i]) << g[i] << " vs " << w[i];
      continue;
    }
    EXPECT_NEAR(g[i], w[i], tol * (1 + std::abs(w[i])));
  }
}

void expect_error(const std::function<void()>& f, const std::vector<std::string>& parts) {
  try {
    f();
    FAIL() << "no error";
  } catch (const Error& e) {
    for (const std::string& p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

VmapOptions with(RaggedStrategy s) {
  VmapOptions o;
  o.ragged = s;
  return o;
}

const std::vector<int64_t> kLengths = {5, 1, 7, 3, 0, 7, 2, 4};

// f under Pad, Group and Auto equals the loop, example by example.
template <class F>
void expect_loop(const F& f, const Ragged& xs, double tol = 1e-12) {
  for (RaggedStrategy s : {RaggedStrategy::Pad, RaggedStrategy::Group, RaggedStrategy::Auto}) {
    const Ragged got = vmap(f, 0, 0, with(s))(xs);
    ASSERT_EQ(got.size(), xs.size());
    for (int64_t i = 0; i < xs.size(); ++i) expect_close(got[i], f(xs[i]), tol);
  }
}

}  // namespace

TEST(RaggedPad, ReductionsFillThePaddingWithTheirIdentity) {
  const Ragged xs = sequences({5, 1, 7, 3, 2, 7, 2, 4}, 3, 1);  // max/min need length >= 1
  expect_loop([](const Tensor& x) { return sum(x, Axes{0}); }, xs);
  expect_loop([](const Tensor& x) { return mean(x, Axes{0}); }, xs);
  expect_loop([](const Tensor& x) { return max(x, Axes{0}) - min(x, Axes{0}); }, xs);
  expect_loop([](const Tensor& x) { return prod(tanh(x), Axes{0}); }, xs);
  expect_loop([](const Tensor& x) { return argmax(x, 0); }, xs);
  expect_loop([](const Tensor& x) { return argmin(exp(x), 0); }, xs);
  expect_loop([](const Tensor& x) { return softmax(x, 0); }, xs);
  expect_loop([](const Tensor& x) { return logsumexp(x, Axes{0}); }, xs);
  // Everything: a mean over both axes (count = rows * 3).
  expect_loop([](const Tensor& x) { return mean(square(x)); }, xs);
}

TEST(RaggedPad, ProductsAndCumulativeOps) {
  const Ragged xs = sequences(kLengths, 3, 2);
  const Tensor w = example({3, 4}, 3);
  expect_loop([](const Tensor& x) { return matmul(transpose(x), x); }, xs);  // contracts rows
  expect_loop([&](const Tensor& x) { return tanh(matmul(x, w)); }, xs);      // rows stay ragged
  expect_loop([](const Tensor& x) { return cumsum(x, 0); }, xs);
  expect_loop([](const Tensor& x) { return cumsum(x, 0, true); }, xs);
  // Self-attention with mean pooling: products over the ragged axis on both sides.
  auto attention = [&](const Tensor& x) {
    const Tensor q = matmul(x, w), k = matmul(x, w) * 0.5;
    const Tensor p = softmax(matmul(q, transpose(k)) * 0.5, -1);
    return mean(matmul(p, x), Axes{0});
  };
  const Ragged nonempty = sequences({5, 1, 7, 3, 2, 7}, 3, 4);
  expect_loop(attention, nonempty);
}

TEST(RaggedPad, SlicesKeepTheirOffsetFromTheEnd) {
  const Ragged xs = sequences({5, 2, 7, 3, 6}, 2, 5);
  expect_loop([](const Tensor& x) { return slice_axis(x, 0, 1, x.shape(0)) * 2.0; }, xs);
  expect_loop([](const Tensor& x) { return sum(slice_axis(x, 0, 0, x.shape(0) - 1), Axes{0}); },
              xs);
  // A fixed slice every lane reaches (the first row).
  expect_loop([](const Tensor& x) { return x[0] + 1.0; }, xs);
  // ... and one the shortest lane does not: Pad says so, Auto groups.
  auto first3 = [](const Tensor& x) { return sum(slice_axis(x, 0, 0, 3)); };
  expect_error([&] { (void)vmap(first3, 0, 0, with(RaggedStrategy::Pad))(xs); },
               {"Pad cannot run", "shape (2, 2) at shorter lengths"});
  const Ragged long_enough = sequences({5, 4, 7, 3, 6}, 2, 6);
  expect_loop(first3, long_enough);
}

TEST(RaggedPad, ScansStopAtEachLanesLength) {
  const Ragged xs = sequences(kLengths, 3, 7);
  const Tensor wx = example({3, 4}, 8) * 0.5, wh = example({4, 4}, 9) * 0.5;
  auto rnn = [&](const Tensor& x) {
    auto step = [&](const Tensor& h, const Tensor& xt) {
      const Tensor next = tanh(matmul(xt, wx) + matmul(h, wh));
      return std::make_pair(next, next);
    };
    return scan(step, zeros({4}, kFloat64), x);
  };
  for (RaggedStrategy s : {RaggedStrategy::Pad, RaggedStrategy::Auto}) {
    const auto [last, hs] = vmap(rnn, 0, 0, with(s))(xs);
    for (int64_t i = 0; i < xs.size(); ++i) {
      const auto [want_last, want_hs] = rnn(xs[i]);
      expect_close(Tensor(last)[i], want_last);
      expect_close(hs[i], want_hs);
    }
  }
  // A reverse scan skips the padded steps first.
  auto backwards = [&](const Tensor& x) {
    auto step = [&](const Tensor& h, const Tensor& xt) {
      return std::make_pair(tanh(matmul(xt, wx) + matmul(h, wh)), sum(xt));
    };
    ScanOptions reverse;
    reverse.reverse = true;
    return scan(step, zeros({4}, kFloat64), x, reverse).first;
  };
  expect_loop(backwards, xs);
  // fori_loop to the length, reading row i (an empty example cannot be read).
  auto running = [](const Tensor& x) {
    return fori_loop(
        0, x.shape(0), [&](const Tensor& i, const Tensor& acc) { return acc * 0.5 + x[i]; },
        zeros({3}, kFloat64));
  };
  expect_loop(running, sequences({5, 1, 7, 3, 2, 7}, 3, 8));
}

TEST(RaggedPad, PerExampleGradientsThroughAnRnn) {
  const Ragged xs = sequences(kLengths, 3, 10);
  const Tensor wx = example({3, 4}, 11) * 0.5, wh = example({4, 4}, 12) * 0.5;
  const Tensor y = example({8, 4}, 13);
  auto loss = [](const std::tuple<Tensor, Tensor>& w, const Tensor& x, const Tensor& target) {
    const auto& [a, b] = w;
    auto step = [&](const Tensor& h, const Tensor& xt) {
      return std::make_pair(tanh(matmul(xt, a) + matmul(h, b)), std::tuple<>{});
    };
    const Tensor h = scan(step, zeros({4}, kFloat64), x).first;
    return sum(square(h - target)) + mean(square(x));
  };
  const auto w = std::make_tuple(wx, wh);
  for (RaggedStrategy s : {RaggedStrategy::Pad, RaggedStrategy::Auto}) {
    const auto [ga, gb] = vmap(grad(loss), in_axes(none, 0, 0), 0, with(s))(w, xs, y);
    for (int64_t i = 0; i < xs.size(); ++i) {
      const auto [wa, wb] = grad(loss)(w, xs[i], y[i]);
      expect_close(Tensor(ga)[i], wa, 1e-10);
      expect_close(Tensor(gb)[i], wb, 1e-10);
    }
  }
  // The gradient with respect to the ragged input is ragged, and matches finite differences.
  auto input_grad = [&](const Tensor& x, const Tensor& target) {
    return grad([&](const Tensor& xx) { return loss(w, xx, target); })(x);
  };
  const Ragged gx = vmap(input_grad, 0, 0, with(RaggedStrategy::Pad))(xs, y);
  for (int64_t i = 0; i < xs.size(); ++i) {
    expect_close(gx[i], input_grad(xs[i], y[i]), 1e-10);
    if (xs[i].numel() == 0) continue;
    const double eps = 1e-6;
    std::vector<double> b(size_t(xs[i].numel()), 0.0);
    b[0] = eps;
    const Tensor bump = tensor(b, xs[i].shape());
    const double fd =
        (loss(w, xs[i] + bump, y[i]).item<double>() - loss(w, xs[i] - bump, y[i]).item<double>()) /
        (2 * eps);
    EXPECT_NEAR(gx[i][0][0].item<double>(), fd, 1e-6);
  }
}

TEST(RaggedPad, JvpChunkingAndNestedVmap) {
  const Ragged xs = sequences(kLengths, 3, 14);
  auto f = [](const Tensor& x) { return logsumexp(sin(x), Axes{0}); };
  auto tangent = [&](const Tensor& x) {
    return jvp(f, std::make_tuple(x), std::make_tuple(cos(x))).second;
  };
  expect_loop(tangent, xs);
  VmapOptions chunked = with(RaggedStrategy::Pad);
  chunked.chunk_size = 3;
  const Tensor c = vmap(f, 0, 0, chunked)(xs);
  for (int64_t i = 0; i < xs.size(); ++i) expect_close(c[i], f(xs[i]));
  // A vmap inside f over the non-ragged axis.
  auto inner = [](const Tensor& x) {
    return vmap([](const Tensor& col) { return max(col) + sum(col); }, 1)(x);
  };
  expect_loop(inner, sequences({5, 1, 7, 3, 2}, 3, 15));
}

TEST(RaggedPad, TwoRaggedAxesAndSharedLengths) {
  // Images of different heights and widths: a mean over both axes.
  std::vector<Tensor> images;
  const std::vector<std::pair<int64_t, int64_t>> sizes = {{3, 4}, {5, 2}, {1, 1}, {4, 4}, {2, 5}};
  for (size_t i = 0; i < sizes.size(); ++i)
    images.push_back(example({sizes[i].first, sizes[i].second}, 20 + uint32_t(i)));
  const Ragged im(images);
  expect_loop([](const Tensor& x) { return mean(x) + max(x); }, im);
  expect_loop([](const Tensor& x) { return sum(exp(x), Axes{1}); }, im);
  // Tokens and their weights share lengths: one symbol.
  const Ragged tokens = sequences({4, 2, 6, 1}, 3, 30), weights = sequences({4, 2, 6, 1}, 1, 40);
  auto pooled = [](const Tensor& x, const Tensor& w) { return sum(x * w, Axes{0}); };
  const Tensor p = vmap(pooled, 0, 0, with(RaggedStrategy::Pad))(tokens, weights);
  for (int64_t i = 0; i < tokens.size(); ++i) expect_close(p[i], pooled(tokens[i], weights[i]));
}

TEST(RaggedPad, EdgeSizes) {
  auto f = [](const Tensor& x) { return sum(x * 2.0, Axes{0}); };
  for (const std::vector<int64_t>& lengths :
       std::vector<std::vector<int64_t>>{{3}, {2, 2, 2}, {0, 1, 0, 1}, {0, 0}}) {
    const Ragged xs = sequences(lengths, 2, 50);
    expect_loop(f, xs);
  }
  const Ragged none_yet = vmap(f, 0, 0, with(RaggedStrategy::Auto))(Ragged());
  EXPECT_EQ(none_yet.size(), 0);
}

TEST(RaggedPad, WhatPaddingCannotMaskIsAnErrorAndAutoGroups) {
  const Ragged xs = sequences({4, 2, 6, 3}, 2, 60);
  // Joining along the ragged axis puts padding in the middle.
  auto doubled = [](const Tensor& x) { return sum(concatenate({x, x}, 0), Axes{0}); };
  expect_error([&] { (void)vmap(doubled, 0, 0, with(RaggedStrategy::Pad))(xs); },
               {"Pad cannot run", "not one ragged extent"});
  for (RaggedStrategy s : {RaggedStrategy::Group, RaggedStrategy::Auto}) {
    const Tensor got = vmap(doubled, 0, 0, with(s))(xs);
    for (int64_t i = 0; i < xs.size(); ++i) expect_close(got[i], doubled(xs[i]));
  }
  // The extent read as a number (not a count).
  auto squared_n = [](const Tensor& x) { return sum(x) * double(x.shape(0) * x.shape(0)); };
  expect_error([&] { (void)vmap(squared_n, 0, 0, with(RaggedStrategy::Pad))(xs); },
               {"Pad cannot run", "reads the extent as a number"});
  const Tensor got = vmap(squared_n)(xs);
  for (int64_t i = 0; i < xs.size(); ++i) expect_close(got[i], squared_n(xs[i]));
  // The last row (a slice from the end) has no rule.
  auto last = [](const Tensor& x) { return x[-1]; };
  expect_error([&] { (void)vmap(last, 0, 0, with(RaggedStrategy::Pad))(xs); },
               {"Pad cannot run", "slice"});
  const Tensor l = vmap(last)(xs);
  for (int64_t i = 0; i < xs.size(); ++i) expect_close(l[i], last(xs[i]));
}

TEST(RaggedPad, ExplainSaysWhichAndWhy) {
  const Ragged xs = sequences({40, 3, 17, 29, 8, 33, 21, 12, 5, 38, 26, 14}, 8, 70);
  const Tensor w = example({8, 8}, 71);
  auto f = [&](const Tensor& x) { return mean(tanh(matmul(x, w)), Axes{0}); };
  const Explanation pad = explain(vmap(f, 0, 0, with(RaggedStrategy::Pad)), xs);
  EXPECT_NE(pad.ragged.find("pad: 12 distinct shapes"), std::string::npos) << pad.ragged;
  EXPECT_NE(pad.ragged.find("% of the padded work"), std::string::npos) << pad.ragged;
  auto doubled = [](const Tensor& x) { return sum(concatenate({x, x}, 0), Axes{0}); };
  const Explanation grouped = explain(vmap(doubled), xs);
  EXPECT_NE(grouped.ragged.find("group: "), std::string::npos) << grouped.ragged;
  std::ostringstream os;
  os << pad;
  EXPECT_NE(os.str().find("ragged: pad"), std::string::npos);
}

TEST(RaggedPad, PerExampleGradientsThroughAnLstmClassifier) {
  const Ragged xs = sequences(kLengths, 3, 80);
  const Tensor wx = example({3, 8}, 81) * 0.5, wh = example({2, 8}, 82) * 0.5;
  const Tensor wo = example({2, 3}, 83);
  auto per_example = [&](const Tensor& x) {
    auto loss = [&](const std::tuple<Tensor, Tensor, Tensor>& w) {
      const auto& [a, b, o] = w;
      using Carry = std::pair<Tensor, Tensor>;
      auto step = [&](const Carry& hc, const Tensor& xt) {
        const Tensor g = matmul(xt, a) + matmul(hc.first, b);
        const Tensor c = sigmoid(slice_axis(g, 0, 2, 4)) * hc.second +
                         sigmoid(slice_axis(g, 0, 0, 2)) * tanh(slice_axis(g, 0, 4, 6));
        return std::make_pair(Carry{sigmoid(slice_axis(g, 0, 6, 8)) * tanh(c), c}, std::tuple<>{});
      };
      const Carry init{zeros({2}, kFloat64), zeros({2}, kFloat64)};
      const Tensor h = scan(step, init, x).first.first;
      return softmax_cross_entropy(matmul(h, o), scalar(1, kInt32));
    };
    return grad(loss)(std::make_tuple(wx, wh, wo));
  };
  for (RaggedStrategy s : {RaggedStrategy::Pad, RaggedStrategy::Auto}) {
    const auto [ga, gb, go] = vmap(per_example, 0, 0, with(s))(xs);
    for (int64_t i = 0; i < xs.size(); ++i) {
      const auto [wa, wb, wo_] = per_example(xs[i]);
      expect_close(Tensor(ga)[i], wa, 1e-10);
      expect_close(Tensor(gb)[i], wb, 1e-10);
      expect_close(Tensor(go)[i], wo_, 1e-10);
    }
  }
}

TEST(RaggedPad, RandomnessDifferentDrawsWhatTheLoopDraws) {
  // Lane i draws what the loop draws for example i with a generator at fold_in(K, i), K the
  // generator's next key: one key per call, whatever the strategy.
  const Ragged xs = sequences(kLengths, 3, 90);
  for (RaggedStrategy s : {RaggedStrategy::Pad, RaggedStrategy::Group, RaggedStrategy::Auto}) {
    random::Generator gen(21);
    gen.set_counter(3);
    auto f = [&](const Tensor& x) {
      const Tensor noise = random::normal(gen, x.shape(), kFloat64);  // padded along axis 0
      return std::make_pair(sum(x * noise, Axes{0}),
                            x + random::uniform(gen, {}, 0.0, 1.0, kFloat64));
    };
    VmapOptions o = with(s);
    o.randomness = Randomness::Different;
    const auto [pooled, shifted] = vmap(f, 0, 0, o)(xs);
    EXPECT_EQ(gen.counter(), 4u);
    const random::Key k = random::fold_in(random::key(21), 3);
    for (int64_t i = 0; i < xs.size(); ++i) {
      const random::Generator lane = random::Generator::from_key(random::fold_in(k, uint64_t(i)));
      const Tensor noise = random::normal(lane, xs[i].shape(), kFloat64);
      expect_close(Tensor(pooled)[i], sum(xs[i] * noise, Axes{0}));
      expect_close(shifted[i], xs[i] + random::uniform(lane, {}, 0.0, 1.0, kFloat64));
    }
  }
  // A draw padded along a later axis has no rule: Pad says so, Auto groups.
  random::Generator gen(22);
  auto columns = [&](const Tensor& x) {
    return sum(transpose(x) * random::uniform(gen, {3, x.shape(0)}, 0.0, 1.0, kFloat64));
  };
  VmapOptions pad = with(RaggedStrategy::Pad);
  pad.randomness = Randomness::Different;
  expect_error([&] { (void)vmap(columns, 0, 0, pad)(xs); }, {"Pad cannot run", "random_uniform"});
}

TEST(RaggedPad, AutoPadsWithinBucketsOfLengths) {
  // Many lengths over a wide range and quadratic work in the length: one padded call would be
  // mostly padding and a call per length mostly overhead, so Auto pads within buckets.
  std::vector<int64_t> lengths;
  for (int64_t i = 0; i < 64; ++i) lengths.push_back(2 + (i * i * 7) % 197);
  const Ragged xs = sequences(lengths, 32, 100);
  const Tensor w = example({32, 32}, 101) * 0.2;
  auto f = [&](const Tensor& x) {
    const Tensor q = matmul(x, w);
    return mean(matmul(softmax(matmul(q, transpose(x)), -1), x), Axes{0});
  };
  const Explanation e = explain(vmap(f), xs);
  EXPECT_NE(e.ragged.find("buckets: "), std::string::npos) << e.ragged;
  const Tensor got = vmap(f)(xs);
  for (int64_t i = 0; i < xs.size(); ++i) expect_close(got[i], f(xs[i]));
  // Lane i still draws what example i draws, in its bucket.
  random::Generator gen(31);
  auto noisy = [&](const Tensor& x) {
    return f(x) + sum(x * random::normal(gen, x.shape(), kFloat64), Axes{0});
  };
  VmapOptions o;
  o.randomness = Randomness::Different;
  const Explanation en = explain(vmap(noisy, 0, 0, o), xs);
  EXPECT_NE(en.ragged.find("buckets: "), std::string::npos) << en.ragged;
  const Tensor drawn = vmap(noisy, 0, 0, o)(xs);
  const random::Key k = random::fold_in(random::key(31), 1);  // the explain call drew key 0
  for (int64_t i = 0; i < xs.size(); ++i) {
    const random::Generator lane = random::Generator::from_key(random::fold_in(k, uint64_t(i)));
    expect_close(drawn[i],
                 f(xs[i]) + sum(xs[i] * random::normal(lane, xs[i].shape(), kFloat64), Axes{0}));
  }
}

// Functions that depend on the extent in ways probing at n and n + 1 alone would miss, and
// padded rows that must not reach valid ones (found in review): Auto equals the loop, and Pad
// equals it or refuses with a reason, never a wrong answer.
template <class F>
void expect_loop_or_refusal(const F& f, const Ragged& xs) {
  const Ragged got = vmap(f)(xs);
  for (int64_t i = 0; i < xs.size(); ++i) expect_close(got[i], f(xs[i]));
  try {
    const Ragged padded = vmap(f, 0, 0, with(RaggedStrategy::Pad))(xs);
    for (int64_t i = 0; i < xs.size(); ++i) expect_close(padded[i], f(xs[i]));
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Pad cannot run"), std::string::npos) << e.what();
  }
}

TEST(RaggedPad, ExtentsReadOtherwiseThanAsACount) {
  const Ragged wide = sequences({5, 101, 40}, 2, 110), eight = sequences({4, 8, 6}, 2, 111);
  const Ragged seven = sequences({4, 7, 5}, 2, 112), short_long = sequences({3, 8, 6}, 2, 113);
  // An unbiased variance: 1 / (n - 1) is neither k * n nor k / n.
  auto variance = [](const Tensor& x) {
    const Tensor d = x - mean(x, Axes{0});
    return sum(d * d, Axes{0}) * (1.0 / double(x.shape(0) - 1));
  };
  expect_loop_or_refusal(variance, wide);
  auto steps = [](const Tensor& x) {  // mean of the differences: a count of n - 1
    return mean(slice_axis(x, 0, 1, x.shape(0)) - slice_axis(x, 0, 0, x.shape(0) - 1), Axes{0});
  };
  expect_loop_or_refusal(steps, sequences({10, 1001, 30}, 2, 114));
  auto half = [](const Tensor& x) { return sum(slice_axis(x, 0, 0, x.shape(0) / 2), Axes{0}); };
  expect_loop_or_refusal(half, eight);
  expect_loop_or_refusal(half, seven);
  auto branch = [](const Tensor& x) { return x.shape(0) >= 5 ? sum(x, Axes{0}) : max(x, Axes{0}); };
  expect_loop_or_refusal(branch, short_long);
  // A scan of an explicit length n, with nothing padded to scan.
  auto decay = [](const Tensor& x) {
    ScanOptions o;
    o.length = x.shape(0);
    auto step = [](const Tensor& c, const std::tuple<>&) {
      return std::make_pair(c * 0.5, std::tuple<>{});
    };
    return scan(step, sum(x, Axes{0}), std::tuple<>{}, o).first;
  };
  expect_loop_or_refusal(decay, short_long);
}

TEST(RaggedPad, PaddedRowsNeverReachValidOnes) {
  // A histogram of each example's labels: padded labels (0) must not count.
  std::vector<Tensor> labels;
  for (int64_t n : {2, 5, 3}) labels.push_back(tensor(std::vector<int64_t>(size_t(n), 1)) * 0 + n);
  const Ragged ls(labels);
  auto histogram = [](const Tensor& l) {
    return scatter_add(zeros({6}, kFloat64), l, ones({l.shape(0)}, kFloat64));
  };
  expect_loop_or_refusal(histogram, ls);
  // Negative indices count from each example's own end.
  const Ragged xs = sequences({3, 5, 4}, 2, 120);
  auto last = [](const Tensor& x) { return take(x, tensor(std::vector<int64_t>{-1}), 0); };
  expect_loop_or_refusal(last, xs);
  // Per-example gradients of an embedding: the cotangent broadcast into the padding must not
  // land on row 0 of E.
  const Tensor table = example({6, 3}, 121);
  std::vector<Tensor> tokens;
  for (int64_t n : {2, 5, 3}) {
    std::vector<int64_t> t;
    for (int64_t i = 0; i < n; ++i) t.push_back(1 + (i * 2 + n) % 5);
    tokens.push_back(tensor(t));
  }
  const Ragged ts(tokens);
  auto embed_grad = [&](const Tensor& tok) {
    return grad([&](const Tensor& e) { return sum(tanh(take(e, tok, 0))); })(table);
  };
  expect_loop_or_refusal(embed_grad, ts);
  // Bounds that are an extent: a bootstrap resample of each example.
  random::Generator gen(5);
  auto resample = [&](const Tensor& x) {
    return mean(take(x, random::randint(gen, {x.shape(0)}, 0, x.shape(0)), 0), Axes{0});
  };
  VmapOptions o;
  o.randomness = Randomness::Different;
  const Tensor got = vmap(resample, 0, 0, o)(xs);
  const random::Key k = random::fold_in(random::key(5), 0);
  for (int64_t i = 0; i < xs.size(); ++i) {
    const random::Generator lane = random::Generator::from_key(random::fold_in(k, uint64_t(i)));
    expect_close(
        got[i],
        mean(take(xs[i], random::randint(lane, {xs[i].shape(0)}, 0, xs[i].shape(0)), 0), Axes{0}));
  }
}

TEST(RaggedPad, IntegerExtremesSurviveTheFill) {
  // The padding of a min must lose to every int64, INT64_MAX included.
  const int64_t big = std::numeric_limits<int64_t>::max();
  const Ragged xs({tensor(std::vector<int64_t>{big, big}), tensor(std::vector<int64_t>{big}),
                   tensor(std::vector<int64_t>{3, big, 7})});
  auto f = [](const Tensor& x) { return std::make_pair(min(x), argmin(x, 0)); };
  for (RaggedStrategy s : {RaggedStrategy::Pad, RaggedStrategy::Auto}) {
    const auto [m, i] = vmap(f, 0, 0, with(s))(xs);
    for (int64_t b = 0; b < xs.size(); ++b) {
      EXPECT_EQ(Tensor(m)[b].item<int64_t>(), f(xs[b]).first.item<int64_t>());
      EXPECT_EQ(Tensor(i)[b].item<int64_t>(), f(xs[b]).second.item<int64_t>());
    }
  }
}
