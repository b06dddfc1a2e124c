#include "kernels/matmul.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstring>
#include <numeric>
#include <optional>
#include <type_traits>

#include "core/arena.h"
#include "kernels/gemm.h"
#include "kernels/gemm_in_order.h"
#include "kernels/matmul_small.h"
#include "kernels/matmul_xsmm.h"
#include "lanes/cost.h"
#include "lanes/determinism.h"
#include "lanes/parallel.h"
#include "runtime/thread_pool.h"

namespace lanes::kernels {

namespace {

std::atomic<int64_t> g_gemm_calls{0};
std::atomic<int64_t> g_copied_elements{0};
std::atomic<int64_t> g_xsmm_products{0};

// A group of dims flattened into one: `size` elements `stride` apart.
struct Dim {
  int64_t size = 1;
  int64_t stride = 0;
};

// Merges dims [begin, end) of a view into one dim; false when they are not evenly spaced. With
// `perm`, the view is t's dims in that order (checked before any view is made).
bool flatten(const Tensor& t, const std::vector<int64_t>* perm, size_t begin, size_t end,
             Dim& out) {
  out = Dim{};
  bool any = false;
  for (size_t i = begin; i < end; ++i) {
    const size_t d = perm ? size_t((*perm)[i]) : i;
    const int64_t size = t.shape()[d], stride = t.strides()[d];
    if (size == 1) continue;
    if (any && out.stride != stride * size) return false;
    out.size *= size;
    out.stride = stride;
    any = true;
  }
  return true;
}

// A 2-d operand of one GEMM: rows x cols (M x K for lhs, K x N for rhs).
struct Matrix {
  Dim rows, cols;
  bool trans = false;  // column-major: BLAS reads it transposed
  int64_t ld = 1;      // BLAS leading dimension
};

// Describes the matrix to BLAS: row-major (unit column stride) or column-major (unit row stride)
// with a leading dimension BLAS accepts (>= the length of a row resp. column, and an int).
bool blas_layout(Matrix& m) {
  const int64_t r = m.rows.size, c = m.cols.size;
  if (m.cols.stride == 1 || c == 1) {
    m.trans = false;
    m.ld = r == 1 ? std::max<int64_t>(1, c) : m.rows.stride;
    if (m.ld >= std::max<int64_t>(1, c) && m.ld <= INT_MAX) return true;
  }
  if (m.rows.stride == 1 || r == 1) {
    m.trans = true;
    m.ld = c == 1 ? std::max<int64_t>(1, r) : m.cols.stride;
    if (m.ld >= std::max<int64_t>(1, r) && m.ld <= INT_MAX) return true;
  }
  return false;
}

// One operand permuted to (batch dims, row dims, col dims), with its matrix once it fits.
struct Operand {
  Tensor view;
  size_t nb = 0, nr = 0;  // number of batch dims and of row dims
  Matrix m;
};

// Whether the operand can be used in place. BLAS needs a unit stride in one of the two dims; the
// integer kernel walks any strides but wants unit column stride for the rhs it streams; the
// small kernels (neither) walk any strides.
// (fits_as: of t's dims in the order `perm`, before the view is made; m receives the matrix.)
bool fits_as(const Tensor& t, const std::vector<int64_t>* perm, size_t nb, size_t nr, bool blas,
             bool unit_cols, Matrix& m) {
  const size_t n = perm ? perm->size() : t.shape().size();
  if (!flatten(t, perm, nb, nb + nr, m.rows)) return false;
  if (!flatten(t, perm, nb + nr, n, m.cols)) return false;
  if (blas) return blas_layout(m);
  return !unit_cols || m.cols.stride == 1 || m.cols.size == 1;
}

bool fits(Operand& op, bool blas, bool unit_cols) {
  return fits_as(op.view, nullptr, op.nb, op.nr, blas, unit_cols, op.m);
}

Tensor permuted(const Tensor& t, const std::vector<int64_t>& perm) {
  Shape shape(perm.size());
  Strides strides(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    shape[i] = t.shape()[perm[i]];
    strides[i] = t.strides()[perm[i]];
  }
  return t.view(std::move(shape), std::move(strides), t.offset());
}

Operand make_operand(const Tensor& t, const std::vector<int64_t>& perm, size_t nb, size_t nr,
                     bool blas, bool unit_cols) {
  Operand op{permuted(t, perm), nb, nr, {}};
  if (fits(op, blas, unit_cols)) return op;
  op.view = op.view.contiguous();  // one copy, in (batch, rows, cols) order
  g_copied_elements += op.view.numel();
  fits(op, blas, unit_cols);  // a contiguous view always fits
  return op;
}

// Element offset of batch index b (row-major over the operand's batch dims).
int64_t batch_offset(const Operand& op, int64_t b) {
  int64_t offset = 0;
  for (size_t d = op.nb; d-- > 0;) {
    offset += (b % op.view.shape()[d]) * op.view.strides()[d];
    b /= op.view.shape()[d];
  }
  return offset;
}

// c = a @ b, c row-major with rows `ldc` apart (0: b's column count, a dense c). Returns whether
// it told `rows_done` of every row (gemm.h).
template <class T>
bool gemm(const Matrix& a, const Matrix& b, const T* pa, const T* pb, T* pc, int64_t ldc = 0,
          const RowsDone* rows_done = nullptr) {
  const int m = static_cast<int>(a.rows.size), n = static_cast<int>(b.cols.size),
            k = static_cast<int>(a.cols.size), ldc_ = ldc ? static_cast<int>(ldc) : n;
  return kernels::gemm<T>(a.trans, b.trans, m, n, k, pa, a.ld, pb, b.ld, T(0), pc, ldc_, rows_done);
}

// Runs gemm_at(i) for i < count, GEMMs of `flops` each: parallel over them (each GEMM on one
// thread), unless there are a few large ones, which each split over the pool (gemm.h). The
// choice depends on the shapes and the core count, not on set_num_threads.
template <class GemmAt>
void run_gemms(int64_t count, double flops, const GemmAt& gemm_at) {
  g_gemm_calls += count;  // once, not per GEMM: an atomic shared by threads costs
  auto run = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) gemm_at(i);
  };
  if (count == 1 || (flops >= kParallelGemmFlops && count < runtime::max_chunks()))
    return run(0, count);
  const auto grain = static_cast<int64_t>(std::max(1.0, 2e5 / flops));  // a few us per chunk
  parallel_for(count, grain, run);
}

