#include "distributed/mpi_collectives.h"

#include <climits>
#include <numeric>

#include "lanes/ops.h"

namespace lanes::distributed {

namespace {

MPI_Datatype mpi_type(DType d) {
  switch (d) {
    case DType::Float32:
      return MPI_FLOAT;
    case DType::Float64:
      return MPI_DOUBLE;
    case DType::Int32:
      return MPI_INT32_T;
    case DType::Int64:
      return MPI_INT64_T;
    case DType::Bool:
      return MPI_C_BOOL;
    default:
      fail("mpi_allreduce: unsupported dtype ", dtype_name(d));
  }
}

MPI_Op mpi_op(kernels::ReduceOp op, DType d) {
  const bool logical = d == DType::Bool;
  switch (op) {
    case kernels::ReduceOp::Sum:
      return MPI_SUM;
    case kernels::ReduceOp::Max:
      return logical ? MPI_LOR : MPI_MAX;
    case kernels::ReduceOp::Min:
      return logical ? MPI_LAND : MPI_MIN;
    default:
      fail("mpi_allreduce: unsupported reduction ", kernels::reduce_name(op));
  }
}

// MPI counts are ints: large buffers go in pieces of at most 2^30 elements.
void allreduce_into(const void* send, void* recv, int64_t n, DType dtype, MPI_Op op, MPI_Comm c) {
  const int64_t piece = int64_t(1) << 30;
  const size_t width = dtype_size(dtype);
  for (int64_t at = 0; at < n || (n == 0 && at == 0); at += piece) {
    const int count = int(std::min(piece, n - at));
    const void* s =
        send == MPI_IN_PLACE ? MPI_IN_PLACE : static_cast<const char*>(send) + at * width;
    check_mpi(
        MPI_Allreduce(s, static_cast<char*>(recv) + at * width, count, mpi_type(dtype), op, c),
        "MPI_Allreduce");
    if (n == 0) break;
  }
}

[[noreturn]] void no_derivative(const Primitive& p) {
  fail(describe(p), ": differentiating through a vmap sharded across ranks is not supported; ",
       "differentiate inside it (vmap(grad(f)) with pmean over its axis) instead");
}

}  // namespace

// ---- allreduce ------------------------------------------------------------------------------

std::string AllReduce::params() const {
  return detail::concat("op=", kernels::reduce_name(op_), ", ranks=", comm_->size(), ", comm=#",
                        comm_->id());
}

std::vector<TensorType> AllReduce::infer(const std::vector<TensorType>& in) const {
  check(in.size() == 1, "mpi_allreduce: expected 1 input, got ", in.size());
  return {in[0]};
}

std::vector<Tensor> AllReduce::eval(const std::vector<Tensor>& in) const {
  return eval_consuming(std::vector<Tensor>(in));
}

// In place on the operand when this holds its only handle (the executor hands over values at
// their last use), else straight from the operand into a new buffer: never an extra copy.
std::vector<Tensor> AllReduce::eval_consuming(std::vector<Tensor>&& in) const {
  agree(*comm_, nullptr);
  Tensor x = std::move(in[0]);
  const MPI_Op op = mpi_op(op_, x.dtype());
  if (x.sole_owner() && x.is_contiguous()) {
    allreduce_into(MPI_IN_PLACE, x.raw_mutable_data(), x.numel(), x.dtype(), op, comm_->comm());
    return {x};
  }
  if (!x.is_contiguous()) {
    Tensor c = x.contiguous();
    allreduce_into(MPI_IN_PLACE, c.raw_mutable_data(), c.numel(), c.dtype(), op, comm_->comm());
    return {c};
  }
  Tensor out = Tensor::empty(x.shape(), x.dtype());
  allreduce_into(x.raw_data(), out.raw_mutable_data(), x.numel(), x.dtype(), op, comm_->comm());
  return {out};
}

// Elementwise over the ranks: a batch of values is reduced the same way, batch dim in place.
std::vector<Batched> AllReduce::batch(const std::vector<Batched>& in, int64_t) const {
  return {{bind1(shared_from_this(), {in[0].value}), in[0].dim}};
}

// ---- allgather ------------------------------------------------------------------------------

std::string AllGather::params() const {
  std::string counts;
  for (int64_t n : counts_) counts += (counts.empty() ? "" : ",") + std::to_string(n);
  return detail::concat("axis=", axis_, ", counts=(", counts, "), comm=#", comm_->id());
}

std::vector<TensorType> AllGather::infer(const std::vector<TensorType>& in) const {
  check(in.size() == 1, "mpi_allgather: expected 1 input, got ", in.size());
  const Shape& s = in[0].shape;
  check(axis_ >= 0 && axis_ < int64_t(s.size()), "mpi_allgather: axis ", axis_,
        " out of range for shape ", fmt(s));
  check(s[axis_] == counts_[size_t(comm_->rank())], "mpi_allgather: rank ", comm_->rank(),
        " holds ", s[axis_], " entries along axis ", axis_, " but its count is ",
        counts_[size_t(comm_->rank())]);
  Shape out = s;
  out[axis_] = std::accumulate(counts_.begin(), counts_.end(), int64_t(0));
  return {{out, in[0].dtype}};
}

// Gathered along the leading axis, where each rank's block is contiguous: the operand goes
// straight from its buffer (a copy only when it is not contiguous with the axis in front), and
// the result is a view with the axis moved back.
std::vector<Tensor> AllGather::eval(const std::vector<Tensor>& in) const {
  agree(*comm_, nullptr);
  Tensor x = axis_ == 0 ? in[0] : moveaxis(in[0], axis_, 0);
  if (!x.is_contiguous()) x = x.contiguous();
  Shape out_shape = x.shape();
  out_shape[0] = std::accumulate(counts_.begin(), counts_.end(), int64_t(0));
  Tensor out = Tensor::empty(out_shape, x.dtype());
  const int64_t row = x.shape()[0] > 0 ? x.numel() / x.shape()[0]
                                       : shape_numel(Shape(out_shape.begin() + 1, out_shape.end()));
  const int64_t row_bytes = row * int64_t(dtype_size(x.dtype()));
  if (row_bytes > 0 && out_shape[0] > 0) {
    check(row_bytes <= INT_MAX, "mpi_allgather: a row of ", row_bytes, " bytes is too large");
    MPI_Datatype row_type;
    check_mpi(MPI_Type_contiguous(int(row_bytes), MPI_BYTE, &row_type), "MPI_Type_contiguous");
    MPI_Type_commit(&row_type);
    std::vector<int> counts, displs;
    int64_t at = 0;
    for (int64_t n : counts_) {
      check(at + n <= INT_MAX, "mpi_allgather: too many rows (", at + n, ")");
      counts.push_back(int(n));
      displs.push_back(int(at));
      at += n;
    }
    const int rc = MPI_Allgatherv(x.raw_data(), counts[size_t(comm_->rank())], row_type,
                                  out.raw_mutable_data(), counts.data(), displs.data(), row_type,
                                  comm_->comm());
    MPI_Type_free(&row_type);
    check_mpi(rc, "MPI_Allgatherv");
  }
  return {axis_ == 0 ? out : moveaxis(out, 0, axis_)};
}

std::vector<Batched> AllGather::batch(const std::vector<Batched>& in, int64_t) const {
  const int64_t d = in[0].dim;
  const int64_t axis = axis_ < d ? axis_ : axis_ + 1;
  return {{bind1(std::make_shared<const AllGather>(axis, counts_, comm_), {in[0].value}), d}};
}

std::vector<Tensor> AllReduce::jvp(const std::vector<Tensor>&, const std::vector<Tensor>&,
                                   const std::vector<Tensor>&) const {
  no_derivative(*this);
}
std::vector<Tensor> AllReduce::vjp(const std::vector<Tensor>&, const std::vector<Tensor>&,
                                   const std::vector<Tensor>&) const {
  no_derivative(*this);
}
std::vector<Tensor> AllGather::jvp(const std::vector<Tensor>&, const std::vector<Tensor>&,
                                   const std::vector<Tensor>&) const {
  no_derivative(*this);
}
std::vector<Tensor> AllGather::vjp(const std::vector<Tensor>&, const std::vector<Tensor>&,
                                   const std::vector<Tensor>&) const {
  no_derivative(*this);
}

// ---- the shard context ----------------------------------------------------------------------

Tensor MpiShard::allreduce(const Tensor& x, kernels::ReduceOp op) const {
  return bind1(std::make_shared<const AllReduce>(op, comm_), {x});
}

Tensor MpiShard::allgather(const Tensor& x, int64_t axis) const {
  return bind1(std::make_shared<const AllGather>(axis, counts, comm_), {x});
}

}  // namespace lanes::distributed
