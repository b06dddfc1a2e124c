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
