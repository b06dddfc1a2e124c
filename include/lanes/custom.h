// Custom rules: a function with a hand-written reverse-mode, forward-mode or batching rule
// (jax.custom_vjp, jax.custom_jvp, jax.custom_batching.custom_vmap; torch.autograd.Function with
// its vmap staticmethod).
//
//     // log1p(exp(x)), finite by taking x itself past 30, whose derivative stays finite too
//     // (the naive one is 0 * inf = NaN at x = 1000, from the branch where() did not take)
//     auto f = [](const Tensor& x) { return where(x > 30.0, x, log1p(exp(x))); };
//     auto softplus = lanes::custom_jvp(f, [f](const auto& primals, const auto& tangents) {
//       const Tensor& x = std::get<0>(primals);
//       return std::make_pair(f(x), std::get<0>(tangents) * lanes::sigmoid(x));
//     });
//     lanes::vmap(lanes::grad(softplus))(xs);   // sigmoid(xs)
//
// Each function is traced into a sub-graph held by one node (custom_vjp_call, custom_jvp_call,
// custom_vmap_call), so every transform applies its rule to the whole construct and they nest in
// any order:
// - custom_vjp(f, fwd, bwd): f runs normally; reverse mode (grad, vjp, jacrev) runs
//   fwd(args...) -> (out, residuals) forward and bwd(residuals, ct) -> one cotangent per
//   argument (a tree shaped like it; a tuple for several arguments; an undefined Tensor() leaf
//   is a zero, as jax's None) backward. Forward mode (jvp,
//   jacfwd) differentiates f itself: jax refuses here, we take f's derivative, so a hessian
//   (jacfwd of jacrev) differentiates the custom gradient that bwd computes.
// - custom_jvp(f, rule): rule(tuple primals, tuple tangents) -> (out, tangent out) gives forward
//   mode. Reverse mode transposes the rule as jax does: the cotangents are the vjp of the rule's
//   tangent out with respect to the tangents (taken at zero tangents), so the rule must be
//   linear in the tangents, and f's own derivative is never formed. Integer arguments get zero
//   tangents of their own dtype.
// - custom_vmap(f, rule): under vmap, rule(axis_size, in_batched, args...) -> (out, out_batched)
//   computes the batch: in_batched has one flag per argument leaf (a batched leaf holds the
//   examples at dim 0), out_batched one per output leaf (a batched leaf must hold them at dim 0,
//   an unbatched one is shared by every example). lanes::explain names the rule where it ran.
//   Forward mode of a custom_vmap function is a custom_vmap of f's jvp whose rule is the jvp of
//   the rule (as jax's), so vmap of jvp and jacfwd still batch through the rule; reverse mode
//   differentiates f (jax's custom_vmap has no transpose rule), whose cotangent ops batch with
//   lanes' own rules. Create the custom function once: the rule is identified by the object, and
//   the vmap and compile caches key on it. The rule runs when a vmap is traced, not on every call
//   of a cached one.
// Under vmap, custom_vjp and custom_jvp batch f and their rules with lanes' rules (the rule
// functions themselves are vmapped), so per-example gradient clipping is a bwd that clips one
// example's cotangent. f and the rules may capture tensors: the rules only speak for the
// explicit arguments, so a value f captures takes f's own derivative (pass it as an argument
// for the rule to cover it), and what only the rules capture gets none.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "lanes/graph.h"
#include "lanes/tree.h"

