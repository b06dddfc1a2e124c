// The lanes demo: a tour of static automatic batching. Each line runs one example both as a
// per-example loop and through vmap, checks they agree, and prints the speedup.
#include <cstdio>
#include <iostream>

#include "tour.h"

int main() try {
  std::cout << "lanes demo (" << lanes::num_threads() << " threads)\n\n";
  const lanes::Tensor x = lanes::reshape(lanes::arange(6), {2, 3});
  std::cout << "x = " << x << "\nsoftmax(x) = " << lanes::softmax(x) << "\n";
  std::cout << "the graph vmap batches, for f(m) = tensordot(m, m, 0):\n"
            << lanes::make_graph([](const lanes::Tensor& m) { return lanes::tensordot(m, m, 0); })(
                   lanes::ones({3, 3}))
            << "\n\n";
  tour::outer_products();
  tour::dense_per_example_gradients();
  tour::mlp_per_example_gradients();
  tour::jacobian();
  tour::hessian();
  tour::ensemble();
  tour::control_flow();
  tour::dp_sgd();
  return 0;
} catch (const lanes::Error& e) {
  std::cout.flush();
  std::fprintf(stderr, "demo failed: %s\n", e.what());
  return 1;
}
