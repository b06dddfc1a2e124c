// Op-table rows of searchsorted (left / right, ties, values outside the range, 0-d and 2-d
// values, mixed dtypes) and of pad with interior padding (lax.pad: low / high / interior per
// dim, negative low / high cropping, size-0 and size-1 dims). References are naive loops:
// counting for searchsorted, and for pad the source index of each output element.
#include "op_table.h"

using namespace optable;

namespace {

using lanes::Side;

Ref searchsorted_ref(const Ref& sorted, const Ref& values, Side side) {
  Ref out(values.shape);
  for (int64_t i = 0; i < values.numel(); ++i) {
    int64_t k = 0;
    while (k < sorted.numel() && (side == Side::Left ? sorted.data[k] < values.data[i]
                                                     : sorted.data[k] <= values.data[i]))
      ++k;
    out.data[i] = double(k);
  }
  return out;
}

OpRow searchsorted_row(std::string name, Side side, int64_t n, Shape values_shape,
                       std::vector<DType> dtypes = kNumbers) {
  OpRow r;
  r.name = std::move(name);
  r.op = "searchsorted";
  r.dtypes = std::move(dtypes);
  r.sample = [=](DType d, Gen& g) {
    // Integer-valued floats make ties between values and sorted entries.
    const Tensor seq = lanes::sort(lanes::round(g.uniform({n}, d, -3, 3)));
    return std::vector<Tensor>{seq, lanes::round(g.uniform(values_shape, d, -4, 4))};
  };
  r.call = [side](const std::vector<Tensor>& in) {
    return lanes::searchsorted(in[0], in[1], side);
  };
  r.reference = [side](const std::vector<Ref>& in, DType) {
    return Expected{searchsorted_ref(in[0], in[1], side), DType::Int64};
  };
  return r;
}

// One dim's padding (lax.pad's config).
struct PadConfig {
  int64_t low = 0, high = 0, interior = 0;
};

// The x index an output element reads (false: it is padding).

bool pad_source(const std::vector<int64_t>& out, const Shape& x,
                const std::vector<PadConfig>& config, std::vector<int64_t>& in) {
  in.resize(out.size());
  for (size_t d = 0; d < out.size(); ++d) {
    const int64_t p = out[d] - config[d].low, step = config[d].interior + 1;
    if (p < 0 || p % step != 0 || p / step >= x[d]) return false;
    in[d] = p / step;
  }
  return true;
}

OpRow pad_row(std::string name, Shape shape, std::vector<PadConfig> config, double value,
              std::vector<DType> dtypes = kAll) {
  OpRow r;
  r.name = std::move(name);
  r.op = "pad_interior";
  r.dtypes = std::move(dtypes);
  r.sample = [=](DType d, Gen& g) { return std::vector<Tensor>{g.uniform(shape, d, -3, 3)}; };
  Shape low, high, interior;
  for (const PadConfig& c : config) {
    low.push_back(c.low);
    high.push_back(c.high);
    interior.push_back(c.interior);
  }
  r.call = [=](const std::vector<Tensor>& in) {
    return lanes::pad_interior(in[0], low, high, interior, value);
  };
  r.reference = [=](const std::vector<Ref>& in, DType d) {
    Shape out_shape;
    for (size_t k = 0; k < shape.size(); ++k) {
      const int64_t n = shape[k];
      out_shape.push_back(config[k].low + config[k].high + n +
                          (n > 0 ? (n - 1) * config[k].interior : 0));
    }
    Ref out(out_shape);
    std::vector<int64_t> src;
    for (int64_t i = 0; i < out.numel(); ++i)
      out.data[i] = pad_source(unravel(i, out_shape), shape, config, src) ? in[0].at(src) : value;
    return Expected{round_to(out, d), d};
  };
  r.differentiable = true;
  return r;
}

std::vector<OpRow> all_rows() {
  return {
      searchsorted_row("searchsorted_left", Side::Left, 7, {3, 4}),
      searchsorted_row("searchsorted_right", Side::Right, 7, {3, 4}),
      searchsorted_row("searchsorted_scalar_value", Side::Right, 5, {}),
      searchsorted_row("searchsorted_empty_sorted", Side::Left, 0, {4}),
      searchsorted_row("searchsorted_long", Side::Left, 200, {50}, kFloats),
      pad_row("pad_interior", {3, 4}, {{0, 0, 1}, {1, 2, 2}}, 0.0),
      pad_row("pad_interior_value", {4}, {{2, 1, 3}}, 1.0),
      pad_row("pad_interior_negative_low_high", {5, 3}, {{-1, -2, 1}, {-2, 1, 1}}, 0.0),
      pad_row("pad_interior_size1_and_0", {1, 0, 2}, {{1, 0, 4}, {1, 1, 2}, {0, 0, 0}}, 0.0),
      pad_row("pad_no_interior", {2, 3}, {{1, 0, 0}, {0, 2, 0}}, 1.0),
  };
}

std::vector<ErrorRow> error_rows() {
  const Tensor x = lanes::ones({2, 3});
  return {
      {"searchsorted_2d_sorted",
       [x] { lanes::searchsorted(x, lanes::ones({4})); },
       {"searchsorted", "1-d", "(2, 3)", "(4,)"}},
      {"pad_negative_interior",
       [x] {
         lanes::pad_interior(x, {0, 0}, {0, 0}, {0, -1});
       },
       {"pad_interior", "interior", "-1", "dim 1", "(2, 3)"}},
      {"pad_interior_length",
       [x] {
         lanes::pad_interior(x, {1, 1}, {1, 1}, {1});
       },
       {"pad_interior", "interior (1,)", "(2, 3)"}},
      {"pad_interior_crop_too_much",
       [x] {
         lanes::pad_interior(x, {-3, 0}, {-1, 0}, {1, 0});
       },
       {"pad"}},
  };
}

Rows rows{all_rows(), error_rows()};

}  // namespace
