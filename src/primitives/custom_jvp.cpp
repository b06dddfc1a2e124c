// custom_jvp_call: every rule in one place. f evaluates; forward mode runs the rule; reverse mode
// transposes the rule (the vjp of its tangent outputs with respect to its tangent inputs, which
// is the transpose of a rule linear in the tangents), as jax linearizes and transposes it; vmap
// batches f and the rule with lanes' own rules.
#include "lanes/autodiff.h"
#include "lanes/ops.h"
#include "primitives/control_flow.h"
#include "primitives/custom.h"
#include "transforms/batching.h"
#include "transforms/explain_recorder.h"

namespace lanes::prim {

CustomJvpCall::CustomJvpCall(size_t n_args, std::vector<GraphPtr> graphs,
                             std::vector<size_t> n_lifted)
    : CustomCall(n_args, std::move(graphs), std::move(n_lifted)) {
  check(graphs_.size() == 2, "custom_jvp_call: needs f and the rule (a bug in lanes)");
  n_out_ = graphs_[0]->outputs.size();
}

namespace {
// The rule's inputs: the primal args, then a tangent of each (zeros where none is defined).
std::vector<Tensor> primals_and_tangents(const Graph& rule, std::vector<Tensor> lead,
                                         const std::vector<Tensor>& tangents, size_t n) {
  for (size_t i = 0; i < n; ++i)
    lead.push_back(or_zeros(tangents[i], rule.types[rule.inputs[n + i]]));
  return lead;
}
}  // namespace

std::vector<Tensor> CustomJvpCall::jvp(const std::vector<Tensor>& primals,
                                       const std::vector<Tensor>& tangents,
                                       const std::vector<Tensor>&) const {
  const std::vector<Tensor> lead =
      primals_and_tangents(*graphs_[1], args(primals), tangents, n_args_);
  const std::vector<Tensor> got = run(1, inputs_of(1, lead, primals));
  std::vector<Tensor> out(got.begin() + int64_t(n_out_), got.end());
  const std::vector<Tensor> captured = captured_tangents(primals, tangents);
  for (size_t k = 0; k < captured.size(); ++k)
    if (captured[k].defined() && is_floating(out[k].dtype())) out[k] = out[k] + captured[k];
  return out;
}

std::vector<Tensor> CustomJvpCall::vjp_wanted(const std::vector<Tensor>& primals,
                                              const std::vector<Tensor>& cts,
                                              const std::vector<Tensor>&,
                                              const std::vector<bool>& wanted) const {
  const Graph& rule = *graphs_[1];
  // The rule at zero tangents, differentiated with respect to the tangents: its tangent outputs
  // get the cotangents, its primal outputs none.
  const std::vector<Tensor> inputs = inputs_of(
      1, primals_and_tangents(rule, args(primals), std::vector<Tensor>(n_args_), n_args_), primals);
  std::vector<bool> wrt(inputs.size(), false);
  for (size_t i = 0; i < n_args_; ++i) wrt[n_args_ + i] = wanted[i];
  std::vector<Tensor> out_cts(n_out_);
  out_cts.insert(out_cts.end(), cts.begin(), cts.end());
  const std::vector<Tensor> got = detail::vjp_graph(rule, inputs, wrt).backward(out_cts);
  std::vector<Tensor> out(primals.size());
  for (size_t i = 0; i < n_args_; ++i)
    if (wanted[i]) out[i] = got[n_args_ + i];
  captured_cotangents(primals, cts, wanted, out);
  return out;
}

std::vector<Tensor> CustomJvpCall::vjp(const std::vector<Tensor>& primals,
                                       const std::vector<Tensor>& cts,
                                       const std::vector<Tensor>& outputs) const {
  std::vector<bool> wanted(primals.size(), false);
  for (size_t i = 0; i < n_args_; ++i) wanted[i] = is_floating(primals[i].dtype());
  return vjp_wanted(primals, cts, outputs, wanted);
}

// ---- vmap: f and the rule batched, agreeing on which outputs (and tangents) are mapped ---------

std::vector<Batched> CustomJvpCall::batch(const std::vector<Batched>& in, int64_t size) const {
  std::vector<bool> mapped;
  const std::vector<Tensor> ops = lanes_first(in, mapped);
  const std::vector<bool> argm(mapped.begin(), mapped.begin() + int64_t(n_args_));
  const Graph &f = *graphs_[0], &rule = *graphs_[1];
  std::vector<bool> f_in = argm, rule_in = argm;
  const std::vector<bool> lf = lifted_flags(0, mapped), lr = lifted_flags(1, mapped);
  f_in.insert(f_in.end(), lf.begin(), lf.end());
  // A tangent has its primal's shape in the batched graph, so it is mapped as its primal is.
  rule_in.insert(rule_in.end(), argm.begin(), argm.end());
  rule_in.insert(rule_in.end(), lr.begin(), lr.end());
  std::vector<bool> out_mapped = detail::mapped_outputs(f, f_in, size);
  const std::vector<bool> rule_mapped = detail::mapped_outputs(rule, rule_in, size);
  for (size_t k = 0; k < n_out_; ++k)
    out_mapped[k] = out_mapped[k] || rule_mapped[k] || rule_mapped[n_out_ + k];
  std::vector<bool> rule_force = out_mapped;
  rule_force.insert(rule_force.end(), out_mapped.begin(), out_mapped.end());
  if (detail::explaining())
    batching::note_custom_rule("custom_jvp: f and its rule batched by lanes' rules (" +
                               std::to_string(size) + " lanes)");
  std::vector<detail::Closed> closed;
  closed.push_back(batch_custom(f, f_in, size, out_mapped, std::vector<bool>(n_out_)).closed);
  closed.push_back(
      batch_custom(rule, rule_in, size, rule_force, std::vector<bool>(2 * n_out_)).closed);
  std::vector<size_t> n_lifted;
  const std::vector<Tensor> operands = batched_operands(ops, closed, n_lifted);
  const auto node = std::make_shared<const CustomJvpCall>(
      n_args_, std::vector<GraphPtr>{closed[0].graph, closed[1].graph}, n_lifted);
  std::vector<Batched> out;
  const std::vector<Tensor> ys = lanes::bind(node, operands);
  for (size_t k = 0; k < ys.size(); ++k) out.push_back({ys[k], out_mapped[k] ? 0 : kNotMapped});
  return out;
}

}  // namespace lanes::prim
