// random::Generator and VmapOptions::randomness: the generator's exact stream, the traced
// fold_in, and every draw (an op table of functions drawing from a Generator) under vmap's Same
// and Different modes against the per-example loop with fold_in keys, on 1 and 2 threads,
// compiled or not, nested, and under grad; the Error mode's message; compile reading the
// generator's counter at each call.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "expect_near.h"
#include "lanes/lanes.h"

namespace {

using lanes::DType;
using lanes::Tensor;
namespace random = lanes::random;

uint64_t bits(const random::Key& k) { return static_cast<uint64_t>(k.bits.item<int64_t>()); }

// Exact equality of values, shapes and dtypes (the modes promise bit-identical numbers).
void expect_same(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  EXPECT_EQ(got.to_vector<double>(), want.to_vector<double>()) << what;
}

class Threads {
 public:
  Threads() : saved_(lanes::num_threads()) {}
  ~Threads() { lanes::set_num_threads(saved_); }

 private:
  int saved_;
};

// ---- the stream --------------------------------------------------------------------------------

TEST(Generator, StreamIsFoldInOfTheSeedKeyByCounter) {
  random::Generator gen(1234);
  for (uint64_t n = 0; n < 5; ++n) {
    EXPECT_EQ(gen.counter(), n);
    expect_same(random::normal(gen, {3, 4}),
                random::normal(random::fold_in(random::key(1234), n), {3, 4}),
                "draw " + std::to_string(n));
  }
  EXPECT_EQ(bits(gen.next_key()), bits(random::fold_in(random::key(1234), 5)));
  gen.set_counter(2);  // rewind
  EXPECT_EQ(bits(gen.next_key()), bits(random::fold_in(random::key(1234), 2)));
  const random::Key k = random::key(77);
  random::Generator from = random::Generator::from_key(k);
  EXPECT_EQ(bits(from.next_key()), bits(random::fold_in(k, 0)));
  random::Generator copy = from;  // copies share the stream
  EXPECT_EQ(bits(copy.next_key()), bits(random::fold_in(k, 1)));
  EXPECT_EQ(from.counter(), 2u);
}

TEST(Generator, DrawsAreTheSameOnOneAndTwoThreads) {
  Threads restore;
  lanes::set_num_threads(1);
  random::Generator a(5);
  const Tensor one = random::uniform(a, {1 << 18});
  lanes::set_num_threads(2);
  random::Generator b(5);
  expect_same(random::uniform(b, {1 << 18}), one, "uniform");
}

// ---- fold_in with a traced integer -----------------------------------------------------------

TEST(FoldIn, TensorDataIsBitIdenticalToTheHostInteger) {
  const random::Key k = random::key(0x0123456789abcdefull);
  for (int64_t d : {int64_t(0), int64_t(1), int64_t(-1), int64_t(1) << 40, INT64_MIN}) {
    const Tensor data = lanes::tensor(std::vector<int64_t>{d}, {});
    EXPECT_EQ(bits(random::fold_in(k, data)), bits(random::fold_in(k, uint64_t(d)))) << d;
  }
  // int32 data is sign-extended to the same 64 bits.
  const Tensor minus_one = lanes::tensor(std::vector<int32_t>{-1}, {});
  EXPECT_EQ(bits(random::fold_in(k, minus_one)), bits(random::fold_in(k, ~uint64_t(0))));
}

TEST(FoldIn, TracedAndBatched) {
  const random::Key k = random::key(99);
  auto f = [&](const Tensor& i) { return random::fold_in(k, i).bits; };
  const Tensor idx = lanes::arange(0, 40, 1, DType::Int64) * int64_t(1000003);
  const Tensor batched = lanes::vmap(f)(idx);
  const Tensor compiled = lanes::compile(lanes::vmap(f))(idx);
  for (int64_t i = 0; i < 40; ++i) {
    const uint64_t want = bits(random::fold_in(k, uint64_t(i * 1000003)));
    EXPECT_EQ(uint64_t(batched.to_vector<int64_t>()[i]), want);
    EXPECT_EQ(uint64_t(compiled.to_vector<int64_t>()[i]), want);
  }
  // A batched key and batched data.
  const Tensor keys = random::fold_in_each(lanes::full({40}, 5, DType::Int64), idx);
  auto g = [](const Tensor& key, const Tensor& i) { return random::fold_in({key}, i).bits; };
  const Tensor both = lanes::vmap(g)(keys, idx);
  for (int64_t i = 0; i < 40; ++i)
    EXPECT_EQ(uint64_t(both.to_vector<int64_t>()[i]),
              bits(random::fold_in(random::fold_in(random::key(5), uint64_t(i * 1000003)),
                                   uint64_t(i * 1000003))));
  EXPECT_THROW(random::fold_in(k, lanes::zeros({})), lanes::Error);
  EXPECT_THROW(random::fold_in(k, lanes::zeros({2}, DType::Int64)), lanes::Error);
}

// ---- the op table of draws -------------------------------------------------------------------

// A function of one example x (shape (5, 6), float32) that draws from gen.
struct DrawRow {
  std::string name;
  std::function<Tensor(const random::Generator&, const Tensor&)> f;
};

std::vector<DrawRow> draw_rows() {
  using G = const random::Generator&;
  return {
      {"normal",
       [](G g, const Tensor& x) {
         return x + random::normal(g, {5, 6});
       }},
      {"normal_f64", [](G g, const Tensor&) { return random::normal(g, {7}, DType::Float64); }},
      {"uniform", [](G g, const Tensor& x) { return x * random::uniform(g, {6}, -1.0, 2.0); }},
      {"bernoulli",
       [](G g, const Tensor&) {
         return random::bernoulli(g, 0.3, {4, 3});
       }},
      {"randint", [](G g, const Tensor&) { return random::randint(g, {9}, -5, 17); }},
      {"randint_i32",
       [](G g, const Tensor&) { return random::randint(g, {3}, 0, 1000, DType::Int32); }},
      {"categorical", [](G g, const Tensor& x) { return random::categorical(g, x * 3.0); }},
      {"categorical_axis0", [](G g, const Tensor& x) { return random::categorical(g, x, 0); }},
      {"permutation", [](G g, const Tensor&) { return random::permutation(g, 11); }},
      {"permutation_rows", [](G g, const Tensor& x) { return random::permutation(g, x); }},
      {"truncated_normal",
       [](G g, const Tensor&) { return random::truncated_normal(g, -0.5, 1.5, {8}); }},
      {"truncated_normal_tail",
       [](G g, const Tensor&) {
         return random::truncated_normal(g, 4.0, 9.0, {8}, DType::Float64);
       }},
      {"dropout", [](G g, const Tensor& x) { return lanes::dropout(x, 0.25, g, true); }},
      {"dropout_eval", [](G g, const Tensor& x) { return lanes::dropout(x, 0.25, g, false); }},
      {"three_draws",  // draw j of a call uses fold_in(lane key, j)
       [](G g, const Tensor& x) {
         const Tensor a = random::normal(g, {5, 6});
         const Tensor b = lanes::dropout(x, 0.5, g, true);
         return a + b + lanes::cast(random::randint(g, {6}, 0, 3), DType::Float32);
       }},
  };
}

constexpr int64_t kBatch = 7;

Tensor examples() { return random::normal(random::key(3), {kBatch, 5, 6}); }

// The per-example loop: lane i draws from a generator at `lane_key(i)`.
Tensor loop(const DrawRow& row, const Tensor& xs,
            const std::function<random::Key(int64_t)>& lane_key) {
  std::vector<Tensor> out;
  for (int64_t i = 0; i < xs.shape(0); ++i) {
    const random::Generator lane = random::Generator::from_key(lane_key(i));
    out.push_back(row.f(lane, xs[i]));
  }
  return lanes::stack(out);
}

lanes::VmapOptions with(lanes::Randomness r) {
  lanes::VmapOptions o;
  o.randomness = r;
  return o;
}

TEST(Randomness, DifferentIsTheLoopWithFoldInKeys) {
  const Tensor xs = examples();
  for (const DrawRow& row : draw_rows()) {
    random::Generator gen(11);
    gen.set_counter(4);
    auto f = [&](const Tensor& x) { return row.f(gen, x); };
    const Tensor got = lanes::vmap(f, 0, 0, with(lanes::Randomness::Different))(xs);
    const bool draws = row.name != "dropout_eval";
    EXPECT_EQ(gen.counter(), draws ? 5u : 4u) << row.name << ": one key per vmapped call";
    const random::Key k = random::fold_in(random::key(11), 4);
    expect_same(got, loop(row, xs, [&](int64_t i) { return random::fold_in(k, uint64_t(i)); }),
                row.name);
  }
}

TEST(Randomness, SameGivesEveryLaneOneDraw) {
  const Tensor xs = examples();
  for (const DrawRow& row : draw_rows()) {
    random::Generator gen(12);
    auto f = [&](const Tensor& x) { return row.f(gen, x); };
    auto batched = lanes::vmap(f, 0, 0, with(lanes::Randomness::Same));
    const Tensor got = batched(xs);
    const random::Key k = random::fold_in(random::key(12), 0);
    expect_same(got, loop(row, xs, [&](int64_t) { return k; }), row.name);
    // Compiled: the next key, read at the call.
    const Tensor compiled = lanes::compile(batched)(xs);
    const random::Key k1 = random::fold_in(random::key(12), 1);
    expect_same(compiled, loop(row, xs, [&](int64_t) { return k1; }), row.name + " compiled");
  }
}

// Bit-identical on 1 and 2 threads and compiled; a compiled call advances the generator once and
// the next call draws the next key's numbers.
TEST(Randomness, DifferentIsInvariantToThreadsAndCompile) {
  Threads restore;
  const Tensor xs = examples();
  for (const DrawRow& row : draw_rows()) {
    auto run = [&](int threads, bool compiled, int calls) {
      lanes::set_num_threads(threads);
      random::Generator gen(13);
      auto f = [&](const Tensor& x) { return row.f(gen, x); };
      auto batched = lanes::vmap(f, 0, 0, with(lanes::Randomness::Different));
      auto fast = lanes::compile(batched);
      Tensor last;
      for (int c = 0; c < calls; ++c) last = compiled ? fast(xs) : batched(xs);
      return last;
    };
    for (int calls : {1, 3}) {
      const Tensor want = run(1, false, calls);
      expect_same(run(2, false, calls), want, row.name + " on 2 threads");
      expect_same(run(1, true, calls), want, row.name + " compiled, 1 thread");
      expect_same(run(2, true, calls), want, row.name + " compiled, 2 threads");
    }
  }
}

TEST(Randomness, NestedVmapsFoldTwice) {
  random::Generator gen(21);
  const Tensor xs = random::normal(random::key(1), {3, 4, 5, 6});
  auto inner = lanes::vmap([&](const Tensor& x) { return random::normal(gen, {2}) + sum(x); }, 0, 0,
                           with(lanes::Randomness::Different));
  const Tensor got = lanes::vmap(inner, 0, 0, with(lanes::Randomness::Different))(xs);
  // Outer lane i: generator at fold_in(K, i); its inner vmap takes that generator's first key
  // K_i = fold_in(fold_in(K, i), 0) and gives inner lane j fold_in(K_i, j).
  const random::Key k = random::fold_in(random::key(21), 0);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j) {
      const random::Key ki = random::fold_in(random::fold_in(k, uint64_t(i)), 0);
      const random::Key lane = random::fold_in(ki, uint64_t(j));
      const Tensor want = random::normal(random::fold_in(lane, 0), {2}) + sum(xs[i][j]);
      expect_same(got[i][j], want, "lane " + std::to_string(i) + "," + std::to_string(j));
    }
}

