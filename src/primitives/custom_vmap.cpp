// custom_vmap_call: every rule in one place. f evaluates and gives the derivatives; vmap runs the
// user's rule on the batch (traced when the batch is, so an enclosing vmap batches the rule's
// ops in turn) and checks what it returns against f's outputs.
#include "ir/trace.h"
#include "lanes/autodiff.h"
#include "lanes/ops.h"
#include "primitives/control_flow.h"
#include "primitives/custom.h"
#include "transforms/batching.h"
#include "transforms/explain_recorder.h"

namespace lanes::prim {

CustomVmapCall::CustomVmapCall(size_t n_args, GraphPtr f, size_t n_lifted,
                               std::shared_ptr<const detail::VmapRule> rule)
    : CustomCall(n_args, {std::move(f)}, {n_lifted}), rule_(std::move(rule)) {}

std::string CustomVmapCall::params() const {
  return refs() + ", rule=" + rule_->name + "#" + std::to_string(rule_->id);
}

namespace {

// The jvp of a custom_vmap rule, as a rule of the jvp node: its leaves are the primal args, then
// a tangent of each arg flagged in `with`. A primal and its tangent are batched together (the
// one that is not is broadcast), the user's rule runs on the primals, traced, and jax-style
// forward mode differentiates what it did. Its outputs are the outputs and their tangents, each
// batched as the rule says the output is.
detail::VmapRuleFn jvp_rule(std::shared_ptr<const detail::VmapRule> rule, std::vector<bool> with) {
  return [rule, with](int64_t size, const std::vector<bool>& in_batched,
                      const std::vector<Tensor>& leaves) {
    const size_t n = with.size();
    std::vector<Tensor> primals(leaves.begin(), leaves.begin() + int64_t(n)), tangents(n);
    std::vector<bool> batched(in_batched.begin(), in_batched.begin() + int64_t(n));
    std::vector<bool> tangent_batched(n, false);
    for (size_t i = 0, next = n; i < n; ++i)
      if (with[i]) {
        tangent_batched[i] = in_batched[next];
        tangents[i] = leaves[next++];
      }
    auto lanes_of = [size](const Tensor& x) {
      Shape s = x.shape();
      s.insert(s.begin(), size);
      return broadcast_to(expand_dims(x, 0), s);
    };
    for (size_t i = 0; i < n; ++i) {
      if (!with[i] || batched[i] == tangent_batched[i]) continue;
      if (batched[i])
        tangents[i] = lanes_of(tangents[i]);
      else
        primals[i] = lanes_of(primals[i]);
      batched[i] = true;
    }
    detail::TraceScope scope;
    std::vector<Tensor> traced;
    for (const Tensor& p : primals) traced.push_back(scope.input({p.shape(), p.dtype()}));
    auto [outs, out_batched] = rule->fn(size, batched, traced);
    check(out_batched.size() == outs.size(), "custom_vmap (", rule->name,
          "): the rule's out_batched has ", out_batched.size(), " flags but it returns ",
          outs.size(), " output leaves (one flag per output leaf)");
    const Graph g = scope.finish(outs);
    std::vector<Tensor> inputs = primals;
    inputs.insert(inputs.end(), g.captured.begin(), g.captured.end());
    tangents.resize(inputs.size());
    auto [ys, ts] = detail::jvp_graph(g, inputs, tangents);
    ys.insert(ys.end(), ts.begin(), ts.end());
    std::vector<bool> flags = out_batched;
    flags.insert(flags.end(), out_batched.begin(), out_batched.end());
    return std::make_pair(ys, flags);
  };
}

}  // namespace

// Forward mode is a custom_vmap of f's jvp whose rule is the jvp of the rule (as jax's
// custom_vmap), so a vmapped jvp (jacfwd) still batches through the user's rule. A tangent on a
// value f captures (which the rule does not see) takes f's own derivative instead.
std::vector<Tensor> CustomVmapCall::jvp(const std::vector<Tensor>& primals,
                                        const std::vector<Tensor>& tangents,
                                        const std::vector<Tensor>& outputs) const {
  for (size_t i = n_args_; i < tangents.size(); ++i)
    if (tangents[i].defined()) return jvp_of_f(primals, tangents);
  const Graph& f = *graphs_[0];
  std::vector<bool> with(primals.size(), false);
  std::vector<Tensor> operands = args(primals);
  bool any = false;
  for (size_t i = 0; i < n_args_; ++i) {
    with[i] = tangents[i].defined() && detail::has_tangent(f.types[f.inputs[i]]);
    if (with[i]) operands.push_back(or_zeros(tangents[i], f.types[f.inputs[i]]));
    any = any || with[i];
  }
  if (!any) return std::vector<Tensor>(outputs.size());
  const size_t n_with = operands.size() - n_args_;
  detail::Closed j = detail::jvp_subgraph(f, with);
  // jvp_subgraph's inputs are (args, lifted, tangents, its own lifted): the node's f takes the
  // args and tangents first.
  std::vector<size_t> order = range(0, n_args_);
  for (size_t i : range(primals.size(), primals.size() + n_with)) order.push_back(i);
  for (size_t i : range(n_args_, primals.size())) order.push_back(i);
  for (size_t i : range(primals.size() + n_with, j.graph->inputs.size())) order.push_back(i);
  const GraphPtr g = reordered(*j.graph, order, range(0, j.graph->outputs.size()));
  operands.insert(operands.end(), primals.begin() + int64_t(n_args_), primals.end());
  operands.insert(operands.end(), j.lifted.begin(), j.lifted.end());
  auto rule = std::make_shared<detail::VmapRule>();
  rule->name = "jvp of " + rule_->name;
  rule->id = rule_->id;
  rule->fn = jvp_rule(rule_, std::vector<bool>(with.begin(), with.begin() + int64_t(n_args_)));
  const auto node = std::make_shared<const CustomVmapCall>(
      n_args_ + n_with, g, n_lifted_[0] + j.lifted.size(), std::move(rule));
  const std::vector<Tensor> ys = lanes::bind(node, operands);
  return {ys.begin() + int64_t(outputs.size()), ys.end()};
}

std::vector<Tensor> CustomVmapCall::vjp_wanted(const std::vector<Tensor>& primals,
                                               const std::vector<Tensor>& cts,
                                               const std::vector<Tensor>&,
                                               const std::vector<bool>& wanted) const {
  return vjp_of_f(primals, cts, wanted);
}

std::vector<Tensor> CustomVmapCall::vjp(const std::vector<Tensor>& primals,
                                        const std::vector<Tensor>& cts,
                                        const std::vector<Tensor>& outputs) const {
  std::vector<bool> wanted;
  for (const Tensor& p : primals) wanted.push_back(is_floating(p.dtype()));
  return vjp_wanted(primals, cts, outputs, wanted);
}

std::vector<Batched> CustomVmapCall::batch(const std::vector<Batched>& in, int64_t size) const {
  const std::string& name = rule_->name;
  for (size_t i = n_args_; i < in.size(); ++i)
    check(!in[i].mapped(), "custom_vmap (", name,
          "): f captures a value that this vmap batches; the rule only sees the arguments, so "
          "pass that value as an argument");
  std::vector<bool> in_batched;
  std::vector<Tensor> args = lanes_first(in, in_batched);
  args.resize(n_args_);
  in_batched.resize(n_args_);
  auto [outs, out_batched] = rule_->fn(size, in_batched, args);
  const Graph& f = *graphs_[0];
  const std::vector<TensorType> want = detail::output_types(f);
  check(out_batched.size() == want.size(), "custom_vmap (", name, "): the rule's out_batched has ",
        out_batched.size(), " flags but f returns ", want.size(),
        " output leaves (one flag per output leaf)");
  check(outs.size() == want.size(), "custom_vmap (", name, "): the rule returns ", outs.size(),
        " output leaves but f returns ", want.size());
  std::vector<Batched> result;
  for (size_t k = 0; k < want.size(); ++k) {
    TensorType expected = want[k];
    if (out_batched[k]) expected.shape.insert(expected.shape.begin(), size);
    if (!outs[k].defined() || outs[k].shape() != expected.shape ||
        outs[k].dtype() != expected.dtype) {
      const std::string got =
          outs[k].defined() ? detail::concat(fmt(TensorType{outs[k].shape(), outs[k].dtype()}))
                            : "undefined";
      fail("custom_vmap (", name, "): the rule returns output leaf ", k, " as ", got,
           " but out_batched says ", out_batched[k] ? "batched" : "unbatched", ", so it must be ",
           fmt(expected), " (batched leaves hold the ", size, " examples at dim 0)");
    }
    result.push_back({outs[k], out_batched[k] ? 0 : kNotMapped});
  }
  if (detail::explaining()) {
    std::string ib, ob;
    for (bool b : in_batched) ib += b ? '1' : '0';
    for (bool b : out_batched) ob += b ? '1' : '0';
    batching::note_custom_rule("custom_vmap rule '" + name + "' ran over " + std::to_string(size) +
                               " lanes (in_batched=" + ib + ", out_batched=" + ob + ")");
  }
  return result;
}

}  // namespace lanes::prim
