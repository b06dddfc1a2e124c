// Memory-bounded vmap: VmapOptions::chunk_size and max_memory_bytes. Every chunked result is
// compared with the unchunked vmap (bit-identical in float64: the same kernels run on fewer
// lanes) and, where the function is new here, with the per-example loop; the memory test reads
// the allocator's peak.
#include <gtest/gtest.h>

#include "expect_near.h"
#include "lanes/lanes.h"
#include "same_bits.h"

namespace {

using lanes::Shape;
using lanes::Tensor;

Tensor f64(const Shape& shape, uint64_t seed) {
  return lanes::random::normal(lanes::random::key(seed), shape, lanes::DType::Float64);
}

void expect_identical(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.shape(), b.shape());
  ASSERT_EQ(a.dtype(), b.dtype());
  EXPECT_EQ(a.contiguous().to_vector<double>(), b.contiguous().to_vector<double>());
}

void near(const Tensor& got, const Tensor& want, double tol) {
  ASSERT_EQ(got.shape(), want.shape());
  expect_near(lanes::cast(got, lanes::DType::Float64).contiguous().to_vector<double>(),
              lanes::cast(want, lanes::DType::Float64).contiguous().to_vector<double>(), tol);
}

// What a vmap returns once warm: its first call runs the rules eagerly, later calls (and every
// chunk of a chunked vmap) its optimized graph, whose fused reductions may round differently.
template <class F, class... A>
auto warm(const F& batched, const A&... args) {
  batched(args...);
  return batched(args...);
}

lanes::VmapOptions chunks_of(int64_t n) {
  lanes::VmapOptions o;
  o.chunk_size = n;
  return o;
}

// A per-example function with a matmul, a reduction and an unmapped weight.
Tensor mlp(const Tensor& x, const Tensor& w) {
  return lanes::sum(lanes::tanh(lanes::matmul(w, x)) * x[0], {});
}

TEST(Chunking, ChunkSizesGiveTheUnchunkedResult) {
  const Tensor xs = f64({8, 5}, 1), w = f64({5, 5}, 2);
  // The unchunked vmap's optimized graph (its first call runs the rules eagerly; the chunks
  // always run optimized graphs, as every later call does).
  const auto batched = lanes::vmap(mlp, lanes::in_axes(0, lanes::none));
  Tensor whole;
  for (int call = 0; call < 3; ++call) whole = batched(xs, w);
  for (int64_t c : {2, 3, 4, 5, 8, 100}) {
    SCOPED_TRACE(c);
    for (int call = 0; call < 3; ++call)
      expect_identical(lanes::vmap(mlp, lanes::in_axes(0, lanes::none), 0, chunks_of(c))(xs, w),
                       whole);
  }
  // Chunks of one lane: w x becomes a matrix-vector product per lane, which the small-product
  // kernel sums in another order than the batched GEMM. Equal to rounding.
  near(lanes::vmap(mlp, lanes::in_axes(0, lanes::none), 0, chunks_of(1))(xs, w), whole, 1e-14);
  for (int64_t i = 0; i < 7; ++i)
    EXPECT_NEAR(whole.to_vector<double>()[i], mlp(xs[i], w).item<double>(), 1e-12);
}

TEST(Chunking, AxesOtherThanTheFirstAndBroadcastLeaves) {
  // Batch at axis 1 of x, a size-1 mapped leaf that broadcasts, outputs at axis 1, -1 and none.
  const Tensor x = f64({3, 10, 2}, 3), b = f64({1, 2}, 4), w = f64({3}, 5);
  auto f = [](const Tensor& x, const Tensor& b, const Tensor& w) {
    Tensor y = lanes::matmul(lanes::transpose(x, {1, 0}), w) + b;  // (2,)
    return std::make_tuple(lanes::outer(y, y), y * 2.0, w * 3.0);
  };
  auto spec = lanes::in_axes(1, 0, lanes::none);
  const lanes::AxisSpec outs{1, -1, lanes::none};
  const auto whole = warm(lanes::vmap(f, spec, outs), x, b, w);
  // Equal to rounding: a chunk is a strided view of x, and under the sanitizer build (-O2) the
  // strided matrix-vector path contracts its multiply-adds differently from the contiguous one
  // (the Release build gives identical bits; the other tests check those).
  for (int64_t c : {1, 2, 3, 4, 9}) {
    SCOPED_TRACE(c);
    for (int call = 0; call < 3; ++call) {
      const auto part = lanes::vmap(f, spec, outs, chunks_of(c))(x, b, w);
      near(std::get<0>(part), std::get<0>(whole), 1e-14);
      near(std::get<1>(part), std::get<1>(whole), 1e-14);
      expect_identical(std::get<2>(part), std::get<2>(whole));
    }
  }
  EXPECT_EQ(std::get<0>(whole).shape(), (Shape{2, 10, 2}));
}

