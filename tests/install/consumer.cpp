// Built against an installed lanes: a matmul and a reduction, checked against known values.
#include <lanes/lanes.h>

#include <iostream>

int main() {
  const lanes::Tensor a = lanes::reshape(lanes::arange(6), {2, 3});
  const lanes::Tensor s = lanes::sum(lanes::matmul(a, lanes::transpose(a)));
  // a a^T = [[5, 14], [14, 50]] -> 83
  std::cout << "consumer: sum(a a^T) = " << s.item<float>() << "\n";
  return s.item<float>() == 83.0f ? 0 : 1;
}
