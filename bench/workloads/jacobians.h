// Jacobian and Hessian workloads: jacobian_square, jacobian_mlp, fc_batch_jacobian, hessian.
//
// The per-row loops linearize once (one lanes::vjp) and then pull back one row of the identity
// at a time, as a careful loop does (and as tf's pfor benchmarks do); only the backward pass is
// repeated per row.
#pragma once

#include <tuple>

#include "harness.h"

namespace workloads {

/// One row of the Jacobian of f at x: the pullback of the cotangent e (a row of the identity).
/// Mapped over e with x shared, this is jacrev(f)(x) spelled as jax's vmap(vjp(f, x)[1]).
template <class F>
auto jacobian_row(F f) {
  return [f](const Tensor& x, const Tensor& e) { return std::get<0>(lanes::vjp(f, x).second(e)); };
}

/// The loop, batched and compiled variants of a Jacobian by rows of the identity.
template <class F>
std::vector<Variant> jacobian_by_rows(F f, const Tensor& x, const Tensor& eye) {
  auto row = jacobian_row(f);
  auto batched = lanes::vmap(row, lanes::in_axes(lanes::none, 0));
  auto compiled = lanes::compile(batched);
  return {
      {"loop",
       [=] {
         auto [y, pullback] = lanes::vjp(f, x);
         return loop_stack(eye.shape(0),
                           [&](int64_t i) { return std::get<0>(pullback(example(eye, i))); });
       }},
      {"vmap", [=] { return leaves(batched(x, eye)); }},
      {"vmap+compile", [=] { return leaves(compiled(x, eye)); }},
  };
}

inline std::vector<Variant> jacobian_square() {
  const int64_t n = 1000;
  const Tensor x = normal(10, {n}), eye = lanes::eye(n);
  inputs({{"x", x}});  // the identity's rows are the cotangents
  auto f = [](const Tensor& v) { return lanes::square(v); };
  std::vector<Variant> variants = jacobian_by_rows(f, x, eye);
  // d(x_i^2)/dx_j = 2 x_i delta_ij: the identity with row i scaled by 2 x_i.
  variants.push_back({"manual", [=] { return leaves(eye * lanes::expand_dims(x * 2.0, 1)); }});
  return variants;
}

inline std::vector<Variant> jacobian_mlp() {
  const int64_t n = 512;
  const double scale = 1 / std::sqrt(double(n));
  const Tensor w1 = normal(11, {n, n}, scale), b1 = normal(12, {n}, 0.1);
  const Tensor w2 = normal(13, {n, n}, scale), b2 = normal(14, {n}, 0.1);
  const Tensor x = normal(15, {n}), eye = lanes::eye(n);
  inputs({{"w1", w1}, {"b1", b1}, {"w2", w2}, {"b2", b2}, {"x", x}});
  auto f = [=](const Tensor& v) {
    return lanes::matmul(w2, lanes::tanh(lanes::matmul(w1, v) + b1)) + b2;
  };
  std::vector<Variant> variants = jacobian_by_rows(f, x, eye);
  // J = W2 diag(1 - h^2) W1 with h = tanh(W1 x + b1): scale W2's columns, one GEMM.
  variants.push_back({"manual", [=] {
                        const Tensor h = lanes::tanh(lanes::matmul(w1, x) + b1);
                        const Tensor d = 1.0 - h * h;
                        return leaves(lanes::matmul(w2 * lanes::expand_dims(d, 0), w1));
                      }});
  return variants;
}

inline std::vector<Variant> fc_batch_jacobian() {
  const int64_t batch = 100, width = 32, depth = 20;
  std::vector<Tensor> ws, bs;
  for (int64_t k = 0; k < depth; ++k) {
    // He initialisation keeps the relu activations from dying out over 20 layers.
    ws.push_back(normal(100 + k, {width, width}, std::sqrt(2.0 / double(width))));
    bs.push_back(normal(200 + k, {width}, 0.1));
  }
  const Tensor xs = normal(16, {batch, width});
  for (int64_t k = 0; k < depth; ++k) {
    const std::string at = std::to_string(100 + k).substr(1);  // w00 ... w19 sort in order
    inputs({{("w" + at).c_str(), ws[k]}, {("b" + at).c_str(), bs[k]}});
  }
  inputs({{"x", xs}});
  param("depth", double(depth));
  auto mlp = [=](const Tensor& x) {
    Tensor h = x;
    for (int64_t k = 0; k < depth; ++k) h = lanes::relu(lanes::matmul(h, ws[k]) + bs[k]);
    return h;
  };
  auto jac = lanes::jacrev(mlp);
  auto batched = lanes::vmap(jac);
  auto compiled = lanes::compile(batched);
  return std::vector<Variant>{
      {"loop", [=] { return loop_stack(batch, [&](int64_t i) { return jac(example(xs, i)); }); }},
      {"vmap", [=] { return leaves(batched(xs)); }},
      {"vmap+compile", [=] { return leaves(compiled(xs)); }},
      // Forward-mode chain rule on the whole batch, kept transposed so that every step is one
      // GEMM with the batch folded into M: A_k = (dh_k/dx)^T = (A_{k-1} W_k) * mask_k (the relu
      // mask on the output axis), A_0 = I, and J = A_depth^T.
      {"manual",
       [=] {
         Tensor h = xs, a;
         for (int64_t k = 0; k < depth; ++k) {
           const Tensor z = lanes::matmul(h, ws[k]) + bs[k];
           const Tensor mask = lanes::expand_dims(lanes::cast(z > 0.0, lanes::kFloat32), 1);
           a = (k == 0 ? ws[0] : lanes::matmul(a, ws[k])) * mask;
           h = lanes::relu(z);
         }
         return leaves(lanes::swapaxes(a, 1, 2));
       }},
  };
}

inline std::vector<Variant> hessian() {
  const int64_t n = 256;
  const Tensor w = normal(17, {n, n}, 1 / std::sqrt(double(n))), x = normal(18, {n});
  const Tensor eye = lanes::eye(n);
  inputs({{"w", w}, {"x", x}});
  auto f = [=](const Tensor& v) { return lanes::sum(lanes::tanh(lanes::matmul(w, v))); };
  // hessian = jacfwd(jacrev(f)): the batching is inside the transform.
  auto hess = lanes::hessian(f);
  auto compiled = lanes::compile(hess);
  return std::vector<Variant>{
      // Row i of H is the pullback of e_i through grad(f).
      {"loop",
       [=] {
         auto [g, pullback] = lanes::vjp(lanes::grad(f), x);
         return loop_stack(n, [&](int64_t i) { return std::get<0>(pullback(example(eye, i))); });
       }},
      {"vmap", [=] { return leaves(hess(x)); }},
      {"vmap+compile", [=] { return leaves(compiled(x)); }},
      // grad f = W^T (1 - t^2) with t = tanh(W x), so
      // H = W^T diag(-2 t (1 - t^2)) W: scale the columns of W^T, one GEMM.
      {"manual",
       [=] {
         const Tensor t = lanes::tanh(lanes::matmul(w, x));
         const Tensor s = -2.0 * t * (1.0 - t * t);
         return leaves(lanes::matmul(lanes::transpose(w) * lanes::expand_dims(s, 0), w));
       }},
  };
}

}  // namespace workloads
