// Memory-bounded vmap: perex_grad_norms, the per-example gradient norms of an MLP
// 784-1024-1024-10 over 4096 examples in float32. Unchunked, the per-example gradients alone are
// 4096 x 1.86M floats = 30 GB; the vmap variants run under a 1 GiB budget (lanes picks the chunk
// size from its memory plan), or with a hand-chosen chunk_size, and report their peak RSS.
#pragma once

#include <cmath>
#include <string>

#include "harness.h"
#include "per_example.h"

namespace workloads {

inline std::vector<Variant> perex_grad_norms() {
  // --quick (the CI smoke test): 64 examples under a 64 MiB budget, still chunked.
  const int64_t batch = quick_mode() ? 64 : 4096;
  const int64_t budget_bytes = quick_mode() ? int64_t{64} << 20 : int64_t{1} << 30;
  const Mlp p{normal(40, {784, 1024}, 1 / std::sqrt(784.0)),   normal(41, {1024}, 0.1),
              normal(42, {1024, 1024}, 1 / std::sqrt(1024.0)), normal(43, {1024}, 0.1),
              normal(44, {1024, 10}, 1 / std::sqrt(1024.0)),   normal(45, {10}, 0.1)};
  const Tensor x = normal(46, {batch, 784}), y = labels(47, batch, 10);
  mlp_inputs(p, x, y);
  // ||grad||: the square root of the sum of squares over every parameter's gradient.
  auto norm = [](const Mlp& q, const Tensor& xi, const Tensor& yi) {
    Tensor total = lanes::zeros({});
    for (const Tensor& g : lanes::tree::flatten(lanes::grad(mlp_loss)(q, xi, yi)))
      total = total + lanes::sum(lanes::square(g), {});
    return lanes::sqrt(total);
  };
  auto with = [&](const std::string& name, lanes::VmapOptions o) {
    auto compiled = lanes::compile(lanes::vmap(norm, lanes::in_axes(lanes::none, 0, 0), 0, o));
    return Variant{name, [=] { return Outputs{compiled(p, x, y)}; }};
  };
  lanes::VmapOptions budget;
  budget.max_memory_bytes = budget_bytes;
  auto batched = lanes::vmap(norm, lanes::in_axes(lanes::none, 0, 0), 0, budget);
  std::vector<Variant> variants{
      {"loop",
       [=] {
         return loop_stack(batch, [&](int64_t i) { return norm(p, example(x, i), example(y, i)); });
       },
       true},
      {"vmap (budget)", [=] { return Outputs{batched(p, x, y)}; }},
      with("vmap+compile (budget)", budget),
  };
  for (int64_t c : {32, 64, 128, 256}) {
    lanes::VmapOptions o;
    o.chunk_size = c;
    variants.push_back(with("vmap+compile chunk " + std::to_string(c), o));
  }
  return variants;
}

}  // namespace workloads
