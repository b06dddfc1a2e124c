// Automatic differentiation as graph transforms: grad, value_and_grad, vjp, jvp, jacrev,
// jacfwd, hessian, stop_gradient.
//
// Each traces the function into a graph, then runs it forward and applies every primitive's
// derivative rule (Primitive::jvp / Primitive::vjp), which are written with ops. On concrete
// inputs that computes; inside another transform it records, so every order composes:
// vmap(grad(f)) gives per-example gradients, grad(vmap(f)) the gradient of a batched function
// (gradients of unmapped inputs sum over the batch, as in jax), jacrev = vmap of vjp over the
// rows of the identity, jacfwd = vmap of jvp over its columns, hessian = jacfwd(jacrev).
//
// argnums picks the differentiated arguments: none means argument 0 and one index i means
// argument i, and the gradient then has that argument's structure (with an index, all arguments
// must have one type, since C++ fixes the result type at compile time); a list {0, 1} gives a
// std::tuple with one entry per argument of f, the entries of arguments not listed being
// undefined tensors (so `auto [dk, db] = grad(loss, {0, 1})(k, b)`).
//
// Integer and bool values have no derivative. They are allowed as arguments that are not
// differentiated: arguments left out of argnums (grad, value_and_grad, jacrev, jacfwd, hessian),
// captured values, and primals of vjp and jvp, whose cotangents come back as zeros of their own
// dtype and which take an undefined tangent (Tensor()). Differentiating one is a lanes::Error
// naming the argument and its dtype, as in jax: grad with respect to an integer argument; a
// tangent for an integer primal or of another dtype than its primal (an int32 tangent for a
// float32 primal); a pullback's cotangent that is undefined or not of its output's dtype.
#pragma once

#include <functional>
#include <initializer_list>
#include <tuple>
#include <utility>
#include <vector>

#include "lanes/graph.h"
#include "lanes/ops.h"
#include "lanes/tree.h"
#include "lanes/vmap.h"

