// The primitives that carry a sharded vmap's collectives across ranks: an elementwise
// MPI_Allreduce and an MPI_Allgatherv along one axis. The batching rules of the named-axis
// collectives (src/primitives/collectives.cpp) bind them through MpiShard, the ShardContext of a
// sharded vmap; like any primitive they are recorded under a trace (compile) and run there.
#pragma once

#include <memory>

#include "distributed/mpi_comm.h"
#include "primitives/collectives.h"

namespace lanes::distributed {

/// Each element combined (sum, max, min) over the ranks of the communicator.
class AllReduce : public Primitive {
 public:
  AllReduce(kernels::ReduceOp op, std::shared_ptr<const MpiCommunicator> comm)
      : op_(op), comm_(std::move(comm)) {}
  std::string name() const override { return "mpi_allreduce"; }
  bool has_effects() const override { return true; }
  std::string params() const override;
  std::vector<TensorType> infer(const std::vector<TensorType>& in) const override;
  std::vector<Tensor> eval(const std::vector<Tensor>& in) const override;
  std::vector<Tensor> eval_consuming(std::vector<Tensor>&& in) const override;
  std::vector<Batched> batch(const std::vector<Batched>& in, int64_t size) const override;
  // grad through a sharded vmap: a clear error (differentiate inside it instead).
  std::vector<Tensor> jvp(const std::vector<Tensor>&, const std::vector<Tensor>&,
                          const std::vector<Tensor>&) const override;
  std::vector<Tensor> vjp(const std::vector<Tensor>&, const std::vector<Tensor>&,
                          const std::vector<Tensor>&) const override;

 private:
  kernels::ReduceOp op_;
  std::shared_ptr<const MpiCommunicator> comm_;
};

/// Every rank's operand concatenated along `axis`, where rank r's holds counts[r] entries.
class AllGather : public Primitive {
 public:
  AllGather(int64_t axis, std::vector<int64_t> counts, std::shared_ptr<const MpiCommunicator> comm)
      : axis_(axis), counts_(std::move(counts)), comm_(std::move(comm)) {}
  std::string name() const override { return "mpi_allgather"; }
  bool has_effects() const override { return true; }
  std::string params() const override;
  std::vector<TensorType> infer(const std::vector<TensorType>& in) const override;
  std::vector<Tensor> eval(const std::vector<Tensor>& in) const override;
  std::vector<Batched> batch(const std::vector<Batched>& in, int64_t size) const override;
  // grad through a sharded vmap: a clear error (differentiate inside it instead).
  std::vector<Tensor> jvp(const std::vector<Tensor>&, const std::vector<Tensor>&,
                          const std::vector<Tensor>&) const override;
  std::vector<Tensor> vjp(const std::vector<Tensor>&, const std::vector<Tensor>&,
                          const std::vector<Tensor>&) const override;

 private:
  int64_t axis_;
  std::vector<int64_t> counts_;
  std::shared_ptr<const MpiCommunicator> comm_;
};

/// The ShardContext of a sharded vmap running on comm.
class MpiShard : public detail::ShardContext {
 public:
  explicit MpiShard(std::shared_ptr<const MpiCommunicator> comm) : comm_(std::move(comm)) {}
  Tensor allreduce(const Tensor& x, kernels::ReduceOp op) const override;
  Tensor allgather(const Tensor& x, int64_t axis) const override;

 private:
  std::shared_ptr<const MpiCommunicator> comm_;
};

}  // namespace lanes::distributed
