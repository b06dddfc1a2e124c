// Reverse and forward mode over traced graphs, and the Jacobians built from them.
#include "lanes/autodiff.h"

#include <deque>
#include <memory>
#include <mutex>

#include "ops/internal.h"
#include "transforms/masking.h"

namespace lanes {

std::vector<Tensor> Primitive::jvp(const std::vector<Tensor>&, const std::vector<Tensor>&,
                                   const std::vector<Tensor>&) const {
  throw Error("jvp: primitive '" + name() + "' has no forward-mode derivative rule");
}

std::vector<Tensor> Primitive::vjp(const std::vector<Tensor>&, const std::vector<Tensor>&,
                                   const std::vector<Tensor>&) const {
  throw Error("vjp: primitive '" + name() + "' has no reverse-mode derivative rule");
}

namespace {

// ---- stop_gradient ------------------------------------------------------------------------------

class StopGradient : public Primitive {
 public:
  std::string name() const override { return "stop_gradient"; }
  std::vector<Tensor> mask(const std::vector<Tensor>& in,
                           const detail::MaskContext& ctx) const override {
    return ctx.rebind(in);
  }
  std::vector<TensorType> infer(const std::vector<TensorType>& in) const override {
    check(in.size() == 1, "stop_gradient: expected 1 input, got ", in.size());
    return {in[0]};
  }
  std::vector<Tensor> eval(const std::vector<Tensor>& in) const override { return {in[0]}; }
  std::vector<Batched> batch(const std::vector<Batched>& in, int64_t) const override {
    return {{stop_gradient(in[0].value), in[0].dim}};
  }
  std::vector<Tensor> jvp(const std::vector<Tensor>&, const std::vector<Tensor>&,
                          const std::vector<Tensor>&) const override {
    return {Tensor()};
  }
  std::vector<Tensor> vjp(const std::vector<Tensor>&, const std::vector<Tensor>&,
                          const std::vector<Tensor>&) const override {
    return {Tensor()};
  }
};

// Zeros of a type without allocating them: a broadcast view of one zero.
Tensor zeros_of(const TensorType& t) { return broadcast_to(scalar(0.0, t.dtype), t.shape); }

// Only floating values carry derivatives (integer and bool values are constants to autodiff).
bool differentiable(const TensorType& t) { return is_floating(t.dtype); }

void accumulate(Tensor& into, const Tensor& ct, const TensorType& type, const Primitive* from) {
  if (!ct.defined()) return;
  check(ct.shape() == type.shape, "vjp: the rule of '", from ? from->name() : "output",
        "' gave a cotangent of shape ", fmt(ct.shape()), " for a value of shape ", fmt(type.shape));
  const Tensor c = ct.dtype() == type.dtype ? ct : cast(ct, type.dtype);
  into = into.defined() ? add(into, c) : c;
}

}  // namespace

Tensor stop_gradient(const Tensor& x) { return ops::apply<StopGradient>({x}); }

namespace detail {

std::vector<bool> selected_leaves(const std::vector<int>& argnums,
                                  const std::vector<size_t>& leaf_counts, const char* transform) {
  std::vector<bool> selected;
  for (size_t a = 0; a < leaf_counts.size(); ++a) {
    bool chosen = false;
    for (int n : argnums) chosen |= n == static_cast<int>(a);
    selected.insert(selected.end(), leaf_counts[a], chosen);
  }
  for (int n : argnums)
    check(n >= 0 && n < static_cast<int>(leaf_counts.size()), transform, ": argnums ", n,
          " is out of range for a function of ", leaf_counts.size(), " arguments");
  return selected;
}

namespace {
// The argument that leaf `leaf` belongs to, for messages.
size_t argument_of(size_t leaf, const std::vector<size_t>& leaf_counts) {
  for (size_t arg = 0; arg < leaf_counts.size(); ++arg) {
    if (leaf < leaf_counts[arg]) return arg;
    leaf -= leaf_counts[arg];
  }
  return leaf_counts.size();
}
}  // namespace

// jax: "grad requires real-valued inputs (input dtype that is a sub-dtype of np.floating), but got
// int32". Returning zeros instead would hide the mistake (a loss of integer labels differentiated
// with respect to the labels).
void check_float_wrt(const std::vector<Tensor>& leaves, const std::vector<bool>& wrt,
                     const std::vector<size_t>& leaf_counts, const char* transform) {
  for (size_t i = 0; i < leaves.size() && i < wrt.size(); ++i) {
    if (!wrt[i] || !leaves[i].defined() || is_floating(leaves[i].dtype())) continue;
    fail(transform, " requires real-valued inputs (float32 or float64) for the arguments it ",
         "differentiates, but argument ", argument_of(i, leaf_counts), " (leaf ", i, ") has dtype ",
         dtype_name(leaves[i].dtype()),
         "; leave integer arguments out of argnums, or cast them to a float dtype");
  }
}

void check_cotangents(const std::vector<Tensor>& cts, const std::vector<Tensor>& outputs) {
  check(cts.size() == outputs.size(), "vjp: the pullback got ", cts.size(),
        " cotangent leaves for ", outputs.size(), " outputs");
  for (size_t i = 0; i < cts.size(); ++i) {
    const Tensor& y = outputs[i];
    if (!cts[i].defined()) {
      check(!is_floating(y.dtype()), "vjp: cotangent ", i, " is an undefined tensor but output ", i,
            " has dtype ", dtype_name(y.dtype()), " and shape ", fmt(y.shape()),
            "; pass zeros_like(output) for a zero cotangent");
      continue;
    }
    check(cts[i].dtype() == y.dtype(), "vjp: cotangent ", i, " has dtype ",
          dtype_name(cts[i].dtype()), " but output ", i, " has dtype ", dtype_name(y.dtype()),
          "; a cotangent must have its output's dtype");
    check(cts[i].shape() == y.shape(), "vjp: cotangent ", i, " has shape ", fmt(cts[i].shape()),
          " but output ", i, " has shape ", fmt(y.shape()));
  }
}

void check_tangents(const std::vector<Tensor>& tangents, const std::vector<Tensor>& primals) {
  check(tangents.size() == primals.size(), "jvp: ", tangents.size(), " tangent leaves for ",
        primals.size(), " primal leaves");
  for (size_t i = 0; i < primals.size(); ++i) {
    const Tensor &x = primals[i], &t = tangents[i];
    if (!x.defined()) continue;
    if (!is_floating(x.dtype())) {
      check(!t.defined(), "jvp: primal ", i, " has dtype ", dtype_name(x.dtype()),
            " and takes no tangent (pass an undefined Tensor()), but got a tangent of dtype ",
            dtype_name(t.dtype()));
      continue;
    }
    check(t.defined(), "jvp: tangent ", i, " is an undefined tensor but primal ", i, " has dtype ",
          dtype_name(x.dtype()), " and shape ", fmt(x.shape()),
          "; pass zeros_like(primal) for a zero tangent");
    check(t.dtype() == x.dtype(), "jvp: tangent ", i, " has dtype ", dtype_name(t.dtype()),
          " but primal ", i, " has dtype ", dtype_name(x.dtype()),
          "; a tangent must have its primal's dtype");
    check(t.shape() == x.shape(), "jvp: tangent ", i, " has shape ", fmt(t.shape()), " but primal ",
          i, " has shape ", fmt(x.shape()));
  }
}

Linearized vjp_graph(Graph graph_in, const std::vector<Tensor>& inputs,
                     const std::vector<bool>& wrt) {
  check(inputs.size() == graph_in.inputs.size() && wrt.size() == inputs.size(),
        "vjp: the graph takes ", graph_in.inputs.size(), " inputs, got ", inputs.size());
  auto graph = std::make_shared<const Graph>(inline_calls(std::move(graph_in)));
  const Graph& g = *graph;
  auto env = std::make_shared<std::vector<Tensor>>(g.types.size());
  auto active = std::make_shared<std::vector<bool>>(g.types.size(), false);
  auto residuals = std::make_shared<std::vector<std::vector<Tensor>>>(g.nodes.size());
  for (const auto& [v, t] : g.constants) (*env)[v] = t;
  for (size_t i = 0; i < inputs.size(); ++i) {
    (*env)[g.inputs[i]] = inputs[i];
    (*active)[g.inputs[i]] = wrt[i] && differentiable(g.types[g.inputs[i]]);
  }
  // Forward: compute every value, marking those that depend on a differentiated input.
  for (const Node& n : g.nodes) {
    std::vector<Tensor> args;
    bool any = false;
    for (ValueId v : n.inputs) {
      args.push_back((*env)[v]);
      any = any || (*active)[v];
    }
    std::vector<Tensor> outs;
    if (any) outs = n.prim->forward_with_residuals(args);
    if (outs.empty()) {
      outs = detail::replay(g, n, args);
    } else {  // the node saved residuals for its vjp rule after its outputs
      (*residuals)[&n - g.nodes.data()].assign(outs.begin() + int64_t(n.outputs.size()),
                                               outs.end());
      outs.resize(n.outputs.size());
    }
    for (size_t k = 0; k < outs.size(); ++k) {
      (*env)[n.outputs[k]] = std::move(outs[k]);
      (*active)[n.outputs[k]] = any && differentiable(g.types[n.outputs[k]]);
    }
  }
  Linearized lin;
  for (ValueId v : g.outputs) lin.outputs.push_back((*env)[v]);
  lin.backward = [graph, env, active, residuals, wrt](const std::vector<Tensor>& cotangents) {
    return backward_sweep(*graph, *env, *active, residuals.get(), wrt, cotangents);
  };
  return lin;
}

std::vector<bool> active_values(const Graph& g, const std::vector<bool>& wrt) {
  std::vector<bool> active(g.types.size(), false);
  for (size_t i = 0; i < g.inputs.size(); ++i)
    active[g.inputs[i]] = wrt[i] && differentiable(g.types[g.inputs[i]]);
  for (const Node& n : g.nodes) {
    bool any = false;
    for (ValueId v : n.inputs) any = any || active[v];
    for (ValueId v : n.outputs) active[v] = any && differentiable(g.types[v]);
  }
  return active;
}

std::vector<Tensor> backward_sweep(const Graph& g, const std::vector<Tensor>& env,
                                   const std::vector<bool>& active,
                                   const std::vector<std::vector<Tensor>>* residuals,
                                   const std::vector<bool>& wrt,
                                   const std::vector<Tensor>& cotangents) {
  check(cotangents.size() == g.outputs.size(), "vjp: ", cotangents.size(), " cotangents for ",
        g.outputs.size(), " outputs");
  std::vector<Tensor> ct(g.types.size());
  for (size_t i = 0; i < cotangents.size(); ++i) {
    const TensorType& t = g.types[g.outputs[i]];
    check(!cotangents[i].defined() || cotangents[i].shape() == t.shape, "vjp: cotangent ", i,
          " has shape ", fmt(cotangents[i].shape()), " but the output has shape ", fmt(t.shape));
    if (active[g.outputs[i]]) accumulate(ct[g.outputs[i]], cotangents[i], t, nullptr);
  }
  for (size_t i = g.nodes.size(); i-- > 0;) {
    const Node& n = g.nodes[i];
    std::vector<Tensor> out_ct, outs, primals;
    std::vector<bool> wanted;
    bool any = false;
    for (ValueId v : n.outputs) {
      out_ct.push_back(ct[v]);
      outs.push_back(env[v]);
      any = any || ct[v].defined();
    }
    if (!any) continue;
    bool needed = false;
    for (ValueId v : n.inputs) {
      primals.push_back(env[v]);
      wanted.push_back(active[v]);
      needed = needed || active[v];
    }
    if (!needed) continue;
    const bool saved = residuals && !(*residuals)[i].empty();
    const std::vector<Tensor> in_ct =
        saved ? n.prim->vjp_residuals(primals, out_ct, outs, (*residuals)[i], wanted)
              : n.prim->vjp_wanted(primals, out_ct, outs, wanted);
    check(in_ct.size() == n.inputs.size(), "vjp: the rule of '", n.prim->name(), "' gave ",
          in_ct.size(), " cotangents for ", n.inputs.size(), " inputs");
    for (size_t k = 0; k < n.inputs.size(); ++k)
      if (active[n.inputs[k]])
        accumulate(ct[n.inputs[k]], in_ct[k], g.types[n.inputs[k]], n.prim.get());
  }
  std::vector<Tensor> result(g.inputs.size());
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    if (!wrt[i]) continue;
    const ValueId v = g.inputs[i];
    result[i] = ct[v].defined() ? ct[v] : zeros_of(g.types[v]);
  }
  return result;
}

std::pair<std::vector<Tensor>, std::vector<Tensor>> jvp_graph(const Graph& g,
                                                              const std::vector<Tensor>& inputs,
                                                              const std::vector<Tensor>& tangents) {
  if (has_calls(g)) return jvp_graph(inline_calls(g), inputs, tangents);
  check(inputs.size() == g.inputs.size() && tangents.size() == inputs.size(),
        "jvp: the graph takes ", g.inputs.size(), " inputs, got ", inputs.size());
  std::vector<Tensor> env(g.types.size()), tan(g.types.size());
  for (const auto& [v, t] : g.constants) env[v] = t;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ValueId v = g.inputs[i];
    env[v] = inputs[i];
    if (!tangents[i].defined() || !differentiable(g.types[v])) continue;
    check(tangents[i].shape() == g.types[v].shape, "jvp: tangent ", i, " has shape ",
          fmt(tangents[i].shape()), " but its primal has shape ", fmt(g.types[v].shape));
    tan[v] =
        tangents[i].dtype() == g.types[v].dtype ? tangents[i] : cast(tangents[i], g.types[v].dtype);
  }
  for (const Node& n : g.nodes) {
    std::vector<Tensor> args, dargs;
    bool any = false;
    for (ValueId v : n.inputs) {
      args.push_back(env[v]);
      dargs.push_back(tan[v]);
      any = any || tan[v].defined();
    }
    std::vector<Tensor> outs = detail::replay(g, n, args);
    if (any) {
      std::vector<Tensor> douts = n.prim->jvp(args, dargs, outs);
      check(douts.size() == outs.size(), "jvp: the rule of '", n.prim->name(), "' gave ",
            douts.size(), " tangents for ", outs.size(), " outputs");
      for (size_t k = 0; k < outs.size(); ++k)
        if (douts[k].defined() && differentiable(g.types[n.outputs[k]])) {
          check(douts[k].shape() == outs[k].shape(), "jvp: the rule of '", n.prim->name(),
                "' gave a tangent of shape ", fmt(douts[k].shape()), " for an output of shape ",
                fmt(outs[k].shape()));
          tan[n.outputs[k]] = douts[k];
        }
    }
    for (size_t k = 0; k < outs.size(); ++k) env[n.outputs[k]] = std::move(outs[k]);
  }
  std::vector<Tensor> ys, ts;
  for (ValueId v : g.outputs) {
    ys.push_back(env[v]);
    ts.push_back(tan[v].defined() ? tan[v] : zeros_of(g.types[v]));
  }
  return {ys, ts};
}

