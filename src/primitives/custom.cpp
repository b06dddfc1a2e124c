// What the custom-rule primitives share: operand layout, shape rule, running the held graphs,
// f's own derivatives and the batching of a held graph.
#include "primitives/custom.h"

#include "ir/trace.h"
#include "lanes/autodiff.h"
#include "lanes/ops.h"
#include "lanes/vmap.h"
#include "transforms/batching.h"

namespace lanes::prim {

CustomCall::CustomCall(size_t n_args, std::vector<GraphPtr> graphs, std::vector<size_t> n_lifted)
    : n_args_(n_args), graphs_(std::move(graphs)), n_lifted_(std::move(n_lifted)) {
  check(graphs_.size() == n_lifted_.size() && !graphs_.empty(),
        "custom rule: a graph count mismatch (a bug in lanes)");
  check(graphs_[0]->inputs.size() == n_args_ + n_lifted_[0], "custom rule: f takes ",
        graphs_[0]->inputs.size(), " inputs, not ", n_args_, " + ", n_lifted_[0],
        " (a bug in lanes)");
  for (const GraphPtr& g : graphs_) runners_.push_back(std::make_shared<detail::GraphRunner>(g));
}

std::vector<std::pair<std::string, const Graph*>> CustomCall::subgraphs() const {
  std::vector<std::pair<std::string, const Graph*>> out;
  for (size_t j = 0; j < graphs_.size(); ++j) out.emplace_back(label(j), graphs_[j].get());
  return out;
}

std::string CustomCall::refs() const {
  std::string s;
  for (size_t j = 0; j < graphs_.size(); ++j)
    s += std::string(j ? ", " : "") + label(j) + "=" + detail::ref(*graphs_[j]);
  return s;
}

size_t CustomCall::lifted_begin(size_t j) const {
  size_t begin = n_args_;
  for (size_t i = 0; i < j; ++i) begin += n_lifted_[i];
  return begin;
}

std::vector<TensorType> CustomCall::infer(const std::vector<TensorType>& in) const {
  const size_t want = lifted_begin(graphs_.size());
  check(in.size() == want, name(), ": ", in.size(), " operands, the node takes ", want);
  const Graph& f = *graphs_[0];
  for (size_t i = 0; i < n_args_; ++i)
    check(in[i] == f.types[f.inputs[i]], name(), ": argument leaf ", i, " is ", fmt(in[i]),
          ", f was traced for ", fmt(f.types[f.inputs[i]]));
  for (size_t j = 0; j < graphs_.size(); ++j) {
    const Graph& g = *graphs_[j];
    const size_t lead = g.inputs.size() - n_lifted_[j], at = lifted_begin(j);
    for (size_t i = 0; i < n_lifted_[j]; ++i)
      check(in[at + i] == g.types[g.inputs[lead + i]], name(), ": captured value ", i, " of ",
            label(j), " is ", fmt(in[at + i]), ", it was traced as ",
            fmt(g.types[g.inputs[lead + i]]));
  }
  return detail::output_types(f);
}

std::vector<Tensor> CustomCall::args(const std::vector<Tensor>& in) const {
  return {in.begin(), in.begin() + int64_t(n_args_)};
}

std::vector<Tensor> CustomCall::inputs_of(size_t j, std::vector<Tensor> lead,
                                          const std::vector<Tensor>& in) const {
  const auto at = in.begin() + int64_t(lifted_begin(j));
  lead.insert(lead.end(), at, at + int64_t(n_lifted_[j]));
  return lead;
}

std::vector<Tensor> CustomCall::run(size_t j, const std::vector<Tensor>& inputs) const {
  if (detail::any_traced(inputs)) return eval_graph(*graphs_[j], inputs);
  return (*runners_[j])(inputs);
}

std::vector<Tensor> CustomCall::eval(const std::vector<Tensor>& in) const {
  return run(0, inputs_of(0, args(in), in));
}

void CustomCall::captured_cotangents(const std::vector<Tensor>& primals,
                                     const std::vector<Tensor>& cts,
                                     const std::vector<bool>& wanted,
                                     std::vector<Tensor>& out) const {
  const size_t at = lifted_begin(0);
  std::vector<bool> w(primals.size(), false);
  bool any = false;
  for (size_t i = at; i < at + n_lifted_[0]; ++i) any = any || (w[i] = wanted[i]);
  if (!any) return;
  const std::vector<Tensor> got = vjp_of_f(primals, cts, w);
  for (size_t i = at; i < at + n_lifted_[0]; ++i)
    if (w[i]) out[i] = got[i];
}

std::vector<Tensor> CustomCall::captured_tangents(const std::vector<Tensor>& primals,
                                                  const std::vector<Tensor>& tangents) const {
  const size_t at = lifted_begin(0);
  std::vector<Tensor> t(primals.size());
  bool any = false;
  for (size_t i = at; i < at + n_lifted_[0]; ++i) {
    t[i] = tangents[i];
    any = any || t[i].defined();
  }
  if (!any) return {};
  return jvp_of_f(primals, t);
}

std::vector<Tensor> CustomCall::jvp_of_f(const std::vector<Tensor>& primals,
                                         const std::vector<Tensor>& tangents) const {
  return detail::jvp_graph(*graphs_[0], inputs_of(0, args(primals), primals),
                           inputs_of(0, args(tangents), tangents))
      .second;
}

std::vector<Tensor> CustomCall::vjp_of_f(const std::vector<Tensor>& primals,
                                         const std::vector<Tensor>& cts,
                                         const std::vector<bool>& wanted) const {
  std::vector<bool> wrt(wanted.begin(), wanted.begin() + int64_t(n_args_));
  const size_t at = lifted_begin(0);
  wrt.insert(wrt.end(), wanted.begin() + int64_t(at), wanted.begin() + int64_t(at + n_lifted_[0]));
  const std::vector<Tensor> got =
      detail::vjp_graph(*graphs_[0], inputs_of(0, args(primals), primals), wrt).backward(cts);
  std::vector<Tensor> out(primals.size());
  for (size_t i = 0; i < n_args_; ++i) out[i] = got[i];
  for (size_t i = 0; i < n_lifted_[0]; ++i) out[at + i] = got[n_args_ + i];
  return out;
}

std::vector<bool> CustomCall::lifted_flags(size_t j, const std::vector<bool>& mapped) const {
  const auto at = mapped.begin() + int64_t(lifted_begin(j));
  return {at, at + int64_t(n_lifted_[j])};
}

std::vector<Tensor> CustomCall::batched_operands(const std::vector<Tensor>& ops,
                                                 const std::vector<detail::Closed>& closed,
                                                 std::vector<size_t>& n_lifted) const {
  std::vector<Tensor> out = args(ops);
  n_lifted.clear();
  for (size_t j = 0; j < graphs_.size(); ++j) {
    const auto at = ops.begin() + int64_t(lifted_begin(j));
    out.insert(out.end(), at, at + int64_t(n_lifted_[j]));
    out.insert(out.end(), closed[j].lifted.begin(), closed[j].lifted.end());
    n_lifted.push_back(n_lifted_[j] + closed[j].lifted.size());
  }
  return out;
}

CustomBatched batch_custom(const Graph& g, const std::vector<bool>& in_mapped, int64_t size,
                           const std::vector<bool>& force, const std::vector<bool>& sum) {
  std::vector<bool> out_mapped = detail::mapped_outputs(g, in_mapped, size);
  for (size_t k = 0; k < out_mapped.size(); ++k)
    out_mapped[k] = !sum[k] && (out_mapped[k] || force[k]);
  detail::TraceScope scope;
  std::vector<Batched> inputs;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    TensorType t = g.types[g.inputs[i]];
    if (in_mapped[i]) t.shape.insert(t.shape.begin(), size);
    inputs.push_back({scope.input(t), in_mapped[i] ? 0 : kNotMapped});
  }
  const std::vector<Batched> outs = detail::batch_graph(g, std::move(inputs), size);
  std::vector<Tensor> results;
  for (size_t k = 0; k < outs.size(); ++k) {
    if (sum[k]) {
      results.push_back(outs[k].mapped() ? lanes::sum(outs[k].value, Axes{outs[k].dim})
                                         : outs[k].value);
      continue;
    }
    check(outs[k].mapped() <= out_mapped[k], "vmap: a batching rule mapped output ", k,
          " of a custom rule's graph that depends on no mapped input (a bug in lanes)");
    results.push_back(out_mapped[k] ? batching::batch_at_front(outs[k], size) : outs[k].value);
  }
  return {detail::close_graph(scope.finish(results)), out_mapped};
}

}  // namespace lanes::prim
