#include "primitives/dot_general.h"

#include <algorithm>

#include "kernels/matmul.h"
#include "primitives/util.h"
#include "transforms/batching.h"
#include "transforms/masking.h"

namespace lanes::prim {

namespace {

// " (lhs shape (2, 3), rhs shape (3, 4))": every message names both operands. Streamed, so it is
// formatted only when a check fails (the shape rule runs on every traced product).
struct Operands {
  const Shape& lhs;
  const Shape& rhs;
};
std::ostream& operator<<(std::ostream& os, const Operands& o) {
  return os << " (lhs shape " << fmt(o.lhs) << ", rhs shape " << fmt(o.rhs) << ")";
}

bool contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// Dims of one operand: in range, and no dim used twice across its contracting and batch lists.
void check_side(const char* side, const Shape& shape, const std::vector<int64_t>& contracting,
                const std::vector<int64_t>& batch, const Operands& where) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  std::vector<int64_t> seen;
  for (const auto* list : {&contracting, &batch}) {
    const char* kind = list == &contracting ? "_contracting" : "_batch";
    for (int64_t d : *list) {
      check(d >= 0 && d < rank, "dot_general: ", side, kind, " dim ", d,
            " is out of range for rank ", rank, where);
      check(!contains(seen, d), "dot_general: ", side, " dim ", d,
            " is repeated in contracting dims ", fmt(contracting), " / batch dims ", fmt(batch),
            where);
      seen.push_back(d);
    }
  }
}

void check_pairs(const char* kind, const std::vector<int64_t>& l, const std::vector<int64_t>& r,
                 const Shape& ls, const Shape& rs, const Operands& where) {
  for (size_t i = 0; i < l.size(); ++i)
    check(ls[l[i]] == rs[r[i]], "dot_general: ", kind, " dims lhs ", l[i], " (size ", ls[l[i]],
          ") and rhs ", r[i], " (size ", rs[r[i]], ") differ in size", where);
}

// Adds 1 to every dim at or after `at`: the dims of an operand once a batch dim sits at `at`.
std::vector<int64_t> shifted(std::vector<int64_t> dims, int64_t at) {
  for (int64_t& d : dims) d += d >= at ? 1 : 0;
  return dims;
}

// How many free dims (neither contracting nor batch) come before dim `at`.
int64_t free_before(int64_t at, const std::vector<int64_t>& contracting,
                    const std::vector<int64_t>& batch) {
  int64_t n = 0;
  for (int64_t d = 0; d < at; ++d) n += !contains(contracting, d) && !contains(batch, d);
  return n;
}

}  // namespace

std::string DotGeneral::params() const {
  return "lhs_contracting=" + list_str(dims_.lhs_contracting) +
         ", rhs_contracting=" + list_str(dims_.rhs_contracting) +
         ", lhs_batch=" + list_str(dims_.lhs_batch) + ", rhs_batch=" + list_str(dims_.rhs_batch) +
         (finite_.lhs ? ", finite_lhs" : "") + (finite_.rhs ? ", finite_rhs" : "");
}

std::vector<TensorType> DotGeneral::infer(const std::vector<TensorType>& in) const {
  check_arity(in, 2, "dot_general");
  const Shape &ls = in[0].shape, &rs = in[1].shape;
  const Operands where{ls, rs};
  check(in[0].dtype == in[1].dtype, "dot_general: operands must have the same dtype, got ",
        dtype_name(in[0].dtype), " and ", dtype_name(in[1].dtype), where);
  const DotDims& d = dims_;
  check(d.lhs_contracting.size() == d.rhs_contracting.size(), "dot_general: lhs_contracting ",
        fmt(d.lhs_contracting), " and rhs_contracting ", fmt(d.rhs_contracting),
        " must have the same length", where);
  check(d.lhs_batch.size() == d.rhs_batch.size(), "dot_general: lhs_batch ", fmt(d.lhs_batch),
        " and rhs_batch ", fmt(d.rhs_batch), " must have the same length", where);
  check_side("lhs", ls, d.lhs_contracting, d.lhs_batch, where);
  check_side("rhs", rs, d.rhs_contracting, d.rhs_batch, where);
  check_pairs("contracting", d.lhs_contracting, d.rhs_contracting, ls, rs, where);
  check_pairs("batch", d.lhs_batch, d.rhs_batch, ls, rs, where);
  Shape out;
  for (int64_t b : d.lhs_batch) out.push_back(ls[b]);
  for (int64_t i = 0; i < int64_t(ls.size()); ++i)
    if (!contains(d.lhs_contracting, i) && !contains(d.lhs_batch, i)) out.push_back(ls[i]);
  for (int64_t i = 0; i < int64_t(rs.size()); ++i)
    if (!contains(d.rhs_contracting, i) && !contains(d.rhs_batch, i)) out.push_back(rs[i]);
  return single(std::move(out), in[0].dtype);
}

