// vmap: plan the map, then interpret the traced graph of one example with batching rules.
#include <numeric>

#include "ir/trace.h"
#include "lanes/ops.h"
#include "transforms/batching.h"
#include "transforms/explain_recorder.h"

namespace lanes {

namespace {
thread_local std::vector<const VmapOptions*> options_stack;
thread_local int subgraph_depth = 0;

int64_t normalize(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }
}  // namespace

namespace batching {

OptionsScope::OptionsScope(const VmapOptions& o) { options_stack.push_back(&o); }
OptionsScope::~OptionsScope() { options_stack.pop_back(); }

SubgraphScope::SubgraphScope() { ++subgraph_depth; }
SubgraphScope::~SubgraphScope() { --subgraph_depth; }
bool batching_subgraph() { return subgraph_depth > 0; }

const VmapOptions& current_options() {
  static const VmapOptions defaults;
  return options_stack.empty() ? defaults : *options_stack.back();
}

Tensor move_batch_dim(const Batched& x, int64_t to) {
  check(x.mapped(), "vmap: move_batch_dim of an unmapped value");
  return x.dim == to ? x.value : moveaxis(x.value, x.dim, to);
}

Tensor batch_at_front(const Batched& x, int64_t size) {
  if (x.mapped()) return move_batch_dim(x, 0);
  Shape shape = x.value.shape();
  shape.insert(shape.begin(), size);
  std::vector<int64_t> dims(x.value.ndim());
  std::iota(dims.begin(), dims.end(), 1);
  note_broadcast("batch_at_front", shape, x.value.dtype(), false);
  return broadcast_in_dim(x.value, shape, dims);
}

int64_t common_batch_dim(const std::vector<Batched>& xs) {
  int64_t dim = kNotMapped;
  for (const Batched& x : xs) {
    if (!x.mapped()) continue;
    if (dim == kNotMapped) dim = x.dim;
    if (x.dim != dim) return kNotMapped;
  }
  return dim;
}

std::vector<Tensor> align_batch(const std::vector<Batched>& xs, int64_t size, int64_t dim) {
  std::vector<Tensor> out;
  for (const Batched& x : xs) {
    if (x.mapped()) {
      out.push_back(move_batch_dim(x, dim));
      continue;
    }
    Shape shape = x.value.shape();
    shape.insert(shape.begin() + dim, size);
    std::vector<int64_t> dims;
    for (int64_t i = 0; i < x.value.ndim(); ++i) dims.push_back(i < dim ? i : i + 1);
    note_broadcast("align_batch", shape, x.value.dtype(), false);
    out.push_back(broadcast_in_dim(x.value, shape, dims));
  }
  return out;
}

}  // namespace batching

namespace detail {

VmapPlan plan_vmap(const std::vector<Tensor>& leaves, const std::vector<AxisLeaf>& axes,
                   const VmapOptions& options) {
  check(leaves.size() == axes.size(), "vmap: ", axes.size(), " axes for ", leaves.size(),
        " argument leaves");
  VmapPlan plan;
  // Every mapped leaf, for the inconsistent-sizes messages: built only when one is thrown.
  auto sizes = [&] {
    std::string out;
    for (size_t i = 0; i < leaves.size(); ++i) {
      if (plan.dims[i] == kNotMapped) continue;
      out +=
          detail::concat("\n  ", axes[i].path, " of shape ", fmt(leaves[i].shape()), " has size ",
                         leaves[i].shape()[plan.dims[i]], " at axis ", *axes[i].axis);
    }
    return out;
  };
  int64_t size = -1;  // the first mapped size other than 1 (1 if all are 1)
  for (size_t i = 0; i < leaves.size(); ++i) {
    const Tensor& x = leaves[i];
    check(x.defined(), "vmap: ", axes[i].path, " is an undefined tensor");
    TensorType type{x.shape(), x.dtype()};
    int64_t dim = kNotMapped;
    if (axes[i].axis) {
      const int64_t a = *axes[i].axis;
      check(a >= -x.ndim() && a < x.ndim(), "vmap: in_axes ", a, " for ", axes[i].path,
            " of shape ", fmt(x.shape()), " is out of range for its rank ", x.ndim());
      dim = normalize(a, x.ndim());
      const int64_t n = x.shape()[dim];
      if (size == -1 || size == 1) size = n;
      type.shape.erase(type.shape.begin() + dim);
    }
    plan.dims.push_back(dim);
    plan.example_types.push_back(std::move(type));
  }
  if (size >= 0) {
    plan.size = size;
    for (size_t i = 0; i < leaves.size(); ++i) {
      if (plan.dims[i] == kNotMapped) continue;
      const int64_t n = leaves[i].shape()[plan.dims[i]];
      if (n != plan.size && n != 1)
        fail("vmap got inconsistent sizes for array axes to be mapped:", sizes());
    }
    if (options.axis_size && *options.axis_size != plan.size)
      fail("vmap: options.axis_size is ", *options.axis_size,
           " but the mapped arguments have size ", plan.size, ":", sizes());
  } else {
    check(options.axis_size.has_value(),
          "vmap: no argument is mapped (every in_axes is none); give the batch size in "
          "options.axis_size");
    check(*options.axis_size >= 0, "vmap: options.axis_size must be >= 0, got ",
          *options.axis_size);
    plan.size = *options.axis_size;
  }
  return plan;
}

namespace {

// Places a batched output's batch axis where out_axes says; an unbatched output is broadcast
// (a view) unless out_axes is none.
Tensor place_output(const Batched& y, const AxisLeaf& out, int64_t size) {
  if (!out.axis) {
    check(!y.mapped(), "vmap: out_axes is none for ", out.path, " of per-example shape ",
          fmt(y.value.shape()),
          " but it depends on the mapped inputs (only outputs that do not may be unmapped)");
    return y.value;
  }
  const int64_t rank = y.value.ndim() + (y.mapped() ? 0 : 1);
  const int64_t a = *out.axis;
  check(a >= -rank && a < rank, "vmap: out_axes ", a, " for ", out.path, " is out of range for ",
        "its batched rank ", rank);
  const int64_t to = normalize(a, rank);
  if (y.mapped()) return batching::move_batch_dim(y, to);
  return batching::align_batch({y}, size, to)[0];
}

}  // namespace

// Per node, whether some output of the graph depends on it. A vjp rule returns the cotangent of
// every operand and the backward pass keeps only those of differentiated inputs, so the traced
// backward pass holds dead nodes: under jacrev (vmap of a vjp) they are the cotangents of the
// captured weights, (n, n, n) outer products that took 240 of 245 ms for a 512x512 MLP
// Jacobian. Every primitive is pure (randomness takes its key), so they are skipped.
std::vector<bool> live_nodes(const Graph& g) {
  std::vector<bool> live_value(g.types.size(), false), live(g.nodes.size(), false);
  for (ValueId v : g.outputs) live_value[v] = true;
  for (size_t i = g.nodes.size(); i-- > 0;) {
    for (ValueId v : g.nodes[i].outputs) live[i] = live[i] || live_value[v];
    if (live[i])
      for (ValueId v : g.nodes[i].inputs) live_value[v] = true;
  }
  return live;
}

std::vector<Batched> batch_graph(const Graph& g, std::vector<Batched> inputs, int64_t size,
                                 VmapRecord* record) {
  if (has_calls(g)) return batch_graph(inline_calls(g), std::move(inputs), size, record);
  check(inputs.size() == g.inputs.size(), "vmap: the graph takes ", g.inputs.size(),
        " inputs, got ", inputs.size());
  std::vector<Batched> env(g.types.size());
  for (const auto& [v, t] : g.constants) env[v] = {t, kNotMapped};
  for (size_t i = 0; i < inputs.size(); ++i) env[g.inputs[i]] = std::move(inputs[i]);
  std::vector<Batched> args;
  std::vector<Tensor> plain;
  const std::vector<bool> live = live_nodes(g);
  // On concrete inputs each value is dropped after its last use, as the executor does, so the
  // eager run of a batch (a vmap's first call, every chunk of a chunked one) holds no more than
  // the optimized one would.
  std::vector<int64_t> last_use(g.types.size(), -1);
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (live[i])
      for (ValueId v : g.nodes[i].inputs) last_use[v] = int64_t(i);
  for (ValueId v : g.outputs) last_use[v] = int64_t(g.nodes.size());
  if (record)
    for (size_t i = 0; i < g.inputs.size(); ++i) record->value(g.inputs[i], env[g.inputs[i]].dim);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!live[i]) continue;
    const Node& n = g.nodes[i];
    args.clear();
    plain.clear();
    bool any_mapped = false;
    for (ValueId v : n.inputs) {
      args.push_back(env[v]);
      plain.push_back(env[v].value);
      any_mapped |= env[v].mapped();
    }
    std::vector<Batched> outs;
    // A collective's rule runs even on unmapped inputs: psum of a shared value is size * x.
    if (!any_mapped && !n.prim->axis_name()) {
      for (Tensor& t : lanes::bind(n.prim, plain)) outs.push_back({std::move(t), kNotMapped});
    } else {
      outs = n.prim->batch(args, size);
      if (outs.size() != n.outputs.size())
        fail(describe(*n.prim), ": batching rule gave ", outs.size(), " outputs, expected ",
             n.outputs.size());
    }
    for (size_t k = 0; k < outs.size(); ++k) {
      if (record) record->value(n.outputs[k], outs[k].dim);
      env[n.outputs[k]] = std::move(outs[k]);
    }
    for (ValueId v : n.inputs)
      if (last_use[v] == int64_t(i) && !env[v].value.is_tracer()) env[v] = {};
  }
  std::vector<Batched> outputs;
  for (ValueId v : g.outputs) outputs.push_back(env[v]);
  return outputs;
}

