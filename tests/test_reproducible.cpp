// The reproducibility guarantee (lanes/determinism.h) on the cases issue 26 reported:
// - item 5: LoopStrategy::Auto chose between masking and compacting by timing, so 291 of 300
//   identical calls differed from the first; now the same bits every call, at 1 and 2 threads,
//   compiled or not (batch invariance off);
// - item 4: a chunked vmap differed from the unchunked one in the last bits (a one-lane chunk took
//   another product kernel; a Mask while_loop's sum another reduction order).
// tests/test_fuzz.cpp checks the same over random programs.
#include <gtest/gtest.h>

#include <vector>

#include "lanes/lanes.h"
#include "same_bits.h"

namespace {

using lanes::Tensor;

// tanh(W c) until each lane has run its own trip count (0 .. 9 over the 10 lanes).
Tensor newton_like(const Tensor& w, const Tensor& x, const Tensor& trips) {
  using Carry = std::pair<Tensor, Tensor>;
  return lanes::while_loop([&](const Carry& c) { return c.second < trips; },
                           [&](const Carry& c) {
                             return Carry(lanes::tanh(lanes::matmul(w, c.first)), c.second + 1.0);
                           },
                           Carry(x, lanes::zeros({}, lanes::DType::Float64)))
      .first;
}

TEST(Reproducible, AutoLoopsGiveTheSameBitsOnEveryCall) {
  const Tensor w = lanes::random::normal(lanes::random::key(1), {4, 4}, lanes::DType::Float64);
  const Tensor xs = lanes::random::normal(lanes::random::key(2), {10, 4}, lanes::DType::Float64);
  const Tensor trips = lanes::arange(10, lanes::DType::Float64);
  auto f = [&](const Tensor& x, const Tensor& t) { return newton_like(w, x, t); };
  auto batched = lanes::vmap(f);
  const Tensor first = batched(xs, trips);
  int differ = 0;
  for (int call = 0; call < 300; ++call) differ += same_bits(batched(xs, trips), first) ? 0 : 1;
  EXPECT_EQ(differ, 0);
  lanes::set_num_threads(1);
  EXPECT_TRUE(same_bits(batched(xs, trips), first)) << "1 thread";
  lanes::set_num_threads(2);
  auto compiled = lanes::compile(lanes::vmap(f));
  for (int call = 0; call < 20; ++call) EXPECT_TRUE(same_bits(compiled(xs, trips), first));
}

TEST(Reproducible, ChunkedProductsMatchUnchunkedWithBatchInvariance) {
  lanes::set_batch_invariant(true);
  for (lanes::DType dtype : {lanes::DType::Float32, lanes::DType::Float64}) {
    const Tensor w = lanes::random::normal(lanes::random::key(3), {4, 4}, dtype);
    const Tensor vs = lanes::random::normal(lanes::random::key(4), {2, 4}, dtype);
    auto f = [&](const Tensor& v) { return lanes::matmul(w, v); };
    lanes::VmapOptions one;
    one.chunk_size = 1;
    const Tensor whole = lanes::vmap(f)(vs);
    EXPECT_TRUE(same_bits(lanes::vmap(f, 0, 0, one)(vs), whole));
    EXPECT_TRUE(same_bits(f(vs[1]), whole[1]));
  }
  lanes::set_batch_invariant(false);
}

// No product in the body: every chunk size and strategy gives the same bits by default.
TEST(Reproducible, ChunkedMaskedLoopsMatchUnchunked) {
  const Tensor xs =
      lanes::random::uniform(lanes::random::key(5), {7, 6}, 0.0, 1.0, lanes::DType::Float64);
  auto f = [](const Tensor& x) {
    return lanes::while_loop([](const Tensor& c) { return lanes::sum(c) < 40.0; },
                             [](const Tensor& c) { return c * 0.9 + lanes::sum(c) * 0.1 + 1.0; },
                             x);
  };
  const Tensor want = lanes::vmap(f)(xs);
  for (lanes::LoopStrategy s :
       {lanes::LoopStrategy::Auto, lanes::LoopStrategy::Mask, lanes::LoopStrategy::Compact})
    for (int64_t chunk : {1, 2, 3, 6, 7}) {
      lanes::VmapOptions o;
      o.loop = s;
      o.chunk_size = chunk;
      EXPECT_TRUE(same_bits(lanes::vmap(f, 0, 0, o)(xs), want)) << int(s) << " chunk " << chunk;
    }
  for (int64_t i = 0; i < 7; ++i) EXPECT_TRUE(same_bits(f(xs[i]), want[i])) << i;
}

}  // namespace