// The GEMMs of a batch. With an epilogue, each matrix's blocks of rows go to it as they are
// finished, or the whole matrix after a GEMM that did not split by rows (in parallel over its rows
// unless the GEMM already ran on one of the pool's threads).
template <class T>
void gemm_batched(const Operand& a, const Operand& b, int64_t batch, T* out,
                  const Epilogue* epilogue = nullptr) {
  const T* pa = a.view.data<T>();
  const T* pb = b.view.data<T>();
  const int64_t m = a.m.rows.size, n = b.m.cols.size, mn = m * n;
  run_gemms(batch, 2.0 * double(mn) * double(a.m.cols.size), [&](int64_t i) {
    const T *ai = pa + batch_offset(a, i), *bi = pb + batch_offset(b, i);
    if (!epilogue) return void(gemm(a.m, b.m, ai, bi, out + i * mn));
    const RowsDone rows_done = [&](int64_t r0, int64_t r1) {
      epilogue->block(i * mn + r0 * n, i * mn + r1 * n);
    };
    if (!gemm(a.m, b.m, ai, bi, out + i * mn, 0, &rows_done))
      parallel_for(m, std::max<int64_t>(1, 4096 / n), rows_done);
  });
}

// Each product one FMA chain per element (gemm_in_order.h), parallel over the batch when the
// products are small (a large one splits itself).
template <class T>
void in_order_batched(const Operand& a, const Operand& b, int64_t batch, T* out) {
  const int64_t m = a.m.rows.size, n = b.m.cols.size, k = a.m.cols.size;
  const T* pa = a.view.data<T>();
  const T* pb = b.view.data<T>();
  if (m * n <= 16 && k > 1) {  // tiny products (batched dots): every output of the batch at once
    std::vector<int64_t> a_at(static_cast<size_t>(batch)), b_at(static_cast<size_t>(batch));
    for (int64_t i = 0; i < batch; ++i) a_at[i] = batch_offset(a, i), b_at[i] = batch_offset(b, i);
    const int64_t per = m * n;
    parallel_for(batch * per, std::max<int64_t>(8, 32768 / k), [&](int64_t begin, int64_t end) {
      chains<T>(end - begin, k, a.m.cols.stride, b.m.rows.stride, false, [&](int64_t o) {
        const int64_t g = begin + o, i = g / per, r = g % per / n, c = g % n;
        return Chain<T>{pa + a_at[i] + r * a.m.rows.stride, pb + b_at[i] + c * b.m.cols.stride,
                        out + g};
      });
    });
    g_gemm_calls += batch;
    return;
  }
  const double flops = 2.0 * double(m) * double(n) * double(k);
  parallel_for(batch, std::max<int64_t>(1, int64_t(2e5 / std::max(flops, 1.0))),
               [&](int64_t begin, int64_t end) {
                 for (int64_t i = begin; i < end; ++i)
                   gemm_in_order<T>(m, n, k,
                                    {pa + batch_offset(a, i), a.m.rows.stride, a.m.cols.stride},
                                    {pb + batch_offset(b, i), b.m.rows.stride, b.m.cols.stride},
                                    {out + i * m * n, n, 1});
               });
  g_gemm_calls += batch;
}