std::vector<Tensor> run_vmap(const Graph& g, const std::vector<Tensor>& leaves,
                             const VmapPlan& plan, const std::vector<AxisLeaf>& out_axes,
                             const VmapOptions& options) {
  if (has_calls(g)) return run_vmap(inline_calls(g), leaves, plan, out_axes, options);
  batching::OptionsScope scope(options);
  VmapRecord record(g, plan.size);
  std::vector<Batched> inputs;
  const size_t n_explicit = g.num_explicit_inputs();
  for (size_t i = 0; i < n_explicit; ++i) {
    Batched b{leaves[i], plan.dims[i]};
    // A mapped axis of size 1 broadcasts: the one example is shared by all (as tf does).
    if (b.mapped() && leaves[i].shape()[b.dim] == 1 && plan.size != 1) {
      b = {squeeze(leaves[i], b.dim), kNotMapped};
    }
    inputs.push_back(std::move(b));
  }
  for (size_t i = n_explicit; i < g.inputs.size(); ++i)
    inputs.push_back({g.captured[i - n_explicit], kNotMapped});
  const std::vector<Batched> env_out = batch_graph(g, std::move(inputs), plan.size, &record);
  check(out_axes.size() == g.outputs.size(), "vmap: out_axes gives ", out_axes.size(), " axes for ",
        g.outputs.size(), " outputs");
  std::vector<Tensor> outputs;
  for (size_t i = 0; i < g.outputs.size(); ++i)
    outputs.push_back(place_output(env_out[i], out_axes[i], plan.size));
  return outputs;
}

}  // namespace detail
}  // namespace lanes
