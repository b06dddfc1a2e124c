// Indexing kernels: gather and scatter-add along one axis with leading batch dims (tf.gather).
//
// The layout both use: x is (batch..., pre..., n, inner...) where `axis` is the n dim and the
// first `batch_dims` dims are matched with the indices' first dims; the indices are
// (batch..., idx...). The gathered slab for (b, p, j) is x[b, p, indices[b, j], :], and the
// output / updates are (batch..., pre..., idx..., inner...).
#pragma once

#include <cstdint>
#include <vector>

#include "lanes/tensor.h"

namespace lanes::kernels {

/// The indices (integer tensor of any layout) in row-major order as int64, negative ones counted
/// from the end of an axis of `size`. Throws lanes::Error naming `op`, the bad index value, the
/// axis and its size (and x's shape) when one is out of [-size, size).
std::vector<int64_t> checked_indices(const Tensor& indices, int64_t size, const char* op,
                                     int64_t axis, const Shape& x_shape);

/// out[b, p, j, :] = x[b, p, index[b, j], :] for indices already checked by checked_indices.
/// `index_shape` is the indices' shape. Copies contiguous slabs with memcpy; threaded.
Tensor gather(const Tensor& x, const std::vector<int64_t>& index, const Shape& index_shape,
              int64_t axis, int64_t batch_dims, const Shape& out_shape);

/// A copy of x with updates[b, p, j, :] added to row index[b, j] of slab (b, p); repeated
/// indices accumulate in index order (deterministic: threads split slabs and columns, never j).
/// Integers wrap, bool accumulates as logical or. updates has x's dtype.
Tensor scatter_add(const Tensor& x, const std::vector<int64_t>& index, const Shape& index_shape,
                   const Tensor& updates, int64_t axis, int64_t batch_dims);

/// How scatter combines an update with the element it lands on.
enum class ScatterKind { Add, Set, Multiply, Min, Max };

/// scatter_add with another combination: a copy of x where each update, in index order,
/// replaces (Set: the last of repeated indices wins) or is multiplied / min-ed / max-ed into its
/// element. Threads split as in scatter_add, so the order is the same on every run.
Tensor scatter(const Tensor& x, const std::vector<int64_t>& index, const Shape& index_shape,
               const Tensor& updates, int64_t axis, int64_t batch_dims, ScatterKind kind);

}  // namespace lanes::kernels
