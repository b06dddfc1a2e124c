// The seed examples of static automatic batching: outer products of matrices, the square root of
// uint8 images, and batched dot products.
#include "tour.h"

namespace tour {

using lanes::Tensor;

namespace {
template <class F>
Tensor loop(const F& f, const Tensor& a) {
  std::vector<Tensor> out;
  for (int64_t i = 0; i < a.shape(0); ++i) out.push_back(f(example(a, i)));
  return lanes::stack(out);
}
}  // namespace

void outer_products() {
  // c[b] = tensordot(a[b], a[b], 0): 100 outer products of 32x32 matrices.
  const Tensor a = lanes::ones({100, 32, 32});
  auto f = [](const Tensor& m) { return lanes::tensordot(m, m, 0); };
  Tensor c, want;
  const double loop_ms = median_ms([&] { want = loop(f, a); }, 3);
  const double vmap_ms = median_ms([&] { c = lanes::vmap(f)(a); }, 3);
  report("outer products", c, max_abs_diff(c, want), loop_ms, vmap_ms);

  // sqrt of uint8 images: the result is float32.
  const Tensor pixels = lanes::cast(
      lanes::random::uniform(lanes::random::key(1), {100, 64, 64, 3}, 0, 255), lanes::kUInt8);
  auto g = [](const Tensor& img) { return lanes::sqrt(img); };
  const double loop2 = median_ms([&] { want = loop(g, pixels); });
  const double vmap2 = median_ms([&] { c = lanes::vmap(g)(pixels); });
  report("sqrt of uint8 images", c, max_abs_diff(c, want), loop2, vmap2);

  // Batched dot products.
  const auto keys = lanes::random::split(lanes::random::key(2), 2);
  const Tensor x = lanes::random::normal(keys[0], {4096, 512});
  const Tensor y = lanes::random::normal(keys[1], {4096, 512});
  auto d = [](const Tensor& u, const Tensor& v) { return lanes::dot(u, v); };
  const double loop3 = median_ms([&] {
    std::vector<Tensor> out;
    for (int64_t i = 0; i < x.shape(0); ++i) out.push_back(d(example(x, i), example(y, i)));
    want = lanes::stack(out);
  });
  const double vmap3 = median_ms([&] { c = lanes::vmap(d)(x, y); });
  report("batched dot", c, max_abs_diff(c, want), loop3, vmap3);
}

}  // namespace tour