// Per-example gradients through dropout: the mask is each lane's own; the gradient is
// mask / (1 - rate) * d loss.
TEST(Randomness, PerExampleGradientsThroughDropout) {
  const Tensor xs = examples();
  const Tensor w = random::normal(random::key(8), {6, 3});
  random::Generator gen(31);
  auto loss = [&](const Tensor& wi, const Tensor& x) {
    return lanes::sum(lanes::tanh(lanes::matmul(lanes::dropout(x, 0.3, gen, true), wi)));
  };
  auto perex = lanes::vmap(lanes::grad(loss), lanes::in_axes(lanes::none, 0), 0,
                           with(lanes::Randomness::Different));
  const Tensor got = perex(w, xs);
  const Tensor compiled = lanes::compile(perex)(w, xs);  // the generator's next key
  const random::Key k0 = random::fold_in(random::key(31), 0),
                    k1 = random::fold_in(random::key(31), 1);
  for (int64_t i = 0; i < kBatch; ++i) {
    for (const auto& [k, out] : {std::pair{k0, got}, std::pair{k1, compiled}}) {
      const random::Generator lane = random::Generator::from_key(random::fold_in(k, uint64_t(i)));
      auto one = [&](const Tensor& wi) {
        return lanes::sum(lanes::tanh(lanes::matmul(lanes::dropout(xs[i], 0.3, lane, true), wi)));
      };
      const Tensor want = lanes::grad(one)(w);
      SCOPED_TRACE("lane " + std::to_string(i));
      expect_near(out[i].to_vector<double>(), want.to_vector<double>(), 1e-5);
    }
  }
}

