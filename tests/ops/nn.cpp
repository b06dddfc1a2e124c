// Op-table rows of the neural-network composites: softmax, log_softmax, logsumexp, l2_loss and
// softmax_cross_entropy (integer and float labels), over several axes, with logits of magnitude
// 1000 (exp overflows unless the max is subtracted) and rows holding -inf. The references are
// float64 loops over each line along the axis, with the max subtracted (float64 overflows too).
#include <cmath>
#include <limits>

#include "op_table.h"

using namespace optable;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

DType float_of(DType d) { return lanes::is_floating(d) ? d : DType::Float32; }

/// Calls f(offset, step, n) for every line of x along `axis`: elements offset + k * step.
template <class F>
void for_each_line(const Shape& shape, int64_t axis, F f) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= shape[d];
  for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  const int64_t n = shape[axis];
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) f(o * n * inner + i, inner, n);
}

int64_t positive(int64_t axis, int64_t ndim) { return axis < 0 ? axis + ndim : axis; }

/// max over the values, or 0 when it is infinite (a line of -inf stays -inf after subtracting).
double shift(const std::vector<double>& v) {
  double m = -kInf;
  for (double x : v) m = std::max(m, x);
  return std::isinf(m) ? 0.0 : m;
}

double log_sum_exp(const std::vector<double>& v) {
  const double m = shift(v);
  double s = 0;
  for (double x : v) s += std::exp(x - m);
  return m + std::log(s);
}

std::vector<double> line(const Ref& x, int64_t offset, int64_t step, int64_t n) {
  std::vector<double> v(n);
  for (int64_t k = 0; k < n; ++k) v[k] = x.data[offset + k * step];
  return v;
}

Ref ref_softmax(const Ref& x, int64_t axis, bool log) {
  Ref out = x;
  for_each_line(x.shape, positive(axis, x.ndim()), [&](int64_t off, int64_t step, int64_t n) {
    const std::vector<double> v = line(x, off, step, n);
    const double lse = log_sum_exp(v);
    for (int64_t k = 0; k < n; ++k)
      out.data[off + k * step] = log ? v[k] - lse : std::exp(v[k] - lse);
  });
  return out;
}

/// logsumexp over `axes` (all when empty): the values of each output gathered, then reduced.
Ref ref_logsumexp(const Ref& x, std::vector<int64_t> axes, bool keepdims) {
  std::vector<bool> mask(x.ndim(), axes.empty());
  for (int64_t a : axes) mask[positive(a, x.ndim())] = true;
  Shape full, dropped;
  for (int64_t d = 0; d < x.ndim(); ++d) {
    full.push_back(mask[d] ? 1 : x.shape[d]);
    if (!mask[d]) dropped.push_back(x.shape[d]);
  }
  Ref out(full);
  std::vector<std::vector<double>> groups(out.numel());
  for (int64_t i = 0; i < x.numel(); ++i) {
    std::vector<int64_t> index = unravel(i, x.shape);
    for (int64_t d = 0; d < x.ndim(); ++d)
      if (mask[d]) index[d] = 0;
    groups[ravel(index, full)].push_back(x.data[i]);
  }
  for (int64_t o = 0; o < out.numel(); ++o) out.data[o] = log_sum_exp(groups[o]);
  if (!keepdims) out.shape = dropped;
  return out;
}

/// Cross-entropy per line: -log p[label] (integer labels) or -sum(label * log p) (float labels).
Ref ref_cross_entropy(const Ref& logits, const Ref& labels, int64_t axis, bool integer) {
  const int64_t a = positive(axis, logits.ndim());
  Shape batch = logits.shape;
  batch.erase(batch.begin() + a);
  Ref out(batch);
  const Ref logp = ref_softmax(logits, a, true);
  int64_t e = 0;  // lines come in row-major order of the batch shape
  for_each_line(logits.shape, a, [&](int64_t off, int64_t step, int64_t n) {
    double loss = 0;
    if (integer)
      loss = -logp.data[off + int64_t(labels.data[e]) * step];
    else
      for (int64_t k = 0; k < n; ++k)
        loss -= labels.data[off + k * step] * logp.data[off + k * step];
    out.data[e++] = loss;
  });
  return out;
}