namespace {

// The rows of the n x n identity, shaped (n, shape...), kept across calls. A Jacobian's basis is
// then the same tensor every time, so the vmap cache, which keys large constants by address,
// finds the batched graph of a nested Jacobian (hessian's jacrev inside jacfwd) instead of
// batching it afresh on every call. Tensors are immutable, so sharing one is safe; the few kept
// are bounded in bytes.
Tensor identity_basis(int64_t n, DType dtype, const Shape& shape) {
  constexpr size_t kKeep = 4;
  constexpr int64_t kMaxBytes = int64_t{64} << 20;
  static std::mutex mutex;
  static std::deque<Tensor> kept;  // (n, n) identities, newest first
  Shape basis_shape{n};
  basis_shape.insert(basis_shape.end(), shape.begin(), shape.end());
  if (n * n * int64_t(dtype_size(dtype)) > kMaxBytes) return reshape(eye(n, dtype), basis_shape);
  std::lock_guard<std::mutex> lock(mutex);
  for (const Tensor& e : kept)
    if (e.shape(0) == n && e.dtype() == dtype) return reshape(e, basis_shape);
  kept.push_front(eye(n, dtype));
  if (kept.size() > kKeep) kept.pop_back();
  return reshape(kept.front(), basis_shape);
}

// The Jacobian of g's one float output with respect to input `leaf`: one vmap over the rows
// (reverse mode: vjps of the output's basis) or the columns (forward mode: jvps of the input's
// basis) of the identity. The vmap traces one call whose body is cached for g, so its own cache
// keys one node rather than the derivative of every node of f.
Tensor jacobian_of(bool reverse, const Graph& g, const std::vector<Tensor>& inputs, size_t leaf,
                   const VmapCache& cache, std::optional<int64_t> chunk) {
  const char* name = reverse ? "jacrev" : "jacfwd";
  check(g.outputs.size() == 1 && is_floating(g.types[g.outputs[0]].dtype), name,
        ": the function must return one float tensor");
  const TensorType y = g.types[g.outputs[0]];
  const Tensor& x = inputs[leaf];
  check(is_floating(x.dtype()), name, ": the argument must be a float tensor, got ",
        dtype_name(x.dtype()));
  const TensorType mapped = reverse ? y : TensorType{x.shape(), x.dtype()};
  VmapOptions options;
  options.axis_size = shape_numel(mapped.shape);
  options.chunk_size = chunk;
  // The body's inputs are g's, then the row or column of the identity.
  auto slice = [leaf, reverse](const Graph& body_g, const std::vector<Tensor>& args) {
    const std::vector<Tensor> primals(args.begin(), args.end() - 1);
    if (reverse) {
      std::vector<bool> wrt(primals.size(), false);
      wrt[leaf] = true;
      return std::vector<Tensor>{vjp_graph(body_g, primals, wrt).backward({args.back()})[leaf]};
    }
    std::vector<Tensor> tangents(primals.size());
    tangents[leaf] = args.back();
    return std::vector<Tensor>{jvp_graph(body_g, primals, tangents).second[0]};
  };
  // Not "vjp:"/"jvp:" + bits, which linearize and jvp_call use for other bodies of the same g.
  const std::string tag = (reverse ? "jacrev-row:" : "jacfwd-column:") + std::to_string(leaf);
  // The inputs go in as unmapped arguments, not captures, so that the vmap cache keys their
  // types only: a Jacobian at a new point hits.
  auto one = [&](const std::vector<Tensor>& primals, const Tensor& e) {
    std::vector<Tensor> args = primals;
    args.push_back(e);
    return call_cached(g, args, tag, slice)[0];
  };
  const Tensor basis = identity_basis(*options.axis_size, mapped.dtype, mapped.shape);
  const Tensor slices =
      Vmapped(one, in_axes(none, 0), reverse ? 0 : -1, options, cache)(inputs, basis);
  Shape shape = y.shape;
  shape.insert(shape.end(), x.shape().begin(), x.shape().end());
  return reshape(slices, shape);
}

// g's first output is the loss (a 0-d float); n_aux more are auxiliary outputs (has_aux).
void check_scalar_output(const Graph& g, const char* transform, size_t n_aux) {
  check(g.outputs.size() == 1 + n_aux, transform, ": the function must return one scalar",
        n_aux ? " and its auxiliary outputs" : "", ", it returned ", g.outputs.size(), " tensors");
  const TensorType& y = g.types[g.outputs[0]];
  check(y.shape.empty() && is_floating(y.dtype), transform,
        ": the function must return a 0-d float tensor (a scalar loss), it returned shape ",
        fmt(y.shape), " ", dtype_name(y.dtype), "; use vjp or jacrev for other outputs");
}

// The outputs of g (the loss, then any auxiliary ones) and the cotangents of its inputs for a
// cotangent of one on the loss (none on the auxiliary outputs).
std::vector<Tensor> value_and_cotangents(Graph g, const std::vector<Tensor>& inputs,
                                         const std::vector<bool>& wrt) {
  const Linearized lin = vjp_graph(std::move(g), inputs, wrt);
  std::vector<Tensor> out = lin.outputs, cts(lin.outputs.size());
  cts[0] = ones_like(lin.outputs[0]);
  for (Tensor& ct : lin.backward(cts)) out.push_back(std::move(ct));
  return out;
}

// A call's tag for a derivative with respect to the inputs flagged in wrt: "grad:0110".
std::string tag_of(const char* transform, const std::vector<bool>& wrt) {
  std::string tag = std::string(transform) + ":";
  for (bool w : wrt) tag += w ? '1' : '0';
  return tag;
}

// The cotangents in `all` of the inputs flagged in wrt (what a call's body returns), and back:
// one entry per input, undefined where wrt is false.
std::vector<Tensor> only_wrt(const std::vector<Tensor>& all, const std::vector<bool>& wrt) {
  std::vector<Tensor> kept;
  for (size_t i = 0; i < wrt.size(); ++i)
    if (wrt[i]) kept.push_back(all[i]);
  return kept;
}
std::vector<Tensor> spread_wrt(const Tensor* kept, const std::vector<bool>& wrt) {
  std::vector<Tensor> all(wrt.size());
  for (size_t i = 0; i < wrt.size(); ++i)
    if (wrt[i]) all[i] = *kept++;
  return all;
}

}  // namespace