TEST(Randomness, ErrorModeNamesTheOption) {
  random::Generator gen(0);
  auto f = [&](const Tensor& x) { return x + random::normal(gen, {6}); };
  try {
    lanes::vmap(f)(lanes::zeros({3, 6}));
    FAIL() << "no error";
  } catch (const lanes::Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("VmapOptions::randomness"), std::string::npos) << msg;
    EXPECT_NE(msg.find("Randomness::Error"), std::string::npos) << msg;
    EXPECT_NE(msg.find("Randomness::Different"), std::string::npos) << msg;
  }
  EXPECT_EQ(gen.counter(), 0u) << "a failed vmap draws nothing";
  // Explicit keys are always fine.
  const Tensor keys =
      random::fold_in_each(lanes::zeros({3}, DType::Int64), lanes::arange(3, DType::Int64));
  const Tensor u = lanes::vmap([](const Tensor& k) { return random::uniform({k}, {2}); })(keys);
  EXPECT_EQ(u.shape(), (lanes::Shape{3, 2}));
}

// ---- compile reads the counter at each call -------------------------------------------------

TEST(GeneratorCompile, NewNumbersEachCallSameAsEager) {
  random::Generator gen(40), eager(40);
  auto f = [](const random::Generator& g, const Tensor& x) {
    return x * random::uniform(g, {4}) + random::normal(g, {4});
  };
  auto fast = lanes::compile([&](const Tensor& x) { return f(gen, x); });
  const Tensor x = lanes::ones({4});
  Tensor previous;
  for (int call = 0; call < 3; ++call) {
    const Tensor got = fast(x);
    expect_same(got, f(eager, x), "call " + std::to_string(call));
    EXPECT_EQ(gen.counter(), uint64_t(2 * (call + 1)));
    if (previous.defined()) EXPECT_NE(got.to_vector<float>(), previous.to_vector<float>());
    previous = got;
  }
  EXPECT_EQ(fast.cache_size(), 1u);
}