// Products with small N and K through libxsmm's kernels (matmul_xsmm.h says why): false, having
// written nothing, when the shape does not suit them or libxsmm has no kernel for it.
template <class T>
bool xsmm_batched(const Operand& a, const Operand& b, int64_t batch, T* out,
                  const Epilogue* epilogue) {
  const int64_t m = a.m.rows.size, n = b.m.cols.size, k = a.m.cols.size;
  if (!xsmm_suits(m, n, k, b.m.trans)) return false;
  std::vector<int64_t> a_offsets(batch), b_offsets(batch);
  for (int64_t i = 0; i < batch; ++i)
    a_offsets[i] = batch_offset(a, i), b_offsets[i] = batch_offset(b, i);
  const XsmmOperand<T> xa{a.view.data<T>(), a_offsets.data(), a.m.trans, a.m.ld};
  const XsmmOperand<T> xb{b.view.data<T>(), b_offsets.data(), b.m.trans, b.m.ld};
  const RowsDone rows_done = [&](int64_t r0, int64_t r1) { epilogue->block(r0 * n, r1 * n); };
  if (!xsmm_products(xa, xb, batch, m, n, k, XsmmOutput<T>{out, m * n, n},
                     epilogue ? &rows_done : nullptr))
    return false;
  g_gemm_calls += batch;
  g_xsmm_products += batch;
  return true;
}

// ---- products with the identity -------------------------------------------------------------
//
// jacrev is a vmap of a pullback over the rows of the identity (jax's vmap(vjp) spelling too), so
// its first product is I @ W: a full GEMM (512^3 for a 512-wide layer, half of jacobian_mlp's
// time) that returns W. The operands are plain tensors by then, so the kernel checks: a matrix
// that is not the identity fails on its first entries, and a large GEMM is worth the check.

// The scans below fold bit patterns with OR and max: GCC vectorizes those reductions, but not
// `ok &= p[j] == 0` or `bad |= isinf-test` (measured 3.5 vs 40 us for a 256x256 identity).
template <class T>
using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;

template <class T>
Bits<T> bits_at(const T* p) {
  Bits<T> b;
  std::memcpy(&b, p, sizeof b);
  return b;
}

// Whether the n values from p, `stride` apart, are all zero: every bit but the sign clear (-0.0
// is a zero, as for ==).
template <class T>
bool zeros_strided(const T* p, int64_t stride, int64_t n) {
  Bits<T> acc = 0;
  for (int64_t j = 0; j < n; ++j) acc |= bits_at(p + j * stride) << 1;
  return acc == 0;
}

