#include <gtest/gtest.h>

#include <sstream>

#include "lanes/lanes.h"

using namespace lanes;

TEST(Tensor, CreationAndAccess) {
  Tensor t = tensor(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  EXPECT_EQ(t.dtype(), kFloat32);
  EXPECT_EQ(t.numel(), 6);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.to_vector<int>(), (std::vector<int>{1, 2, 3, 4, 5, 6}));
  EXPECT_THROW(t.item<float>(), Error);
  EXPECT_EQ(scalar(2.5).item<double>(), 2.5);
  EXPECT_THROW(tensor(std::vector<float>{1, 2}, {3}), Error);
}

TEST(Tensor, PrintsLikeNumpy) {
  std::ostringstream os;
  os << tensor(std::vector<float>{1, 2, 3, 4}, {2, 2});
  EXPECT_EQ(os.str(), "array([[1., 2.],\n       [3., 4.]], dtype=float32)");
  os.str("");
  os << tensor(std::vector<double>{0.5, -1.25});
  EXPECT_EQ(os.str(), "array([ 0.5 , -1.25])");
  os.str("");
  os << tensor(std::vector<int32_t>{1, 20});
  EXPECT_EQ(os.str(), "array([ 1, 20], dtype=int32)");
}

// ---- shapes that cannot be: negative dims, counts that overflow, sizes no memory holds --------

namespace {
// f throws a lanes::Error whose message mentions every string of `mentions`.
template <class F>
void expect_error(F f, const std::vector<std::string>& mentions) {
  try {
    f();
    ADD_FAILURE() << "no lanes::Error thrown";
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const std::string& m : mentions)
      EXPECT_NE(msg.find(m), std::string::npos)
          << "message \"" << msg << "\" lacks \"" << m << "\"";
  }
}
constexpr int64_t k32 = int64_t{1} << 32, k62 = int64_t{1} << 62;
}  // namespace

TEST(TensorShapes, NegativeDimensionsAreErrorsWhereverAShapeIsAccepted) {
  expect_error([] { zeros({-3}); }, {"(-3,)", "negative"});
  expect_error([] { ones({2, -1}); }, {"(2, -1)", "negative"});
  expect_error([] { full({-2, 0}, 1.0, kInt32); }, {"(-2, 0)", "negative"});
  expect_error([] { tensor(std::vector<float>{}, {0, -1}); }, {"(0, -1)", "negative"});
  expect_error([] { Tensor::empty({4, -4}, kFloat64); }, {"(4, -4)", "negative"});
  expect_error([] { broadcast_to(ones({1}), {-3}); }, {"broadcast_to", "(-3,)", "negative"});
  expect_error([] { broadcast_in_dim(ones({1}), {2, -3}, {0}); }, {"(2, -3)", "negative"});
  expect_error([] { reshape(zeros({0}), {-2, 0}); }, {"reshape", "(-2, 0)"});
  expect_error([] { reshape(zeros({6}), {-1, -1}); }, {"reshape", "-1"});
  expect_error([] { iota({3, -1}, 0); }, {"iota", "(3, -1)"});
  expect_error([] { random::normal(random::key(0), {-5}); }, {"(-5,)", "negative"});
  // Under a transform the shape rules see the same check.
  auto traced = vmap([](const Tensor& x) { return broadcast_to(x, {-3, 1}); });
  expect_error([&] { traced(ones({2, 1})); }, {"(-3, 1)", "negative"});
  // A view made by hand checks its shape too.
  const Tensor base = ones({1});
  expect_error([&] { Tensor(base.storage(), {-3}, {0}, 0, kFloat32); }, {"(-3,)", "negative"});
  expect_error(
      [&] {
        Tensor(base.storage(), {k32, k32}, {0, 0}, 0, kFloat32);
      },
      {"(4294967296, 4294967296)"});
  // reshape's single -1 is still allowed.
  EXPECT_EQ(reshape(zeros({6}), {-1, 3}).shape(), (Shape{2, 3}));
  EXPECT_EQ(zeros({0, 5}).numel(), 0);
}

