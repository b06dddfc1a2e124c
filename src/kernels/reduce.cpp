// Reduction kernels (see reduce.h). The input's dims are ordered by stride into
//
//     [kept dims..., reduced dims..., inner dim]
//
// where the inner dim has the smallest stride (stride-0 broadcast dims go outermost) and adjacent
// dims are merged where memory allows. Two shapes of work follow:
//
// - inner dim reduced ("row reduction"): each output reduces its rows, block by block; a block
//   (<= kBlock elements, gathered first when strided) is summed in 4 xsimd accumulators;
// - inner dim kept ("column reduction"): each output row accumulates whole input rows with vector
//   ops over a tile of columns.
//
// Narrow shapes get their own loops: many short rows (x is [m, <= 8]) a fixed-length loop per
// row, a tall narrow matrix reduced over its rows whole SIMD batches spanning several rows.
//
// The partial results (one per block, or one tile per group of rows) are combined by a cascade, a
// binary counter that merges equal-sized partials: the pairwise tree of the leaves, fixed by the
// shapes alone. Threads either take whole outputs, or, when there are few outputs, aligned groups
// of 2^p leaves (each a subtree of the same tree), so results never depend on the thread count.

// GCC 12 reports xsimd's AVX-512 placeholders as "(may be) used uninitialized"; false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "kernels/reduce.h"

#include <xsimd/xsimd.hpp>

#include <algorithm>
#include <array>
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

constexpr int64_t kTile = 8192;       // columns per unit of a column reduction
constexpr int64_t kNarrow = 64;       // widest rows narrow_leaf takes
constexpr int64_t kMaxPeriod = 1024;  // >= narrow_period(len) for len <= kNarrow

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

/// Reduces `count` rows of `len` contiguous elements that follow each other in memory (a
/// column reduction of a narrow matrix) into acc[0, len): whole periods (a multiple of both len
/// and the SIMD width; the last one padded with the identity) are combined with full vector ops,
/// so lane i accumulates column i % len; then a pairwise fold of the len-sized segments.
template <class Op, class T>
void narrow_leaf(const T* p, int64_t count, int64_t len, int64_t period, T* acc) {
  const int64_t total = count * len, first = std::min(total, period);
  T buf[kMaxPeriod];
  std::copy(p, p + first, buf);
  std::fill(buf + first, buf + period, Op::template identity<T>());
  for (int64_t done = first; done < total; done += period)
    combine_row<Op>(buf, p + done, std::min(period, total - done), 1);
  const int64_t segments = period / len;
  for (int64_t step = 1; step < segments; step *= 2)
    for (int64_t s = 0; s + step < segments; s += 2 * step)
      combine_row<Op>(buf + s * len, buf + (s + step) * len, len, 1);
  std::copy(buf, buf + len, acc);
}