using Sample = std::function<std::vector<Tensor>(DType, Gen&)>;

Sample uniform(const Shape& shape, double lo, double hi) {
  return [=](DType d, Gen& g) { return std::vector<Tensor>{g.uniform(shape, d, lo, hi)}; };
}

/// A (3, 4) sample with -inf entries: row 0 none, row 1 two, row 2 all (logsumexp -inf; the
/// softmax of that row is NaN, as in jax).
std::vector<Tensor> with_neg_inf(DType d, Gen& g) {
  std::vector<double> v = g.uniform({3, 4}, DType::Float64).to_vector<double>();
  v[4 + 1] = v[4 + 3] = -kInf;
  for (int k = 8; k < 12; ++k) v[k] = -kInf;
  return {lanes::cast(lanes::tensor(v, {3, 4}), d)};
}

/// Like with_neg_inf without the all -inf row (whose softmax is NaN).
std::vector<Tensor> some_neg_inf(DType d, Gen& g) {
  std::vector<double> v = g.uniform({2, 4}, DType::Float64).to_vector<double>();
  v[1] = v[4 + 0] = v[4 + 2] = -kInf;
  return {lanes::cast(lanes::tensor(v, {2, 4}), d)};
}

OpRow row(std::string name, std::string op, std::vector<DType> dtypes, Sample sample,
          std::function<Tensor(const std::vector<Tensor>&)> call,
          std::function<Ref(const std::vector<Ref>&)> reference, bool diff = true) {
  OpRow r;
  r.name = std::move(name);
  r.op = std::move(op);
  r.dtypes = std::move(dtypes);
  r.sample = std::move(sample);
  r.call = std::move(call);
  r.reference = [reference](const std::vector<Ref>& in, DType d) {
    return Expected{reference(in), float_of(d)};
  };
  // float32 exp/log and sums of a few terms: ~1e-6 relative; logits of 1000 lose ~6e-5 absolute
  // in x - max, which rtol covers for log-probabilities of that size.
  r.rtol_float32 = 1e-5;
  r.atol_float32 = 1e-5;
  r.differentiable = diff;
  return r;
}

void add_softmax_rows(std::vector<OpRow>& rows, const std::string& op, bool log) {
  auto fn = log ? lanes::log_softmax : lanes::softmax;
  struct Case {
    std::string suffix;
    Shape shape;
    int64_t axis;
    double scale;
    std::vector<DType> dtypes;
  };
  const Case cases[] = {{"_last", {3, 5}, -1, 2, kAll},
                        {"_axis0", {4, 3, 2}, 0, 2, kFloats},
                        {"_axis1", {4, 3, 2}, 1, 2, kFloats},
                        {"_1d", {7}, 0, 2, kFloats},
                        {"_large_logits", {3, 6}, -1, 1000, kFloats},
                        {"_large_logits_axis0", {6, 3}, 0, 1000, kFloats},
                        {"_wide", {64, 1000}, -1, 10, kFloats}};
  for (const Case& c : cases) {
    const int64_t axis = c.axis;
    rows.push_back(row(
        op + c.suffix, op, c.dtypes, uniform(c.shape, -c.scale, c.scale),
        [fn, axis](const std::vector<Tensor>& in) { return fn(in[0], axis); },
        [axis, log](const std::vector<Ref>& in) { return ref_softmax(in[0], axis, log); }));
  }
  rows.push_back(row(
      op + "_neg_inf", op, kFloats, some_neg_inf,
      [fn](const std::vector<Tensor>& in) { return fn(in[0], -1); },
      [log](const std::vector<Ref>& in) { return ref_softmax(in[0], -1, log); }, false));
}

