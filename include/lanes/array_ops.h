// More user-facing array ops (issue 19), one section per family. Same conventions as
// lanes/ops.h: numpy / jax semantics, negative axes count from the end, bad input throws
// lanes::Error naming the op, the shapes and the argument. Most are composed from the
// primitives, so they batch and differentiate through those primitives' rules.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "lanes/ops.h"

namespace lanes {

// ---- reversal ---------------------------------------------------------------------------------

/// Reverses the order of elements along each of `axes` (all axes by default), as jnp.flip.
Tensor flip(const Tensor& x, const Axes& axes = {});

// ---- cumulative scans -------------------------------------------------------------------------
// Along `axis`, element i combines elements 0..i (i..n-1 when `reverse`), as jax.lax.cumsum etc.
// The dtype is kept, except bool counts in int32 (cumsum, cumprod) and integers become float32
// (logcumsumexp). Derivatives are exact, cumprod's with zeros in x too; cummax / cummin pass the
// derivative to the element that is the running extreme (the first of equal ones).

Tensor cumsum(const Tensor& x, int64_t axis = 0, bool reverse = false);
Tensor cumprod(const Tensor& x, int64_t axis = 0, bool reverse = false);
Tensor cummax(const Tensor& x, int64_t axis = 0, bool reverse = false);
Tensor cummin(const Tensor& x, int64_t axis = 0, bool reverse = false);
/// log(cumsum(exp(x))), computed without overflow.
Tensor logcumsumexp(const Tensor& x, int64_t axis = 0, bool reverse = false);

// ---- sorting ----------------------------------------------------------------------------------
// Stable sorts along one axis; NaN sorts last. Indices are Int64. The derivative of a sorted
// value goes to the element it came from (a gather), ties included.

/// x sorted ascending along `axis` (jnp.sort).
Tensor sort(const Tensor& x, int64_t axis = -1);
/// The indices that sort x ascending along `axis`, equal values in index order (stable).
Tensor argsort(const Tensor& x, int64_t axis = -1);
/// The k largest entries along the last axis, in descending order, and their indices
/// (jax.lax.top_k: equal values in index order; the indices are Int64 here). 0 <= k <= n.
std::pair<Tensor, Tensor> top_k(const Tensor& x, int64_t k);

// ---- searching and padding --------------------------------------------------------------------

enum class Side { Left, Right };
/// jnp.searchsorted: for each of `values`, the Int64 index where it would be inserted into the
/// 1-d ascending `sorted` to keep it sorted: before equal entries (Left) or after them (Right).
/// The result has values' shape. A NaN value compares false with everything (index 0 for Left).
Tensor searchsorted(const Tensor& sorted, const Tensor& values, Side side = Side::Left);

/// lax.pad with interior padding: per dim d, low[d] copies of `value` before (negative crops),
/// high[d] after, and interior[d] >= 0 between each pair of neighbours; the size of dim d becomes
/// low + high + n + (n - 1) interior (n = 0: low + high). A name of its own rather than a pad
/// overload, so pad(x, {1}, {1}, 2.0) keeps meaning the fill value.
Tensor pad_interior(const Tensor& x, const Shape& low, const Shape& high, const Shape& interior,
                    double value = 0.0);

// ---- scatter modes ----------------------------------------------------------------------------

/// How scatter combines an update with the element of x it lands on (jnp's x.at[i].add / set /
/// multiply / min / max).
enum class ScatterMode { Add, Set, Multiply, Min, Max };
/// scatter_add (lanes/ops.h) with a mode: the same indices, axis, batch_dims and updates (broadcast
/// to the gathered shape, cast to x's dtype). Repeated indices: updates apply in row-major index
/// order, so Set keeps the last one, and Add / Multiply / Min / Max combine x's element with all
/// of them. Derivatives: Set's go to x where nothing landed and to the surviving updates;
/// Min / Max share evenly among the elements equal to the result (as max does); Multiply's are
/// exact, zero updates at repeated indices included.
Tensor scatter(const Tensor& x, const Tensor& indices, const Tensor& updates, ScatterMode mode,
               int64_t axis = 0, int64_t batch_dims = 0);

// ---- einsum -----------------------------------------------------------------------------------

/// numpy / jnp einsum over dot_general. Supported: letter labels (a-z, A-Z) per operand dim, any
/// number of operands (contracted left to right, two at a time), an explicit output ("ij,jk->ik",
/// batch "bij,bjk->bik", outer "i,j->ij", transposes "ij->ji", sums "ij->") or the implicit one
/// (labels used once, sorted), repeated labels in one operand (diagonals "ii->i", traces "ii"),
/// and "..." for leading or inner dims that broadcast numpy-style (size 1 against n). Operands are
/// promoted to one dtype. Not supported (lanes::Error naming the spec): repeated output labels,
/// output labels in no input, characters other than letters, ',', '->', '...' and spaces, and a
/// label with two sizes (other than a size-1 "..." dim).
Tensor einsum(const std::string& spec, const std::vector<Tensor>& operands);

}  // namespace lanes
