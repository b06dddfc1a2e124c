// The scatter modes beside add (set, multiply, min, max): shape rule, eval, batching and
// derivative rules. Derivatives are taken with respect to x and the updates, never the indices.
#include "lanes/array_ops.h"
#include "primitives/indexing.h"
#include "primitives/util.h"
#include "transforms/batching.h"

namespace lanes::prim {

namespace {

using Kind = kernels::ScatterKind;

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::Add:
      return "scatter_add";
    case Kind::Set:
      return "scatter_set";
    case Kind::Multiply:
      return "scatter_multiply";
    case Kind::Min:
      return "scatter_min";
    case Kind::Max:
      return "scatter_max";
  }
  return "scatter";
}

Tensor zero_view(const Tensor& x) { return broadcast_to(zeros({}, x.dtype()), x.shape()); }

}  // namespace

std::string Scatter::name() const { return kind_name(kind_); }

std::string Scatter::params() const {
  return "axis=" + std::to_string(axis_) + ", batch_dims=" + std::to_string(batch_dims_);
}

std::vector<TensorType> Scatter::infer(const std::vector<TensorType>& in) const {
  check_arity(in, 3, name().c_str());
  // The same rule as scatter_add's (which names itself): check it under this op's name.
  const std::string op = name();
  check(is_integral(in[1].dtype), op, ": indices must be integers, got ", dtype_name(in[1].dtype),
        " indices of shape ", fmt(in[1].shape));
  const Shape want = Gather::output_shape(in[0].shape, in[1].shape, axis_, batch_dims_, op.c_str());
  check(in[2].dtype == in[0].dtype && in[2].shape == want, op, ": updates of shape ",
        fmt(in[2].shape), " and dtype ", dtype_name(in[2].dtype),
        " do not match the gathered shape ", fmt(want), " and dtype ", dtype_name(in[0].dtype),
        " of x of shape ", fmt(in[0].shape));
  return single(in[0].shape, in[0].dtype);
}

std::vector<Tensor> Scatter::eval(const std::vector<Tensor>& in) const {
  const Tensor &x = in[0], &indices = in[1];
  const std::string op = name();
  const std::vector<int64_t> index =
      kernels::checked_indices(indices, x.shape()[axis_], op.c_str(), axis_, x.shape());
  return {kernels::scatter(x, index, indices.shape(), in[2], axis_, batch_dims_, kind_)};
}

// As ScatterAdd's: every operand batch-first, the batch one more leading batch dim.
std::vector<Batched> Scatter::batch(const std::vector<Batched>& in, int64_t size) const {
  std::vector<Tensor> xs;
  for (const Batched& x : in) xs.push_back(batching::batch_at_front(x, size));
  return {{bind1(std::make_shared<const Scatter>(kind_, axis_ + 1, batch_dims_ + 1), xs), 0}};
}

namespace {

// What the derivative rules need of one scatter node.
struct Parts {
  const Scatter& s;
  const Tensor &x, &idx, &u;
  Tensor scatter(Kind k, const Tensor& base, const Tensor& updates) const {
    return bind1(std::make_shared<const Scatter>(k, s.axis(), s.batch_dims()),
                 {base, idx, updates});
  }
  Tensor add(const Tensor& base, const Tensor& updates) const {
    return scatter_add(base, idx, updates, s.axis(), s.batch_dims());
  }
  Tensor gather(const Tensor& y) const { return lanes::gather(y, idx, s.axis(), s.batch_dims()); }

  // Set: which updates survive (the last of repeated indices), as a 0/1 mask shaped like u. Each
  // update scatters its own position; the survivor reads its own position back.
  Tensor survivors() const {
    const Tensor ids = reshape(arange(u.numel(), DType::Int64), u.shape());
    const Tensor none = broadcast_to(full({}, -1.0, DType::Int64), x.shape());
    return cast(equal(gather(scatter(Kind::Set, none, ids)), ids), u.dtype());
  }
  // Multiply: the product of the updates landing on each element of x, and for each update the
  // product of the others landing with it. That one is counted around zeros rather than divided
  // out: with z zero updates on an element and P the product of its nonzero ones, a nonzero
  // update's others multiply to P / u when z = 0 (else 0), a zero update's to P when z = 1.
  Tensor product() const {
    return scatter(Kind::Multiply, broadcast_to(ones({}, x.dtype()), x.shape()), u);
  }
  Tensor others() const {
    const Tensor is_zero = u == 0.0, safe = where(is_zero, 1.0, u);
    const Tensor zeros_there = gather(add(zero_view(x), cast(is_zero, u.dtype())));
    const Tensor p =
        gather(scatter(Kind::Multiply, broadcast_to(ones({}, x.dtype()), x.shape()), safe));
    return where(is_zero, where(zeros_there == 1.0, p, 0.0),
                 where(zeros_there == 0.0, p / safe, 0.0));
  }
  // Min / max: the elements equal to the result share its derivative evenly (as reduce max).
  Tensor x_mask(const Tensor& out) const { return cast(equal(x, out), x.dtype()); }
  Tensor u_mask(const Tensor& out) const { return cast(equal(u, gather(out)), u.dtype()); }
};

Tensor or_zeros(const Tensor& t, const Tensor& like) { return t.defined() ? t : zero_view(like); }

}  // namespace

std::vector<Tensor> Scatter::jvp(const std::vector<Tensor>& in, const std::vector<Tensor>& t,
                                 const std::vector<Tensor>& out) const {
  if (!t[0].defined() && !t[2].defined()) return {Tensor()};
  const Parts p{*this, in[0], in[1], in[2]};
  const Tensor tx = or_zeros(t[0], in[0]), tu = or_zeros(t[2], in[2]);
  switch (kind_) {
    case Kind::Add:
      return {p.add(tx, tu)};
    case Kind::Set:
      return {p.scatter(Kind::Set, tx, tu)};
    case Kind::Multiply: {
      return {tx * p.product() + in[0] * p.add(zero_view(in[0]), tu * p.others())};
    }
    case Kind::Min:
    case Kind::Max: {
      const Tensor mx = p.x_mask(out[0]), mu = p.u_mask(out[0]);
      const Tensor count = p.add(mx, mu);
      return {p.add(tx * mx, tu * mu) / count};
    }
  }
  return {Tensor()};
}

std::vector<Tensor> Scatter::vjp(const std::vector<Tensor>& in, const std::vector<Tensor>& ct,
                                 const std::vector<Tensor>& out) const {
  if (!ct[0].defined()) return {Tensor(), Tensor(), Tensor()};
  const Parts p{*this, in[0], in[1], in[2]};
  const Tensor& c = ct[0];
  switch (kind_) {
    case Kind::Add:
      return {c, Tensor(), p.gather(c)};
    case Kind::Set:
      return {p.scatter(Kind::Set, c, zero_view(in[2])), Tensor(), p.gather(c) * p.survivors()};
    case Kind::Multiply: {
      return {c * p.product(), Tensor(), p.gather(c * in[0]) * p.others()};
    }
    case Kind::Min:
    case Kind::Max: {
      const Tensor mx = p.x_mask(out[0]), mu = p.u_mask(out[0]);
      const Tensor share = c / p.add(mx, mu);
      return {share * mx, Tensor(), p.gather(share) * mu};
    }
  }
  return {Tensor(), Tensor(), Tensor()};
}

}  // namespace lanes::prim