namespace lanes {

/// The identity whose derivative is zero (jax.lax.stop_gradient).
Tensor stop_gradient(const Tensor& x);

namespace detail {

/// Reverse mode over a graph: runs g forward on `inputs` (explicit then captured), keeping
/// what the rules need; `backward(cotangents of the outputs)` gives the cotangents of the
/// inputs flagged in `wrt` (zeros where nothing flows; undefined for the others).
struct Linearized {
  std::vector<Tensor> outputs;
  std::function<std::vector<Tensor>(const std::vector<Tensor>&)> backward;
};
Linearized vjp_graph(Graph g, const std::vector<Tensor>& inputs, const std::vector<bool>& wrt);

/// Which values of g depend on the inputs flagged in wrt (and are floats): those reverse mode
/// carries cotangents for.
std::vector<bool> active_values(const Graph& g, const std::vector<bool>& wrt);
/// The backward half of vjp_graph: the cotangents of the inputs flagged in wrt, given every
/// value's primal in `env` (indexed by ValueId; only those the rules read need be defined),
/// `active` from active_values, and optionally the residuals nodes saved (per node). A loop's
/// reverse pass calls it on its body with the values its forward pass saved.
std::vector<Tensor> backward_sweep(const Graph& g, const std::vector<Tensor>& env,
                                   const std::vector<bool>& active,
                                   const std::vector<std::vector<Tensor>>* residuals,
                                   const std::vector<bool>& wrt,
                                   const std::vector<Tensor>& cotangents);

/// Forward mode over a graph: outputs and their tangents (zeros where none flows).
std::pair<std::vector<Tensor>, std::vector<Tensor>> jvp_graph(const Graph& g,
                                                              const std::vector<Tensor>& inputs,
                                                              const std::vector<Tensor>& tangents);

/// Which leaves (of all arguments, flattened) belong to the arguments in argnums; checks range.
std::vector<bool> selected_leaves(const std::vector<int>& argnums,
                                  const std::vector<size_t>& leaf_counts, const char* transform);

/// Checks that every leaf flagged in `wrt` is a float tensor (leaf_counts: leaves per argument,
/// to name the argument).
void check_float_wrt(const std::vector<Tensor>& leaves, const std::vector<bool>& wrt,
                     const std::vector<size_t>& leaf_counts, const char* transform);
/// Checks what a user passes to vjp's pullback: one defined cotangent of each output's shape and
/// dtype (an integer output may take an undefined one: nothing flows back from it).
void check_cotangents(const std::vector<Tensor>& cotangents, const std::vector<Tensor>& outputs);
/// Checks what a user passes to jvp: a tangent of each float primal's shape and dtype, and none
/// (an undefined tensor) for an integer primal.
void check_tangents(const std::vector<Tensor>& tangents, const std::vector<Tensor>& primals);

/// Value and gradient of a graph with one scalar output (checked): its output, then the cotangent
/// of each input flagged in `wrt` (undefined for the others). Under an enclosing trace it is
/// recorded as one call of a cached body (call_cached).
std::vector<Tensor> value_and_grad_graph(Graph g, const std::vector<Tensor>& inputs,
                                         const std::vector<bool>& wrt, size_t n_aux = 0);

/// vjp_graph, except that under an enclosing trace the backward pass is recorded as one call of
/// a cached body (call_cached), as grad's is: vmap of a pullback (jax's Jacobian idiom) then keys
/// one node instead of the cotangent rule of every node.
Linearized linearize(Graph g, const std::vector<Tensor>& inputs, const std::vector<bool>& wrt);

/// jvp_graph, except that under an enclosing trace (a primal or tangent is traced) it is recorded
/// as one call of a cached body, as linearize's backward pass is: vmap of a jvp keys one node.
std::pair<std::vector<Tensor>, std::vector<Tensor>> jvp_call(const Graph& g,
                                                             const std::vector<Tensor>& inputs,
                                                             const std::vector<Tensor>& tangents);

/// f traced at args for a derivative: its result, its graph, the graph's inputs (the argument
/// leaves, then the captured values) and which of them the arguments in argnums hold.
template <class Out>
struct TracedCall {
  Out out{};
  Graph g;
  std::vector<Tensor> inputs;
  std::vector<bool> wrt;
};

/// `floats_only`: the arguments in argnums must be float (grad), else they may be integers too,
/// whose cotangents are then zeros (vjp).
template <class F, class... Args>
TracedCall<std::invoke_result_t<const F&, const Args&...>> trace_call(
    const F& f, const std::vector<int>& argnums, bool floats_only, const Args&... args) {
  TracedCall<std::invoke_result_t<const F&, const Args&...>> t;
  (tree::flatten(args, t.inputs), ...);
  const std::vector<size_t> leaf_counts{tree::num_leaves(args)...};
  t.wrt = selected_leaves(argnums, leaf_counts, "grad");
  if (floats_only) check_float_wrt(t.inputs, t.wrt, leaf_counts, "grad");
  t.g = trace<F>(f, &t.out, leaf_types(args...), args...);
  t.inputs.insert(t.inputs.end(), t.g.captured.begin(), t.g.captured.end());
  t.wrt.resize(t.inputs.size(), false);
  return t;
}

/// Traces f at args and linearizes it with respect to the arguments in argnums.
template <class F, class... Args>
std::pair<std::invoke_result_t<const F&, const Args&...>, Linearized> linearize_call(
    const F& f, const std::vector<int>& argnums, const Args&... args) {
  auto t = trace_call(f, argnums, false, args...);
  return {std::move(t.out), linearize(std::move(t.g), t.inputs, t.wrt)};
}

/// Cotangents of the argument leaves, rebuilt into one tree per argument.
template <class... Args>
std::tuple<Args...> per_argument(const std::vector<Tensor>& cts, const Args&... args) {
  size_t pos = 0;
  return std::tuple<Args...>{tree::rebuild(args, cts, pos)...};  // braces: in order
}

enum class Pick { First, Index, All };

template <Pick P, class F, bool Aux = false>
struct ValueAndGrad {
  F f;
  std::vector<int> argnums;