/// The period narrow_leaf uses for rows of `len` T: lcm(len, SIMD width), repeated up to >= 256.
template <class T>
int64_t narrow_period(int64_t len) {
  const int64_t w = xsimd::batch<T>::size, l = std::lcm(len, w);
  return l * ((256 + l - 1) / l);
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

/// out[j] = op over x[j * kLen, (j + 1) * kLen): a fixed row length lets the compiler vectorise
/// across rows (interleaved loads).
template <class Op, int kLen, class T>
void short_rows(const T* x, T* out, int64_t b, int64_t e) {
  for (int64_t j = b; j < e; ++j) {
    T acc = x[j * kLen];
    for (int k = 1; k < kLen; ++k) acc = Op::apply(acc, x[j * kLen + k]);
    out[j] = acc;
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
  const int64_t blocks = (len + kBlock - 1) / kBlock, leaves = rows * blocks;
  if (reduce_short_rows<Op>(p, x, out)) return;
  auto leaf = [&](int64_t in_off, int64_t b) {
    const int64_t start = b * kBlock;
    return reduce_block<Op>(x + in_off + start * step, std::min(kBlock, len - start), step);
  };
  // Pushes leaves [lb, le) of output j (block k of row r is leaf r * blocks + k).
  auto visit = [&](int64_t j, int64_t lb, int64_t le, Cascade<Op, T>& c) {
    int64_t l = lb / blocks * blocks;
    detail::for_each_row<2>(p.shape, p.strides, j * rows + lb / blocks,
                            j * rows + (le + blocks - 1) / blocks, [&](const auto& off) {
                              for (int64_t k = 0; k < blocks; ++k, ++l)
                                if (l >= lb && l < le) c.push(leaf(off[1], k));
                            });
  };
  const bool split = split_units(p.outputs, p.outputs * rows * len);
  const int level = split ? group_level(std::min(len, kBlock), leaves) : 0;
  const int64_t groups = split ? leaves >> level : 0;
  std::vector<T> partial(groups);
  const int64_t grain = split ? p.outputs : std::max<int64_t>(1, kGrain / (rows * len));
  parallel_for(p.outputs, grain, [&](int64_t b, int64_t e) {
    if (leaves == 1) {  // one short row per output: no cascade
      detail::for_each_row<2>(p.shape, p.strides, b, e,
                              [&](const auto& off) { out[off[0]] = leaf(off[1], 0); });
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

template <class Op, class T>
void reduce_columns(const Plan& p, const T* x, T* out) {
  const int64_t len = p.shape.back(), in_step = p.strides[1].back(), rows = p.rows;
  const int64_t out_step = p.strides[0].back();
  const int64_t tile = std::min(len, kTile), tiles = (len + tile - 1) / tile;
  // Narrow rows stacked contiguously (one reduced dim of stride len) take narrow_leaf.
  const size_t n = p.shape.size();
  int64_t period = 0;
  if constexpr (kFloat<T>)
    if (len <= kNarrow && in_step == 1 && n - p.kept == 2 && p.strides[1][n - 2] == len)
      period = narrow_period<T>(len);
  // Rows per leaf, summed in order: more for narrow tiles so a leaf is worth its overhead.
  const int64_t leaf_rows = period ? 16 * period / len : std::clamp<int64_t>(kBlock / tile, 8, 32);
  const int64_t leaves = (rows + leaf_rows - 1) / leaf_rows;

  // acc[0, w) = rows [l * leaf_rows, ...) of output row k, columns [c0, c0 + w).
  auto leaf = [&](int64_t k, int64_t l, int64_t c0, int64_t w, T* acc) {
    const int64_t r0 = l * leaf_rows, r1 = std::min(rows, r0 + leaf_rows);
    if (period)
      return narrow_leaf<Op>(x + offset_of(p, k, 1) + r0 * len, r1 - r0, len, period, acc);
    bool first = true;
    detail::for_each_row<2>(p.shape, p.strides, k * rows + r0, k * rows + r1, [&](const auto& off) {
      const T* row = x + off[1] + c0 * in_step;
      if (first)
        for (int64_t i = 0; i < w; ++i) acc[i] = row[i * in_step];
      else
        combine_row<Op>(acc, row, w, in_step);
      first = false;
    });
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
  const int level = split ? group_level(leaf_rows * tile, leaves) : 0;
  const int64_t groups = split ? leaves >> level : 0;
  std::vector<T> partial(groups * tile);
  const int64_t grain = split ? units : std::max<int64_t>(1, kGrain / (rows * tile));
  parallel_for(units, grain, [&](int64_t b, int64_t e) {
    RowCascade<Op, T> c(tile);
    std::vector<T> v(tile);
    for (int64_t u = b; u < e; ++u) {
      const int64_t k = u / tiles, c0 = u % tiles * tile, w = std::min(tile, len - c0);
      T* o = out + offset_of(p, k, 0) + c0 * out_step;
      const T* result = v.data();
      if (leaves == 1) {
        leaf(k, 0, c0, w, v.data());
      } else {
        parallel_for(groups, 1, [&](int64_t gb, int64_t ge) {
          RowCascade<Op, T> cg(tile);
          std::vector<T> vg(tile);
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
  if (x.numel() == 0) {  // an empty reduction: the identity
    std::fill(o, o + out.numel(), Op::template identity<T>());
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
