// Helpers shared by the control-flow primitives' rules (cond.cpp, while.cpp, scan.cpp).
#include "primitives/control_flow.h"

#include <cstring>

#include "lanes/ops.h"
#include "transforms/batching.h"

namespace lanes::prim {

Widened widen_all(std::vector<detail::Closed> closed, std::vector<Tensor> operands) {
  const size_t n = operands.size();
  std::vector<std::vector<TensorType>> lifted_types;
  for (const detail::Closed& c : closed) {
    std::vector<TensorType> types;
    for (const Tensor& t : c.lifted) types.push_back({t.shape(), t.dtype()});
    lifted_types.push_back(std::move(types));
  }
  Widened w;
  for (size_t k = 0; k < closed.size(); ++k) {
    std::vector<TensorType> before, after;
    for (size_t j = 0; j < closed.size(); ++j) {
      auto& into = j < k ? before : after;
      if (j != k) into.insert(into.end(), lifted_types[j].begin(), lifted_types[j].end());
    }
    const detail::GraphPtr mid = detail::with_unused_inputs(*closed[k].graph, n, before);
    w.graphs.push_back(detail::with_unused_inputs(*mid, mid->inputs.size(), after));
  }
  w.operands = std::move(operands);
  for (detail::Closed& c : closed)
    w.operands.insert(w.operands.end(), c.lifted.begin(), c.lifted.end());
  return w;
}

std::vector<Tensor> lanes_first(const std::vector<Batched>& in, std::vector<bool>& mapped) {
  std::vector<Tensor> out;
  mapped.clear();
  for (const Batched& b : in) {
    mapped.push_back(b.mapped());
    out.push_back(b.mapped() ? batching::move_batch_dim(b, 0) : b.value);
  }
  return out;
}

Tensor or_zeros(const Tensor& t, const TensorType& type) {
  if (t.defined()) return t.dtype() == type.dtype ? t : cast(t, type.dtype);
  return broadcast_to(scalar(0.0, type.dtype), type.shape);
}

std::vector<Tensor> outer_inside(const std::vector<Batched>& in, const std::vector<bool>& lanes,
                                 const std::vector<bool>& outer, int64_t size) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < in.size(); ++i) {
    const int64_t at = lanes[i] ? 1 : 0;
    if (in[i].mapped()) {
      out.push_back(batching::move_batch_dim(in[i], at));
    } else if (outer[i]) {
      Tensor x = expand_dims(in[i].value, at);
      Shape s = x.shape();
      s[size_t(at)] = size;
      out.push_back(broadcast_to(x, s));
    } else {
      out.push_back(in[i].value);
    }
  }
  return out;
}

std::vector<Tensor> merge_lanes(const std::vector<Batched>& in, const std::vector<bool>& inner,
                                int64_t size, int64_t size2) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < in.size(); ++i) {
    const Batched& b = in[i];
    if (!inner[i] && !b.mapped()) {
      out.push_back(b.value);
      continue;
    }
    // (size2, size, ...) with both lane dims in front, broadcast where one is missing.
    Tensor x = b.mapped() ? batching::move_batch_dim(b, 0) : expand_dims(b.value, 0);
    if (!inner[i]) x = expand_dims(x, 1);
    Shape full = x.shape();
    full[0] = size2;
    full[1] = size;
    x = broadcast_to(x, full);
    Shape merged(full.begin() + 1, full.end());
    merged[0] = size2 * size;
    out.push_back(reshape(x, merged));
  }
  return out;
}

namespace {
// d[to(j)] = s[from(j)] for j < n, rows of `row` bytes: a plain loop for one float64, float32 or
// bool per lane, a memcpy call per row otherwise.
template <class From, class To>
void copy_rows(const char* s, char* d, size_t row, size_t n, From from, To to) {
  auto typed = [&](auto unit) {
    using T = decltype(unit);
    const T* st = reinterpret_cast<const T*>(s);
    T* dt = reinterpret_cast<T*>(d);
    for (size_t j = 0; j < n; ++j) dt[to(j)] = st[from(j)];
  };
  if (row == 8)
    typed(uint64_t{});
  else if (row == 4)
    typed(uint32_t{});
  else if (row == 1)
    typed(uint8_t{});
  else
    for (size_t j = 0; j < n; ++j) std::memcpy(d + to(j) * row, s + from(j) * row, row);
}

size_t row_bytes(const Tensor& x) {
  return x.shape(0) == 0 ? 0 : size_t(x.numel() / x.shape(0)) * dtype_size(x.dtype());
}
}  // namespace