template <class T>
bool zeros(const T* p, int64_t n) {
  Bits<T> acc = 0;
  for (int64_t j = 0; j < n; ++j) acc |= bits_at(p + j) << 1;
  return acc == 0;
}

// Whether the square matrix at p is the identity. The identity is its own transpose, so the scan
// runs along whichever dim has the smaller stride (memory order for row- or column-major).
template <class T>
bool is_identity(const T* p, const Matrix& m) {
  const int64_t n = m.rows.size;
  if (n != m.cols.size || n < 2) return false;
  const bool by_rows = std::abs(m.cols.stride) <= std::abs(m.rows.stride);
  const int64_t inner = by_rows ? m.cols.stride : m.rows.stride;
  const int64_t outer = by_rows ? m.rows.stride : m.cols.stride;
  if (p[0] != T(1) || p[inner] != T(0) || p[outer] != T(0)) return false;
  // Over the pool, like all_finite: on one thread, the scan of jacobian_mlp's 512 x 512 identity
  // was a fifth of its product-with-the-identity's time, the other thread waiting.
  std::atomic<bool> identity{true};
  parallel_for(n, std::max<int64_t>(1, 32768 / n), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end && identity.load(std::memory_order_relaxed); ++i) {
      const T* line = p + i * outer;
      if (line[i * inner] != T(1) ||
          (inner == 1 ? !zeros(line, i) || !zeros(line + i + 1, n - i - 1)
                      : !zeros_strided(line, inner, i) ||
                            !zeros_strided(line + (i + 1) * inner, inner, n - i - 1)))
        identity = false;
    }
  });
  return identity;
}

// Whether the n values from p, `step` apart, are all finite: no value has all exponent bits set,
// so the largest masked exponent is below the all-ones one (std::isfinite stays scalar).
// With `nonzero`, also whether none is +-0: the smallest magnitude's bits are not 0.
template <class T>
bool all_finite(const T* p, int64_t step, int64_t n, bool nonzero) {
  constexpr Bits<T> kExponent =
      sizeof(T) == 4 ? Bits<T>(0x7f800000u) : Bits<T>(0x7ff0000000000000ull);
  constexpr Bits<T> kMagnitude = Bits<T>(~Bits<T>(0)) >> 1;
  Bits<T> largest = 0, smallest = kMagnitude;
  for (int64_t j = 0; j < n; ++j) {
    const Bits<T> b = bits_at(p + j * step);
    largest = std::max<Bits<T>>(largest, b & kExponent);
    smallest = std::min<Bits<T>>(smallest, b & kMagnitude);
  }
  return largest != kExponent && (!nonzero || smallest != 0);
}

// Whether every entry of the matrix at p is finite, read in memory order.
template <class T>
bool all_finite(const T* p, const Matrix& m, bool nonzero) {
  const bool by_rows = std::abs(m.cols.stride) <= std::abs(m.rows.stride);
  const Dim inner = by_rows ? m.cols : m.rows, outer = by_rows ? m.rows : m.cols;
  std::atomic<bool> finite{true};
  parallel_for(outer.size, std::max<int64_t>(1, 32768 / std::max<int64_t>(1, inner.size)),
               [&](int64_t begin, int64_t end) {
                 for (int64_t i = begin; i < end && finite; ++i)
                   if (!all_finite(p + i * outer.stride, inner.stride, inner.size, nonzero))
                     finite = false;
               });
  return finite;
}

// The (rows x cols) matrix of `op` as a tensor of `shape` with those dims: a view, no copy.
Tensor matrix_view(const Operand& op, const Shape& shape) {
  return op.view.view(shape, {op.m.rows.stride, op.m.cols.stride}, op.view.offset());
}