Linearized linearize(Graph g_in, const std::vector<Tensor>& inputs, const std::vector<bool>& wrt) {
  if (!any_traced(inputs)) return vjp_graph(std::move(g_in), inputs, wrt);
  auto graph = std::make_shared<const Graph>(std::move(g_in));
  Linearized lin;
  lin.outputs = eval_graph(*graph, inputs);  // recorded; the body's copy of it merges by CSE
  lin.backward = [graph, inputs, wrt](const std::vector<Tensor>& cotangents) {
    const size_t n = inputs.size();
    bool all_defined = true;
    for (const Tensor& ct : cotangents) all_defined = all_defined && ct.defined();
    // An undefined (zero) cotangent has no type to key: the rules run in place.
    if (!all_defined) return vjp_graph(*graph, inputs, wrt).backward(cotangents);
    std::vector<Tensor> args = inputs;
    args.insert(args.end(), cotangents.begin(), cotangents.end());
    auto body = [n, &wrt](const Graph& body_g, const std::vector<Tensor>& a) {
      const std::vector<Tensor> primals(a.begin(), a.begin() + int64_t(n));
      const std::vector<Tensor> cts(a.begin() + int64_t(n), a.end());
      return only_wrt(vjp_graph(body_g, primals, wrt).backward(cts), wrt);
    };
    return spread_wrt(call_cached(*graph, args, tag_of("vjp", wrt), body).data(), wrt);
  };
  return lin;
}