// Categorical's logits get a zero gradient (argmax is piecewise constant), as in jax.
TEST(GeneratorGrad, CategoricalLogitsHaveZeroGradient) {
  auto f = [](const Tensor& logits) {
    return lanes::sum(lanes::cast(random::categorical(random::key(1), logits), DType::Float32));
  };
  const Tensor g = lanes::grad(f)(lanes::ones({3, 5}));
  EXPECT_EQ(g.to_vector<float>(), std::vector<float>(15, 0.0f));
}

}  // namespace

namespace {

// A loop body is traced once and runs on every iteration: a Generator draw there is an error
// (it would repeat its numbers); explicit keys folded with the index are the way.
TEST(GeneratorLoops, DrawInsideALoopBodyIsAnError) {
  random::Generator gen(1);
  auto body = [&](const Tensor&, const Tensor& x) { return x + random::normal(gen, {}); };
  EXPECT_THROW(lanes::fori_loop(0, 3, body, lanes::zeros({})), lanes::Error);
  EXPECT_THROW(lanes::while_loop([](const Tensor& x) { return x < 1.0; },
                                 [&](const Tensor& x) { return x + random::uniform(gen, {}); },
                                 lanes::zeros({})),
               lanes::Error);
  try {
    lanes::fori_loop(0, 3, body, lanes::zeros({}));
  } catch (const lanes::Error& e) {
    EXPECT_NE(std::string(e.what()).find("fold_in"), std::string::npos) << e.what();
  }
  EXPECT_EQ(gen.counter(), 0u);
  // A draw in a cond branch runs once per call: allowed.
  const Tensor y = lanes::cond(
      lanes::full({}, 1.0) > 0.0, [&](const Tensor& x) { return x + random::normal(gen, {}); },
      [](const Tensor& x) { return x; }, lanes::zeros({}));
  EXPECT_EQ(gen.counter(), 1u);
  // Explicit keys folded with the loop index: a different number per iteration.
  const random::Key k = random::key(5);
  const Tensor sums = lanes::fori_loop(
      0, 3,
      [&](const Tensor& i, const Tensor& x) {
        return x + random::normal(random::fold_in(k, lanes::cast(i, DType::Int64)), {});
      },
      lanes::zeros({}));
  double want = 0;
  for (uint64_t i = 0; i < 3; ++i) want += random::normal(random::fold_in(k, i), {}).item<float>();
  EXPECT_NEAR(sums.item<float>(), want, 1e-5);
  (void)y;
}

}  // namespace