// a @ b when a large product with no batch dims has the identity as a factor: a view of the other
// factor, unless it holds an inf or NaN, whose products with the identity's zeros IEEE makes NaN
// (the GEMM then runs after all, for exact semantics). Batch-invariant products (`in_order`)
// also need the other factor free of zeros: the chain of every element is then exactly its
// value, while a zero's sign would come out of the chain's sums of zeros.
template <class T>
std::optional<Tensor> identity_product(const Operand& a, const Operand& b, const Shape& shape,
                                       bool in_order, FiniteOperands finite) {
  const double flops = 2.0 * double(a.m.rows.size) * double(a.m.cols.size) * double(b.m.cols.size);
  if (flops < kIdentityCheckFlops || shape.size() != 2) return {};
  const T* pa = a.view.data<T>();
  const T* pb = b.view.data<T>();
  // (Batch-invariant products also need no zeros, which the hint does not say.)
  const bool left =
      is_identity(pa, a.m) && ((finite.rhs && !in_order) || all_finite(pb, b.m, in_order));
  if (!left &&
      !(is_identity(pb, b.m) && ((finite.lhs && !in_order) || all_finite(pa, a.m, in_order))))
    return {};
  detail::skip_flops(flops);  // a FlopCounter counts the work done, not the nominal product's
  return matrix_view(left ? b : a, shape);
}

// A product with a degenerate matrix (M, N or K of 1) by the hand loops of matmul_small.h, which
// read any strides. One call, however large the batch.
template <class T>
void small_batched(const Operand& a, const Operand& b, int64_t batch, T* out) {
  detail::LocalArena<512> arena;  // the offsets of a small batch, without the heap
  std::pmr::vector<int64_t> a_offsets(size_t(batch), arena.resource()),
      b_offsets(size_t(batch), arena.resource());
  for (int64_t i = 0; i < batch; ++i)
    a_offsets[i] = batch_offset(a, i), b_offsets[i] = batch_offset(b, i);
  auto view = [](const Operand& op, const std::pmr::vector<int64_t>& offsets) {
    const Dim &rows = op.m.rows, &cols = op.m.cols;
    return StridedBatch<T>{op.view.data<T>(), offsets.data(), rows.size,
                           cols.size,         rows.stride,    cols.stride};
  };
  g_gemm_calls += 1;
  small_products(view(a, a_offsets), view(b, b_offsets), batch, out);
}

// Accumulator for the integer kernel: unsigned of the output's width (at least 32 bits), so that
// overflow wraps as the stored integer type would, without undefined behaviour.
template <class T>
using Acc = std::conditional_t<(sizeof(T) > 4) || std::is_same_v<T, bool>, uint64_t, uint32_t>;

// Rows [begin, end) of the stacked (batch * M) x N output: an i-k-j loop that streams rows of b
// into an accumulator row.
template <class T>
void int_rows(const Operand& a, const Operand& b, int64_t begin, int64_t end, T* out) {
  const int64_t m = a.m.rows.size, k = a.m.cols.size, n = b.m.cols.size;
  const T* pa = a.view.data<T>();
  const T* pb = b.view.data<T>();
  std::vector<Acc<T>> acc(n);
  for (int64_t r = begin; r < end; ++r) {
    const int64_t batch = r / m, i = r % m;
    const T* arow = pa + batch_offset(a, batch) + i * a.m.rows.stride;
    const T* bmat = pb + batch_offset(b, batch);
    std::fill(acc.begin(), acc.end(), Acc<T>{0});
    for (int64_t p = 0; p < k; ++p) {
      const auto x = static_cast<Acc<T>>(arow[p * a.m.cols.stride]);
      if (x == 0) continue;
      const T* brow = bmat + p * b.m.rows.stride;
      for (int64_t j = 0; j < n; ++j) acc[j] += x * static_cast<Acc<T>>(brow[j]);
    }
    T* orow = out + r * n;
    for (int64_t j = 0; j < n; ++j) {
      if constexpr (std::is_same_v<T, bool>)
        orow[j] = acc[j] != 0;
      else
        orow[j] = static_cast<T>(acc[j]);
    }
  }
}

template <class T>
void int_matmul(const Operand& a, const Operand& b, int64_t batch, T* out) {
  const int64_t rows = batch * a.m.rows.size;
  const int64_t row_work = std::max<int64_t>(1, a.m.cols.size * b.m.cols.size);
  g_gemm_calls += batch;
  parallel_for(rows, std::max<int64_t>(1, 32768 / row_work),
               [&](int64_t begin, int64_t end) { int_rows<T>(a, b, begin, end, out); });
}