std::pair<std::vector<Tensor>, std::vector<Tensor>> jvp_call(const Graph& g,
                                                             const std::vector<Tensor>& inputs,
                                                             const std::vector<Tensor>& tangents) {
  if (!any_traced(inputs) && !any_traced(tangents)) return jvp_graph(g, inputs, tangents);
  check(tangents.size() == inputs.size(), "jvp: ", tangents.size(), " tangents for ", inputs.size(),
        " inputs");
  // The call's inputs are g's, then the defined tangents; `with` says whose they are (an
  // undefined tangent, a zero, has no type to key).
  const size_t n = inputs.size();
  std::vector<bool> with(n);
  for (size_t i = 0; i < n; ++i) with[i] = tangents[i].defined();
  std::vector<Tensor> args = inputs;
  for (Tensor& t : only_wrt(tangents, with)) args.push_back(std::move(t));
  auto body = [n, &with](const Graph& body_g, const std::vector<Tensor>& a) {
    const std::vector<Tensor> primals(a.begin(), a.begin() + int64_t(n));
    auto [ys, ts] = jvp_graph(body_g, primals, spread_wrt(a.data() + n, with));
    ys.insert(ys.end(), ts.begin(), ts.end());  // the outputs, then their tangents
    return ys;
  };
  std::vector<Tensor> out = call_cached(g, args, tag_of("jvp", with), body);
  const auto mid = out.begin() + int64_t(g.outputs.size());
  return {std::vector<Tensor>(out.begin(), mid), std::vector<Tensor>(mid, out.end())};
}

