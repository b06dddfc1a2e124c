// The lanes demo: the seed examples of DESIGN.md, run as far as the library goes today.
// Eager ops work now; vmap and grad arrive with the next issues, so those parts print
// "vmap: not yet" and show the per-example loop that vmap will replace.
#include <lanes/lanes.h>

#include <chrono>
#include <iostream>

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void outer_products() {
  std::cout << "== outer products of 100 matrices: tensordot(m, m, 0) ==\n";
  const lanes::Tensor a = lanes::ones({100, 32, 32});
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<lanes::Tensor> per_example;
  for (int64_t i = 0; i < a.shape(0); ++i) {
    const lanes::Tensor m = lanes::squeeze(lanes::slice_axis(a, 0, i, i + 1), 0);
    per_example.push_back(lanes::tensordot(m, m, 0));
  }
  const lanes::Tensor c = lanes::stack(per_example);
  std::cout << "loop: shape " << lanes::shape_str(c.shape()) << ", sum "
            << lanes::sum(c).item<double>() << " (expected " << 100.0 * 32 * 32 * 32 * 32 << "), "
            << ms_since(t0) << " ms\n";
  std::cout << "vmap: not yet\n\n";
}

void dense_layer() {
  std::cout << "== a Dense(1) layer on 10 examples ==\n";
  const auto keys = lanes::random::split(lanes::random::key(0), 3);
  const lanes::Tensor kernel = lanes::random::normal(keys[0], {32, 1});
  const lanes::Tensor bias = lanes::zeros({1});
  const lanes::Tensor inputs = lanes::random::normal(keys[1], {10, 32});
  const lanes::Tensor labels = lanes::random::normal(keys[2], {10, 1});
  const lanes::Tensor prediction = lanes::matmul(inputs, kernel) + bias;
  std::cout << "predictions " << lanes::shape_str(prediction.shape()) << ", l2 loss "
            << lanes::l2_loss(labels - prediction).item<float>() << "\n";
  std::cout << "per-example gradients (grad inside vmap): not yet\n\n";
}

void tour() {
  std::cout << "== eager ops ==\n";
  const lanes::Tensor x = lanes::reshape(lanes::arange(6), {2, 3});
  std::cout << "x = " << x << "\n";
  std::cout << "x.T (a view) = " << lanes::transpose(x) << "\n";
  std::cout << "softmax(x) = " << lanes::softmax(x) << "\n";
  std::cout << "x @ x.T = " << lanes::matmul(x, lanes::transpose(x)) << "\n";
  std::cout << "argmax(x, 1) = " << lanes::argmax(x, 1) << "\n";
  try {
    lanes::matmul(x, x);
  } catch (const lanes::Error& e) {
    std::cout << "bad input is a lanes::Error: " << e.what() << "\n";
  }
  std::cout << "\n";
}

}  // namespace

int main() {
  std::cout << "lanes demo (" << lanes::num_threads() << " threads)\n\n";
  tour();
  outer_products();
  dense_layer();
  return 0;
}
