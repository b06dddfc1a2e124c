// Ragged: B examples of one dtype and rank whose shapes may differ (lanes/ragged.h).
#include "lanes/ragged.h"

#include <algorithm>

#include "lanes/error.h"
#include "lanes/ops.h"

namespace lanes {

Ragged::Ragged(std::vector<Tensor> examples) : examples_(std::move(examples)) {
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

Tensor Ragged::padded(double fill) const {
  check(!examples_.empty(), "Ragged::padded: no examples (the padded shape is unknown)");
  Shape most(size_t(examples_[0].ndim()), 0);
  for (const Tensor& e : examples_)
    for (size_t a = 0; a < most.size(); ++a) most[a] = std::max(most[a], e.shape()[a]);
  std::vector<Tensor> rows;
  for (const Tensor& e : examples_) {
    Shape high(most.size());
    for (size_t a = 0; a < most.size(); ++a) high[a] = most[a] - e.shape()[a];
    rows.push_back(pad(e, Shape(most.size(), 0), high, fill));
  }
  return stack(rows, 0);
}

Tensor Ragged::stacked() const {
  check(!examples_.empty(), "Ragged: no examples to stack (the stacked shape is unknown)");
  for (size_t i = 1; i < examples_.size(); ++i)
    check(examples_[i].shape() == examples_[0].shape(), "Ragged: example 0 has shape ",
          fmt(examples_[0].shape()), " but example ", i, " has shape ", fmt(examples_[i].shape()),
          ", so the examples do not stack into one Tensor (keep the result a Ragged)");
  return stack(examples_, 0);
}

}  // namespace lanes
