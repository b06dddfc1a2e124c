// The non-template half of lanes/control_flow.h: checks the traced branches and bodies agree,
// closes them and binds the cond, while and scan nodes; dynamic indexing.
#include "lanes/control_flow.h"

#include "primitives/control_flow.h"

namespace lanes {

namespace detail {

namespace {

// What a branch is called in messages.
std::string branch_name(const char* op, size_t k) {
  if (std::string(op) == "cond") return k == 1 ? "the true branch" : "the false branch";
  return "branch " + std::to_string(k);
}

// Checks that `got` (what a body returns) matches `want` (what it takes), leaf by leaf.
void check_carry(const std::vector<TensorType>& got, const std::vector<TensorType>& want,
                 const char* op, const char* what) {
  check(got.size() == want.size(), op, ": ", what, " returns ", got.size(),
        " carry leaves but the carry has ", want.size());
  for (size_t i = 0; i < got.size(); ++i)
    check(got[i] == want[i], op, ": ", what, " returns carry leaf ", i, " as ", fmt(got[i]),
          " but the carry in is ", fmt(want[i]),
          " (a loop's carry keeps its shape and dtype; cast or reshape it in the body)");
}

}  // namespace

void check_defined(const std::vector<Tensor>& leaves, const char* op, const char* what) {
  for (size_t i = 0; i < leaves.size(); ++i) {
    const std::string leaf = leaves.size() == 1 ? "" : " leaf " + std::to_string(i);
    check(leaves[i].defined(), op, ": ", what, leaf, " is an undefined tensor");
  }
}

void check_predicate(const TensorType& pred, const char* what) {
  check(pred.shape.empty() && pred.dtype == DType::Bool, what,
        ": the predicate must be a 0-d bool tensor, got ", fmt(pred),
        " (under vmap, write the predicate for one example)");
}

std::vector<Tensor> bind_cond(const Tensor& index, std::vector<Graph> branches,
                              std::vector<Tensor> operands, const char* op) {
  std::vector<Closed> closed;
  for (Graph& g : branches) closed.push_back(close_graph(std::move(g)));
  const std::vector<TensorType> first = output_types(*closed[0].graph);
  for (size_t k = 1; k < closed.size(); ++k) {
    const std::vector<TensorType> out = output_types(*closed[k].graph);
    check(out.size() == first.size(), op, ": ", branch_name(op, k), " returns ", out.size(),
          " leaves but ", branch_name(op, 0), " returns ", first.size());
    for (size_t i = 0; i < out.size(); ++i)
      check(out[i] == first[i], op, ": ", branch_name(op, k), " returns output leaf ", i, " as ",
            fmt(out[i]), " but ", branch_name(op, 0), " returns ", fmt(first[i]),
            " (branches must agree in structure, shape and dtype)");
  }
  prim::Widened w = prim::widen_all(std::move(closed), std::move(operands));
  w.operands.insert(w.operands.begin(), index);
  return lanes::bind(std::make_shared<const prim::Cond>(w.graphs), w.operands);
}

std::vector<Tensor> bind_while(Graph cond, Graph body, std::vector<Tensor> init) {
  check(cond.outputs.size() == 1, "while_loop: cond_fn must return one 0-d bool tensor, got ",
        cond.outputs.size(), " tensors");
  check_predicate(cond.types[cond.outputs[0]], "while_loop's cond_fn");
  std::vector<TensorType> carry;
  for (const Tensor& t : init) carry.push_back({t.shape(), t.dtype()});
  check_carry(output_types(body), carry, "while_loop", "the body");
  const size_t n = init.size();
  std::vector<Closed> closed{close_graph(std::move(cond)), close_graph(std::move(body))};
  prim::Widened w = prim::widen_all(std::move(closed), std::move(init));
  return lanes::bind(std::make_shared<const prim::While>(w.graphs[0], w.graphs[1], n), w.operands);
}

int64_t scan_length(const std::vector<Tensor>& xs, const ScanOptions& options) {
  std::optional<int64_t> n = options.length;
  for (size_t i = 0; i < xs.size(); ++i) {
    check(xs[i].ndim() >= 1, "scan: xs leaf ", i, " is 0-d; every xs leaf needs a leading axis");
    if (!n) n = xs[i].shape(0);
    check(xs[i].shape(0) == *n, "scan: xs leaf ", i, " of shape ", fmt(xs[i].shape()),
          " has leading length ", xs[i].shape(0), " but ",
          options.length ? "options.length is " : "xs leaf 0 has ", *n);
  }
  check(n.has_value(), "scan: xs has no leaves, so give the number of steps in options.length");
  check(*n >= 0, "scan: length must be >= 0, got ", *n);
  return *n;
}

std::vector<TensorType> slice_types(const std::vector<Tensor>& xs) {
  std::vector<TensorType> out;
  for (const Tensor& x : xs)
    out.push_back({Shape(x.shape().begin() + 1, x.shape().end()), x.dtype()});
  return out;
}

std::vector<Tensor> bind_scan(Graph body, std::vector<Tensor> init, std::vector<Tensor> xs,
                              int64_t length, bool reverse, bool parallel) {
  std::vector<TensorType> carry;
  for (const Tensor& t : init) carry.push_back({t.shape(), t.dtype()});
  const size_t nc = init.size(), nx = xs.size();
  std::vector<TensorType> out = output_types(body);
  check(out.size() >= nc, "scan: f returns fewer leaves than the carry has");
  check_carry(std::vector<TensorType>(out.begin(), out.begin() + int64_t(nc)), carry, "scan", "f");
  Closed c = close_graph(std::move(body));
  // Closed inputs (carry, x, lifted) -> the scan's (carry, consts = lifted, xs).
  Graph g = *c.graph;
  std::vector<ValueId> inputs(g.inputs.begin(), g.inputs.begin() + int64_t(nc));
  inputs.insert(inputs.end(), g.inputs.begin() + int64_t(nc + nx), g.inputs.end());
  inputs.insert(inputs.end(), g.inputs.begin() + int64_t(nc), g.inputs.begin() + int64_t(nc + nx));
  g.inputs = std::move(inputs);
  std::vector<Tensor> args = std::move(init);
  args.insert(args.end(), c.lifted.begin(), c.lifted.end());
  args.insert(args.end(), xs.begin(), xs.end());
  const auto node =
      std::make_shared<const prim::Scan>(std::make_shared<const Graph>(std::move(g)), nc,
                                         c.lifted.size(), length, reverse, parallel && nc == 0);
  return lanes::bind(node, args);
}

}  // namespace detail

// ---- dynamic indexing, composed from gather and where (batchable and differentiable as they
// are; a batched start becomes a gather with per-lane indices) -----------------------------------

namespace {

void check_starts(const Tensor& x, const std::vector<Tensor>& starts, const char* op) {
  check(x.defined(), op, ": x is an undefined tensor");
  for (size_t d = 0; d < starts.size(); ++d)
    check(starts[d].defined(), op, ": start ", d, " is an undefined tensor");
  check(int64_t(starts.size()) == x.ndim(), op, ": ", starts.size(), " starts for x of shape ",
        fmt(x.shape()), " (one per dim)");
  for (size_t d = 0; d < starts.size(); ++d)
    check(starts[d].ndim() == 0 && is_integral(starts[d].dtype()), op, ": start ", d,
          " must be a 0-d integer tensor, got shape ", fmt(starts[d].shape()), " ",
          dtype_name(starts[d].dtype()));
}

// start clamped to [0, n - size], as int32.
Tensor clamped(const Tensor& start, int64_t n, int64_t size) {
  const Tensor s = cast(start, DType::Int32);
  return maximum(minimum(s, scalar(double(n - size), DType::Int32)), scalar(0, DType::Int32));
}

}  // namespace

Tensor dynamic_slice(const Tensor& x, const std::vector<Tensor>& starts, const Shape& sizes) {
  check_starts(x, starts, "dynamic_slice");
  check(int64_t(sizes.size()) == x.ndim(), "dynamic_slice: ", sizes.size(),
        " sizes for x of shape ", fmt(x.shape()));
  Tensor out = x;
  for (int64_t d = 0; d < x.ndim(); ++d) {
    const int64_t n = x.shape(d);
    check(sizes[d] >= 0 && sizes[d] <= n, "dynamic_slice: size ", sizes[d], " of dim ", d,
          " does not fit x of shape ", fmt(x.shape()));
    if (sizes[d] == n) continue;  // the whole dim: the start clamps to 0
    const Tensor idx = clamped(starts[d], n, sizes[d]) + iota({sizes[d]}, 0, DType::Int32);
    out = take(out, idx, d);
  }
  return out;
}

Tensor dynamic_update_slice(const Tensor& x, const Tensor& update,
                            const std::vector<Tensor>& starts) {
  check_starts(x, starts, "dynamic_update_slice");
  check(update.ndim() == x.ndim(), "dynamic_update_slice: update of shape ", fmt(update.shape()),
        " for x of shape ", fmt(x.shape()), " (same rank needed)");
  Tensor placed = cast(update, x.dtype()), mask;
  for (int64_t d = 0; d < x.ndim(); ++d) {
    const int64_t n = x.shape(d), size = update.shape(d);
    check(size <= n, "dynamic_update_slice: update of shape ", fmt(update.shape()),
          " does not fit x of shape ", fmt(x.shape()), " in dim ", d);
    // Position p of x reads update[p - start] where that is in range.
    const Tensor pos = iota({n}, 0, DType::Int32) - clamped(starts[d], n, size);
    const Tensor inside =
        logical_and(pos >= scalar(0, DType::Int32), pos < scalar(double(size), DType::Int32));
    if (size > 0) {
      placed = take(
          placed,
          maximum(minimum(pos, scalar(double(size - 1), DType::Int32)), scalar(0, DType::Int32)),
          d);
    }
    Shape s(x.ndim(), 1);
    s[d] = n;
    const Tensor m = reshape(inside, s);
    mask = mask.defined() ? logical_and(mask, m) : m;
  }
  if (!mask.defined() || update.numel() == 0) return x;
  return where(mask, placed, x);
}

Tensor Tensor::operator[](int64_t i) const {
  check(defined(), "x[", i, "]: x is an undefined tensor");
  check(ndim() >= 1, "x[", i, "]: x is 0-d");
  const int64_t n = shape(0);
  check(i >= -n && i < n, "x[", i, "]: index out of range for axis 0 of size ", n, " (shape ",
        fmt(shape()), ")");
  if (i < 0) i += n;
  return reshape(slice_axis(*this, 0, i, i + 1), Shape(shape().begin() + 1, shape().end()));
}

Tensor Tensor::operator[](const Tensor& i) const {
  check(defined(), "x[i]: x is an undefined tensor");
  check(i.defined(), "x[i]: the index i is an undefined tensor");
  check(ndim() >= 1, "x[i]: x is 0-d");
  check(i.ndim() == 0 && is_integral(i.dtype()),
        "x[i]: the index must be a 0-d integer tensor, got shape ", fmt(i.shape()), " ",
        dtype_name(i.dtype()));
  const Tensor j = cast(i, DType::Int32);
  const Tensor wrapped =
      where(j < scalar(0, DType::Int32), j + scalar(double(shape(0)), DType::Int32), j);
  std::vector<Tensor> starts{wrapped};
  for (int64_t d = 1; d < ndim(); ++d) starts.push_back(scalar(0, DType::Int32));
  Shape sizes = shape();
  sizes[0] = 1;
  return reshape(dynamic_slice(*this, starts, sizes), Shape(shape().begin() + 1, shape().end()));
}

}  // namespace lanes
