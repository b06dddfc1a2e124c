// Batched products of degenerate matrices by hand loops (xsimd), where one BLAS call per matrix
// costs more than its arithmetic or BLAS has no kernel for the shape:
//  - M == N == 1 (vmap of dot): batched dot products;
//  - M == 1 or N == 1 (vmap of a matrix-vector product): batched GEMV, as dot products when the
//    matrix is contiguous along K, else as a sum of its contiguous rows scaled by the vector;
//  - K == 1 (vmap(grad) of x @ W: per-example outer products): a scaled copy of one vector per
//    output row, with non-temporal stores when the output is far larger than the caches.
// Every operand is read in place with any strides (0 included): nothing is copied.
#pragma once

#include <cstdint>

namespace lanes::kernels {

/// One operand of a batch of matrix products: matrix i starts at data + batch_offsets[i]; its
/// element (r, c) is at r * row_stride + c * col_stride.
template <class T>
struct StridedBatch {
  const T* data = nullptr;
  const int64_t* batch_offsets = nullptr;
  int64_t rows = 1, cols = 1;
  int64_t row_stride = 0, col_stride = 0;
};

/// out (batch, M, N), contiguous = a (batch, M, K) times b (batch, K, N), where M == 1, N == 1
/// or K == 1 (and none is 0). T is float or double.
template <class T>
void small_products(const StridedBatch<T>& a, const StridedBatch<T>& b, int64_t batch, T* out);

}  // namespace lanes::kernels