double DotGeneral::flops(const std::vector<TensorType>& in,
                         const std::vector<TensorType>& out) const {
  double k = 1;
  for (int64_t d : dims_.lhs_contracting) k *= double(in[0].shape[size_t(d)]);
  return 2 * k * double(shape_numel(out[0].shape));
}

std::vector<Tensor> DotGeneral::eval(const std::vector<Tensor>& in) const {
  return {kernels::dot_general(in[0], in[1], dims_.lhs_contracting, dims_.rhs_contracting,
                               dims_.lhs_batch, dims_.rhs_batch, nullptr, finite_)};
}

namespace {

// Whether a mapped rhs (batch dim at `dim` of its `ndim`) holds stacked weights: free dims of
// its own, and the batch dim outside a contracting dim.
bool stacked_weights(int64_t dim, int64_t ndim, const DotDims& d) {
  const int64_t free = ndim - 1 - int64_t(d.rhs_contracting.size() + d.rhs_batch.size());
  const std::vector<int64_t> k = shifted(d.rhs_contracting, dim);
  return free > 0 && std::any_of(k.begin(), k.end(), [&](int64_t c) { return c > dim; });
}

}  // namespace

// Both mapped: the two batch dims become a new leading batch pair. One mapped: its batch dim is
// one more free dim of that operand, so `x_b @ W` stays one GEMM with the batch folded into M
// (no broadcast of W).
std::vector<Batched> DotGeneral::batch(const std::vector<Batched>& in, int64_t size) const {
  const Batched &l = in[0], &r = in[1];
  DotDims d = dims_;
  const int64_t nbatch = static_cast<int64_t>(d.lhs_batch.size());
  if (l.mapped() != r.mapped() && nbatch == 0 && d.lhs_contracting.empty()) {
    // An outer product with one side mapped (a weight gradient whose input is shared, as an
    // RNN's initial state). Folding the batch into the mapped side's free dims, as for a GEMM,
    // gains nothing here, and leaves a product the passes cannot reorder: the transpose autodiff
    // puts after it stays a transposed read. As a batched product, the unmapped side a stride-0
    // view, it costs the same, the transpose becomes an operand swap, and a sum of such products
    // merges with the others (src/runtime/dot_sums.cpp).
    const DotDims outer{{}, {}, {0}, {0}};
    return {
        {dot_general(batching::batch_at_front(l, size), batching::batch_at_front(r, size), outer),
         0}};
  }
  if (r.mapped() && !l.mapped() && stacked_weights(r.dim, r.value.ndim(), d)) {
    // Stacked weights beside a shared input (x @ W_b, an ensemble): W_b's batch dim sits outside
    // its K dim and beside other free dims, so folding it into N would need W_b copied into one
    // (K, B * N) matrix, and the product would come out as (M, B, N) for the next layer to read
    // strided. As a batched product over a stride-0 view of x it is B GEMMs into (B, M, N), as a
    // hand-batched ensemble runs (ensemble compile ~0.65 -> ~0.60 ms at 2 threads, level with
    // manual).
    const Batched front{batching::batch_at_front(l, size), 0};
    return batch({front, r}, size);
  }
  if (r.mapped() && !l.mapped() &&
      r.value.ndim() == 1 + nbatch + int64_t(d.rhs_contracting.size())) {
    // A mapped vector beside a shared matrix (W @ v_b, a layer written for one example): as
    // V @ W^T the product comes out batch-major, (B, M), so the next layer, and a cond's or
    // vmap's rows, read it in place. W @ V^T would put B last, and a consumer that wants rows
    // copies it (piecewise50's partitioned branch transposed every result before its rows went
    // back). The swapped GEMM is as fast (oneDNN NT 418 against NN 438 us at 512 x 256 x 256,
    // one thread).
    const DotDims swapped{shifted(d.rhs_contracting, r.dim), d.lhs_contracting,
                          shifted(d.rhs_batch, r.dim), d.lhs_batch};
    return {{dot_general(r.value, l.value, swapped), nbatch}};
  }
  if (l.mapped()) {
    d.lhs_contracting = shifted(d.lhs_contracting, l.dim);
    d.lhs_batch = shifted(d.lhs_batch, l.dim);
  }
  if (r.mapped()) {
    d.rhs_contracting = shifted(d.rhs_contracting, r.dim);
    d.rhs_batch = shifted(d.rhs_batch, r.dim);
  }
  if (l.mapped() && r.mapped()) {
    d.lhs_batch.insert(d.lhs_batch.begin(), l.dim);
    d.rhs_batch.insert(d.rhs_batch.begin(), r.dim);
    return {{dot_general(l.value, r.value, d), 0}};
  }
  if (l.mapped())
    return {{dot_general(l.value, r.value, d),
             nbatch + free_before(l.dim, d.lhs_contracting, d.lhs_batch)}};
  const int64_t lhs_free = l.value.ndim() - nbatch - int64_t(d.lhs_contracting.size());
  return {{dot_general(l.value, r.value, d),
           nbatch + lhs_free + free_before(r.dim, d.rhs_contracting, d.rhs_batch)}};
}

// ---- derivatives
// ---------------------------------------------------------------------------------