std::vector<Tensor> value_and_grad_graph(Graph g, const std::vector<Tensor>& inputs,
                                         const std::vector<bool>& wrt, size_t n_aux) {
  check_scalar_output(g, "grad", n_aux);
  const size_t n_out = 1 + n_aux;
  if (!any_traced(inputs)) return value_and_cotangents(std::move(g), inputs, wrt);
  // The call's body returns the outputs, then the cotangents of the differentiated inputs.
  auto body = [&wrt, n_out](const Graph& body_g, const std::vector<Tensor>& args) {
    std::vector<Tensor> all = value_and_cotangents(body_g, args, wrt);
    std::vector<Tensor> kept = only_wrt({all.begin() + int64_t(n_out), all.end()}, wrt);
    kept.insert(kept.begin(), all.begin(), all.begin() + int64_t(n_out));
    return kept;
  };
  const std::vector<Tensor> outs =
      call_cached(g, inputs, tag_of("grad", wrt) + ":" + std::to_string(n_aux), body);
  std::vector<Tensor> result = spread_wrt(outs.data() + n_out, wrt);
  result.insert(result.begin(), outs.begin(), outs.begin() + int64_t(n_out));
  return result;
}

Tensor jacobian_graph(bool reverse, const Graph& g, const std::vector<Tensor>& inputs, size_t leaf,
                      const VmapCache& cache, std::optional<int64_t> chunk) {
  if (!any_traced(inputs)) return jacobian_of(reverse, g, inputs, leaf, cache, chunk);
  const std::string tag = (reverse ? "jacrev:" : "jacfwd:") + std::to_string(leaf) +
                          (chunk ? ":chunk" + std::to_string(*chunk) : "");
  auto body = [&](const Graph& body_g, const std::vector<Tensor>& args) {
    return std::vector<Tensor>{jacobian_of(reverse, body_g, args, leaf, cache, chunk)};
  };
  return call_cached(g, inputs, tag, body)[0];
}

}  // namespace detail
}  // namespace lanes