bool contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

std::vector<int64_t> free_dims(int64_t ndim, const std::vector<int64_t>& contracting,
                               const std::vector<int64_t>& batch) {
  std::vector<int64_t> out;
  out.reserve(size_t(ndim));
  for (int64_t d = 0; d < ndim; ++d)
    if (!contains(contracting, d) && !contains(batch, d)) out.push_back(d);
  return out;
}

// The contracting pairs may be taken in any order (the same for both operands). Tries the given
// order and the orders that sort either operand's contracting strides descending, and keeps the
// one that copies the fewest elements.
template <class Copies>
std::vector<size_t> contracting_order(const Tensor& lhs, const Tensor& rhs,
                                      const std::vector<int64_t>& lc,
                                      const std::vector<int64_t>& rc, const Copies& copies) {
  std::vector<size_t> given(lc.size());
  std::iota(given.begin(), given.end(), 0);
  if (given.size() < 2) return given;  // one order only
  std::vector<size_t> best = given;
  int64_t best_cost = copies(given);
  for (int side = 0; side < 2 && best_cost > 0; ++side) {
    const Tensor& t = side == 0 ? lhs : rhs;
    const std::vector<int64_t>& dims = side == 0 ? lc : rc;
    std::vector<size_t> order = given;
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
      return t.strides()[dims[x]] > t.strides()[dims[y]];
    });
    const int64_t cost = copies(order);
    if (cost < best_cost) best = order, best_cost = cost;
  }
  return best;
}

// column_blocks' products through libxsmm, which writes each block of columns in place (rows
// blocks x width apart) in parallel over the blocks and their rows; false when the shape does not
// suit it.
template <class T>
bool xsmm_columns(const Operand& a, const Operand& block, int64_t blocks, int64_t block_stride,
                  T* out) {
  const int64_t m = a.m.rows.size, n = block.m.cols.size, k = a.m.cols.size;
  if (!xsmm_suits(m, n, k, block.m.trans)) return false;
  std::vector<int64_t> a_offsets(blocks, 0), b_offsets(blocks);
  for (int64_t j = 0; j < blocks; ++j) b_offsets[j] = j * block_stride;
  const XsmmOperand<T> xa{a.view.data<T>(), a_offsets.data(), a.m.trans, a.m.ld};
  const XsmmOperand<T> xb{block.view.data<T>(), b_offsets.data(), block.m.trans, block.m.ld};
  if (!xsmm_products(xa, xb, blocks, m, n, k, XsmmOutput<T>{out, n, blocks * n})) return false;
  g_gemm_calls += blocks;
  g_xsmm_products += blocks;
  return true;
}

