// custom_vjp_call: every rule in one place. f evaluates; reverse mode runs fwd then bwd; forward
// mode differentiates f; vmap batches f, fwd and bwd with lanes' own rules.
#include "lanes/ops.h"
#include "primitives/control_flow.h"
#include "primitives/custom.h"
#include "transforms/batching.h"
#include "transforms/explain_recorder.h"

namespace lanes::prim {

CustomVjpCall::CustomVjpCall(size_t n_args, std::vector<GraphPtr> graphs,
                             std::vector<size_t> n_lifted)
    : CustomCall(n_args, std::move(graphs), std::move(n_lifted)) {
  check(graphs_.size() == 3, "custom_vjp_call: needs f, fwd and bwd (a bug in lanes)");
  n_out_ = graphs_[0]->outputs.size();
  n_res_ = graphs_[1]->outputs.size() - n_out_;
}

const char* CustomVjpCall::label(size_t j) const {
  static const char* labels[] = {"f", "fwd", "bwd"};
  return labels[j];
}

// ---- reverse mode: fwd forward, bwd backward ---------------------------------------------------

std::vector<Tensor> CustomVjpCall::forward_with_residuals(const std::vector<Tensor>& in) const {
  if (n_res_ == 0) return {};                 // nothing to save: the node evaluates f as usual
  return run(1, inputs_of(1, args(in), in));  // fwd's outputs, then its residuals
}

std::vector<Tensor> CustomVjpCall::backward(const std::vector<Tensor>& primals,
                                            const std::vector<Tensor>& cts,
                                            const std::vector<Tensor>& residuals,
                                            const std::vector<bool>& wanted) const {
  const Graph& bwd = *graphs_[2];
  std::vector<Tensor> lead = residuals;
  for (size_t k = 0; k < n_out_; ++k)
    lead.push_back(or_zeros(cts[k], bwd.types[bwd.inputs[n_res_ + k]]));
  const std::vector<Tensor> got = run(2, inputs_of(2, std::move(lead), primals));
  std::vector<Tensor> out(primals.size());
  for (size_t i = 0; i < n_args_; ++i)
    if (wanted[i]) out[i] = got[i];
  captured_cotangents(primals, cts, wanted, out);
  return out;
}

std::vector<Tensor> CustomVjpCall::vjp_residuals(const std::vector<Tensor>& primals,
                                                 const std::vector<Tensor>& cts,
                                                 const std::vector<Tensor>&,
                                                 const std::vector<Tensor>& residuals,
                                                 const std::vector<bool>& wanted) const {
  return backward(primals, cts, residuals, wanted);
}

std::vector<Tensor> CustomVjpCall::vjp_wanted(const std::vector<Tensor>& primals,
                                              const std::vector<Tensor>& cts,
                                              const std::vector<Tensor>&,
                                              const std::vector<bool>& wanted) const {
  std::vector<Tensor> residuals;
  if (n_res_ > 0) {  // not saved by forward_with_residuals: run fwd again
    std::vector<Tensor> all = run(1, inputs_of(1, args(primals), primals));
    residuals.assign(all.begin() + int64_t(n_out_), all.end());
  }
  return backward(primals, cts, residuals, wanted);
}

std::vector<Tensor> CustomVjpCall::vjp(const std::vector<Tensor>& primals,
                                       const std::vector<Tensor>& cts,
                                       const std::vector<Tensor>& outputs) const {
  return vjp_wanted(primals, cts, outputs, std::vector<bool>(primals.size(), true));
}

// ---- forward mode: f's own derivative (jax refuses jvp of a custom_vjp function) -----------

std::vector<Tensor> CustomVjpCall::jvp(const std::vector<Tensor>& primals,
                                       const std::vector<Tensor>& tangents,
                                       const std::vector<Tensor>&) const {
  return jvp_of_f(primals, tangents);
}

// ---- vmap: f, fwd and bwd batched, agreeing on which outputs and residuals are mapped ----------

std::vector<Batched> CustomVjpCall::batch(const std::vector<Batched>& in, int64_t size) const {
  std::vector<bool> mapped;
  const std::vector<Tensor> ops = lanes_first(in, mapped);
  const std::vector<bool> argm(mapped.begin(), mapped.begin() + int64_t(n_args_));
  auto flags = [&](size_t j, std::vector<bool> lead) {
    const std::vector<bool> l = lifted_flags(j, mapped);
    lead.insert(lead.end(), l.begin(), l.end());
    return lead;
  };
  const Graph &f = *graphs_[0], &fwd = *graphs_[1], &bwd = *graphs_[2];
  const std::vector<bool> f_in = flags(0, argm), fwd_in = flags(1, argm);
  // An output is mapped when f's or fwd's is; a residual when fwd makes it so.
  std::vector<bool> out_mapped = detail::mapped_outputs(f, f_in, size);
  const std::vector<bool> fwd_mapped = detail::mapped_outputs(fwd, fwd_in, size);
  for (size_t k = 0; k < n_out_; ++k) out_mapped[k] = out_mapped[k] || fwd_mapped[k];
  std::vector<bool> fwd_force = out_mapped;
  fwd_force.resize(fwd.outputs.size(), false);
  const std::vector<bool> res_mapped(fwd_mapped.begin() + int64_t(n_out_), fwd_mapped.end());
  // bwd takes (residuals, cotangents); a cotangent comes back with its argument's lanes, summed
  // over them for an argument every lane shares.
  std::vector<bool> bwd_lead = res_mapped;
  bwd_lead.insert(bwd_lead.end(), out_mapped.begin(), out_mapped.end());
  std::vector<bool> bwd_sum;
  for (bool m : argm) bwd_sum.push_back(!m);
  if (detail::explaining())
    batching::note_custom_rule("custom_vjp: f, fwd and bwd batched by lanes' rules (" +
                               std::to_string(size) + " lanes)");
  std::vector<detail::Closed> closed;
  closed.push_back(batch_custom(f, f_in, size, out_mapped, std::vector<bool>(n_out_)).closed);
  closed.push_back(
      batch_custom(fwd, fwd_in, size, fwd_force, std::vector<bool>(fwd.outputs.size())).closed);
  closed.push_back(batch_custom(bwd, flags(2, bwd_lead), size, argm, bwd_sum).closed);
  std::vector<size_t> n_lifted;
  const std::vector<Tensor> operands = batched_operands(ops, closed, n_lifted);
  std::vector<GraphPtr> graphs;
  for (const detail::Closed& c : closed) graphs.push_back(c.graph);
  const auto node = std::make_shared<const CustomVjpCall>(n_args_, graphs, n_lifted);
  std::vector<Batched> out;
  const std::vector<Tensor> ys = lanes::bind(node, operands);
  for (size_t k = 0; k < ys.size(); ++k) out.push_back({ys[k], out_mapped[k] ? 0 : kNotMapped});
  return out;
}

}  // namespace lanes::prim
