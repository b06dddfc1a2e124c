#include "op_table.h"

#include <cmath>

namespace optable {

Ref::Ref(Shape s, double fill) : shape(std::move(s)) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  data.assign(n, fill);
}

Ref Ref::of(const Tensor& t) { return Ref(t.shape(), t.to_vector<double>()); }

double& Ref::at(const std::vector<int64_t>& index) { return data[ravel(index, shape)]; }
double Ref::at(const std::vector<int64_t>& index) const { return data[ravel(index, shape)]; }

std::vector<int64_t> unravel(int64_t flat, const Shape& shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return index;
}

int64_t ravel(const std::vector<int64_t>& index, const Shape& shape) {
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + index[d];
  return flat;
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    out[i] = da == 1 ? db : da;
  }
  return out;
}

double at_broadcast(const Ref& r, const std::vector<int64_t>& out_index) {
  const size_t lead = out_index.size() - r.shape.size();
  std::vector<int64_t> index(r.shape.size());
  for (size_t d = 0; d < r.shape.size(); ++d) index[d] = r.shape[d] == 1 ? 0 : out_index[lead + d];
  return r.at(index);
}

Ref map1(const Ref& x, const std::function<double(double)>& f) {
  Ref out = x;
  for (double& v : out.data) v = f(v);
  return out;
}

Ref map2(const Ref& a, const Ref& b, const std::function<double(double, double)>& f) {
  Ref out(broadcast_shapes(a.shape, b.shape));
  for (int64_t i = 0; i < out.numel(); ++i) {
    const auto index = unravel(i, out.shape);
    out.data[i] = f(at_broadcast(a, index), at_broadcast(b, index));
  }
  return out;
}

Ref map3(const Ref& a, const Ref& b, const Ref& c,
         const std::function<double(double, double, double)>& f) {
  Ref out(broadcast_shapes(broadcast_shapes(a.shape, b.shape), c.shape));
  for (int64_t i = 0; i < out.numel(); ++i) {
    const auto index = unravel(i, out.shape);
    out.data[i] = f(at_broadcast(a, index), at_broadcast(b, index), at_broadcast(c, index));
  }
  return out;
}

Ref round_to(const Ref& r, DType dtype) {
  switch (dtype) {
    case DType::Float64:
      return r;
    case DType::Float32:
      return map1(r, [](double v) { return static_cast<double>(static_cast<float>(v)); });
    case DType::Bool:
      return map1(r, [](double v) { return v != 0 ? 1.0 : 0.0; });
    default:
      return map1(r, [](double v) { return std::trunc(v); });
  }
}

Tensor Gen::uniform(const Shape& shape, DType dtype, double lo, double hi) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<double> values(n);
  if (dtype == DType::Bool) {
    std::bernoulli_distribution coin(0.5);
    for (double& v : values) v = coin(rng);
  } else if (lanes::is_integral(dtype)) {
    const auto ilo =
        static_cast<int64_t>(std::ceil(dtype == DType::UInt8 ? std::max(lo, 0.0) : lo));
    std::uniform_int_distribution<int64_t> dist(ilo, std::max(ilo, static_cast<int64_t>(hi)));
    for (double& v : values) v = static_cast<double>(dist(rng));
  } else {
    std::uniform_real_distribution<double> dist(lo, hi);
    for (double& v : values) v = dist(rng);
  }
  return lanes::cast(lanes::tensor(values, shape), dtype);
}

Tensor Gen::nonzero(const Shape& shape, DType dtype, double min_abs, double max_abs) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<double> values(n);
  std::uniform_real_distribution<double> mag(min_abs, max_abs);
  std::bernoulli_distribution sign(dtype == DType::UInt8 ? 0.0 : 0.5);
  for (double& v : values) {
    v = mag(rng);
    if (lanes::is_integral(dtype)) v = std::max(1.0, std::round(v));
    if (sign(rng)) v = -v;
  }
  return lanes::cast(lanes::tensor(values, shape), dtype);
}

std::vector<OpRow>& op_table() {
  static std::vector<OpRow> rows;
  return rows;
}

std::vector<std::string> row_names() {
  std::vector<std::string> names;
  for (const OpRow& r : op_table()) names.push_back(r.name);
  return names;
}

std::vector<ErrorRow>& error_table() {
  static std::vector<ErrorRow> rows;
  return rows;
}

Rows::Rows(std::vector<OpRow> rows, std::vector<ErrorRow> errors) {
  for (auto& r : rows) op_table().push_back(std::move(r));
  for (auto& e : errors) error_table().push_back(std::move(e));
}

}  // namespace optable