// a @ rhs for an rhs whose free dims (N) do not merge into one evenly spaced dim but whose dims
// after the first free one do: the weights of a vmap over models beside a shared input
// (x @ W_b, W_b's model axis outside its K axis). Copying the rhs into a (K, N) matrix made one
// GEMM that two threads share poorly (472 vs 375 us for (512, 64) @ (8, 64, 128)); instead one
// GEMM per index of the first free dim fills its block of output columns (425 us). Returning the
// dense blocks as a view with the models outermost made the consumers of that layout 2x slower
// at first, and still ~10% slower end to end once the elementwise kernels took runs of rows.
// Blocks small enough for libxsmm go there instead (xsmm_columns), which also spares the scratch.
// `pr` is the rhs permuted to (K dims, N dims).
// Returns nothing when the rhs fits BLAS as it is, or when its other N dims do not merge either.
template <class T>
std::optional<Tensor> column_blocks(const Operand& a, const Tensor& rhs,
                                    const std::vector<int64_t>& pr_whole, size_t nk,
                                    const Shape& out_shape) {
  const size_t nn = pr_whole.size() - nk;
  if (nn < 2) return {};
  Matrix whole;
  if (fits_as(rhs, &pr_whole, 0, nk, true, false, whole)) return {};
  const int64_t outer = pr_whole[nk];
  std::vector<int64_t> pr = pr_whole;
  pr.erase(pr.begin() + int64_t(nk));
  Operand block{permuted(rhs, pr), 0, nk, {}};
  if (!fits(block, true, false)) return {};
  Tensor out = Tensor::empty(out_shape, rhs.dtype());
  const int64_t blocks = rhs.shape()[outer], width = block.m.cols.size;
  const T* pa = a.view.data<T>();
  const T* pb = block.view.data<T>();
  T* po = out.mutable_data<T>();
  const double flops = 2.0 * double(a.m.rows.size) * double(a.m.cols.size) * double(width);
  const int64_t rows = a.m.rows.size;
  if (xsmm_columns(a, block, blocks, rhs.strides()[outer], po)) return out;
  run_gemms(blocks, flops, [&](int64_t j) {
    // Through a dense scratch block: BLAS zeroes C before a beta = 0 product, and for a C whose
    // columns are strided (ldc != its width) it does so a float at a time, which took 17% of the
    // ensemble's call.
    thread_local std::vector<T> scratch;
    scratch.resize(size_t(rows * width));
    gemm(a.m, block.m, pa, pb + j * rhs.strides()[outer], scratch.data(), width);
    for (int64_t r = 0; r < rows; ++r)
      std::copy_n(scratch.data() + r * width, width, po + r * blocks * width + j * width);
  });
  return out;
}

}  // namespace

DotCounters dot_counters() {
  return {g_gemm_calls.load(), g_copied_elements.load(), g_xsmm_products.load()};
}