Tensor gather_rows(const Tensor& x, const std::vector<int64_t>& rows) {
  const Tensor c = x.contiguous();
  Shape shape = x.shape();
  shape[0] = int64_t(rows.size());
  Tensor out = Tensor::empty(shape, x.dtype());
  copy_rows(
      static_cast<const char*>(c.raw_data()), static_cast<char*>(out.raw_mutable_data()),
      row_bytes(x), rows.size(), [&](size_t j) { return size_t(rows[j]); },
      [](size_t j) { return j; });
  return out;
}

void scatter_rows(const Tensor& x, const std::vector<int64_t>& rows, Tensor& dst,
                  const std::vector<int64_t>& to) {
  const Tensor c = x.contiguous();
  copy_rows(
      static_cast<const char*>(c.raw_data()), static_cast<char*>(dst.raw_mutable_data()),
      row_bytes(x), rows.size(), [&](size_t j) { return size_t(rows[j]); },
      [&](size_t j) { return size_t(to[j]); });
}

// g with its inputs and outputs listed in a new order (positions into the old lists).
GraphPtr reordered(const Graph& g, const std::vector<size_t>& inputs,
                   const std::vector<size_t>& outputs) {
  Graph out = g;
  out.inputs.clear();
  out.outputs.clear();
  for (size_t i : inputs) out.inputs.push_back(g.inputs[i]);
  for (size_t k : outputs) out.outputs.push_back(g.outputs[k]);
  return std::make_shared<const Graph>(std::move(out));
}

std::vector<size_t> range(size_t lo, size_t hi) {
  std::vector<size_t> r;
  for (size_t i = lo; i < hi; ++i) r.push_back(i);
  return r;
}

// A closed body whose inputs are (carry, consts, xs, lifted): lifted moved in after the consts,
// so the scan takes them as more consts.
GraphPtr lifted_as_consts(const detail::Closed& c, size_t n_carry, size_t n_consts, size_t n_xs) {
  const size_t n = n_carry + n_consts + n_xs, lifted = c.lifted.size();
  std::vector<size_t> order = range(0, n_carry + n_consts);
  for (size_t i : range(n, n + lifted)) order.push_back(i);
  for (size_t i : range(n_carry + n_consts, n)) order.push_back(i);
  return reordered(*c.graph, order, range(0, c.graph->outputs.size()));
}

// t itself when it is contiguous and nothing else holds its storage, else a copy: a tensor the
// caller may write into.
Tensor owned(const Tensor& t) {
  if (t.is_contiguous() && t.sole_owner()) return t;
  Tensor out = Tensor::empty(t.shape(), t.dtype());
  const Tensor c = t.contiguous();
  std::memcpy(out.raw_mutable_data(), c.raw_data(), size_t(t.numel()) * dtype_size(t.dtype()));
  return out;
}

std::vector<Batched> split_lanes(const std::vector<Tensor>& ys, int64_t size, int64_t lanes) {
  std::vector<Batched> out;
  for (const Tensor& y : ys) {
    Shape s = y.shape();
    s[0] = lanes;
    s.insert(s.begin(), size);
    out.push_back({reshape(y, s), 0});
  }
  return out;
}

void carry_fixpoint(const Graph& body, size_t n_carry, int64_t size, std::vector<bool>& mapped) {
  for (;;) {
    const std::vector<bool> out = detail::mapped_outputs(body, mapped, size);
    bool changed = false;
    for (size_t k = 0; k < n_carry; ++k)
      if (out[k] && !mapped[k]) mapped[k] = changed = true;
    if (!changed) return;
  }
}

}  // namespace lanes::prim