TEST(Chunking, MemoryBudgetChunksAndExplainSaysSo) {
  // Per lane an outer product of 256 float64s: 512 KiB. 64 lanes unchunked hold 32 MiB at once.
  const Tensor xs = f64({64, 256}, 6);
  auto f = [](const Tensor& x) { return lanes::sum(lanes::exp(lanes::outer(x, x) * 0.01), {}); };
  lanes::VmapOptions small;
  small.max_memory_bytes = 4 << 20;
  const Tensor whole = warm(lanes::vmap(f), xs);
  expect_identical(lanes::vmap(f, 0, 0, small)(xs), whole);
  const lanes::Explanation e = lanes::explain(lanes::vmap(f, 0, 0, small), xs);
  EXPECT_NE(e.chunking.find("chunked: 64 lanes in"), std::string::npos) << e.chunking;
  EXPECT_NE(e.chunking.find("budget"), std::string::npos) << e.chunking;
  // With the default budget (half the machine) the same vmap runs in one piece.
  EXPECT_EQ(lanes::explain(lanes::vmap(f), xs).chunking, "");
  std::ostringstream printed;
  printed << e;
  EXPECT_NE(printed.str().find("memory: chunked"), std::string::npos);
}

TEST(Chunking, PlansTheOptimizedGraphWhenTheExampleGraphDoesNotFit) {
  // The sum of squares of an outer product: the example graph forms the (256, 256) product per
  // lane, the optimized one never does (sum(x^2)^2), so 64 lanes under 4 MiB run in one piece,
  // the optimized graph from the first call.
  const Tensor xs = f64({64, 256}, 15);
  auto f = [](const Tensor& x) { return lanes::sum(lanes::square(lanes::outer(x, x)), {}); };
  lanes::VmapOptions small;
  small.max_memory_bytes = 4 << 20;
  const lanes::Explanation e = lanes::explain(lanes::vmap(f, 0, 0, small), xs);
  EXPECT_NE(e.chunking.find("one piece: the optimized graph"), std::string::npos) << e.chunking;
  lanes::empty_cache();
  lanes::reset_peak_memory();
  const size_t before = lanes::memory_stats().live_bytes;
  const Tensor got = lanes::vmap(f, 0, 0, small)(xs);
  EXPECT_LT(lanes::memory_stats().peak_bytes - before, size_t(1) << 20);
  std::vector<Tensor> loop;
  for (int64_t i = 0; i < 64; ++i) loop.push_back(f(xs[i]));
  near(got, lanes::stack(loop), 1e-12);
}

TEST(Chunking, PeakMemoryStaysNearTheBudget) {
  // Unchunked: 128 lanes x a (512 x 512) float32 outer product = 128 MiB at once.
  const Tensor xs = lanes::random::normal(lanes::random::key(7), {128, 512});
  auto f = [](const Tensor& x) { return lanes::sum(lanes::exp(lanes::outer(x, x) * 0.01f), {}); };
  lanes::VmapOptions budget;
  budget.max_memory_bytes = 16 << 20;
  const Tensor reference = lanes::vmap(f, 0, 0, chunks_of(1))(xs);
  for (int call = 0; call < 3; ++call) {
    lanes::empty_cache();
    lanes::reset_peak_memory();
    const size_t before = lanes::memory_stats().live_bytes;
    const Tensor got = lanes::vmap(f, 0, 0, budget)(xs);
    const size_t peak = lanes::memory_stats().peak_bytes - before;
    EXPECT_LT(peak, size_t(24) << 20) << "call " << call;
    near(got, reference, 1e-5);
  }
}