namespace {

// dot_general's product. With an epilogue: starts it on the output of a GEMM kernel once that is
// allocated (`started`), and sets `by_blocks` when the kernel told it of every block.
Tensor product(const Tensor& lhs, const Tensor& rhs, const std::vector<int64_t>& lc,
               const std::vector<int64_t>& rc, const std::vector<int64_t>& lb,
               const std::vector<int64_t>& rb, Epilogue* epilogue, FiniteOperands finite,
               bool& started, bool& by_blocks) {
  const std::vector<int64_t> lf = free_dims(lhs.ndim(), lc, lb), rf = free_dims(rhs.ndim(), rc, rb);
  Shape out_shape;
  out_shape.reserve(lb.size() + lf.size() + rf.size());
  for (int64_t d : lb) out_shape.push_back(lhs.shape()[d]);
  for (int64_t d : lf) out_shape.push_back(lhs.shape()[d]);
  for (int64_t d : rf) out_shape.push_back(rhs.shape()[d]);
  if (shape_numel(out_shape) == 0) return Tensor::empty(out_shape, lhs.dtype());
  int64_t k = 1;
  for (int64_t d : lc) k *= lhs.shape()[d];
  if (k == 0) {  // an empty sum
    Tensor out = Tensor::empty(out_shape, lhs.dtype());
    std::memset(out.raw_mutable_data(), 0, out.numel() * dtype_size(out.dtype()));
    return out;
  }
  int64_t m = 1, n = 1;
  for (int64_t d : lf) m *= lhs.shape()[d];
  for (int64_t d : rf) n *= rhs.shape()[d];
  // Float products with a degenerate matrix go to the hand loops, which read any strides; the
  // others to BLAS, which needs a unit stride in each matrix; integers to the i-k-j loop, which
  // needs it in the rhs rows.
  // Batch-invariant products (lanes/determinism.h) read any strides too.
  const bool in_order = is_floating(lhs.dtype()) && batch_invariant();
  // Outer products (K == 1, M and N > 1: matmul_small's run_outer) are the same in both, each
  // element the plain product.
  const bool small = is_floating(lhs.dtype()) &&
                     (in_order ? k == 1 && m > 1 && n > 1 : m == 1 || n == 1 || k == 1);
  const bool blas = is_floating(lhs.dtype()) && !small && !in_order;
  const bool chained = in_order && !small;
  const bool unit_cols = !is_floating(lhs.dtype());
  check(!blas || std::max({m, n, k}) <= INT_MAX, "dot_general: GEMM of ", m, " x ", k, " by ", k,
        " x ", n, " is too large for BLAS's int sizes");
  // Permutations to (batch, M, K) and (batch, K, N) for a given order of the contracting pairs.
  auto perms = [&](const std::vector<size_t>& order) {
    std::vector<int64_t> pl, pr;
    pl.reserve(lhs.shape().size());
    pr.reserve(rhs.shape().size());
    pl.insert(pl.end(), lb.begin(), lb.end());
    pr.insert(pr.end(), rb.begin(), rb.end());
    pl.insert(pl.end(), lf.begin(), lf.end());
    for (size_t i : order) pl.push_back(lc[i]), pr.push_back(rc[i]);
    pr.insert(pr.end(), rf.begin(), rf.end());
    return std::make_pair(std::move(pl), std::move(pr));
  };
  auto copies = [&](const std::vector<size_t>& order) {
    const auto [pl, pr] = perms(order);
    Matrix m;
    return (fits_as(lhs, &pl, lb.size(), lf.size(), blas, false, m) ? 0 : lhs.numel()) +
           (fits_as(rhs, &pr, rb.size(), lc.size(), blas, unit_cols, m) ? 0 : rhs.numel());
  };
  // Batch-invariant products contract in the order given: the order that spares copies depends
  // on the layout, and a vmapped operand's layout is not the example's.
  auto order = [&] {
    if (!in_order) return contracting_order(lhs, rhs, lc, rc, copies);
    std::vector<size_t> given(lc.size());
    std::iota(given.begin(), given.end(), 0);
    return given;
  };
  const auto [pl, pr] = perms(order());
  const Operand a = make_operand(lhs, pl, lb.size(), lf.size(), blas, false);
  if (blas && lb.empty()) {
    std::optional<Tensor> blocked;
    visit_dtype(lhs.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_floating_point_v<T>)
        blocked = column_blocks<T>(a, rhs, pr, lc.size(), out_shape);
    });
    if (blocked) return *blocked;
  }
  const Operand b = make_operand(rhs, pr, rb.size(), lc.size(), blas, unit_cols);
  int64_t batch = 1;
  for (int64_t d : lb) batch *= lhs.shape()[d];
  std::optional<Tensor> view;  // checked before the output is allocated: it may not be needed
  if ((blas || chained) && lb.empty())
    visit_dtype(lhs.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_floating_point_v<T>)
        view = identity_product<T>(a, b, out_shape, in_order, finite);
    });
  if (view) return *view;
  Tensor out = Tensor::empty(out_shape, lhs.dtype());
  if (epilogue) epilogue->start(out), started = true;
  visit_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_floating_point_v<T>)
      int_matmul<T>(a, b, batch, out.mutable_data<T>());
    else if (chained)
      in_order_batched<T>(a, b, batch, out.mutable_data<T>());
    else if (small)
      small_batched<T>(a, b, batch, out.mutable_data<T>());
    else {
      if (!xsmm_batched<T>(a, b, batch, out.mutable_data<T>(), epilogue))
        gemm_batched<T>(a, b, batch, out.mutable_data<T>(), epilogue);
      by_blocks = true;  // either told the epilogue of every block
    }
  });
  return out;
}

}  // namespace

Tensor dot_general(const Tensor& lhs, const Tensor& rhs, const std::vector<int64_t>& lc,
                   const std::vector<int64_t>& rc, const std::vector<int64_t>& lb,
                   const std::vector<int64_t>& rb, Epilogue* epilogue, FiniteOperands finite) {
  bool started = false, by_blocks = false;
  const Tensor out = product(lhs, rhs, lc, rc, lb, rb, epilogue, finite, started, by_blocks);
  if (epilogue && !by_blocks) {
    if (!started) epilogue->start(out);
    epilogue->all();
  }
  return out;
}

bool all_finite(const Tensor& t) {
  bool finite = true;
  visit_dtype(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      const Tensor flat = t.contiguous();
      finite = all_finite(flat.data<T>(), 1, flat.numel(), false);
    }
  });
  return finite;
}

}  // namespace lanes::kernels
