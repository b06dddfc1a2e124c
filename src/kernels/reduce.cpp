// Reduction kernels (see reduce.h). The input's dims are ordered by stride into
//
//     [kept dims..., reduced dims..., inner dim]
//
// where the inner dim has the smallest stride (stride-0 broadcast dims go outermost) and adjacent
// dims are merged where memory allows. Each output reduces the sequence of its elements in that
// order, and every kernel gives the bits of one canonical order on that sequence, so a result
// depends on the values and the sequence alone: never on the layout, on how many outputs are
// reduced together (a batch under vmap, a chunk) or on the thread count (batch invariance,
// README). The order: leaves of kBlock consecutive elements, each reduced as reduce_contiguous
// does (reduce_leaves.h), then a cascade, a binary counter that merges equal-sized partials: the
// pairwise tree of the leaves. Two shapes of work reproduce it:
//
// - inner dim reduced ("row reduction"): each output reduces its leaves, gathered first when
//   strided or spanning rows; many short rows (x is [m, <= 8]) take a fixed-length loop per row;
// - inner dim kept ("column reduction"): a tile of outputs (columns) at once, with vector ops
//   across the columns that keep each column's leaf slots as rows.
//
// Threads either take whole outputs, or, when there are few outputs, aligned groups of 2^p leaves
// (each a subtree of the same tree), so results never depend on the thread count.

// GCC 12 reports xsimd's AVX-512 placeholders as "(may be) used uninitialized"; false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "kernels/reduce.h"

#include <xsimd/xsimd.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <type_traits>

#include "core/strided.h"
#include "kernels/reduce_leaves.h"
#include "lanes/parallel.h"

namespace lanes::kernels {

namespace {

using namespace reduce_leaves;

/// One block (n <= kBlock) of a row with any step; strided blocks are gathered first so a row
/// gives the same result in every layout.
template <class Op, class T>
T reduce_block(const T* p, int64_t n, int64_t step) {
  if (step == 1) return reduce_contiguous<Op>(p, n);
  T buf[kBlock];
  for (int64_t i = 0; i < n; ++i) buf[i] = p[i * step];
  return reduce_contiguous<Op>(buf, n);
}

/// acc[i] = op(acc[i], row[i * step]) for i < n.
template <class Op, class T>
void combine_row(T* acc, const T* row, int64_t n, int64_t step) {
  int64_t i = 0;
  if constexpr (kFloat<T>) {
    using B = xsimd::batch<T>;
    constexpr int64_t W = B::size;
    if (step == 1)
      for (; i + W <= n; i += W)
        Op::apply(B::load_unaligned(acc + i), B::load_unaligned(row + i)).store_unaligned(acc + i);
  }
  for (; i < n; ++i) acc[i] = Op::apply(acc[i], row[i * step]);
}

// ---- cascades: pairwise trees built by a binary counter -----------------------------------------

/// Pushing 2^p leaves from an empty state leaves one partial at level p, so pushing that partial
/// at level p instead gives the same tree: groups of leaves can be reduced elsewhere (threads).
template <class Op, class T>
class Cascade {
 public:
  void push(T v, int level = 0) {
    for (; used_ >> level & 1; ++level) {
      v = Op::apply(slot_[level], v);
      used_ &= ~(uint64_t{1} << level);
    }
    slot_[level] = v;
    used_ |= uint64_t{1} << level;
  }
  T finish() {
    T acc = Op::template identity<T>();
    bool have = false;
    for (int l = 0; l < 64; ++l)
      if (used_ >> l & 1) {
        acc = have ? Op::apply(slot_[l], acc) : slot_[l];
        have = true;
      }
    used_ = 0;
    return acc;
  }

 private:
  std::array<T, 64> slot_{};
  uint64_t used_ = 0;
};

/// The same over rows of up to `capacity` columns (`width` of them in use).
template <class Op, class T>
class RowCascade {
 public:
  explicit RowCascade(int64_t capacity) : capacity_(capacity) {}
  /// Takes v's contents (v is left with scratch of the same capacity).
  void push(std::vector<T>& v, int64_t width, int level = 0) {
    for (; used_ >> level & 1; ++level) {
      combine_row<Op>(slots_[level].data(), v.data(), width, 1);  // slot = op(slot, v)
      std::swap(slots_[level], v);
      used_ &= ~(uint64_t{1} << level);
    }
    if (slots_.size() <= size_t(level)) slots_.resize(level + 1);
    std::swap(slots_[level], v);
    v.resize(capacity_);
    used_ |= uint64_t{1} << level;
  }
  const std::vector<T>& finish(int64_t width) {
    int first = -1;
    for (int l = 0; l < 64; ++l) {
      if (!(used_ >> l & 1)) continue;
      if (first >= 0) {
        combine_row<Op>(slots_[l].data(), slots_[first].data(), width, 1);
        std::swap(slots_[l], slots_[first]);
      } else {
        first = l;
      }
    }
    used_ = 0;
    return slots_[first];  // callers push at least one row
  }

