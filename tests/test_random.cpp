// lanes::random: Threefry known answers, reproducibility (thread counts, shapes), independence
// of split keys, and the distributions' statistics on a million samples.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <set>

#include "../src/kernels/random.h"
#include "lanes/lanes.h"

namespace {

using lanes::DType;
using lanes::Tensor;
namespace random = lanes::random;

constexpr int64_t kMillion = 1 << 20;

// Restores the thread count a test changes.
class Threads {
 public:
  Threads() : saved_(lanes::num_threads()) {}
  ~Threads() { lanes::set_num_threads(saved_); }

 private:
  int saved_;
};

uint64_t bits(const random::Key& k) { return static_cast<uint64_t>(k.bits.item<int64_t>()); }
random::Key make_key(uint32_t k0, uint32_t k1) { return random::key(uint64_t(k0) << 32 | k1); }

// ---- Threefry-2x32-20 known-answer vectors (Random123's kat_vectors) ------------------------

struct Kat {
  std::array<uint32_t, 2> key, counter, expected;
};
const Kat kKats[] = {
    {{0, 0}, {0, 0}, {0x6b200159, 0x99ba4efe}},
    {{0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}, {0x1cb996fc, 0xbb002be7}},
    {{0x13198a2e, 0x03707344}, {0x243f6a88, 0x85a308d3}, {0xc4923a9c, 0x483df7a0}},
};

TEST(Threefry, KnownAnswersThroughTheKernel) {
  for (const Kat& k : kKats) EXPECT_EQ(lanes::kernels::threefry2x32(k.key, k.counter), k.expected);
}

// fold_in(key, data) hashes the counter `data` under `key`: the same vectors via the public API.
TEST(Threefry, KnownAnswersThroughFoldIn) {
  for (const Kat& k : kKats) {
    const uint64_t data = uint64_t(k.counter[0]) << 32 | k.counter[1];
    const uint64_t want = uint64_t(k.expected[0]) << 32 | k.expected[1];
    EXPECT_EQ(bits(random::fold_in(make_key(k.key[0], k.key[1]), data)), want);
  }
}

// split(key, n)[i] hashes counter i: key {0, 0}, counter {0, 0} is the first KAT.
TEST(Threefry, KnownAnswerThroughSplit) {
  EXPECT_EQ(bits(random::split(random::key(0), 3)[0]), 0x6b20015999ba4efeull);
}

// ---- keys ------------------------------------------------------------------------------------

TEST(Keys, KeyHoldsTheSeed) {
  const random::Key k = random::key(0xdeadbeefcafef00dull);
  EXPECT_EQ(k.bits.dtype(), DType::Int64);
  EXPECT_EQ(k.bits.ndim(), 0);
  EXPECT_EQ(bits(k), 0xdeadbeefcafef00dull);
}

TEST(Keys, SplitKeysAreDistinctAndDeterministic) {
  const auto a = random::split(random::key(42), 1000), b = random::split(random::key(42), 1000);
  std::set<uint64_t> seen{bits(random::key(42))};
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(bits(a[i]), bits(b[i]));
    EXPECT_TRUE(seen.insert(bits(a[i])).second) << "key " << i << " repeats";
  }
  // A prefix of a longer split is the shorter split (counter i gives key i).
  const auto c = random::split(random::key(42), 2);
  EXPECT_EQ(bits(c[0]), bits(a[0]));
  EXPECT_EQ(bits(c[1]), bits(a[1]));
}

TEST(Keys, FoldInDependsOnKeyAndData) {
  std::set<uint64_t> seen;
  for (uint64_t seed : {0ull, 1ull, 1ull << 40})
    for (uint64_t data : {0ull, 1ull, 2ull, 1ull << 33})
      EXPECT_TRUE(seen.insert(bits(random::fold_in(random::key(seed), data))).second);
  EXPECT_EQ(random::split(random::key(3), 0).size(), 0u);
}

// Streams of sibling keys are uncorrelated (|r| ~ 1/sqrt(n) = 0.003 here).
TEST(Keys, SplitStreamsAreUncorrelated) {
  const auto keys = random::split(random::key(7), 4);
  std::vector<std::vector<double>> streams;
  for (const auto& k : keys) streams.push_back(random::uniform(k, {1 << 17}).to_vector<double>());
  for (size_t a = 0; a < streams.size(); ++a)
    for (size_t b = a + 1; b < streams.size(); ++b) {
      double sab = 0, sa = 0, sb = 0, saa = 0, sbb = 0;
      const double n = double(streams[a].size());
      for (size_t i = 0; i < streams[a].size(); ++i) {
        const double x = streams[a][i], y = streams[b][i];
        sab += x * y, sa += x, sb += y, saa += x * x, sbb += y * y;
      }
      const double cov = sab / n - sa / n * sb / n;
      const double r = cov / std::sqrt((saa / n - sa * sa / n / n) * (sbb / n - sb * sb / n / n));
      EXPECT_LT(std::abs(r), 0.015) << "keys " << a << " and " << b;
    }
}

// ---- reproducibility -------------------------------------------------------------------------