namespace {

// Dims of a rank-n operand that are neither batch nor contracting, in order.
std::vector<int64_t> free_dims(int64_t n, const std::vector<int64_t>& batch,
                               const std::vector<int64_t>& contracting) {
  std::vector<int64_t> out;
  for (int64_t d = 0; d < n; ++d)
    if (std::find(batch.begin(), batch.end(), d) == batch.end() &&
        std::find(contracting.begin(), contracting.end(), d) == contracting.end())
      out.push_back(d);
  return out;
}

// The cotangent of one operand `x` (jax's _dot_general_transpose_lhs): contract the output
// cotangent with the other operand `y` over y's free dims, keep the batch dims, then permute the
// result (batch, x free, x contracting in y's order) into x's dim order.
Tensor transpose_operand(const Tensor& ct, const Tensor& y, int64_t x_rank,
                         const std::vector<int64_t>& x_batch, const std::vector<int64_t>& x_contr,
                         const std::vector<int64_t>& y_batch, const std::vector<int64_t>& y_contr,
                         bool x_is_lhs) {
  const int64_t nb = static_cast<int64_t>(x_batch.size());
  const std::vector<int64_t> x_free = free_dims(x_rank, x_batch, x_contr);
  const std::vector<int64_t> y_free = free_dims(y.ndim(), y_batch, y_contr);
  const int64_t nxf = static_cast<int64_t>(x_free.size());
  // Positions of y's free dims in the output: after the batch dims and lhs free dims.
  DotDims dims;
  for (int64_t i = 0; i < int64_t(y_free.size()); ++i)
    dims.lhs_contracting.push_back(x_is_lhs ? nb + nxf + i : nb + i);
  dims.rhs_contracting = y_free;
  for (int64_t i = 0; i < nb; ++i) dims.lhs_batch.push_back(i);
  dims.rhs_batch = y_batch;
  const Tensor r = dot_general(ct, y, dims);  // (batch, ct's free = x free, y's contracting)
  // r's axes hold x dims: batch, then x free, then x contracting ordered by y's contracting dim.
  std::vector<int64_t> holds(x_batch);
  holds.insert(holds.end(), x_free.begin(), x_free.end());
  std::vector<size_t> order(y_contr.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return y_contr[a] < y_contr[b]; });
  for (size_t i : order) holds.push_back(x_contr[i]);
  std::vector<int64_t> perm(x_rank);
  for (int64_t axis = 0; axis < x_rank; ++axis) perm[holds[axis]] = axis;
  return transpose(r, perm);
}

}  // namespace

std::vector<Tensor> DotGeneral::jvp(const std::vector<Tensor>& x, const std::vector<Tensor>& t,
                                    const std::vector<Tensor>&) const {
  Tensor out;
  if (t[0].defined()) out = dot_general(t[0], x[1], dims_);
  if (t[1].defined()) {
    const Tensor d = dot_general(x[0], t[1], dims_);
    out = out.defined() ? out + d : d;
  }
  return {out};
}

std::vector<Tensor> DotGeneral::vjp_wanted(const std::vector<Tensor>& x,
                                           const std::vector<Tensor>& ct,
                                           const std::vector<Tensor>&,
                                           const std::vector<bool>& wanted) const {
  if (!is_floating(x[0].dtype())) return {Tensor(), Tensor()};
  const DotDims& d = dims_;
  std::vector<Tensor> out(2);
  if (wanted[0])
    out[0] = transpose_operand(ct[0], x[1], x[0].ndim(), d.lhs_batch, d.lhs_contracting,
                               d.rhs_batch, d.rhs_contracting, true);
  if (wanted[1])
    out[1] = transpose_operand(ct[0], x[0], x[1].ndim(), d.rhs_batch, d.rhs_contracting,
                               d.lhs_batch, d.lhs_contracting, false);
  return out;
}

// Masking (Pad): a product contracting over a padded axis zeroes that axis's padding in both
// operands (in both, so that inf or NaN in either padding cannot reach the sum).
std::vector<Tensor> DotGeneral::mask(const std::vector<Tensor>& in,
                                     const detail::MaskContext& ctx) const {
  Tensor lhs = in[0], rhs = in[1];
  for (size_t i = 0; i < dims_.lhs_contracting.size(); ++i) {
    const int64_t l = dims_.lhs_contracting[i], r = dims_.rhs_contracting[i];
    const detail::AxisTag tag =
        ctx.in(0)[size_t(l)].ragged() ? ctx.in(0)[size_t(l)] : ctx.in(1)[size_t(r)];
    if (!tag.ragged()) continue;
    detail::Tags lt(size_t(lhs.ndim())), rt(size_t(rhs.ndim()));
    lt[size_t(l)] = rt[size_t(r)] = tag;
    lhs = ctx.fill_padding(lhs, lt, {l}, 0.0);
    rhs = ctx.fill_padding(rhs, rt, {r}, 0.0);
  }
  return ctx.rebind({lhs, rhs});
}

}  // namespace lanes::prim
