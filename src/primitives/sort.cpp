#include "primitives/sort.h"

#include "kernels/sort.h"
#include "primitives/util.h"
#include "transforms/batching.h"

namespace lanes::prim {

std::string Argsort::params() const {
  return std::string("descending=") + (descending_ ? "true" : "false");
}

std::vector<TensorType> Argsort::infer(const std::vector<TensorType>& in) const {
  check_arity(in, 1, "argsort");
  check(!in[0].shape.empty(), "argsort: needs a tensor with at least one dim, got shape ",
        fmt(in[0].shape));
  return single(in[0].shape, DType::Int64);
}

std::vector<Tensor> Argsort::eval(const std::vector<Tensor>& in) const {
  return {kernels::argsort_last(in[0], descending_)};
}

// Rows are sorted independently: with the batch first, the example's last axis is still last.
std::vector<Batched> Argsort::batch(const std::vector<Batched>& in, int64_t) const {
  const Tensor x = batching::move_batch_dim(in[0], 0);
  return {{bind1(shared_from_this(), {x}), 0}};
}

// Indices are integers: no derivative flows through them.
std::vector<Tensor> Argsort::jvp(const std::vector<Tensor>&, const std::vector<Tensor>&,
                                 const std::vector<Tensor>&) const {
  return {Tensor()};
}

std::vector<Tensor> Argsort::vjp(const std::vector<Tensor>&, const std::vector<Tensor>&,
                                 const std::vector<Tensor>&) const {
  return {Tensor()};
}

}  // namespace lanes::prim
