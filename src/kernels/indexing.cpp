#include "kernels/indexing.h"

#include <algorithm>
#include <array>
#include <type_traits>

#include "core/strided.h"
#include "kernels/structure.h"
#include "lanes/parallel.h"

namespace lanes::kernels {

namespace {

// x as (batch, pre, n, inner) and the indices as (batch, count), each group flattened.
struct Dims {
  int64_t batch = 1, pre = 1, n = 1, count = 1, inner = 1;
};

Dims dims_of(const Shape& x, const Shape& index_shape, int64_t axis, int64_t batch_dims) {
  Dims d;
  for (int64_t i = 0; i < batch_dims; ++i) d.batch *= x[i];
  for (int64_t i = batch_dims; i < axis; ++i) d.pre *= x[i];
  d.n = x[axis];
  for (size_t i = batch_dims; i < index_shape.size(); ++i) d.count *= index_shape[i];
  for (size_t i = axis + 1; i < x.size(); ++i) d.inner *= x[i];
  return d;
}

// Element offset in x of slab `bp` (row-major over the dims before `axis`).
int64_t slab_offset(int64_t bp, const Tensor& x, int64_t axis) {
  int64_t offset = 0;
  for (int64_t d = axis - 1; d >= 0; --d) {
    offset += bp % x.shape()[d] * x.strides()[d];
    bp /= x.shape()[d];
  }
  return offset;
}

// a + b without undefined behaviour: integers wrap (two's complement), bool is logical or.
template <class T>
T accumulate(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    return a || b;
  } else if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return a + b;
  }
}

// How one update combines with what is already there (ScatterKind), defined for every dtype:
// integer products wrap, bool multiplies / mins as and, maxes as or, and a NaN on either side of
// a float min / max wins (as maximum and minimum do).
template <class T>
T combine(ScatterKind kind, T a, T b) {
  switch (kind) {
    case ScatterKind::Add:
      return accumulate(a, b);
    case ScatterKind::Set:
      return b;
    case ScatterKind::Multiply:
      if constexpr (std::is_same_v<T, bool>) {
        return a && b;
      } else if constexpr (std::is_integral_v<T>) {
        using U = std::make_unsigned_t<T>;
        return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
      } else {
        return a * b;
      }
    case ScatterKind::Min:
    case ScatterKind::Max:
      if constexpr (std::is_floating_point_v<T>)
        if (a != a || b != b) return a != a ? a : b;
      return (kind == ScatterKind::Max) == (b > a) ? b : a;
  }
  return a;
}

}  // namespace

std::vector<int64_t> checked_indices(const Tensor& indices, int64_t size, const char* op,
                                     int64_t axis, const Shape& x_shape) {
  std::vector<int64_t> index = indices.to_vector<int64_t>();
  for (int64_t& i : index) {
    check(i >= -size && i < size, op, ": index ", i, " is out of range for axis ", axis,
          " of size ", size, " (x of shape ", fmt(x_shape), ", indices of shape ",
          fmt(indices.shape()), ")");
    if (i < 0) i += size;
  }
  return index;
}