void add_logsumexp_rows(std::vector<OpRow>& rows) {
  struct Case {
    std::string suffix;
    Shape shape;
    std::vector<int64_t> axes;  // empty: all
    bool keepdims;
    double scale;
    Sample sample;
    bool diff;
  };
  const Case cases[] = {
      {"_all", {3, 4}, {}, false, 2, nullptr, true},
      {"_all_keepdims", {3, 4}, {}, true, 2, nullptr, true},
      {"_axis1_keepdims", {2, 3, 4}, {1}, true, 2, nullptr, true},
      {"_axis_neg1", {2, 3, 4}, {-1}, false, 2, nullptr, true},
      {"_axes02", {2, 3, 4}, {0, 2}, false, 2, nullptr, true},
      {"_large", {4, 5}, {1}, false, 1000, nullptr, true},
      {"_neg_inf_rows", {3, 4}, {1}, false, 0, with_neg_inf, false},
      {"_empty", {0, 3}, {0}, false, 2, nullptr, false},
  };
  for (const Case& c : cases) {
    const auto axes = c.axes;
    const bool keep = c.keepdims;
    const Sample sample = c.sample ? c.sample : uniform(c.shape, -c.scale, c.scale);
    rows.push_back(row(
        "logsumexp" + c.suffix, "logsumexp", c.suffix == "_all" ? kAll : kFloats, sample,
        [axes, keep](const std::vector<Tensor>& in) {
          return lanes::logsumexp(in[0], axes.empty() ? lanes::Axes() : lanes::Axes(axes), keep);
        },
        [axes, keep](const std::vector<Ref>& in) { return ref_logsumexp(in[0], axes, keep); },
        c.diff));
  }
}

Ref ref_l2_loss(const Ref& x) {
  double s = 0;
  for (double v : x.data) s += v * v;
  return Ref(Shape{}, {s / 2});
}

void add_loss_rows(std::vector<OpRow>& rows) {
  auto l2 = [](const std::vector<Tensor>& in) { return lanes::l2_loss(in[0]); };
  auto l2_ref = [](const std::vector<Ref>& in) { return ref_l2_loss(in[0]); };
  rows.push_back(row("l2_loss", "l2_loss", kNumbers, uniform({3, 4}, -2, 2), l2, l2_ref));
  rows.push_back(row("l2_loss_0d", "l2_loss", kFloats, uniform({}, -2, 2), l2, l2_ref));
  rows.push_back(row("l2_loss_large", "l2_loss", kFloats, uniform({300, 1001}, -2, 2), l2, l2_ref));

  // Integer labels: logits in the row's dtype, class indices int32/int64 in range.
  struct Case {
    std::string name;
    Shape logits;
    int64_t axis;
    double scale;
    DType label_dtype;  // Float64: probabilities of the logits' dtype
  };
  const Case cases[] = {
      {"softmax_cross_entropy", {4, 5}, -1, 2, DType::Int32},
      {"softmax_cross_entropy_axis0", {5, 3}, 0, 2, DType::Int64},
      {"softmax_cross_entropy_3d", {2, 3, 4}, 1, 2, DType::Int32},
      {"softmax_cross_entropy_1d", {6}, 0, 2, DType::Int64},
      {"softmax_cross_entropy_large_logits", {4, 5}, -1, 1000, DType::Int32},
      {"softmax_cross_entropy_float_labels", {4, 5}, -1, 2, DType::Float64},
      {"softmax_cross_entropy_float_labels_axis0", {5, 3}, 0, 2, DType::Float64},
      {"softmax_cross_entropy_float_labels_large", {3, 4}, 1, 1000, DType::Float64},
  };
  for (const Case& c : cases) {
    const int64_t axis = c.axis, a = positive(axis, int64_t(c.logits.size()));
    const bool integer = c.label_dtype != DType::Float64;
    Shape label_shape = c.logits;
    if (integer) label_shape.erase(label_shape.begin() + a);
    const Shape logits = c.logits;
    const double scale = c.scale;
    const DType ld = c.label_dtype;
    Sample sample = [=](DType d, Gen& g) {
      const Tensor x = g.uniform(logits, d, -scale, scale);
      if (integer) return std::vector<Tensor>{x, g.uniform(label_shape, ld, 0, logits[a] - 1)};
      return std::vector<Tensor>{x, g.uniform(label_shape, d, 0, 1)};
    };
    rows.push_back(row(
        c.name, "softmax_cross_entropy", kFloats, sample,
        [axis](const std::vector<Tensor>& in) {
          return lanes::softmax_cross_entropy(in[0], in[1], axis);
        },
        [axis, integer](const std::vector<Ref>& in) {
          return ref_cross_entropy(in[0], in[1], axis, integer);
        }));
  }
}

