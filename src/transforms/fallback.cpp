// The batching fallback: a primitive without a rule runs once per example, in parallel, and the
// results are stacked (tf.vectorized_map's while_loop fallback, done as a parallel loop).
#include <iostream>
#include <mutex>
#include <set>

#include "lanes/ops.h"
#include "lanes/parallel.h"
#include "transforms/batching.h"

namespace lanes {

namespace {

std::string list_str(const std::vector<int64_t>& v) { return shape_str(v); }

// The per-example loop as a primitive of its own, so that it is recorded like any other node
// when vmap runs inside a trace, and runs (in parallel) when the graph runs.
class PerExample : public Primitive {
 public:
  PerExample(PrimitivePtr inner, std::vector<int64_t> dims, int64_t size)
      : inner_(std::move(inner)), dims_(std::move(dims)), size_(size) {}

  std::string name() const override { return "per_example"; }
  std::string params() const override {
    return "op=" + describe(*inner_) + ", dims=" + list_str(dims_) +
           ", size=" + std::to_string(size_);
  }

  std::vector<TensorType> infer(const std::vector<TensorType>& in) const override {
    check(in.size() == dims_.size(), "per_example: expected ", dims_.size(), " inputs, got ",
          in.size());
    std::vector<TensorType> example = in;
    for (size_t i = 0; i < in.size(); ++i) {
      if (dims_[i] == kNotMapped) continue;
      check(dims_[i] < int64_t(in[i].shape.size()) && in[i].shape[dims_[i]] == size_,
            "per_example: input ", i, " of shape ", fmt(in[i].shape), " has no batch of ", size_,
            " at dim ", dims_[i]);
      example[i].shape.erase(example[i].shape.begin() + dims_[i]);
    }
    std::vector<TensorType> out = inner_->infer(example);
    for (TensorType& t : out) t.shape.insert(t.shape.begin(), size_);
    return out;
  }

  std::vector<Tensor> eval(const std::vector<Tensor>& in) const override {
    std::vector<std::vector<Tensor>> results(size_);
    parallel_for(size_, 1, [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b) results[b] = inner_->eval(example(in, b));
    });
    const size_t n_out = infer(types(in)).size();
    std::vector<Tensor> outputs;
    for (size_t k = 0; k < n_out; ++k) {
      std::vector<Tensor> column;
      for (const auto& r : results) column.push_back(expand_dims(r[k], 0));
      outputs.push_back(size_ == 0
                            ? Tensor::empty(infer(types(in))[k].shape, infer(types(in))[k].dtype)
                            : concatenate(column, 0));
    }
    return outputs;
  }

 private:
  static std::vector<TensorType> types(const std::vector<Tensor>& in) {
    std::vector<TensorType> t;
    for (const Tensor& x : in) t.push_back({x.shape(), x.dtype()});
    return t;
  }
  // Example b of every input: a view.
  std::vector<Tensor> example(const std::vector<Tensor>& in, int64_t b) const {
    std::vector<Tensor> ex = in;
    for (size_t i = 0; i < in.size(); ++i)
      if (dims_[i] != kNotMapped) ex[i] = squeeze(slice_axis(in[i], dims_[i], b, b + 1), dims_[i]);
    return ex;
  }

  PrimitivePtr inner_;
  std::vector<int64_t> dims_;
  int64_t size_;
};

void warn_once(const std::string& prim) {
  static std::mutex mutex;
  static std::set<std::string> warned;
  std::lock_guard<std::mutex> lock(mutex);
  if (!warned.insert(prim).second) return;
  std::cerr << "lanes: warning: vmap has no batching rule for '" << prim
            << "'; running it once per example in a parallel loop (set VmapOptions::fallback = "
               "Fallback::Error to make this an error)\n";
}

}  // namespace

std::vector<Batched> Primitive::batch(const std::vector<Batched>& inputs, int64_t size) const {
  check(batching::current_options().fallback != Fallback::Error, "vmap: primitive '", name(),
        "' has no batching rule and VmapOptions::fallback is Fallback::Error (the per-example "
        "loop fallback is disabled)");
  warn_once(name());
  batching::note_fallback(name());
  std::vector<int64_t> dims;
  std::vector<Tensor> values;
  for (const Batched& x : inputs) {
    dims.push_back(x.dim);
    values.push_back(x.value);
  }
  std::vector<Tensor> outs =
      lanes::bind(std::make_shared<const PerExample>(shared_from_this(), dims, size), values);
  std::vector<Batched> result;
  for (Tensor& t : outs) result.push_back({std::move(t), 0});
  return result;
}

}  // namespace lanes
