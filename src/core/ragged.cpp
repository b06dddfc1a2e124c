// Ragged: B examples of one dtype and rank whose shapes may differ (lanes/ragged.h).
#include "lanes/ragged.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>

#include "lanes/error.h"
#include "lanes/ops.h"

namespace lanes {

struct Ragged::Cache {
  Tensor stacked;  // set by from_stacked
  std::mutex mutex;
  std::map<double, Tensor> padded;  // by fill
};

Ragged::Ragged(std::vector<Tensor> examples)
    : examples_(std::move(examples)), cache_(std::make_shared<Cache>()) {
  for (size_t i = 0; i < examples_.size(); ++i) {
    const Tensor& e = examples_[i];
    check(e.defined(), "Ragged: example ", i, " is an undefined tensor");
    if (i == 0) continue;
    const Tensor& first = examples_[0];
    check(e.dtype() == first.dtype(), "Ragged: example ", i, " is ", dtype_name(e.dtype()),
          " but example 0 is ", dtype_name(first.dtype()), " (one dtype for all examples)");
    check(e.ndim() == first.ndim(), "Ragged: example ", i, " has rank ", e.ndim(), " (shape ",
          fmt(e.shape()), ") but example 0 has rank ", first.ndim(), " (shape ", fmt(first.shape()),
          "); sizes may differ, ranks may not");
  }
}

Ragged Ragged::from_lengths(const Tensor& values, const Tensor& lengths) {
  check(values.defined() && lengths.defined(), "Ragged::from_lengths: undefined tensor");
  check(values.ndim() >= 1, "Ragged::from_lengths: values need an axis to split, got shape ",
        fmt(values.shape()));
  check(lengths.ndim() == 1 && is_integral(lengths.dtype()),
        "Ragged::from_lengths: lengths must be a 1-d integer tensor, got ",
        dtype_name(lengths.dtype()), " of shape ", fmt(lengths.shape()));
  const std::vector<int64_t> n = lengths.to_vector<int64_t>();
  std::vector<Tensor> examples;
  int64_t offset = 0;
  for (size_t i = 0; i < n.size(); ++i) {
    check(n[i] >= 0, "Ragged::from_lengths: example ", i, " has length ", n[i]);
    check(offset + n[i] <= values.shape(0), "Ragged::from_lengths: the lengths sum past the ",
          values.shape(0), " rows of values (at example ", i, ")");
    examples.push_back(slice_axis(values, 0, offset, offset + n[i]));
    offset += n[i];
  }
  check(offset == values.shape(0), "Ragged::from_lengths: the lengths sum to ", offset,
        " but values has ", values.shape(0), " rows");
  Ragged r(std::move(examples));
  return r;
}

Ragged Ragged::from_stacked(const Tensor& batched) {
  check(batched.defined() && batched.ndim() >= 1,
        "Ragged::from_stacked: needs a tensor with a batch axis");
  std::vector<Tensor> examples;
  for (int64_t i = 0; i < batched.shape(0); ++i) examples.push_back(batched[i]);
  Ragged r(std::move(examples));
  r.cache_->stacked = batched;
  return r;
}

Tensor Ragged::operator[](int64_t i) const {
  const int64_t b = size();
  check(i >= -b && i < b, "Ragged: example ", i, " out of range for ", b, " examples");
  return examples_[size_t(i < 0 ? i + b : i)];
}

Tensor Ragged::lengths(int64_t axis) const {
  std::vector<int64_t> n;
  for (const Tensor& e : examples_) n.push_back(e.shape(axis));
  return tensor(n);
}

namespace {

// Copies example e (contiguous) into the leading block of row `dst` (row-major, shape `most`).
void copy_block(const Tensor& e, const Shape& most, char* dst) {
  const size_t item = dtype_size(e.dtype());
  const char* src = static_cast<const char*>(e.raw_data());
  const size_t rank = most.size();
  const int64_t run = e.shape()[rank - 1];
  const int64_t rows = e.numel() / std::max<int64_t>(run, 1);
  std::vector<int64_t> index(rank, 0);  // of the current run's first element, in e
  for (int64_t r = 0; r < rows && run > 0; ++r) {
    int64_t at = 0;
    for (size_t a = 0; a < rank; ++a) at = at * most[a] + index[a];
    std::memcpy(dst + size_t(at) * item, src + size_t(r * run) * item, size_t(run) * item);
    for (int64_t a = int64_t(rank) - 2; a >= 0; --a) {
      if (++index[size_t(a)] < e.shape()[size_t(a)]) break;
      index[size_t(a)] = 0;
    }
  }
}

}  // namespace

Tensor Ragged::padded(double fill) const {
  check(!examples_.empty(), "Ragged::padded: no examples (the padded shape is unknown)");
  std::lock_guard<std::mutex> lock(cache_->mutex);
  if (auto it = cache_->padded.find(fill); it != cache_->padded.end()) return it->second;
  Shape most(size_t(examples_[0].ndim()), 0);
  for (const Tensor& e : examples_)
    for (size_t a = 0; a < most.size(); ++a) most[a] = std::max(most[a], e.shape()[a]);
  Shape shape = most;
  shape.insert(shape.begin(), size());
  Tensor out = full(shape, fill, examples_[0].dtype()).contiguous();
  if (most.empty()) {
    out = stack(examples_, 0);
  } else {
    const size_t row = size_t(shape_numel(most)) * dtype_size(out.dtype());
    char* base = static_cast<char*>(out.raw_mutable_data());
    for (size_t i = 0; i < examples_.size(); ++i)
      copy_block(examples_[i].contiguous(), most, base + i * row);
  }
  cache_->padded.emplace(fill, out);
  return out;
}

Tensor Ragged::stacked() const {
  if (cache_ && cache_->stacked.defined()) return cache_->stacked;
  check(!examples_.empty(), "Ragged: no examples to stack (the stacked shape is unknown)");
  for (size_t i = 1; i < examples_.size(); ++i)
    check(examples_[i].shape() == examples_[0].shape(), "Ragged: example 0 has shape ",
          fmt(examples_[0].shape()), " but example ", i, " has shape ", fmt(examples_[i].shape()),
          ", so the examples do not stack into one Tensor (keep the result a Ragged)");
  return stack(examples_, 0);
}

}  // namespace lanes
