// Control flow that every transform understands: cond, switch_case, while_loop, fori_loop, scan,
// map (jax.lax's), and dynamic indexing.
//
//     Tensor y = lanes::cond(x[0] > 0.0, [](const Tensor& v) { return lanes::sqrt(v); },
//                            [](const Tensor& v) { return v * 0.0; }, x);
//     auto [n, z] = lanes::while_loop(
//         [](const auto& c) { return std::get<0>(c) < 10; },
//         [](const auto& c) { return std::make_tuple(std::get<0>(c) + 1, std::get<1>(c) * 2.0); },
//         std::make_tuple(lanes::scalar(0, lanes::DType::Int32), z0));
//
// Branches and bodies are traced once into sub-graphs held by one node (cond, while, scan), so
// vmap, grad, jvp and compile each apply their rules to the whole construct:
// - vmap of a predicate that is the same for every example keeps the control flow (over batched
//   branches or bodies); one that differs per example runs as VmapOptions::cond (select or
//   partition) or VmapOptions::loop (mask or compact) says, Auto choosing by cost at run time.
//   Under every strategy, Select included, a lane never runs a loop in a branch it did not take
//   (such a loop may never end there), and its gradient never sees a value
//   of such a branch (no NaN from the untaken side of a cond, unlike jax's select).
// - Reverse mode works through while_loop and dynamic fori_loop too (jax refuses): the forward
//   pass records the trip count and the carries, the backward pass replays them in reverse.
// - Eagerly, cond computes only the branch taken, after checking that the branches agree.
//
// Operands, carries, xs and ys are trees (lanes/tree.h). Errors name the branch or body, the
// leaf and both shapes.
#pragma once

#include <functional>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "lanes/graph.h"
#include "lanes/ops.h"
#include "lanes/tree.h"
#include "lanes/vmap.h"

