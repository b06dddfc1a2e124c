// Workloads that map a plain function (no derivatives): outer, sqrt_images, batched_dot,
// ensemble.
#pragma once

#include "harness.h"

namespace workloads {

inline std::vector<Variant> outer() {
  const int64_t batch = 100;
  const Tensor a = lanes::ones({batch, 32, 32});
  inputs({{"a", a}});
  auto f = [](const Tensor& m) { return lanes::tensordot(m, m, 0); };
  auto batched = lanes::vmap(f);
  auto compiled = lanes::compile(batched);
  return std::vector<Variant>{
      {"loop", [=] { return loop_stack(batch, [&](int64_t i) { return f(example(a, i)); }); }},
      {"vmap", [=] { return leaves(batched(a)); }},
      {"vmap+compile", [=] { return leaves(compiled(a)); }},
      // out[b, i, j, k, l] = a[b, i, j] * a[b, k, l]: one broadcast multiply.
      {"manual",
       [=] {
         return leaves(lanes::reshape(a, {batch, 32, 32, 1, 1}) *
                       lanes::reshape(a, {batch, 1, 1, 32, 32}));
       }},
  };
}

inline std::vector<Variant> sqrt_images() {
  const int64_t batch = 100;
  const Tensor images = lanes::cast(
      lanes::random::uniform(lanes::random::key(1), {batch, 64, 64, 3}, 0.0, 255.0), lanes::kUInt8);
  inputs({{"images", images}});
  auto f = [](const Tensor& x) {
    return lanes::cast(lanes::sqrt(lanes::cast(x, lanes::kFloat32)), lanes::kUInt8);
  };
  auto batched = lanes::vmap(f);
  auto compiled = lanes::compile(batched);
  return std::vector<Variant>{
      {"loop", [=] { return loop_stack(batch, [&](int64_t i) { return f(example(images, i)); }); }},
      {"vmap", [=] { return leaves(batched(images)); }},
      {"vmap+compile", [=] { return leaves(compiled(images)); }},
      // Elementwise code is already batch-agnostic: by hand it is f on the whole batch.
      {"manual", [=] { return leaves(f(images)); }},
  };
}

inline std::vector<Variant> batched_dot() {
  const int64_t batch = 4096;
  const Tensor x = normal(2, {batch, 512}), y = normal(3, {batch, 512});
  inputs({{"x", x}, {"y", y}});
  auto f = [](const Tensor& u, const Tensor& v) { return lanes::dot(u, v); };
  auto batched = lanes::vmap(f);
  auto compiled = lanes::compile(batched);
  return std::vector<Variant>{
      {"loop",
       [=] {
         return loop_stack(batch, [&](int64_t i) { return f(example(x, i), example(y, i)); });
       }},
      {"vmap", [=] { return leaves(batched(x, y)); }},
      {"vmap+compile", [=] { return leaves(compiled(x, y)); }},
      {"manual", [=] { return leaves(lanes::sum(x * y, 1)); }},
  };
}

/// One 64-128-10 relu MLP; the ensemble stacks 8 of them along axis 0 of every field.
struct Dense2 {
  Tensor w1, b1, w2, b2;
};

}  // namespace workloads

LANES_TREE(workloads::Dense2, w1, b1, w2, b2)

namespace workloads {

inline std::vector<Variant> ensemble() {
  const int64_t models = 8;
  const Dense2 p{normal(4, {models, 64, 128}, 1 / std::sqrt(64.0)), normal(5, {models, 128}, 0.1),
                 normal(6, {models, 128, 10}, 1 / std::sqrt(128.0)), normal(7, {models, 10}, 0.1)};
  const Tensor x = normal(8, {512, 64});
  inputs({{"w1", p.w1}, {"b1", p.b1}, {"w2", p.w2}, {"b2", p.b2}, {"x", x}});
  auto model = [](const Dense2& q, const Tensor& input) {
    return lanes::matmul(lanes::relu(lanes::matmul(input, q.w1) + q.b1), q.w2) + q.b2;
  };
  // The parameters are mapped, the input is shared by every model.
  auto batched = lanes::vmap(model, lanes::in_axes(0, lanes::none));
  auto compiled = lanes::compile(batched);
  return std::vector<Variant>{
      {"loop",
       [=] {
         return loop_stack(models, [&](int64_t m) {
           const Dense2 one{example(p.w1, m), example(p.b1, m), example(p.w2, m), example(p.b2, m)};
           return model(one, x);
         });
       }},
      {"vmap", [=] { return leaves(batched(p, x)); }},
      {"vmap+compile", [=] { return leaves(compiled(p, x)); }},
      // Batched matmuls over the model axis: (512, 64) @ (8, 64, 128) broadcasts x.
      {"manual",
       [=] {
         const Tensor h = lanes::relu(lanes::matmul(x, p.w1) + lanes::expand_dims(p.b1, 1));
         return leaves(lanes::matmul(h, p.w2) + lanes::expand_dims(p.b2, 1));
       }},
  };
}

}  // namespace workloads