namespace {

// d/dx sum(c * dropout(x)) = c / (1 - rate) where the element was kept, else 0 (hand-derived;
// x has no zeros, so the kept elements are the nonzero outputs). jvp agrees; not training, the
// gradient is c.
TEST(DropoutGrad, MaskTimesScale) {
  const Tensor x = random::uniform(random::key(1), {6, 7}, 0.5, 2.0, DType::Float64);
  const Tensor c = random::normal(random::key(2), {6, 7}, DType::Float64);
  const random::Key k = random::key(3);
  for (bool training : {true, false}) {
    auto f = [&](const Tensor& v) { return lanes::sum(c * lanes::dropout(v, 0.4, k, training)); };
    const Tensor g = lanes::grad(f)(x);
    const auto out = lanes::dropout(x, 0.4, k, training).to_vector<double>();
    const auto cs = c.to_vector<double>();
    std::vector<double> want(out.size());
    for (size_t i = 0; i < out.size(); ++i)
      want[i] = training ? (out[i] != 0 ? cs[i] / (1 - 0.4) : 0.0) : cs[i];
    expect_near(g.to_vector<double>(), want, 1e-12);
    const Tensor t =
        lanes::jvp(f, std::make_tuple(x), std::make_tuple(lanes::ones(x.shape(), DType::Float64)))
            .second;
    double dot = 0;
    for (double w : want) dot += w;
    EXPECT_NEAR(t.item<double>(), dot, 1e-10);
  }
}

}  // namespace

namespace {

// Different is bit-identical whatever the chunk_size (1, 3, B; chunks slice the hidden lane keys
// like any mapped input), compiled or not, and equal to the per-example loop.
TEST(Randomness, DifferentIsInvariantToChunkSize) {
  const Tensor xs = examples();
  for (const DrawRow& row : draw_rows()) {
    const random::Key k = random::fold_in(random::key(51), 0);
    const Tensor want = loop(row, xs, [&](int64_t i) { return random::fold_in(k, uint64_t(i)); });
    for (int64_t chunk : {int64_t(1), int64_t(3), kBatch}) {
      for (bool compiled : {false, true}) {
        random::Generator gen(51);
        auto f = [&](const Tensor& x) { return row.f(gen, x); };
        lanes::VmapOptions o = with(lanes::Randomness::Different);
        o.chunk_size = chunk;
        auto batched = lanes::vmap(f, 0, 0, o);
        const Tensor got = compiled ? lanes::compile(batched)(xs) : batched(xs);
        expect_same(got, want,
                    row.name + " chunk " + std::to_string(chunk) + (compiled ? " compiled" : ""));
        EXPECT_EQ(gen.counter(), row.name == "dropout_eval" ? 0u : 1u) << row.name;
      }
    }
  }
}

}  // namespace