namespace lanes {

namespace detail {

/// Binds a custom_vjp_call node: f takes the argument leaves; fwd takes them and returns f's
/// output leaves then `n_res` residual leaves; bwd takes (residual leaves, cotangent of each
/// output leaf) and returns a cotangent per argument leaf (src/ops/custom.cpp).
std::vector<Tensor> bind_custom_vjp(Graph f, Graph fwd, Graph bwd, std::vector<Tensor> args);
/// Binds a custom_jvp_call node: rule takes (argument leaves, a tangent per argument leaf) and
/// returns (output leaves, a tangent per output leaf).
std::vector<Tensor> bind_custom_jvp(Graph f, Graph rule, std::vector<Tensor> args);

/// custom_vmap's rule on leaves: (axis_size, in_batched, argument leaves) -> (output leaves,
/// out_batched).
using VmapRuleFn = std::function<std::pair<std::vector<Tensor>, std::vector<bool>>(
    int64_t, const std::vector<bool>&, const std::vector<Tensor>&)>;
/// A custom_vmap rule as a node holds it: the function, a name for explain and an id that tells
/// rules apart (CSE and the caches key on it).
struct VmapRule {
  VmapRuleFn fn;
  std::string name;
  uint64_t id = 0;
};
/// A fresh id for a custom_vmap object.
uint64_t next_custom_vmap_id();
/// Binds a custom_vmap_call node of f (which takes the argument leaves).
std::vector<Tensor> bind_custom_vmap(Graph f, std::shared_ptr<const VmapRule> rule,
                                     std::vector<Tensor> args);

template <class T>
struct IsPair : std::false_type {};
template <class A, class B>
struct IsPair<std::pair<A, B>> : std::true_type {};

/// A tree shaped like x whose leaves are undefined: the structure without the tensors.
template <class T>
T structure_of(const T& x) {
  return tree::rebuild(x, std::vector<Tensor>(tree::num_leaves(x)));
}

}  // namespace detail

template <class F, class Fwd, class Bwd>
class CustomVjp {
 public:
  CustomVjp(F f, Fwd fwd, Bwd bwd) : f_(std::move(f)), fwd_(std::move(fwd)), bwd_(std::move(bwd)) {}

  template <class... Args>
  auto operator()(const Args&... args) const {
    using Out = std::invoke_result_t<const F&, const Args&...>;
    using FwdOut = std::invoke_result_t<const Fwd&, const Args&...>;
    static_assert(detail::IsPair<FwdOut>::value,
                  "lanes::custom_vjp: fwd must return std::pair(out, residuals)");
    using Res = typename FwdOut::second_type;
    static_assert(std::is_same_v<typename FwdOut::first_type, Out>,
                  "lanes::custom_vjp: fwd's out (the pair's first) must have f's result type");
    const std::vector<TensorType> types = detail::leaf_types(args...);
    Out out{};
    Graph gf = detail::trace<F>(f_, &out, types, args...);
    FwdOut fo{};
    Graph gfwd = detail::trace<Fwd>(fwd_, &fo, types, args...);
    // An undefined cotangent leaf means zero (jax's None): made zeros of the argument's type.
    auto bwd = [this, &types](const Res& r, const Out& ct) {
      auto cts = bwd_(r, ct);
      std::vector<Tensor> leaves = tree::flatten(cts);
      bool undefined = false;
      for (size_t i = 0; i < leaves.size() && i < types.size(); ++i)
        if (!leaves[i].defined()) {
          leaves[i] = zeros(types[i].shape, types[i].dtype);
          undefined = true;
        }
      return undefined ? tree::rebuild(cts, leaves) : cts;
    };
    using Cts = std::invoke_result_t<decltype(bwd), const Res&, const Out&>;
    std::vector<TensorType> bwd_types = detail::leaf_types(fo.second);
    for (const TensorType& t : detail::leaf_types(fo.first)) bwd_types.push_back(t);
    Cts cts{};
    Graph gbwd = detail::trace<decltype(bwd)>(bwd, &cts, bwd_types, fo.second, fo.first);
    std::vector<Tensor> leaves;
    (tree::flatten(args, leaves), ...);
    return tree::rebuild(out, detail::bind_custom_vjp(std::move(gf), std::move(gfwd),
                                                      std::move(gbwd), std::move(leaves)));
  }

 private:
  F f_;
  Fwd fwd_;
  Bwd bwd_;
};

template <class F, class Rule>
class CustomJvp {
 public:
  CustomJvp(F f, Rule rule) : f_(std::move(f)), rule_(std::move(rule)) {}

