// Views: the shape ops re-describe memory instead of copying it (same storage, no new buffer),
// except reshape of non-contiguous data, which must copy. And no op writes into its inputs.
#include <gtest/gtest.h>

#include "lanes/lanes.h"

namespace {

using lanes::Shape;
using lanes::Tensor;

Tensor sample(const Shape& shape) {
  return lanes::reshape(lanes::arange(lanes::shape_numel(shape), lanes::kFloat32), shape);
}

::testing::AssertionResult shares(const Tensor& view, const Tensor& base) {
  if (view.storage() == base.storage()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "a copy of shape " << lanes::shape_str(view.shape());
}

TEST(Views, TransposeSharesStorage) {
  const Tensor x = sample({2, 3, 4});
  const Tensor t = lanes::transpose(x);
  EXPECT_TRUE(shares(t, x));
  EXPECT_EQ(t.shape(), (Shape{4, 3, 2}));
  EXPECT_EQ(t.strides(), (lanes::Strides{1, 4, 12}));
  EXPECT_TRUE(shares(lanes::moveaxis(x, 0, -1), x));
  EXPECT_TRUE(shares(lanes::swapaxes(x, 0, 1), x));
  // A transpose of a transpose is still a view of the original buffer.
  EXPECT_TRUE(shares(lanes::transpose(t, {1, 0, 2}), x));
}

TEST(Views, BroadcastIsStrideZeroView) {
  const Tensor x = sample({3, 1});
  const Tensor b = lanes::broadcast_to(x, {2, 3, 4});
  EXPECT_TRUE(shares(b, x));
  EXPECT_EQ(b.strides(), (lanes::Strides{0, 1, 0}));
  const Tensor v = sample({3});
  EXPECT_TRUE(shares(lanes::broadcast_in_dim(v, {3, 5}, {0}), v));
}

TEST(Views, ExpandDimsSqueezeReshapeOfContiguousDataShareStorage) {
  const Tensor x = sample({2, 3});
  EXPECT_TRUE(shares(lanes::expand_dims(x, 1), x));
  EXPECT_TRUE(shares(lanes::squeeze(lanes::expand_dims(x, 0)), x));
  EXPECT_TRUE(shares(lanes::reshape(x, {3, 2}), x));
  EXPECT_TRUE(shares(lanes::reshape(x, {-1}), x));
  EXPECT_TRUE(shares(lanes::flatten(x), x));
  // A contiguous block of rows keeps its offset through reshape.
  const Tensor rows = lanes::slice_axis(sample({4, 3}), 0, 1, 3);
  const Tensor r = lanes::reshape(rows, {6});
  EXPECT_TRUE(shares(r, rows));
  EXPECT_EQ(r.offset(), 3);
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{3, 4, 5, 6, 7, 8}));
}

TEST(Views, SliceSharesStorage) {
  const Tensor x = sample({5, 6});
  const Tensor s = lanes::slice(x, {1, 2}, {5, 6}, {2, 3});
  EXPECT_TRUE(shares(s, x));
  EXPECT_EQ(s.offset(), 8);
  EXPECT_EQ(s.strides(), (lanes::Strides{12, 3}));
  EXPECT_EQ(s.to_vector<float>(), (std::vector<float>{8, 11, 20, 23}));
  EXPECT_TRUE(shares(lanes::slice_axis(x, -1, 0, 6, 2), x));
}

TEST(Views, ReshapeOfTransposedDataCopies) {
  const Tensor x = sample({2, 3});
  const Tensor t = lanes::transpose(x);
  const Tensor r = lanes::reshape(t, {6});
  EXPECT_FALSE(shares(r, x));
  EXPECT_TRUE(r.is_contiguous());
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  // A broadcast (stride-0) operand is materialised too.
  const Tensor b = lanes::reshape(lanes::broadcast_to(sample({3}), {2, 3}), {6});
  EXPECT_EQ(b.to_vector<float>(), (std::vector<float>{0, 1, 2, 0, 1, 2}));
}

TEST(Views, OpsNeverWriteIntoTheirInputs) {
  const Tensor x = sample({4, 3});
  const std::vector<float> before = x.to_vector<float>();
  const Tensor idx = lanes::tensor(std::vector<int32_t>{1, 1, -1});
  const Tensor y = lanes::scatter_add(x, idx, lanes::ones({3, 3}));
  EXPECT_FALSE(shares(y, x));
  EXPECT_EQ(x.to_vector<float>(), before);
  EXPECT_EQ(y.to_vector<float>()[3], 5.0f);  // row 1 got two updates of 1
  // Views of x feed the kernels; x stays the same.
  lanes::pad(lanes::transpose(x), {1, 0}, {0, 1}, 9.0);
  lanes::concatenate({x, lanes::transpose(lanes::transpose(x))});
  lanes::gather(lanes::transpose(x), idx, 1);
  EXPECT_EQ(x.to_vector<float>(), before);
}

TEST(Views, PadWithoutPaddingAndSingleConcatenateReturnTheInput) {
  const Tensor x = sample({2, 3});
  EXPECT_TRUE(shares(lanes::pad(x, {0, 0}, {0, 0}), x));
  EXPECT_TRUE(shares(lanes::concatenate({x}, 1), x));
}

}  // namespace