std::vector<OpRow> make_rows() {
  std::vector<OpRow> rows;
  add_softmax_rows(rows, "softmax", false);
  add_softmax_rows(rows, "log_softmax", true);
  add_logsumexp_rows(rows);
  add_loss_rows(rows);
  return rows;
}

ErrorRow error(std::string name, std::function<void()> call, std::vector<std::string> mentions) {
  return ErrorRow{std::move(name), std::move(call), std::move(mentions)};
}

std::vector<ErrorRow> make_errors() {
  const Tensor x = lanes::ones({2, 3});
  const Tensor logits = lanes::zeros({4, 5});
  auto labels = [](std::vector<int32_t> v) { return lanes::tensor(v); };
  return {
      error("softmax_bad_axis", [=] { lanes::softmax(x, 2); }, {"softmax", "axis 2", "(2, 3)"}),
      error("log_softmax_bad_axis", [=] { lanes::log_softmax(x, -3); },
            {"log_softmax", "axis -3", "(2, 3)"}),
      error("softmax_0d", [] { lanes::softmax(lanes::scalar(1.0)); }, {"softmax", "()"}),
      error("logsumexp_bad_axis",
            [=] {
              lanes::logsumexp(x, {0, 4});
            },
            {"logsumexp", "axis 4", "(2, 3)"}),
      error("logsumexp_repeated_axis",
            [=] {
              lanes::logsumexp(x, {1, -1});
            },
            {"logsumexp", "repeated axis 1"}),
      error("softmax_cross_entropy_bad_axis",
            [=] {
              lanes::softmax_cross_entropy(logits, labels({0, 1, 2, 3}), 2);
            },
            {"softmax_cross_entropy", "axis 2", "(4, 5)"}),
      error("softmax_cross_entropy_labels_shape",
            [=] {
              lanes::softmax_cross_entropy(logits, labels({0, 1, 2}));
            },
            {"softmax_cross_entropy", "(3,)", "(4, 5)", "(4,)"}),
      error("softmax_cross_entropy_float_labels_shape",
            [=] {
              lanes::softmax_cross_entropy(logits, lanes::zeros({4, 4}));
            },
            {"softmax_cross_entropy", "(4, 4)", "(4, 5)"}),
      error("softmax_cross_entropy_label_out_of_range",
            [=] {
              lanes::softmax_cross_entropy(logits, labels({0, 5, 1, 2}));
            },
            {"softmax_cross_entropy", "label 5", "5 classes"}),
      error("softmax_cross_entropy_negative_label",
            [=] {
              lanes::softmax_cross_entropy(logits, labels({0, 1, -1, 2}));
            },
            {"softmax_cross_entropy", "label -1", "5 classes"}),
      error("softmax_cross_entropy_bool_labels",
            [=] { lanes::softmax_cross_entropy(logits, lanes::ones({4}, DType::Bool)); },
            {"softmax_cross_entropy", "bool", "(4,)"}),
  };
}

static Rows rows{make_rows(), make_errors()};

}  // namespace