TEST(Chunking, ComposesWithGradCompileAndNestedVmap) {
  const Tensor xs = f64({6, 4}, 8), w = f64({4, 4}, 9);
  auto per_example = [](const Tensor& w, const Tensor& xs, lanes::VmapOptions o) {
    return lanes::sum(lanes::vmap(mlp, lanes::in_axes(0, lanes::none), 0, o)(xs, w), {});
  };
  // grad of a chunked vmap (a scan over chunks under the trace) equals grad of the unchunked.
  const Tensor gw = lanes::grad([&](const Tensor& w) { return per_example(w, xs, {}); })(w);
  const Tensor gw4 =
      lanes::grad([&](const Tensor& w) { return per_example(w, xs, chunks_of(4)); })(w);
  near(gw4, gw, 1e-12);
  // vmap of grad, chunked: per-example gradients.
  auto g1 = [&](const Tensor& x) {
    return lanes::grad([&](const Tensor& w) { return mlp(x, w); })(w);
  };
  const Tensor pe = warm(lanes::vmap(g1), xs);
  expect_identical(lanes::vmap(g1, 0, 0, chunks_of(4))(xs), pe);
  for (int64_t i = 0; i < 6; ++i) near(pe[i], g1(xs[i]), 1e-12);
  // compile of a chunked vmap, called twice.
  auto compiled = lanes::compile([](const Tensor& xs, const Tensor& w) {
    return lanes::vmap(mlp, lanes::in_axes(0, lanes::none), 0, chunks_of(4))(xs, w);
  });
  const Tensor whole = lanes::vmap(mlp, lanes::in_axes(0, lanes::none))(xs, w);
  near(compiled(xs, w), whole, 1e-12);
  near(compiled(xs, w), whole, 1e-12);
  // A chunked vmap inside another vmap.
  const Tensor xss = f64({3, 6, 4}, 10);
  auto inner = [&](const Tensor& xs) {
    return lanes::vmap(mlp, lanes::in_axes(0, lanes::none), 0, chunks_of(4))(xs, w);
  };
  const Tensor nested = lanes::vmap(inner)(xss);
  for (int64_t i = 0; i < 3; ++i)
    near(nested[i], lanes::vmap(mlp, lanes::in_axes(0, lanes::none))(xss[i], w), 1e-12);
}

TEST(Chunking, PerExampleControlFlow) {
  // A per-lane cond and while_loop: each chunk decides its own strategy on its own lanes.
  const Tensor xs = f64({11}, 11);
  auto f = [](const Tensor& x) {
    Tensor y = lanes::cond(
        x > 0.0, [](const Tensor& v) { return lanes::sqrt(v); },
        [](const Tensor& v) { return v * v; }, x);
    return lanes::while_loop([](const Tensor& v) { return lanes::abs(v) < 5.0; },
                             [](const Tensor& v) { return v * 2.0 + 0.5; }, y);
  };
  const Tensor whole = warm(lanes::vmap(f), xs);
  for (int64_t c : {1, 2, 5}) expect_identical(lanes::vmap(f, 0, 0, chunks_of(c))(xs), whole);
  for (int64_t i = 0; i < 11; ++i) near(whole[i], f(xs[i]), 1e-12);
}

TEST(Chunking, JacobianChunks) {
  const Tensor x = f64({9}, 12), w = f64({7, 9}, 13);
  auto f = [&](const Tensor& x) { return lanes::tanh(lanes::matmul(w, x)); };
  const Tensor jr = warm(lanes::jacrev(f), x), jf = warm(lanes::jacfwd(f), x);
  for (int64_t c : {1, 2, 4}) {
    lanes::JacOptions o;
    o.chunk_size = c;
    expect_identical(lanes::jacrev(f, 0, o)(x), jr);
    expect_identical(lanes::jacfwd(f, 0, o)(x), jf);
    expect_identical(lanes::jacrev(f, 0, o)(x), jr);  // from the cache
  }
  // The analytic Jacobian: (1 - tanh^2) w.
  const Tensor t = lanes::tanh(lanes::matmul(w, x));
  near(jr, lanes::expand_dims(1.0 - t * t, 1) * w, 1e-12);
}