Tensor gather(const Tensor& x, const std::vector<int64_t>& index, const Shape& index_shape,
              int64_t axis, int64_t batch_dims, const Shape& out_shape) {
  Tensor out = Tensor::empty(out_shape, x.dtype());
  if (out.numel() == 0) return out;
  const Dims d = dims_of(x.shape(), index_shape, axis, batch_dims);
  // The slab copied for one index: x's dims after `axis`, simplified.
  Shape slab(x.shape().begin() + axis + 1, x.shape().end());
  std::array<Strides, 1> slab_strides{Strides(x.strides().begin() + axis + 1, x.strides().end())};
  detail::coalesce(slab, slab_strides);
  const bool contiguous = slab.size() == 1 && slab_strides[0][0] == 1;
  const int64_t len = slab.back(), step = slab_strides[0].back(), rows = detail::num_rows(slab);
  const int64_t axis_stride = x.strides()[axis];
  const char* in = static_cast<const char*>(x.raw_data());
  char* dst = static_cast<char*>(out.raw_mutable_data());
  visit_size(dtype_size(x.dtype()), [&](auto size) {
    constexpr size_t S = decltype(size)::value;
    auto copy_slab = [&](char* to, const char* from) {
      if (contiguous) {
        if (d.inner == 1)
          std::memcpy(to, from, S);
        else
          std::memcpy(to, from, d.inner * S);
        return;
      }
      detail::for_each_row(slab, slab_strides, 0, rows, [&](const std::array<int64_t, 1>& off) {
        copy_run<S>(to, 1, from + off[0] * S, step, 0, len);
        to += len * S;
      });
    };
    // One task row is one (batch, pre, index) triple: an output slab of `inner` elements.
    parallel_for(d.batch * d.pre * d.count, std::max<int64_t>(1, kCopyGrain / d.inner),
                 [&](int64_t begin, int64_t end) {
                   int64_t current = -1, base = 0;
                   for (int64_t r = begin; r < end; ++r) {
                     const int64_t bp = r / d.count, j = r % d.count;
                     if (bp != current) base = slab_offset(current = bp, x, axis);
                     const int64_t i = index[bp / d.pre * d.count + j];
                     copy_slab(dst + r * d.inner * S, in + (base + i * axis_stride) * S);
                   }
                 });
  });
  return out;
}

Tensor scatter_add(const Tensor& x, const std::vector<int64_t>& index, const Shape& index_shape,
                   const Tensor& updates, int64_t axis, int64_t batch_dims) {
  return scatter(x, index, index_shape, updates, axis, batch_dims, ScatterKind::Add);
}

Tensor scatter(const Tensor& x, const std::vector<int64_t>& index, const Shape& index_shape,
               const Tensor& updates, int64_t axis, int64_t batch_dims, ScatterKind kind) {
  Tensor out = Tensor::empty(x.shape(), x.dtype());
  copy_into(x, out);
  if (updates.numel() == 0) return out;
  const Tensor u = updates.contiguous();
  const Dims d = dims_of(x.shape(), index_shape, axis, batch_dims);
  const int64_t slabs = d.batch * d.pre;
  // Threads split slabs and, when there are few, columns of the inner dims; every thread walks
  // the indices in order, so repeated indices accumulate in the same order on every run.
  const int64_t threads = num_threads();
  const int64_t pieces =
      slabs >= threads ? 1 : std::clamp<int64_t>(d.inner / 256, 1, (threads + slabs - 1) / slabs);
  const int64_t piece = (d.inner + pieces - 1) / pieces;
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = out.mutable_data<T>();
    const T* up = u.data<T>();
    auto add_columns = [&](int64_t bp, int64_t lo, int64_t hi) {
      const int64_t* idx = index.data() + bp / d.pre * d.count;
      T* slab = o + bp * d.n * d.inner;
      const T* src = up + bp * d.count * d.inner;
      for (int64_t j = 0; j < d.count; ++j) {
        T* to = slab + idx[j] * d.inner;
        const T* from = src + j * d.inner;
        if (kind == ScatterKind::Add)  // the common case, kept free of the switch
          for (int64_t k = lo; k < hi; ++k) to[k] = accumulate(to[k], from[k]);
        else
          for (int64_t k = lo; k < hi; ++k) to[k] = combine(kind, to[k], from[k]);
      }
    };
    parallel_for(slabs * pieces, std::max<int64_t>(1, kCopyGrain / (d.count * piece)),
                 [&](int64_t begin, int64_t end) {
                   for (int64_t t = begin; t < end; ++t) {
                     const int64_t lo = t % pieces * piece;
                     if (lo < d.inner) add_columns(t / pieces, lo, std::min(d.inner, lo + piece));
                   }
                 });
  });
  return out;
}

}  // namespace lanes::kernels