namespace lanes {

struct ScanOptions {
  std::optional<int64_t> length;  // required when xs has no leaves
  bool reverse = false;           // run t = length-1 .. 0 (ys still indexed by t)
  // With an empty carry the steps are independent: run them at once on the thread pool, each
  // step's kernels on its own thread (lax.map's steps, or a vmap's lanes in parallel chunks).
  // Ignored when there is a carry.
  bool parallel = false;
};

struct MapOptions {
  std::optional<int64_t> batch_size;  // run vmap(f) over chunks of this many (lax.map's)
};

/// x[start[0]:start[0]+sizes[0], ...] with traced 0-d integer starts, each clamped so the slice
/// fits (lax.dynamic_slice).
Tensor dynamic_slice(const Tensor& x, const std::vector<Tensor>& starts, const Shape& sizes);
/// x with update written at starts (clamped so it fits) (lax.dynamic_update_slice).
Tensor dynamic_update_slice(const Tensor& x, const Tensor& update,
                            const std::vector<Tensor>& starts);

namespace detail {

/// Checks that each branch returns outputs of the same number, shapes and dtypes, and binds the
/// cond node over index (0-d integer, clamped) and the operand leaves (src/ops/control_flow.cpp).
std::vector<Tensor> bind_cond(const Tensor& index, std::vector<Graph> branches,
                              std::vector<Tensor> operands, const char* op);
/// Binds the while node; cond returns one 0-d bool, body returns the carry's types.
std::vector<Tensor> bind_while(Graph cond, Graph body, std::vector<Tensor> init);
/// Binds the scan node: body takes (carry leaves, x leaves), returns (carry leaves, y leaves).
std::vector<Tensor> bind_scan(Graph body, std::vector<Tensor> init, std::vector<Tensor> xs,
                              int64_t length, bool reverse, bool parallel = false);
/// The leading length of every xs leaf (equal, checked), or options.length.
int64_t scan_length(const std::vector<Tensor>& xs, const ScanOptions& options);
/// The leaf types of xs without their leading axis.
std::vector<TensorType> slice_types(const std::vector<Tensor>& xs);
/// Raises "op: what leaf i is an undefined tensor" for the first undefined leaf (just "what" when
/// there is one leaf).
void check_defined(const std::vector<Tensor>& leaves, const char* op, const char* what);
/// Checks that a 0-d bool predicate of `what` (a cond's, a loop's).
void check_predicate(const TensorType& pred, const char* what);

/// Raises when two trees of one C++ type differ in structure (vector sizes, map keys): leaves
/// are matched by position, so a mismatch would silently put values in the wrong places.
template <class T>
void check_same_structure(const char* op, const std::string& a_name, const T& a,
                          const std::string& b_name, const T& b) {
  const std::string sa = tree::describe(a), sb = tree::describe(b);
  check(sa == sb, op, ": ", a_name, " and ", b_name, " differ in tree structure: ", a_name, " is ",
        sa, ", ", b_name, " is ", sb);
}

template <class F, class... Ops>
Graph trace_branch(const F& f, std::invoke_result_t<const F&, const Ops&...>* out,
                   const Ops&... ops) {
  return trace<F>(f, out, leaf_types(ops...), ops...);
}

}  // namespace detail

/// branches[index](operands...) for a 0-d integer index, clamped to the valid range
/// (lax.switch). Every branch returns the same tree type with the same shapes and dtypes.
template <class Fn, class... Ops>
auto switch_case(const Tensor& index, const std::vector<Fn>& branches, const Ops&... operands) {
  using Out = std::invoke_result_t<const Fn&, const Ops&...>;
  check(!branches.empty(), "switch_case: no branches");
  detail::check_defined({index}, "switch_case", "index");
  check(index.ndim() == 0 && is_integral(index.dtype()),
        "switch_case: the index must be a 0-d integer tensor, got shape ", fmt(index.shape()), " ",
        dtype_name(index.dtype()));
  std::vector<Tensor> leaves;
  (tree::flatten(operands, leaves), ...);
  detail::check_defined(leaves, "switch_case", "operand");
  Out out{}, other{};
  std::vector<Graph> graphs;
  for (size_t i = 0; i < branches.size(); ++i) {
    graphs.push_back(detail::trace_branch(branches[i], i == 0 ? &out : &other, operands...));
    if (i > 0)
      detail::check_same_structure("switch_case", "branch 0", out, "branch " + std::to_string(i),
                                   other);
  }
  return tree::rebuild(
      out, detail::bind_cond(index, std::move(graphs), std::move(leaves), "switch_case"));
}

/// pred ? true_fn(operands...) : false_fn(operands...) for a 0-d bool pred (lax.cond).
template <class TrueFn, class FalseFn, class... Ops>
auto cond(const Tensor& pred, const TrueFn& true_fn, const FalseFn& false_fn,
          const Ops&... operands) {
  using Out = std::invoke_result_t<const TrueFn&, const Ops&...>;
  static_assert(std::is_same_v<Out, std::invoke_result_t<const FalseFn&, const Ops&...>>,
                "lanes::cond: both branches must return the same type");
  detail::check_defined({pred}, "cond", "pred");
  detail::check_predicate({pred.shape(), pred.dtype()}, "cond");
  std::vector<Tensor> leaves;
  (tree::flatten(operands, leaves), ...);
  detail::check_defined(leaves, "cond", "operand");
  Out out{}, ignored{};
  std::vector<Graph> graphs;
  graphs.push_back(detail::trace_branch(false_fn, &ignored, operands...));
  graphs.push_back(detail::trace_branch(true_fn, &out, operands...));
  detail::check_same_structure("cond", "the true branch", out, "the false branch", ignored);
  return tree::rebuild(out, detail::bind_cond(cast(pred, DType::Int32), std::move(graphs),
                                              std::move(leaves), "cond"));
}

/// while cond_fn(carry): carry = body_fn(carry) (lax.while_loop); cond_fn returns a 0-d bool.
template <class CondFn, class BodyFn, class Carry>
Carry while_loop(const CondFn& cond_fn, const BodyFn& body_fn, const Carry& init) {
  static_assert(std::is_convertible_v<std::invoke_result_t<const BodyFn&, const Carry&>, Carry>,
                "lanes::while_loop: the body must return the carry's type");
  detail::check_defined(tree::flatten(init), "while_loop", "init");
  detail::LoopBodyFrame no_draws("while_loop");  // (lanes/implicit.h)
  Tensor pred;
  Graph c = detail::trace<CondFn>(cond_fn, &pred, detail::leaf_types(init), init);
  auto body = [&](const Carry& x) -> Carry { return body_fn(x); };
  Carry out{};
  Graph b = detail::trace<decltype(body)>(body, &out, detail::leaf_types(init), init);
  detail::check_same_structure("while_loop", "the initial carry", init, "the body's carry", out);
  return tree::rebuild(init, detail::bind_while(std::move(c), std::move(b), tree::flatten(init)));
}

/// scan(f, init, xs): carry, y_t = f(carry, x_t) over the leading axis of xs; returns the final
/// carry and the ys stacked on a new leading axis (lax.scan).
template <class F, class Carry, class Xs>
auto scan(const F& f, const Carry& init, const Xs& xs, const ScanOptions& options = {}) {
  using Result = std::invoke_result_t<const F&, const Carry&, const Xs&>;
  using Y = std::tuple_element_t<1, Result>;
  static_assert(std::is_convertible_v<std::tuple_element_t<0, Result>, Carry>,
                "lanes::scan: f must return (carry of the init's type, y)");
  const std::vector<Tensor> x_leaves = tree::flatten(xs);
  detail::check_defined(tree::flatten(init), "scan", "init");
  detail::check_defined(x_leaves, "scan", "xs");
  const int64_t length = detail::scan_length(x_leaves, options);
  std::vector<TensorType> types = detail::leaf_types(init);
  const std::vector<TensorType> x_types = detail::slice_types(x_leaves);
  types.insert(types.end(), x_types.begin(), x_types.end());
  auto body = [&](const Carry& c, const Xs& x) {
    Result r = f(c, x);
    return std::pair<Carry, Y>(std::move(std::get<0>(r)), std::move(std::get<1>(r)));
  };
  std::pair<Carry, Y> out{};
  Graph g = [&] {
    detail::LoopBodyFrame no_draws("scan / fori_loop");  // (lanes/implicit.h)
    return detail::trace<decltype(body)>(body, &out, types, init, xs);
  }();
  detail::check_same_structure("scan", "the initial carry", init, "f's carry", out.first);
  std::vector<Tensor> leaves = detail::bind_scan(std::move(g), tree::flatten(init), x_leaves,
                                                 length, options.reverse, options.parallel);
  return tree::rebuild(out, leaves);
}

/// fori_loop(lo, hi, body, init) with static bounds: body(i, carry) for i = lo .. hi-1, i a 0-d
/// int32 that stays unmapped under vmap (so x[i] is a plain slice). A scan underneath: every
/// transform applies, reverse mode included.
template <class F, class Carry>
Carry fori_loop(int64_t lo, int64_t hi, const F& body, const Carry& init) {
  const Tensor counter = arange(double(lo), double(std::max(lo, hi)), 1.0, DType::Int32);
  auto step = [&](const Carry& c, const Tensor& i) {
    return std::pair<Carry, std::tuple<>>(body(i, c), {});
  };
  ScanOptions options;
  options.length = std::max<int64_t>(0, hi - lo);
  return scan(step, init, counter, options).first;
}

/// fori_loop with 0-d integer Tensor bounds (a dynamic trip count): a while_loop underneath, so
/// reverse mode records the trip count.
template <class F, class Carry>
Carry fori_loop(const Tensor& lo, const Tensor& hi, const F& body, const Carry& init) {
  check(lo.ndim() == 0 && is_integral(lo.dtype()) && hi.ndim() == 0 && is_integral(hi.dtype()),
        "fori_loop: the bounds must be 0-d integer tensors, got lo of shape ", fmt(lo.shape()), " ",
        dtype_name(lo.dtype()), " and hi of shape ", fmt(hi.shape()), " ", dtype_name(hi.dtype()));
  using State = std::pair<Tensor, Carry>;
  const Tensor stop = cast(hi, lo.dtype());
  auto more = [&](const State& s) { return s.first < stop; };
  auto step = [&](const State& s) {
    return State(s.first + as_weak(1, s.first), body(s.first, s.second));
  };
  return while_loop(more, step, State(lo, init)).second;
}

/// map(f, xs): f over the leading axis of xs, stacked (lax.map). Sequential by default; with
/// options.batch_size, vmap(f) over chunks of that many examples (the remainder in one more).
template <class F, class Xs>
auto map(const F& f, const Xs& xs, const MapOptions& options = {}) {
  using Y = std::invoke_result_t<const F&, const Xs&>;
  if (!options.batch_size) {
    auto step = [&](const std::tuple<>&, const Xs& x) {
      return std::pair<std::tuple<>, Y>({}, f(x));
    };
    return scan(step, std::tuple<>{}, xs).second;
  }
  const int64_t bs = *options.batch_size;
  check(bs > 0, "map: batch_size must be positive, got ", bs);
  const std::vector<Tensor> leaves = tree::flatten(xs);
  const int64_t n = detail::scan_length(leaves, {}), full = n / bs;
  auto chunked = [&](const Tensor& x, int64_t lo, int64_t hi, bool split) {
    Tensor s = slice_axis(x, 0, lo, hi);
    if (!split) return s;
    Shape shape = s.shape();
    shape[0] = bs;
    shape.insert(shape.begin(), full);
    return reshape(s, shape);
  };
  std::vector<Tensor> main_leaves, rest_leaves;
  for (const Tensor& x : leaves) {
    main_leaves.push_back(chunked(x, 0, full * bs, true));
    rest_leaves.push_back(chunked(x, full * bs, n, false));
  }
  const auto batched = vmap(f);
  auto step = [&](const std::tuple<>&, const Xs& x) {
    return std::pair<std::tuple<>, Y>({}, batched(x));
  };
  const Y main = scan(step, std::tuple<>{}, tree::rebuild(xs, main_leaves)).second;
  if (full * bs == n) {
    return tree::rebuild(main, [&] {
      std::vector<Tensor> out;
      for (const Tensor& y : tree::flatten(main)) {
        Shape s(y.shape().begin() + 1, y.shape().end());
        s[0] = full * bs;
        out.push_back(reshape(y, s));
      }
      return out;
    }());
  }
  const Y rest = batched(tree::rebuild(xs, rest_leaves));
  std::vector<Tensor> out;
  const std::vector<Tensor> a = tree::flatten(main), b = tree::flatten(rest);
  for (size_t i = 0; i < a.size(); ++i) {
    Shape s(a[i].shape().begin() + 1, a[i].shape().end());
    s[0] = full * bs;
    out.push_back(concatenate({reshape(a[i], s), b[i]}, 0));
  }
  return tree::rebuild(main, out);
}

}  // namespace lanes