TEST(Chunking, BadOptionsAreClearErrors) {
  const Tensor xs = f64({4, 2}, 14);
  auto f = [](const Tensor& x) { return x * 2.0; };
  lanes::VmapOptions zero;
  zero.chunk_size = 0;
  EXPECT_THROW(
      {
        try {
          lanes::vmap(f, 0, 0, zero)(xs);
        } catch (const lanes::Error& e) {
          EXPECT_NE(std::string(e.what()).find("chunk_size must be positive"), std::string::npos);
          throw;
        }
      },
      lanes::Error);
  lanes::VmapOptions negative;
  negative.max_memory_bytes = -1;
  EXPECT_THROW(lanes::vmap(f, 0, 0, negative)(xs), lanes::Error);
  // An empty batch with a chunk size runs (nothing to chunk).
  EXPECT_EQ(lanes::vmap(f, 0, 0, chunks_of(3))(lanes::zeros({0, 2})).shape(), (Shape{0, 2}));
}

}  // namespace

// ---- parallel chunks: a loop of small steps runs one chunk of lanes per thread -----------------

namespace {
// A small RNN cell iterated 20 times, and its per-example gradient: every step is a few small
// kernels, the case parallel chunks are for.
lanes::Tensor rnn(const Tensor& w, const Tensor& x) {
  return lanes::fori_loop(
      0, 20, [&](const Tensor&, const Tensor& h) { return lanes::tanh(lanes::matmul(w, h) + x); },
      x);
}

// Sets the pool's threads while it lives.
class Threads {
 public:
  explicit Threads(int n) : before_(lanes::num_threads()) { lanes::set_num_threads(n); }
  ~Threads() { lanes::set_num_threads(before_); }

 private:
  int before_;
};
}  // namespace

TEST(ParallelChunks, LoopsOfSmallStepsRunAChunkPerThreadWithTheSameBits) {
  const Tensor w = f64({8, 8}, 30) * 0.3, xs = f64({64, 8}, 31);
  auto f = [&](const Tensor& x) { return rnn(w, x); };
  auto per_example_grad = [&](const Tensor& x) {
    return lanes::grad([&](const Tensor& ww) { return lanes::sum(rnn(ww, x)); })(w);
  };
  Tensor one_thread, grads_one_thread;
  {
    const Threads one(1);
    one_thread = warm(lanes::vmap(f), xs);
    grads_one_thread = warm(lanes::vmap(per_example_grad), xs);
  }
  const Threads two(2);
  auto batched = lanes::vmap(f);
  EXPECT_EQ(lanes::explain(batched, xs).chunking.rfind("parallel: 64 lanes in 2 chunks of 32", 0),
            0u)
      << lanes::explain(batched, xs).chunking;
  EXPECT_TRUE(same_bits(warm(batched, xs), one_thread));
  EXPECT_TRUE(same_bits(warm(lanes::compile(batched), xs), one_thread));
  EXPECT_TRUE(same_bits(warm(lanes::vmap(per_example_grad), xs), grads_one_thread));
  EXPECT_TRUE(same_bits(warm(lanes::compile(lanes::vmap(per_example_grad)), xs), grads_one_thread));
  for (int64_t i : {0, 17, 63}) {
    near(one_thread[i], f(xs[i]), 1e-12);
    near(grads_one_thread[i], per_example_grad(xs[i]), 1e-12);
  }
}

TEST(ParallelChunks, NotForOddBatchesLargeStepsOrNoLoop) {
  const Threads two(2);
  const Tensor w = f64({8, 8}, 32) * 0.3;
  auto f = [&](const Tensor& x) { return rnn(w, x); };
  // A batch with no divisor between 2 and 8 chunks of 4 lanes or more: one piece.
  EXPECT_EQ(lanes::explain(lanes::vmap(f), f64({13, 8}, 33)).chunking, "");
  // A step whose values hold more than 2^18 elements over the batch: per-kernel threads pay.
  const Tensor big = f64({64, 8192}, 34);
  auto wide = [](const Tensor& x) {
    return lanes::fori_loop(
        0, 3, [](const Tensor&, const Tensor& h) { return lanes::sin(h); }, x);
  };
  EXPECT_EQ(lanes::explain(lanes::vmap(wide), big).chunking, "");
  // No loop: one piece.
  EXPECT_EQ(
      lanes::explain(lanes::vmap([](const Tensor& x) { return lanes::sin(x); }), f64({64, 8}, 35))
          .chunking,
      "");
}