  template <class... Args>
  auto operator()(const Args&... args) const {
    using Out = std::invoke_result_t<const F&, const Args&...>;
    using Tuple = std::tuple<Args...>;
    using RuleOut = std::invoke_result_t<const Rule&, const Tuple&, const Tuple&>;
    static_assert(detail::IsPair<RuleOut>::value,
                  "lanes::custom_jvp: the rule must return std::pair(out, tangent_out)");
    static_assert(std::is_same_v<typename RuleOut::first_type, Out> &&
                      std::is_same_v<typename RuleOut::second_type, Out>,
                  "lanes::custom_jvp: the rule's out and tangent out must have f's result type");
    std::vector<TensorType> types = detail::leaf_types(args...);
    Out out{};
    Graph gf = detail::trace<F>(f_, &out, types, args...);
    const std::vector<TensorType> one = types;
    types.insert(types.end(), one.begin(), one.end());  // the tangents have the primals' types
    const Tuple like(args...);
    RuleOut ro{};
    Graph grule = detail::trace<Rule>(rule_, &ro, types, like, like);
    std::vector<Tensor> leaves;
    (tree::flatten(args, leaves), ...);
    return tree::rebuild(
        out, detail::bind_custom_jvp(std::move(gf), std::move(grule), std::move(leaves)));
  }

 private:
  F f_;
  Rule rule_;
};

template <class F, class Rule>
class CustomVmap {
 public:
  CustomVmap(F f, Rule rule, std::string name)
      : f_(std::move(f)),
        rule_(std::make_shared<const Rule>(std::move(rule))),
        name_(std::move(name)),
        id_(detail::next_custom_vmap_id()) {}

  template <class... Args>
  auto operator()(const Args&... args) const {
    using Out = std::invoke_result_t<const F&, const Args&...>;
    using RuleOut =
        std::invoke_result_t<const Rule&, int64_t, const std::vector<bool>&, const Args&...>;
    static_assert(detail::IsPair<RuleOut>::value &&
                      std::is_same_v<typename RuleOut::first_type, Out> &&
                      std::is_convertible_v<typename RuleOut::second_type, std::vector<bool>>,
                  "lanes::custom_vmap: the rule must return std::pair(out of f's result type, "
                  "std::vector<bool> out_batched)");
    Out out{};
    Graph gf = detail::trace<F>(f_, &out, detail::leaf_types(args...), args...);
    // The rule sees trees: rebuild them from the leaves the batching rule hands over, on the
    // arguments' structure (kept without their tensors).
    auto like = std::make_shared<const std::tuple<Args...>>(detail::structure_of(args)...);
    auto rule = std::make_shared<detail::VmapRule>();
    rule->name = name_.empty() ? "custom_vmap#" + std::to_string(id_) : name_;
    rule->id = id_;
    rule->fn = [r = rule_, like](int64_t size, const std::vector<bool>& in_batched,
                                 const std::vector<Tensor>& leaves) {
      size_t pos = 0;
      const std::tuple<Args...> a = std::apply(
          [&](const auto&... l) { return std::tuple<Args...>{tree::rebuild(l, leaves, pos)...}; },
          *like);
      RuleOut ro = std::apply([&](const auto&... x) { return (*r)(size, in_batched, x...); }, a);
      return std::make_pair(tree::flatten(ro.first), std::vector<bool>(ro.second));
    };
    std::vector<Tensor> leaves;
    (tree::flatten(args, leaves), ...);
    return tree::rebuild(
        out, detail::bind_custom_vmap(std::move(gf), std::move(rule), std::move(leaves)));
  }

 private:
  F f_;
  std::shared_ptr<const Rule> rule_;
  std::string name_;
  uint64_t id_;
};

/// f with a reverse-mode rule: fwd(args...) -> std::pair(out, residuals) and bwd(residuals, ct)
/// -> a cotangent per argument (a std::tuple for several; one tree for one argument).
template <class F, class Fwd, class Bwd>
CustomVjp<F, Fwd, Bwd> custom_vjp(F f, Fwd fwd, Bwd bwd) {
  return {std::move(f), std::move(fwd), std::move(bwd)};
}

/// f with a forward-mode rule: rule(std::tuple primals, std::tuple tangents) -> std::pair(out,
/// tangent out), linear in the tangents.
template <class F, class Rule>
CustomJvp<F, Rule> custom_jvp(F f, Rule rule) {
  return {std::move(f), std::move(rule)};
}

/// f with a batching rule: rule(axis_size, in_batched, args...) -> std::pair(out, out_batched).
/// `name` names it in lanes::explain ("custom_vmap#<id>" when empty).
template <class F, class Rule>
CustomVmap<F, Rule> custom_vmap(F f, Rule rule, std::string name = {}) {
  return {std::move(f), std::move(rule), std::move(name)};
}

}  // namespace lanes