  template <class... Args>
  auto operator()(const Args&... args) const {
    auto t = trace_call(f, argnums, true, args...);
    size_t n_aux = 0;
    if constexpr (Aux) n_aux = tree::num_leaves(std::get<1>(t.out));
    std::vector<Tensor> vg = value_and_grad_graph(std::move(t.g), t.inputs, t.wrt, n_aux);
    const auto value = [&] {
      if constexpr (Aux) {
        const std::vector<Tensor> aux(vg.begin() + 1, vg.begin() + 1 + int64_t(n_aux));
        return std::make_pair(vg[0], tree::rebuild(std::get<1>(t.out), aux));
      } else {
        return vg[0];
      }
    }();
    vg.erase(vg.begin(), vg.begin() + 1 + int64_t(n_aux));
    auto grads = per_argument(vg, args...);
    if constexpr (P == Pick::First) {
      return std::make_pair(value, std::get<0>(grads));
    } else if constexpr (P == Pick::Index) {
      using T = std::tuple_element_t<0, std::tuple<Args...>>;
      static_assert((std::is_same_v<T, Args> && ...),
                    "lanes: grad(f, i) needs arguments of one type; use grad(f, {i})");
      T g{};
      size_t i = 0;
      std::apply([&](const auto&... c) { ((g = i++ == size_t(argnums[0]) ? c : g), ...); }, grads);
      return std::make_pair(value, g);
    } else {
      return std::make_pair(value, grads);
    }
  }
};

template <Pick P, class F, bool Aux = false>
struct Grad {
  ValueAndGrad<P, F, Aux> vg;
  template <class... Args>
  auto operator()(const Args&... args) const {
    auto r = vg(args...);
    if constexpr (Aux)
      return std::make_pair(std::move(r.second), std::move(r.first.second));  // (grads, aux)
    else
      return r.second;
  }
};

}  // namespace detail

/// `lanes::has_aux`: f returns (loss, aux) with aux any tree; value_and_grad then returns
/// ((loss, aux), grads) and grad returns (grads, aux), as jax's has_aux=True.
struct HasAux {};
inline constexpr HasAux has_aux{};

/// value_and_grad(f)(args...) -> (f(args...), d f / d argument 0); f returns a 0-d float.
template <class F>
auto value_and_grad(F f) {
  return detail::ValueAndGrad<detail::Pick::First, F>{std::move(f), {0}};
}
/// ... with respect to argument `argnum` (all arguments of one type).
template <class F>
auto value_and_grad(F f, int argnum) {
  return detail::ValueAndGrad<detail::Pick::Index, F>{std::move(f), {argnum}};
}
/// ... with respect to several arguments: a tuple over all arguments.
template <class F>
auto value_and_grad(F f, std::initializer_list<int> argnums) {
  return detail::ValueAndGrad<detail::Pick::All, F>{std::move(f), argnums};
}

template <class F>
auto value_and_grad(F f, HasAux) {
  return detail::ValueAndGrad<detail::Pick::First, F, true>{std::move(f), {0}};
}
template <class F>
auto value_and_grad(F f, int argnum, HasAux) {
  return detail::ValueAndGrad<detail::Pick::Index, F, true>{std::move(f), {argnum}};
}
template <class F>
auto value_and_grad(F f, std::initializer_list<int> argnums, HasAux) {
  return detail::ValueAndGrad<detail::Pick::All, F, true>{std::move(f), argnums};
}
template <class F>
auto grad(F f, HasAux) {
  return detail::Grad<detail::Pick::First, F, true>{{std::move(f), {0}}};
}
template <class F>
auto grad(F f, int argnum, HasAux) {
  return detail::Grad<detail::Pick::Index, F, true>{{std::move(f), {argnum}}};
}
template <class F>
auto grad(F f, std::initializer_list<int> argnums, HasAux) {
  return detail::Grad<detail::Pick::All, F, true>{{std::move(f), argnums}};
}

/// The gradient of a function returning a 0-d float tensor (jax.grad); argnums as above.
template <class F>
auto grad(F f) {
  return detail::Grad<detail::Pick::First, F>{{std::move(f), {0}}};
}
template <class F>
auto grad(F f, int argnum) {
  return detail::Grad<detail::Pick::Index, F>{{std::move(f), {argnum}}};
}
template <class F>
auto grad(F f, std::initializer_list<int> argnums) {
  return detail::Grad<detail::Pick::All, F>{{std::move(f), argnums}};
}

/// vjp(f, primals...) -> (f(primals...), vjp_fn) where vjp_fn(cotangent shaped like the output)
/// returns a std::tuple of cotangents, one per argument (jax.vjp). The cotangent must match the
/// output's structure, shapes and dtypes (checked).
template <class F, class... Args>
auto vjp(F f, const Args&... primals) {
  std::vector<int> all(sizeof...(Args));
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  auto [out, lin] = detail::linearize_call(f, all, primals...);
  auto result = tree::rebuild(out, lin.outputs);
  auto backward = [lin = std::move(lin), primals...](const auto& cotangent) {
    const std::vector<Tensor> cts = tree::flatten(cotangent);
    detail::check_cotangents(cts, lin.outputs);
    return detail::per_argument(lin.backward(cts), primals...);
  };
  return std::make_pair(std::move(result), std::move(backward));
}

/// jvp(f, {primals...}, {tangents...}) -> (f(primals...), the directional derivative), primals
/// and tangents as std::tuples of the arguments (jax.jvp).
template <class F, class... Args>
auto jvp(F f, const std::tuple<Args...>& primals, const std::tuple<Args...>& tangents) {
  using Out = std::invoke_result_t<const F&, const Args&...>;
  Out out{};
  std::vector<Tensor> inputs = tree::flatten(primals), dirs = tree::flatten(tangents);
  detail::check_tangents(dirs, inputs);
  const Graph g = std::apply(
      [&](const auto&... p) { return detail::trace<F>(f, &out, detail::leaf_types(p...), p...); },
      primals);
  inputs.insert(inputs.end(), g.captured.begin(), g.captured.end());
  dirs.resize(inputs.size());
  auto [ys, ts] = detail::jvp_call(g, inputs, dirs);
  return std::make_pair(tree::rebuild(out, ys), tree::rebuild(out, ts));
}

namespace detail {

/// Jacobian of a graph with one float output with respect to input `leaf` (the others held
/// fixed): shape output.shape + input.shape. Reverse mode maps vjp over the rows of the identity,
/// forward mode maps jvp over its columns; both are one vmap, not a loop (in chunks of `chunk`
/// rows or columns when set). `cache` keeps the batched graphs across calls of one jacrev/jacfwd
/// object; under an enclosing trace the Jacobian is recorded as one call of a cached body
/// (call_cached).
Tensor jacobian_graph(bool reverse, const Graph& g, const std::vector<Tensor>& inputs, size_t leaf,
                      const VmapCache& cache, std::optional<int64_t> chunk = {});

}  // namespace detail

/// Options of jacrev, jacfwd and hessian.
struct JacOptions {
  // The Jacobian is one vmap over the identity's rows (jacrev) or columns (jacfwd); this many
  // run at once (torch.func's chunk_size). Unset, the vmap's memory budget decides.
  std::optional<int64_t> chunk_size;
};

namespace detail {

/// jacrev / jacfwd: the Jacobian for each of `argnums`, f traced once. `List` returns them all
/// (argnums given as a list), else the one.
template <bool Reverse, bool List, class F>
struct Jacobian {
  F f;
  std::vector<int> argnums;
  JacOptions options;
  VmapCache cache = VmapCache::for_jacobian();
  template <class... Args>
  auto operator()(const Args&... args) const {
    static_assert((std::is_same_v<Args, Tensor> && ...),
                  "lanes: jacrev/jacfwd/hessian take Tensor arguments");
    static_assert(std::is_same_v<std::invoke_result_t<const F&, const Args&...>, Tensor>,
                  "lanes: jacrev/jacfwd need a function with one Tensor output");
    std::vector<Tensor> inputs{args...};
    for (int a : argnums)
      check(a >= 0 && a < int(inputs.size()), Reverse ? "jacrev" : "jacfwd", ": argnum ", a,
            " out of range for ", inputs.size(), " arguments");
    Tensor out;
    const Graph g = trace<F>(f, &out, leaf_types(args...), args...);
    inputs.insert(inputs.end(), g.captured.begin(), g.captured.end());
    std::vector<Tensor> jacobians;
    for (int a : argnums)
      jacobians.push_back(jacobian_graph(Reverse, g, inputs, size_t(a), cache, options.chunk_size));
    if constexpr (List)
      return jacobians;
    else
      return jacobians[0];
  }
};

}  // namespace detail

/// Jacobian by reverse mode (jax.jacrev): shape f(x).shape + x.shape.
template <class F>
auto jacrev(F f, int argnum = 0, JacOptions options = {}) {
  return detail::Jacobian<true, false, F>{std::move(f), {argnum}, options};
}
/// Jacobians with respect to each of `argnums` (a std::vector<Tensor>, in that order).
template <class F>
auto jacrev(F f, std::vector<int> argnums, JacOptions options = {}) {
  return detail::Jacobian<true, true, F>{std::move(f), std::move(argnums), options};
}
/// Jacobian by forward mode (jax.jacfwd).
template <class F>
auto jacfwd(F f, int argnum = 0, JacOptions options = {}) {
  return detail::Jacobian<false, false, F>{std::move(f), {argnum}, options};
}
template <class F>
auto jacfwd(F f, std::vector<int> argnums, JacOptions options = {}) {
  return detail::Jacobian<false, true, F>{std::move(f), std::move(argnums), options};
}
/// Hessian-vector product of a scalar function, forward over reverse (jax's hvp idiom): the jvp
/// of grad(f) at x in direction v; no Hessian is formed. hvp(f)(x, v) has x's shape.
template <class F>
auto hvp(F f) {
  return [f](const Tensor& x, const Tensor& v) {
    return jvp(grad(f), std::make_tuple(x), std::make_tuple(v)).second;
  };
}

/// tf's GradientTape.batch_jacobian: for f mapping a batch (B, ...) to (B, ...) with examples
/// independent, the Jacobian of each example's output with respect to its own input, shape
/// (B, out..., in...): one vmap of jacrev over the examples, never the (B, .., B, ..) Jacobian.
template <class F>
auto batch_jacobian(F f) {
  return [f](const Tensor& x) {
    check(x.ndim() >= 1, "batch_jacobian: the input needs a leading batch axis, got shape ",
          fmt(x.shape()));
    auto one = [f](const Tensor& xi) { return squeeze(f(expand_dims(xi, 0)), Axes{0}); };
    return vmap(jacrev(one))(x);
  };
}

/// Hessian of a scalar function: jacfwd(jacrev(f)), shape x.shape + x.shape.
template <class F>
auto hessian(F f, int argnum = 0, JacOptions options = {}) {
  return jacfwd(jacrev(std::move(f), argnum, options), argnum, options);
}
/// The blocks of the Hessian over several arguments (jax's nested result): h[i][j] is the second
/// derivative with respect to arguments argnums[i] then argnums[j], shape x_i.shape + x_j.shape.
template <class F>
auto hessian(F f, std::vector<int> argnums, JacOptions options = {}) {
  return [f = std::move(f), argnums = std::move(argnums), options](const auto&... args) {
    std::vector<std::vector<Tensor>> h;
    for (int i : argnums) h.push_back(jacfwd(jacrev(f, i, options), argnums, options)(args...));
    return h;
  };
}

}  // namespace lanes