TEST(TensorShapes, ElementCountsThatOverflowAreErrors) {
  expect_error([] { zeros({k32, k32}); }, {"(4294967296, 4294967296)", "elements"});
  expect_error([] { zeros({k62, 4, 2}); }, {"(4611686018427387904, 4, 2)", "elements"});
  // A zero dim does not hide an overflow of the others (their products are the strides).
  expect_error([] { zeros({0, k32, k32}); }, {"(0, 4294967296, 4294967296)"});
  // Elements that fit but bytes that do not.
  expect_error([] { zeros({k62}, kFloat64); }, {"(4611686018427387904,)", "float64", "bytes"});
  const Tensor one = ones({1}, kBool);
  expect_error([&] { broadcast_to(one, {k32, k32}); }, {"(4294967296, 4294967296)"});
  expect_error([&] { reshape(zeros({0}), {k32, k32, 0}); }, {"(4294967296, 4294967296, 0)"});
  expect_error([&] { reshape(zeros({0}), {-1, k32, k32}); }, {"reshape", "4294967296"});
  // pad's and concatenate's sums, matmul's product.
  expect_error([&] { pad(one, {k62}, {k62}); }, {"pad", "overflow"});
  const Tensor quarter = broadcast_to(one, {k62});  // a view: 2^62 bools, 0 bytes of storage
  expect_error(
      [&] {
        concatenate({quarter, quarter, quarter, quarter}, 0);
      },
      {"concatenate", "overflow"});
  const Tensor col = broadcast_to(ones({1, 1}), {k32, 1}),
               row = broadcast_to(ones({1, 1}), {1, k32});
  expect_error([&] { matmul(col, row); }, {"(4294967296, 4294967296)"});
}

TEST(TensorShapes, AllocationsNoMemoryHoldsAreErrorsAndLeakNothing) {
  const size_t live = memory_stats().live_bytes;
  expect_error(
      [] {
        zeros({1000000, 1000000});
      },
      {"(1000000, 1000000)", "float32", "4000000000000 bytes"});
  expect_error([] { arange(0, 1e13); }, {"(10000000000000,)", "bytes"});
  expect_error([] { pad(ones({2}), {int64_t{1} << 40}, {0}); }, {"(1099511627778,)", "bytes"});
  expect_error([] { zeros({int64_t{1} << 45}, kUInt8); }, {"uint8", "35184372088832 bytes"});
  EXPECT_EQ(memory_stats().live_bytes, live);
  EXPECT_EQ(ones({3}).to_vector<float>(), (std::vector<float>{1, 1, 1}));  // still works
}

// from_external: what the Python bindings use to view numpy and DLPack memory.
TEST(ExternalMemory, ViewsWithoutCopyingKeepsTheOwnerAliveAndIsNeverWrittenInPlace) {
  auto owner = std::make_shared<std::vector<float>>(std::vector<float>{1, 2, 3, 4, 5, 6});
  std::weak_ptr<std::vector<float>> watch = owner;
  Tensor t = from_external(owner->data(), owner->size() * sizeof(float), kFloat32, {2, 3}, {3, 1},
                           0, owner);
  owner.reset();  // the tensor keeps it alive
  ASSERT_FALSE(watch.expired());
  EXPECT_EQ(t.raw_data(), watch.lock()->data());
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  // Strided and reversed views of the same memory.
  const std::shared_ptr<const void> keep = watch.lock();
  float* data = watch.lock()->data();
  EXPECT_EQ(from_external(data, 24, kFloat32, {3}, {2}, 0, keep).to_vector<float>(),
            (std::vector<float>{1, 3, 5}));
  EXPECT_EQ(from_external(data, 24, kFloat32, {3}, {-2}, 5, keep).to_vector<float>(),
            (std::vector<float>{6, 4, 2}));
  // The only handle on external memory is still not reused for an op's output.
  Tensor sole = from_external(data, 24, kFloat32, {6}, {1}, 0, keep);
  EXPECT_FALSE(sole.sole_owner());
  const Tensor doubled = lanes::compile([](const Tensor& x) { return exp(x * 2.0f); })(sole);
  EXPECT_NE(doubled.raw_data(), static_cast<const void*>(data));
  EXPECT_EQ(*watch.lock(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  t = Tensor();
  EXPECT_FALSE(watch.expired());  // `keep` still holds it
}

TEST(ExternalMemory, ViewsReachingOutsideTheMemoryAreErrors) {
  auto owner = std::make_shared<std::vector<double>>(4);
  double* data = owner->data();
  try {
    from_external(data, 32, kFloat64, {2, 3}, {3, 1}, 0, owner);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("reaches outside the 32 bytes"), std::string::npos);
  }
  EXPECT_THROW(from_external(data, 32, kFloat64, {2}, {-1}, 0, owner), Error);
  EXPECT_THROW(from_external(data, 32, kFloat64, {2}, {1, 1}, 0, owner), Error);
  EXPECT_THROW(from_external(data, 32, kFloat64, {4}, {1}, 0, nullptr), Error);
  EXPECT_EQ(from_external(data, 0, kFloat64, {0, 3}, {3, 1}, 0, owner).numel(), 0);
}