TEST(Reproducible, SameNumbersOnOneAndTwoThreads) {
  Threads restore;
  const random::Key k = random::key(2024);
  lanes::set_num_threads(1);
  const auto u1 = random::uniform(k, {kMillion + 3}).to_vector<float>();
  const auto n1 = random::normal(k, {1000, 1001}, DType::Float64).to_vector<double>();
  const auto b1 = random::bernoulli(k, 0.4, {kMillion}).to_vector<bool>();
  lanes::set_num_threads(2);
  EXPECT_EQ(random::uniform(k, {kMillion + 3}).to_vector<float>(), u1);
  EXPECT_EQ(random::normal(k, {1000, 1001}, DType::Float64).to_vector<double>(), n1);
  EXPECT_EQ(random::bernoulli(k, 0.4, {kMillion}).to_vector<bool>(), b1);
}

// Each number is a function of its flat index: the shape only arranges them.
TEST(Reproducible, ShapeOnlyArrangesTheNumbers) {
  const random::Key k = random::key(9);
  for (DType dtype : {DType::Float32, DType::Float64}) {
    const auto flat = random::uniform(k, {6000}, 0, 1, dtype).to_vector<double>();
    EXPECT_EQ(random::uniform(k, {20, 300}, 0, 1, dtype).to_vector<double>(), flat);
    EXPECT_EQ(random::uniform(k, {2, 3, 1000}, 0, 1, dtype).to_vector<double>(), flat);
    const auto prefix = random::uniform(k, {17}, 0, 1, dtype).to_vector<double>();
    EXPECT_TRUE(std::equal(prefix.begin(), prefix.end(), flat.begin()));
  }
}

// ---- distributions ---------------------------------------------------------------------------

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / double(v.size());
}

double variance(const std::vector<double>& v) {
  const double m = mean(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return s / double(v.size());
}

// sqrt(n) * sup |F_n - F|; below 1.95 with probability 0.999 for samples of F.
double ks_statistic(std::vector<double> v, const std::function<double(double)>& cdf) {
  std::sort(v.begin(), v.end());
  const double n = double(v.size());
  double d = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    const double f = cdf(v[i]);
    d = std::max({d, (double(i) + 1) / n - f, f - double(i) / n});
  }
  return d * std::sqrt(n);
}

TEST(Distributions, UniformFloat32) {
  const auto v = random::uniform(random::key(1), {kMillion}).to_vector<double>();
  for (double x : v) ASSERT_TRUE(x >= 0.0 && x < 1.0) << x;
  EXPECT_NEAR(mean(v), 0.5, 1.5e-3);  // 5 sigma
  EXPECT_NEAR(variance(v), 1.0 / 12, 1e-3);
  EXPECT_LT(ks_statistic(v, [](double x) { return x; }), 1.95);
}

TEST(Distributions, UniformFloat64UsesFiftyTwoBits) {
  const auto v =
      random::uniform(random::key(2), {kMillion}, -3, 5, DType::Float64).to_vector<double>();
  bool finer_than_float32 = false;
  for (double x : v) {
    ASSERT_TRUE(x >= -3 && x < 5) << x;
    finer_than_float32 |= double(float(x)) != x;
  }
  EXPECT_TRUE(finer_than_float32);
  EXPECT_NEAR(mean(v), 1.0, 8 * 1.5e-3);
  EXPECT_NEAR(variance(v), 64.0 / 12, 64 * 1e-3);
  EXPECT_LT(ks_statistic(v, [](double x) { return (x + 3) / 8; }), 1.95);
}

TEST(Distributions, Normal) {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    const auto v = random::normal(random::key(3), {1024, 1024}, dtype).to_vector<double>();
    for (double x : v) ASSERT_TRUE(std::isfinite(x));
    EXPECT_NEAR(mean(v), 0.0, 5e-3);      // 5 sigma
    EXPECT_NEAR(variance(v), 1.0, 7e-3);  // 5 sigma of sqrt(2 / n)
    EXPECT_LT(ks_statistic(v, [](double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }), 1.95);
  }
}

TEST(Distributions, BernoulliFrequency) {
  for (double p : {0.3, 0.5, 0.9}) {
    const Tensor b = random::bernoulli(random::key(4), p, {1000, 1000});
    ASSERT_EQ(b.dtype(), DType::Bool);
    const auto v = b.to_vector<double>();
    EXPECT_NEAR(mean(v), p, 5 * std::sqrt(p * (1 - p) / 1e6)) << "p = " << p;
  }
  const auto never = random::bernoulli(random::key(5), 0.0, {10000}).to_vector<double>();
  const auto always = random::bernoulli(random::key(5), 1.0, {10000}).to_vector<double>();
  EXPECT_EQ(mean(never), 0.0);
  EXPECT_EQ(mean(always), 1.0);
}

// Different keys, different streams; the same key, the same stream.
TEST(Distributions, KeysSelectStreams) {
  const auto a = random::uniform(random::key(10), {1000}).to_vector<float>();
  const auto b = random::uniform(random::key(11), {1000}).to_vector<float>();
  int same = 0;
  for (size_t i = 0; i < a.size(); ++i) same += a[i] == b[i];
  EXPECT_LT(same, 3);
  EXPECT_EQ(random::uniform(random::key(10), {1000}).to_vector<float>(), a);
}

}  // namespace
