// Op-table rows for the linear-algebra ops: dot_general, matmul, dot, outer, tensordot. The
// references are naive float64 loops over the contracted index space.
#include <cmath>

#include "op_table.h"

namespace {

using namespace optable;
using Dims = std::vector<int64_t>;

Dims row_major_strides(const Shape& s) {
  Dims st(s.size());
  int64_t step = 1;
  for (size_t i = s.size(); i-- > 0;) st[i] = step, step *= s[i];
  return st;
}

bool has(const Dims& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// lax.dot_general by definition: out[batch, lhs free, rhs free] = sum over the contracted index.
Ref ref_dot_general(const Ref& a, const Ref& b, const Dims& lc, const Dims& rc, const Dims& lb,
                    const Dims& rb) {
  Dims lf, rf;
  for (int64_t d = 0; d < a.ndim(); ++d)
    if (!has(lc, d) && !has(lb, d)) lf.push_back(d);
  for (int64_t d = 0; d < b.ndim(); ++d)
    if (!has(rc, d) && !has(rb, d)) rf.push_back(d);
  Shape out_shape, k_shape;
  for (int64_t d : lb) out_shape.push_back(a.shape[d]);
  for (int64_t d : lf) out_shape.push_back(a.shape[d]);
  for (int64_t d : rf) out_shape.push_back(b.shape[d]);
  for (int64_t d : lc) k_shape.push_back(a.shape[d]);
  const Dims sa = row_major_strides(a.shape), sb = row_major_strides(b.shape);
  int64_t k = 1;
  for (int64_t d : k_shape) k *= d;
  Dims ka(k), kb(k);  // offsets of each contracted index in a and b
  for (int64_t i = 0; i < k; ++i) {
    const auto idx = unravel(i, k_shape);
    ka[i] = kb[i] = 0;
    for (size_t j = 0; j < idx.size(); ++j)
      ka[i] += idx[j] * sa[lc[j]], kb[i] += idx[j] * sb[rc[j]];
  }
  Ref out(out_shape);
  for (int64_t o = 0; o < out.numel(); ++o) {
    const auto idx = unravel(o, out_shape);
    int64_t oa = 0, ob = 0;
    size_t p = 0;
    for (size_t i = 0; i < lb.size(); ++i, ++p) oa += idx[p] * sa[lb[i]], ob += idx[p] * sb[rb[i]];
    for (int64_t d : lf) oa += idx[p++] * sa[d];
    for (int64_t d : rf) ob += idx[p++] * sb[d];
    double sum = 0;
    for (int64_t i = 0; i < k; ++i) sum += a.data[oa + ka[i]] * b.data[ob + kb[i]];
    out.data[o] = sum;
  }
  return out;
}

// numpy matmul by definition: 1-d operands gain a dim that is removed after; batch dims
// broadcast.
Ref ref_matmul(Ref a, Ref b) {
  const bool a1 = a.ndim() == 1, b1 = b.ndim() == 1;
  if (a1) a.shape.insert(a.shape.begin(), 1);
  if (b1) b.shape.push_back(1);
  const Shape ba(a.shape.begin(), a.shape.end() - 2), bb(b.shape.begin(), b.shape.end() - 2);
  const Shape batch = broadcast_shapes(ba, bb);
  const int64_t n = a.shape[a.ndim() - 2], k = a.shape.back(), m = b.shape.back();
  Shape full = batch;
  full.push_back(n);
  full.push_back(m);
  Ref out(full);
  int64_t nbatch = 1;
  for (int64_t d : batch) nbatch *= d;
  auto broadcast_flat = [&](const std::vector<int64_t>& idx, const Shape& s) {
    std::vector<int64_t> own(s.size());
    for (size_t d = 0; d < s.size(); ++d) own[d] = s[d] == 1 ? 0 : idx[idx.size() - s.size() + d];
    return ravel(own, s);
  };
  for (int64_t t = 0; t < nbatch; ++t) {
    const auto idx = unravel(t, batch);
    const double* pa = a.data.data() + broadcast_flat(idx, ba) * n * k;
    const double* pb = b.data.data() + broadcast_flat(idx, bb) * k * m;
    double* po = out.data.data() + t * n * m;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < m; ++j) {
        double sum = 0;
        for (int64_t p = 0; p < k; ++p) sum += pa[i * k + p] * pb[p * m + j];
        po[i * m + j] = sum;
      }
  }
  if (a1) full.erase(full.end() - 2);
  if (b1) full.pop_back();
  out.shape = full;
  return out;
}

Ref ref_outer(const Ref& a, const Ref& b) {
  Ref out(Shape{a.numel(), b.numel()});
  for (int64_t i = 0; i < a.numel(); ++i)
    for (int64_t j = 0; j < b.numel(); ++j) out.data[i * b.numel() + j] = a.data[i] * b.data[j];
  return out;
}

// float32 tolerance for sums of k products of values in [-2, 2] (E|ab| = 1, so sum |ab| ~ k):
// rounding errors of a length-k float32 sum grow like sqrt(k) * 2^-24 * sum |ab| in practice
// (blocked BLAS sums do better); 4x margin.
double f32_atol(int64_t k) {
  return 4.0 * std::sqrt(double(std::max<int64_t>(k, 1))) * double(k) * 0x1p-24 + 1e-6;
}

using Call = std::function<Tensor(const std::vector<Tensor>&)>;
using Reference = std::function<Ref(const std::vector<Ref>&)>;

// A row whose inputs are uniform samples of `shapes` in the row's dtype; `k` is the length of
// the contracted sums (for the float32 tolerance).
OpRow row(std::string name, std::string op, std::vector<DType> dtypes, std::vector<Shape> shapes,
          int64_t k, Call call, Reference reference) {
  OpRow r;
  r.name = std::move(name);
  r.op = std::move(op);
  r.dtypes = std::move(dtypes);
  r.sample = [shapes](DType t, Gen& g) {
    std::vector<Tensor> v;
    for (const Shape& s : shapes) v.push_back(g.uniform(s, t));
    return v;
  };
  r.call = std::move(call);
  r.reference = [reference](const std::vector<Ref>& in, DType t) {
    const Ref value = reference(in);
    return Expected{lanes::is_floating(t) ? value : round_to(value, t), t};
  };
  r.rtol_float32 = 1e-5;
  r.atol_float32 = f32_atol(k);
  r.differentiable = true;
  return r;
}

OpRow dg_row(std::string name, std::vector<DType> dtypes, Shape ls, Shape rs, Dims lc, Dims rc,
             Dims lb = {}, Dims rb = {}) {
  int64_t k = 1;
  for (int64_t d : lc) k *= ls[d < 0 ? d + int64_t(ls.size()) : d];
  auto pos = [](Dims v, size_t rank) {
    for (int64_t& d : v) d += d < 0 ? int64_t(rank) : 0;
    return v;
  };
  const lanes::DotDims dims{lc, rc, lb, rb};
  const Dims plc = pos(lc, ls.size()), prc = pos(rc, rs.size());
  return row(
      std::move(name), "dot_general", std::move(dtypes), {ls, rs}, k,
      [dims](const std::vector<Tensor>& x) { return lanes::dot_general(x[0], x[1], dims); },
      [=](const std::vector<Ref>& x) { return ref_dot_general(x[0], x[1], plc, prc, lb, rb); });
}

OpRow matmul_row(std::string name, std::vector<DType> dtypes, Shape a, Shape b) {
  return row(
      std::move(name), "matmul", std::move(dtypes), {a, b}, a.back(),
      [](const std::vector<Tensor>& x) { return lanes::matmul(x[0], x[1]); },
      [](const std::vector<Ref>& x) { return ref_matmul(x[0], x[1]); });
}

// jnp.dot: sum over a's last dim and b's second-to-last (its only dim when 1-d).
OpRow dot_row(std::string name, std::vector<DType> dtypes, Shape a, Shape b) {
  const auto ra = int64_t(a.size()), rb = int64_t(b.size());
  return row(
      std::move(name), "dot", std::move(dtypes), {a, b}, a.back(),
      [](const std::vector<Tensor>& x) { return lanes::dot(x[0], x[1]); },
      [=](const std::vector<Ref>& x) {
        return ref_dot_general(x[0], x[1], {ra - 1}, {rb == 1 ? 0 : rb - 2}, {}, {});
      });
}

OpRow tensordot_row(std::string name, std::vector<DType> dtypes, Shape a, Shape b, int64_t axes) {
  Dims lc, rc;
  int64_t k = 1;
  for (int64_t i = 0; i < axes; ++i) {
    lc.push_back(int64_t(a.size()) - axes + i), rc.push_back(i);
    k *= b[i];
  }
  return row(
      std::move(name), "tensordot", std::move(dtypes), {a, b}, k,
      [axes](const std::vector<Tensor>& x) { return lanes::tensordot(x[0], x[1], axes); },
      [=](const std::vector<Ref>& x) { return ref_dot_general(x[0], x[1], lc, rc, {}, {}); });
}

const std::vector<DType> kBig = {DType::Int32, DType::Float32, DType::Float64};

lanes::Tensor ones(const Shape& s) { return lanes::ones(s); }

// 0, 1, ..., 19 as an int32 (4, 5) matrix.
lanes::Tensor int_matrix() {
  std::vector<int32_t> v(20);
  for (int32_t i = 0; i < 20; ++i) v[i] = i;
  return lanes::tensor(v, {4, 5});
}

ErrorRow error_row(std::string name, std::function<void()> call, std::vector<std::string> m) {
  return ErrorRow{std::move(name), std::move(call), std::move(m)};
}

Rows rows{
    {
        // ---- dot_general ----
        dg_row("dot_general_matmul", kAll, {3, 4}, {4, 5}, {1}, {0}),
        dg_row("dot_general_both_transposed", kSignedNumbers, {4, 3}, {5, 4}, {0}, {1}),
        // The vmap fold `x_b @ W`: every lhs free dim goes into M of one GEMM.
        dg_row("dot_general_fold_free_dims", kSignedNumbers, {2, 3, 4}, {4, 5}, {2}, {0}),
        dg_row("dot_general_batch_multi_contract", kSignedNumbers, {2, 3, 4, 5}, {2, 5, 4, 6},
               {2, 3}, {2, 1}, {0}, {0}),
        dg_row("dot_general_batch_not_leading", kSignedNumbers, {3, 2, 4}, {4, 2, 5}, {2}, {0}, {1},
               {1}),
        dg_row("dot_general_two_batch_dims", kSignedNumbers, {2, 3, 4, 5}, {3, 2, 5, 6}, {3}, {2},
               {0, 1}, {1, 0}),
        // lhs free dims (3, 2) are split by the contracted dim: not one evenly spaced group.
        dg_row("dot_general_split_free_dims", kSignedNumbers, {3, 4, 2}, {5, 4}, {1}, {1}),
        dg_row("dot_general_no_contraction", kAll, {3}, {4}, {}, {}),
        dg_row("dot_general_full_contraction", kSignedNumbers, {3, 4}, {3, 4}, {0, 1}, {0, 1}),
        dg_row("dot_general_negative_dims", kSignedNumbers, {3, 4}, {4, 2}, {-1}, {-2}),
        dg_row("dot_general_batch_only", kSignedNumbers, {3, 4}, {3, 5}, {}, {}, {0}, {0}),
        dg_row("dot_general_zero_k", kAll, {2, 0}, {0, 3}, {1}, {0}),
        dg_row("dot_general_zero_m", kSignedNumbers, {0, 3}, {3, 2}, {1}, {0}),
        dg_row("dot_general_zero_batch", kSignedNumbers, {0, 2, 3}, {0, 3, 2}, {2}, {1}, {0}, {0}),
        // ---- matmul ----
        matmul_row("matmul_2d", kAll, {3, 4}, {4, 5}),
        matmul_row("matmul_1d_2d", kAll, {4}, {4, 5}),
        matmul_row("matmul_2d_1d", kAll, {3, 4}, {4}),
        matmul_row("matmul_1d_1d", kAll, {4}, {4}),
        matmul_row("matmul_batched", kAll, {2, 3, 4}, {2, 4, 5}),
        matmul_row("matmul_broadcast_batch", kSignedNumbers, {2, 1, 3, 4}, {5, 4, 2}),
        matmul_row("matmul_3d_2d", kSignedNumbers, {2, 3, 4}, {4, 5}),
        matmul_row("matmul_2d_3d", kSignedNumbers, {3, 4}, {2, 4, 5}),
        matmul_row("matmul_1d_3d", kSignedNumbers, {4}, {2, 4, 5}),
        matmul_row("matmul_3d_1d", kSignedNumbers, {2, 3, 4}, {4}),
        matmul_row("matmul_matrix_vector_k1", kSignedNumbers, {3, 1}, {1, 5}),
        // Big enough for the parallel loop over the batch, and for a threaded BLAS GEMM.
        matmul_row("matmul_batch64_32cubed", kBig, {64, 32, 32}, {64, 32, 32}),
        matmul_row("matmul_256cubed", kBig, {256, 256}, {256, 256}),
        [] {  // int32 @ float promotes to the float (jnp)
          OpRow r = row(
              "matmul_mixed_dtypes", "matmul", kFloats, {{3, 4}}, 4,
              [](const std::vector<Tensor>& x) { return lanes::matmul(x[0], int_matrix()); },
              [](const std::vector<Ref>& x) {
                Ref b(Shape{4, 5});
                for (int64_t i = 0; i < 20; ++i) b.data[i] = double(i);
                return ref_matmul(x[0], b);
              });
          return r;
        }(),
        // ---- dot ----
        dot_row("dot_1d_1d", kAll, {5}, {5}),
        dot_row("dot_2d_2d", kSignedNumbers, {3, 4}, {4, 2}),
        dot_row("dot_3d_1d", kSignedNumbers, {2, 3, 4}, {4}),
        dot_row("dot_2d_3d", kSignedNumbers, {3, 4}, {2, 4, 5}),
        dot_row("dot_3d_3d", kSignedNumbers, {2, 3, 4}, {5, 4, 2}),
        row(
            "dot_scalar", "dot", kSignedNumbers, {{}, {2, 3}}, 1,
            [](const std::vector<Tensor>& x) { return lanes::dot(x[0], x[1]); },
            [](const std::vector<Ref>& x) {
              return map2(x[0], x[1], [](double a, double b) { return a * b; });
            }),
        // ---- outer ----
        row(
            "outer_1d", "outer", kAll, {{3}, {4}}, 1,
            [](const std::vector<Tensor>& x) { return lanes::outer(x[0], x[1]); },
            [](const std::vector<Ref>& x) { return ref_outer(x[0], x[1]); }),
        row(
            "outer_flattens", "outer", kSignedNumbers, {{2, 3}, {2, 2}}, 1,
            [](const std::vector<Tensor>& x) { return lanes::outer(x[0], x[1]); },
            [](const std::vector<Ref>& x) { return ref_outer(x[0], x[1]); }),
        // ---- tensordot ----
        tensordot_row("tensordot_0", kAll, {2, 3}, {3, 2}, 0),
        tensordot_row("tensordot_1", kSignedNumbers, {2, 3}, {3, 4}, 1),
        tensordot_row("tensordot_2", kSignedNumbers, {2, 3, 4}, {3, 4, 5}, 2),
        row(
            "tensordot_axis_lists", "tensordot", kSignedNumbers, {{3, 4, 5}, {4, 3, 2}}, 12,
            [](const std::vector<Tensor>& x) {
              return lanes::tensordot(x[0], x[1], {1, 0}, {0, 1});
            },
            [](const std::vector<Ref>& x) {
              return ref_dot_general(x[0], x[1], {1, 0}, {0, 1}, {}, {});
            }),
        row(
            "tensordot_negative_axes", "tensordot", kSignedNumbers, {{3, 4}, {2, 4}}, 4,
            [](const std::vector<Tensor>& x) { return lanes::tensordot(x[0], x[1], {-1}, {-1}); },
            [](const std::vector<Ref>& x) {
              return ref_dot_general(x[0], x[1], {1}, {1}, {}, {});
            }),
    },
    {
        error_row("matmul_contracting_mismatch",
                  [] {
                    lanes::matmul(ones({2, 3}), ones({4, 5}));
                  },
                  {"matmul", "(2, 3)", "(4, 5)"}),
        error_row("matmul_vector_mismatch", [] { lanes::matmul(ones({3}), ones({4})); },
                  {"matmul", "(3,)", "(4,)"}),
        error_row("matmul_rank0", [] { lanes::matmul(lanes::scalar(2.0), ones({3})); },
                  {"matmul", "()", "(3,)"}),
        error_row("matmul_batch_mismatch",
                  [] {
                    lanes::matmul(ones({2, 3, 4}), ones({3, 4, 5}));
                  },
                  {"matmul", "(2, 3, 4)", "(3, 4, 5)"}),
        error_row("dot_general_contracting_mismatch",
                  [] {
                    lanes::dot_general(ones({2, 3}), ones({4, 5}), {{1}, {0}, {}, {}});
                  },
                  {"dot_general", "(2, 3)", "(4, 5)", "contracting"}),
        error_row("dot_general_batch_mismatch",
                  [] {
                    lanes::dot_general(ones({2, 3}), ones({4, 3}), {{1}, {1}, {0}, {0}});
                  },
                  {"dot_general", "(2, 3)", "(4, 3)", "batch"}),
        error_row("dot_general_dim_out_of_range",
                  [] {
                    lanes::dot_general(ones({2, 3}), ones({3, 4}), {{2}, {0}, {}, {}});
                  },
                  {"dot_general", "lhs_contracting", "2", "(2, 3)", "(3, 4)"}),
        error_row("dot_general_negative_out_of_range",
                  [] {
                    lanes::dot_general(ones({2, 3}), ones({3, 4}), {{1}, {-3}, {}, {}});
                  },
                  {"dot_general", "rhs_contracting", "-3", "(2, 3)", "(3, 4)"}),
        error_row("dot_general_repeated_dim",
                  [] {
                    lanes::dot_general(ones({3, 3}), ones({3, 3}), {{1}, {0}, {1}, {1}});
                  },
                  {"dot_general", "repeated", "(3, 3)"}),
        error_row("dot_general_length_mismatch",
                  [] {
                    lanes::dot_general(ones({3, 4}), ones({3, 4}), {{0, 1}, {0}, {}, {}});
                  },
                  {"dot_general", "(0, 1)", "(0,)", "(3, 4)"}),
        error_row("dot_mismatch", [] { lanes::dot(ones({3}), ones({4})); },
                  {"dot", "(3,)", "(4,)"}),
        error_row("dot_matrix_mismatch",
                  [] {
                    lanes::dot(ones({2, 3}), ones({2, 3}));
                  },
                  {"dot", "(2, 3)"}),
        error_row("tensordot_axes_too_many",
                  [] {
                    lanes::tensordot(ones({2, 3}), ones({3}), 2);
                  },
                  {"tensordot", "2", "(2, 3)", "(3,)"}),
        error_row("tensordot_negative_axes_count",
                  [] {
                    lanes::tensordot(ones({2, 3}), ones({3}), -1);
                  },
                  {"tensordot", "-1"}),
        error_row("tensordot_size_mismatch",
                  [] {
                    lanes::tensordot(ones({2, 3}), ones({2, 3}), 1);
                  },
                  {"tensordot", "(2, 3)"}),
        error_row("tensordot_axis_lists_length",
                  [] {
                    lanes::tensordot(ones({2, 3}), ones({3, 2}), {0, 1}, {1});
                  },
                  {"tensordot", "(0, 1)", "(1,)"}),
        error_row("tensordot_axis_out_of_range",
                  [] {
                    lanes::tensordot(ones({2, 3}), ones({3, 2}), {2}, {0});
                  },
                  {"tensordot", "(2,)", "(2, 3)", "(3, 2)"}),
        error_row("tensordot_repeated_axis",
                  [] {
                    lanes::tensordot(ones({3, 3}), ones({3, 3}), {0, 0}, {0, 1});
                  },
                  {"tensordot", "repeated"}),
    }};

}  // namespace