 private:
  int64_t capacity_;
  std::vector<std::vector<T>> slots_;
  uint64_t used_ = 0;
};

/// Leaves per parallel group, as 2^p: a group is worth a thread (>= kGrain elements) and there
/// are at most ~4 groups per thread (each group's partial result is stored). Any p gives the
/// same tree, so the thread count does not change results.
int group_level(int64_t leaf_elements, int64_t leaves) {
  int p = 0;
  while (p < 40 &&
         ((int64_t{1} << p) * leaf_elements < kGrain || (leaves >> p) > 4 * num_threads()))
    ++p;
  return p;
}

// ---- the plan ---------------------------------------------------------------------------------

struct Plan {
  Shape shape;                     // [kept..., reduced..., inner], coalesced
  std::array<Strides, 2> strides;  // output (0 on reduced dims), input
  size_t kept = 0;                 // leading kept dims, not counting a kept inner dim
  int64_t outputs = 1;             // product of the leading kept dims
  int64_t rows = 1;                // rows per output: product of the dims between
  bool inner_reduced = false;
};

Plan make_plan(const Tensor& x, const std::vector<int64_t>& axes, const Shape& out_shape) {
  struct Dim {
    int64_t size, out, in;
    bool reduced;
  };
  const Strides out_strides = contiguous_strides(out_shape);
  std::vector<Dim> dims;
  size_t a = 0, o = 0;
  for (int64_t d = 0; d < x.ndim(); ++d) {
    const bool reduced = a < axes.size() && axes[a] == d;
    a += reduced;
    const int64_t out = reduced ? 0 : out_strides[o++];
    if (x.shape()[d] != 1) dims.push_back({x.shape()[d], out, x.strides()[d], reduced});
  }
  auto key = [](int64_t s) { return s == 0 ? std::numeric_limits<int64_t>::max() : std::abs(s); };
  std::stable_sort(dims.begin(), dims.end(),
                   [&](const Dim& l, const Dim& r) { return key(l.in) > key(r.in); });
  if (!dims.empty()) {
    std::stable_partition(dims.begin(), dims.end() - 1, [](const Dim& d) { return !d.reduced; });
  }
  Plan p;
  for (const Dim& d : dims) {
    p.shape.push_back(d.size);
    p.strides[0].push_back(d.out);
    p.strides[1].push_back(d.in);
  }
  detail::coalesce(p.shape, p.strides);
  const size_t n = p.shape.size();
  p.inner_reduced = p.strides[0].back() == 0;
  while (p.kept + 1 < n && p.strides[0][p.kept] != 0) p.outputs *= p.shape[p.kept++];
  for (size_t d = p.kept; d + 1 < n; ++d) p.rows *= p.shape[d];
  return p;
}

/// Offset in operand k (0: output, 1: input) of output j's first element (j indexes the
/// leading kept dims).
int64_t offset_of(const Plan& p, int64_t j, int k) {
  int64_t off = 0;
  for (size_t d = p.kept; d-- > 0;) {
    off += (j % p.shape[d]) * p.strides[k][d];
    j /= p.shape[d];
  }
  return off;
}

// ---- row reduction (inner dim reduced) ----------------------------------------------------------

/// Whether few outputs (units) share much work: then each one's leaves are split into aligned
/// groups of 2^level run in parallel, else threads take whole units.
bool split_units(int64_t units, int64_t elements) {
  return units < num_threads() && elements >= 2 * kGrain;
}

/// out[j] = op over x[j * kLen, (j + 1) * kLen) in reduce_contiguous's order (a short leaf: the
/// fold of its elements); a fixed row length lets the compiler vectorise across rows.
template <class Op, int kLen, class T>
void short_rows(const T* x, T* out, int64_t b, int64_t e) {
  for (int64_t j = b; j < e; ++j) {
    T s[kLen];
    for (int k = 0; k < kLen; ++k) s[k] = x[j * kLen + k];
    if constexpr (kFloat<T>) {
      for (int h = 8; h >= 1; h /= 2)  // fold_slots: kSlots >= 16, so only h < kLen folds
        for (int i = 0; i + h < kLen && i < h; ++i) s[i] = Op::apply(s[i], s[i + h]);
      out[j] = s[0];
    } else {
      out[j] = reduce_contiguous<Op>(s, kLen);
    }
  }
}

/// Many short rows stored one after another (x is [outputs, len] with len <= 8). Returns false
/// when the layout is not that.
template <class Op, class T>
bool reduce_short_rows(const Plan& p, const T* x, T* out) {
  const int64_t len = p.shape.back();
  if (p.kept != 1 || p.rows != 1 || len > 8 || p.strides[1][1] != 1 || p.strides[1][0] != len ||
      p.strides[0][0] != 1)
    return false;
  using Fn = void (*)(const T*, T*, int64_t, int64_t);
  constexpr Fn kernels[] = {short_rows<Op, 2, T>, short_rows<Op, 3, T>, short_rows<Op, 4, T>,
                            short_rows<Op, 5, T>, short_rows<Op, 6, T>, short_rows<Op, 7, T>,
                            short_rows<Op, 8, T>};
  parallel_for(p.outputs, std::max<int64_t>(1, kGrain / len),
               [&](int64_t b, int64_t e) { kernels[len - 2](x, out, b, e); });
  return true;
}

template <class Op, class T>
void reduce_rows(const Plan& p, const T* x, T* out) {
  const int64_t len = p.shape.back(), step = p.strides[1].back(), rows = p.rows;
  const int64_t total = rows * len, leaves = (total + kBlock - 1) / kBlock;
  if (reduce_short_rows<Op>(p, x, out)) return;
  // Leaf l of output j: elements [l * kBlock, ...) of its rows read one after another. When
  // kBlock divides the row length a leaf is a block of one row (read in place, or gathered when
  // strided); otherwise leaves span rows and are gathered (the canonical order does not see where
  // rows end).
  const bool in_rows = rows == 1 || len % kBlock == 0;
  const int64_t blocks = (len + kBlock - 1) / kBlock;
  auto block = [&](int64_t in_off, int64_t b) {
    const int64_t start = b * kBlock;
    return reduce_block<Op>(x + in_off + start * step, std::min(kBlock, len - start), step);
  };
  auto spanning_leaf = [&](int64_t j, int64_t l) {
    const int64_t f0 = l * kBlock, f1 = std::min(total, f0 + kBlock);
    T buf[kBlock];
    int64_t filled = 0, r = f0 / len;
    detail::for_each_row<2>(p.shape, p.strides, j * rows + r, j * rows + (f1 - 1) / len + 1,
                            [&](const auto& off) {
                              const int64_t lo = std::max(f0, r * len) - r * len;
                              const int64_t hi = std::min(f1, (r + 1) * len) - r * len;
                              for (int64_t i = lo; i < hi; ++i)
                                buf[filled++] = x[off[1] + i * step];
                              ++r;
                            });
    return reduce_contiguous<Op>(buf, filled);
  };
  // Pushes leaves [lb, le) of output j.
  auto visit = [&](int64_t j, int64_t lb, int64_t le, Cascade<Op, T>& c) {
    if (!in_rows) {
      for (int64_t l = lb; l < le; ++l) c.push(spanning_leaf(j, l));
      return;
    }
    int64_t l = lb / blocks * blocks;  // block k of row r is leaf r * blocks + k
    detail::for_each_row<2>(p.shape, p.strides, j * rows + lb / blocks,
                            j * rows + (le + blocks - 1) / blocks, [&](const auto& off) {
                              for (int64_t k = 0; k < blocks; ++k, ++l)
                                if (l >= lb && l < le) c.push(block(off[1], k));
                            });
  };
  const bool split = split_units(p.outputs, p.outputs * total);
  const int level = split ? group_level(std::min(total, kBlock), leaves) : 0;
  const int64_t groups = split ? leaves >> level : 0;
  std::vector<T> partial(groups);
  const int64_t grain = split ? p.outputs : std::max<int64_t>(1, kGrain / total);
  parallel_for(p.outputs, grain, [&](int64_t b, int64_t e) {
    if (leaves == 1 && in_rows) {  // one short row per output: no cascade
      detail::for_each_row<2>(p.shape, p.strides, b, e,
                              [&](const auto& off) { out[off[0]] = block(off[1], 0); });
      return;
    }
    Cascade<Op, T> c;
    for (int64_t j = b; j < e; ++j) {
      parallel_for(groups, 1, [&](int64_t gb, int64_t ge) {
        Cascade<Op, T> cg;
        for (int64_t g = gb; g < ge; ++g) {
          visit(j, g << level, (g + 1) << level, cg);
          partial[g] = cg.finish();
        }
      });
      for (int64_t g = 0; g < groups; ++g) c.push(partial[g], level);
      visit(j, groups << level, leaves, c);
      out[offset_of(p, j, 0)] = c.finish();
    }
  });
}

// ---- column reduction (inner dim kept) ----------------------------------------------------------

/// Columns per unit of a column reduction: the fold's rows (one per level, kSlots has 7 at most)
/// stay in L1, and each input row is read in runs of 4 KB.
template <class T>
constexpr int64_t kColumnTile = 4096 / int64_t(sizeof(T));
constexpr int64_t kPackedRow = 64;  // widest rows the packed leaf takes

/// Offset in the input of row `row` of the plan's space (every dim but the last).
int64_t row_offset(const Plan& p, int64_t row) {
  int64_t off = 0;
  for (size_t d = p.shape.size() - 1; d-- > 0;) {
    off += row % p.shape[d] * p.strides[1][d];
    row /= p.shape[d];
  }
  return off;
}

/// Each column reduced in reduce_contiguous's order, vectorised across columns: a leaf is
/// kBlock rows, row r of it belongs to slot r % kSlots, and the slots are folded as fold_slots
/// folds one column's. Leaves are cascaded as in reduce_rows, so a column gives the bits its
/// values would give as a contiguous row.
template <class Op, class T>
void reduce_columns(const Plan& p, const T* x, T* out) {
  constexpr int64_t S = kSlots<T>;
  const int64_t len = p.shape.back(), in_step = p.strides[1].back(), rows = p.rows;
  const int64_t out_step = p.strides[0].back();
  const int64_t tile = std::min(len, kColumnTile<T>), tiles = (len + tile - 1) / tile;
  const int64_t leaves = (rows + kBlock - 1) / kBlock;
  // Narrow rows stored one after another (one reduced dim of stride len): S rows are one
  // contiguous run of S * len values, combined into all the slots at once.
  const size_t n = p.shape.size();
  const bool packed =
      len <= kPackedRow && in_step == 1 && n - p.kept == 2 && p.strides[1][n - 2] == len;
  // Tiles narrow enough for all S slots to stay in L1 read the rows in order (slot rows); wider
  // ones fold depth-first, reading each slot's rows in long runs.
  const bool slot_rows = !packed && S * tile * int64_t(sizeof(T)) <= 32768;
  const int64_t scratch = packed      ? S * len
                          : slot_rows ? S * tile
                                      : int64_t(std::bit_width(uint64_t(S))) * tile;

  // The slot fold as a depth-first walk: node (i, h) = op(node(i, 2h), node(i + h, 2h)), node
  // (i, S) being slot i, the combination of its rows in order (read in long runs across the
  // tile). acc holds one row per level.
  auto fold = [&](auto&& self, int64_t k, int64_t r0, int64_t r1, int64_t c0, int64_t w, int64_t i,
                  int64_t h, T* acc) -> void {
    if (h == S) {
      for (int64_t r = r0 + i; r < r1; r += S) {
        const T* row = x + row_offset(p, k * rows + r) + c0 * in_step;
        if (r == r0 + i)
          for (int64_t c = 0; c < w; ++c) acc[c] = row[c * in_step];
        else
          combine_row<Op>(acc, row, w, in_step);
      }
      return;
    }
    self(self, k, r0, r1, c0, w, i, 2 * h, acc);
    if (r0 + i + h >= r1) return;  // the other half's slots are empty
    self(self, k, r0, r1, c0, w, i + h, 2 * h, acc + w);
    combine_row<Op>(acc, acc + w, w, 1);
  };
  // acc[0, w) = leaf l of unit (k, c0, w); acc holds `scratch` elements.
  auto leaf = [&](int64_t k, int64_t l, int64_t c0, int64_t w, T* acc) {
    const int64_t r0 = l * kBlock, r1 = std::min(rows, r0 + kBlock);
    if (!packed && !slot_rows) return fold(fold, k, r0, r1, c0, w, 0, 1, acc);
    const int64_t used = std::min(S, r1 - r0);
    if (packed) {
      const T* run = x + offset_of(p, k, 1) + r0 * len;
      std::copy(run, run + used * len, acc);
      for (int64_t r = r0 + S; r < r1; r += S)
        combine_row<Op>(acc, x + offset_of(p, k, 1) + r * len, std::min(S, r1 - r) * len, 1);
    } else {
      int64_t r = r0;
      detail::for_each_row<2>(p.shape, p.strides, k * rows + r0, k * rows + r1,
                              [&](const auto& off) {
                                const T* row = x + off[1] + c0 * in_step;
                                T* slot = acc + (r - r0) % S * w;
                                if (r - r0 < S)
                                  for (int64_t c = 0; c < w; ++c) slot[c] = row[c * in_step];
                                else
                                  combine_row<Op>(slot, row, w, in_step);
                                ++r;
                              });
    }
    for (int64_t h = S / 2; h >= 1; h /= 2)
      for (int64_t i = 0; i < h && i + h < used; ++i)
        combine_row<Op>(acc + i * w, acc + (i + h) * w, w, 1);
  };
  // Pushes leaves [lb, le) of unit (k, c0, w) into c.
  auto visit = [&](int64_t k, int64_t c0, int64_t w, int64_t lb, int64_t le, RowCascade<Op, T>& c,
                   std::vector<T>& v) {
    for (int64_t l = lb; l < le; ++l) {
      leaf(k, l, c0, w, v.data());
      c.push(v, w);
    }
  };
  const int64_t units = p.outputs * tiles;  // a unit: one tile of one output row
  const bool split = split_units(units, units * rows * tile);
  const int level = split ? group_level(kBlock * tile, leaves) : 0;
  const int64_t groups = split ? leaves >> level : 0;
  std::vector<T> partial(groups * tile);
  const int64_t grain = split ? units : std::max<int64_t>(1, kGrain / (rows * tile));
  parallel_for(units, grain, [&](int64_t b, int64_t e) {
    RowCascade<Op, T> c(scratch);
    std::vector<T> v(scratch);
    for (int64_t u = b; u < e; ++u) {
      const int64_t k = u / tiles, c0 = u % tiles * tile, w = std::min(tile, len - c0);
      T* o = out + offset_of(p, k, 0) + c0 * out_step;
      const T* result = v.data();
      if (leaves == 1) {
        leaf(k, 0, c0, w, v.data());
      } else {
        parallel_for(groups, 1, [&](int64_t gb, int64_t ge) {
          RowCascade<Op, T> cg(scratch);
          std::vector<T> vg(scratch);
          for (int64_t g = gb; g < ge; ++g) {
            visit(k, c0, w, g << level, (g + 1) << level, cg, vg);
            std::copy_n(cg.finish(w).begin(), w, partial.begin() + g * tile);
          }
        });
        for (int64_t g = 0; g < groups; ++g) {
          std::copy_n(partial.begin() + g * tile, w, v.begin());
          c.push(v, w, level);
        }
        visit(k, c0, w, groups << level, leaves, c, v);
        result = c.finish(w).data();
      }
      for (int64_t i = 0; i < w; ++i) o[i * out_step] = result[i];
    }
  });
}

template <class Op, class T>
void run_reduce(const Tensor& x, const std::vector<int64_t>& axes, const Tensor& out) {
  T* o = static_cast<T*>(out.raw_mutable_data());
  if (x.numel() == 0) {  // an empty reduction: the identity (+0 for sums, as numpy)
    const T empty = std::is_same_v<Op, SumOp> ? T(0) : Op::template identity<T>();
    std::fill(o, o + out.numel(), empty);
    return;
  }
  const T* in = static_cast<const T*>(x.raw_data());
  const Plan p = make_plan(x, axes, out.shape());
  if (p.inner_reduced)
    reduce_rows<Op>(p, in, o);
  else
    reduce_columns<Op>(p, in, o);
}

/// Runs Op on x's element type. Integer sums and products (`wraps`) run on the unsigned twin:
/// two's complement wrap-around without undefined behaviour. (GCC 12 at -O3 -march=native also
/// miscompiles the signed form written with casts, int32_t(uint32_t(a) + uint32_t(b)), in the
/// 4-accumulator loop.) bool max/min are max/min of the 0/1 bytes.
template <class Op, bool wraps>
Tensor dispatch(const Tensor& x, const std::vector<int64_t>& axes, const Tensor& out) {
  switch (x.dtype()) {
    case DType::Bool:
    case DType::UInt8:
      run_reduce<Op, uint8_t>(x, axes, out);
      break;
    case DType::Int32:
      run_reduce<Op, std::conditional_t<wraps, uint32_t, int32_t>>(x, axes, out);
      break;
    case DType::Int64:
      run_reduce<Op, std::conditional_t<wraps, uint64_t, int64_t>>(x, axes, out);
      break;
    case DType::Float32:
      run_reduce<Op, float>(x, axes, out);
      break;
    case DType::Float64:
      run_reduce<Op, double>(x, axes, out);
      break;
  }
  return out;
}

}  // namespace

const char* reduce_name(ReduceOp op) {
  constexpr const char* names[] = {"reduce_sum", "reduce_prod", "reduce_max", "reduce_min"};
  return names[static_cast<int>(op)];
}

Tensor reduce(ReduceOp op, const Tensor& x, const std::vector<int64_t>& axes) {
  Shape out_shape;
  for (int64_t d = 0; d < x.ndim(); ++d)
    if (!std::binary_search(axes.begin(), axes.end(), d)) out_shape.push_back(x.shape()[d]);
  const Tensor out = Tensor::empty(out_shape, x.dtype());
  if (out.numel() == 0) return out;
  const bool logical = x.dtype() == DType::Bool;
  check(!logical || op == ReduceOp::Max || op == ReduceOp::Min, reduce_name(op),
        ": does not accept bool operands (shape ", fmt(x.shape()), ")");
  switch (op) {
    case ReduceOp::Sum:
      return dispatch<SumOp, true>(x, axes, out);
    case ReduceOp::Prod:
      return dispatch<ProdOp, true>(x, axes, out);
    case ReduceOp::Max:
      return dispatch<MaxOp, false>(x, axes, out);
    case ReduceOp::Min:
      break;
  }
  return dispatch<MinOp, false>(x, axes, out);
}

namespace {
template <class F>
void with_reduce_op(ReduceOp op, F&& f) {
  switch (op) {
    case ReduceOp::Sum:
      return f(SumOp{});
    case ReduceOp::Prod:
      return f(ProdOp{});
    case ReduceOp::Max:
      return f(MaxOp{});
    case ReduceOp::Min:
      return f(MinOp{});
  }
}
}  // namespace

namespace {

template <class Op, class T>
class RowReductionOf final : public RowReduction {
 public:
  void feed(const void* p, int64_t n) override {
    for (const T* x = static_cast<const T*>(p); n > 0;) {
      const int64_t take = std::min(n, kBlock - filled_);
      std::copy(x, x + take, block_.begin() + filled_);
      filled_ += take;
      x += take;
      n -= take;
      if (filled_ == kBlock) flush();
    }
  }
  void finish(void* out) override {
    if (filled_ > 0) flush();
    *static_cast<T*>(out) = cascade_.finish();
  }

 private:
  // A leaf of reduce_rows: one block of kBlock values (the row's last may be shorter).
  void flush() {
    cascade_.push(reduce_contiguous<Op>(block_.data(), filled_));
    filled_ = 0;
  }
  Cascade<Op, T> cascade_;
  std::array<T, kBlock> block_;
  int64_t filled_ = 0;
};

}  // namespace

std::unique_ptr<RowReduction> make_row_reduction(ReduceOp op, DType dtype) {
  check(dtype == DType::Float32 || dtype == DType::Float64,
        "make_row_reduction: float dtypes only");
  std::unique_ptr<RowReduction> out;
  auto make = [&](auto tag) {
    using T = decltype(tag);
    with_reduce_op(op, [&](auto o) { out = std::make_unique<RowReductionOf<decltype(o), T>>(); });
  };
  if (dtype == DType::Float32)
    make(float{});
  else
    make(double{});
  return out;
}

}  // namespace lanes::kernels
