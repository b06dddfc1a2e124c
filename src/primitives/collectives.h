// Collective primitives over a named mapped axis (lax.psum, pmax, pmin, all_gather,
// axis_index): see lanes/collectives.h for the semantics. They have no eval of their own: the
// batching rule of the vmap that owns the axis turns them into reductions over its lanes (and,
// when that vmap is sharded, MPI collectives across ranks), and other vmaps pass them through.
#pragma once

#include <string>

#include "kernels/reduce.h"
#include "lanes/primitive.h"

namespace lanes::detail {
/// Records that a collective primitive exists (graphs may hold one from now on).
void note_collective_made();
}  // namespace lanes::detail

namespace lanes::prim {

class Collective : public Primitive {
 public:
  enum class Kind { Sum, Mean, Max, Min, AllGather, AxisIndex };
  /// `size` is the axis size (over all ranks); all_gather's output has it at `gather_axis`.
  Collective(Kind kind, std::string axis, int64_t size, int64_t gather_axis = 0)
      : kind_(kind), axis_(std::move(axis)), size_(size), gather_axis_(gather_axis) {
    detail::note_collective_made();
  }
  std::string name() const override;
  std::string params() const override;
  const std::string* axis_name() const override { return &axis_; }
  std::vector<TensorType> infer(const std::vector<TensorType>& in) const override;
  std::vector<Tensor> eval(const std::vector<Tensor>& in) const override;
  std::vector<Batched> batch(const std::vector<Batched>& in, int64_t size) const override;
  std::vector<Tensor> jvp(const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
                          const std::vector<Tensor>& outputs) const override;
  std::vector<Tensor> vjp(const std::vector<Tensor>& primals, const std::vector<Tensor>& cts,
                          const std::vector<Tensor>& outputs) const override;
  Kind kind() const { return kind_; }
  const std::string& axis() const { return axis_; }

 private:
  std::vector<Batched> combine(const Batched& x, int64_t size) const;
  std::vector<Batched> pass_through(const std::vector<Batched>& in) const;
  Kind kind_;
  std::string axis_;
  int64_t size_;
  int64_t gather_axis_;
};

}  // namespace lanes::prim

namespace lanes::detail {

/// How the collectives of a vmap sharded across ranks reach the other ranks (src/distributed/).
/// The vmap runs this rank's lanes, [offset, offset + local size) of `global`.
class ShardContext {
 public:
  virtual ~ShardContext() = default;
  /// The elementwise sum / max / min of x over the ranks (an op: recorded when x is traced).
  virtual Tensor allreduce(const Tensor& x, kernels::ReduceOp op) const = 0;
  /// Every rank's x concatenated along `axis`, which holds the rank's lanes (an op).
  virtual Tensor allgather(const Tensor& x, int64_t axis) const = 0;
  std::string axis;
  int64_t offset = 0;
  int64_t global = 0;
  std::vector<int64_t> counts;  // lanes per rank
};

/// The context of the innermost running sharded vmap, or nullptr.
const ShardContext* current_shard();
/// Makes `c` the current shard context while it lives.
class ShardScope {
 public:
  explicit ShardScope(const ShardContext* c);
  ~ShardScope();
  ShardScope(const ShardScope&) = delete;
  ShardScope& operator=(const ShardScope&) = delete;
};

}  // namespace lanes::detail
