// Tensor: an immutable n-d array value with shared storage.
//
// A Tensor is a (storage, shape, strides, offset, dtype) view. Copying a Tensor copies a pointer;
// ops never write into an existing tensor, so views (transpose, broadcast, slicing, reshape of
// contiguous data) share storage safely. Strides are in elements and may be 0 (broadcast).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <vector>

#include "lanes/dtype.h"
#include "lanes/error.h"

namespace lanes {

using Shape = std::vector<int64_t>;
using Strides = std::vector<int64_t>;

/// An aligned, owned block of bytes. Tensors share it through shared_ptr.
class Storage {
 public:
  explicit Storage(size_t bytes);
  /// Memory another owner holds (a numpy array, a DLPack producer's tensor), kept alive by
  /// `owner` for as long as this storage lives. lanes never frees it and never writes into it:
  /// a kernel does not reuse it for its output even when it holds the only handle.
  Storage(void* data, size_t bytes, std::shared_ptr<const void> owner);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  bool external() const { return owner_ != nullptr; }

 private:
  void* data_;
  size_t bytes_;
  std::shared_ptr<const void> owner_;  // set for external memory
};

/// Bytes of tensor storage: what is live now, the most live since the last reset, and what the
/// caching allocator holds for reuse (freed large blocks kept to skip page faults).
struct MemoryStats {
  size_t live_bytes = 0;
  size_t peak_bytes = 0;
  size_t cached_bytes = 0;
};
MemoryStats memory_stats();
/// Starts a new peak: peak_bytes becomes live_bytes.
void reset_peak_memory();
/// Returns the cached blocks to the system (torch.cuda.empty_cache).
void empty_cache();

/// Number of elements of a shape (1 for a scalar). Throws lanes::Error naming the shape when a
/// dimension is negative or the count overflows int64.
int64_t shape_numel(const Shape& shape);
/// The one check every tensor's shape passes when the tensor is made (Tensor::empty, and bind on
/// every primitive's shape rule): no negative dimension, and the element count and the byte count
/// of a contiguous `dtype` tensor fit in int64 (checked arithmetic). Throws lanes::Error naming
/// `op` and the shape; returns the element count.
int64_t check_shape(const Shape& shape, DType dtype, const char* op);
/// Whether check_shape would pass, without building a message (for hot paths).
bool shape_fits(const Shape& shape, DType dtype);
/// Row-major (C order) strides of a shape, in elements.
Strides contiguous_strides(const Shape& shape);

/// What a traced tensor stands for: value `value` of the graph that the trace with id `trace_id`
/// records (src/ir/trace.h). Trace ids start at 1.
struct Tracer {
  uint64_t trace_id;
  int64_t value;
};

class Tensor {
 public:
  /// An undefined tensor (no storage); defined() is false. Most ops reject it.
  Tensor() = default;

  /// A fresh, uninitialised, contiguous tensor. Kernels fill it.
  static Tensor empty(const Shape& shape, DType dtype);
  /// A view of `storage` (no copy).
  Tensor(std::shared_ptr<Storage> storage, Shape shape, Strides strides, int64_t offset,
         DType dtype);

  bool defined() const { return impl_ != nullptr; }
  /// A tensor recorded by a transform (make_graph, vmap, grad, compile) while it traces a
  /// function: it has a shape and dtype but no values until the transformed function runs.
  bool is_tracer() const { return impl_ && impl_->tracer.trace_id != 0; }
  /// The traced value this tensor stands for, or nullptr for a concrete (or undefined) tensor.
  const Tracer* tracer() const { return is_tracer() ? &impl_->tracer : nullptr; }
  static Tensor traced(Tracer tracer, Shape shape, DType dtype);
  const Shape& shape() const { return impl().shape; }
  int64_t shape(int64_t axis) const;  // negative axes count from the end
  /// In elements, one per dim; empty for a tracer, which has no layout.
  const Strides& strides() const { return impl().strides; }
  int64_t offset() const { return impl().offset; }
  DType dtype() const { return impl().dtype; }
  int64_t ndim() const { return static_cast<int64_t>(shape().size()); }
  int64_t numel() const { return shape_numel(shape()); }
  const std::shared_ptr<Storage>& storage() const { return impl().storage; }
  /// Whether this handle is the only one on its storage: no other Tensor (copy or view) holds
  /// it, so a kernel that owns this handle may write into the buffer.
  bool sole_owner() const {
    return impl_ && impl_.use_count() == 1 && impl_->storage && impl_->storage.use_count() == 1 &&
           !impl_->storage->external();
  }

  /// Row-major with no gaps: the storage elements [offset, offset + numel) in order.
  bool is_contiguous() const;

  /// Pointer to the first element (at offset). T must match dtype().
  template <class T>
  const T* data() const {
    check_type(dtype_of<T>());
    return static_cast<const T*>(impl_->storage->data()) + impl_->offset;
  }
  /// Writable pointer, for kernels filling a tensor they just created with empty().
  template <class T>
  T* mutable_data() const {
    check_type(dtype_of<T>());
    return static_cast<T*>(impl_->storage->data()) + impl_->offset;
  }
  const void* raw_data() const;
  void* raw_mutable_data() const;

  /// The single element of a tensor with numel() == 1, converted to T.
  template <class T>
  T item() const;
  /// All elements in row-major order, converted to T.
  template <class T>
  std::vector<T> to_vector() const;

  /// This tensor if contiguous, else a contiguous copy.
  Tensor contiguous() const;

  /// numpy's x[i]: slice i of axis 0 (negative i counts from the end), a view.
  Tensor operator[](int64_t i) const;
  Tensor operator[](int i) const { return (*this)[int64_t(i)]; }
  /// x[i] for a 0-d integer tensor i (traced under a transform, e.g. a loop counter): a dynamic
  /// slice, clamped to the valid range (negative i counts from the end).
  Tensor operator[](const Tensor& i) const;
  /// Another view of the same storage.
  Tensor view(Shape shape, Strides strides, int64_t offset) const;

 private:
  // Everything a tensor is, in one immutable record that copies share: copying a Tensor (into
  // an op's argument list, a graph, a tree) is one reference count, never a shape allocation.
  // This is most of what tracing costs per op.
  struct Impl {
    std::shared_ptr<Storage> storage;  // null for a tracer
    Shape shape;
    Strides strides;
    int64_t offset = 0;
    DType dtype = DType::Float32;
    Tracer tracer{0, 0};  // trace_id 0: concrete
  };
  static const Impl undefined_;  // what an undefined tensor reports: rank 0, no storage
  const Impl& impl() const { return impl_ ? *impl_ : undefined_; }
  void check_type(DType requested) const;

  std::shared_ptr<const Impl> impl_;
};

/// Prints like numpy: `array([[1., 2.],\n       [3., 4.]], dtype=float32)`; large tensors are
/// summarised with "..." as numpy does above 1000 elements.
std::ostream& operator<<(std::ostream& os, const Tensor& t);

// ---- creation ---------------------------------------------------------------------------------

Tensor tensor(const std::vector<float>& data, const Shape& shape);
Tensor tensor(const std::vector<double>& data, const Shape& shape);
Tensor tensor(const std::vector<int32_t>& data, const Shape& shape);
Tensor tensor(const std::vector<int64_t>& data, const Shape& shape);
Tensor tensor(const std::vector<uint8_t>& data, const Shape& shape);
Tensor tensor(const std::vector<bool>& data, const Shape& shape);
/// A 1-d tensor of the data (shape {data.size()}).
template <class T>
Tensor tensor(const std::vector<T>& data) {
  return tensor(data, Shape{static_cast<int64_t>(data.size())});
}
/// A view of memory another library owns (numpy, DLPack), without a copy: `strides` in
/// elements (any sign), `owner` kept alive while any tensor views the memory. Checks that the
/// shape and strides stay inside `bytes` from `data`; lanes never writes into it.
Tensor from_external(void* data, size_t bytes, DType dtype, const Shape& shape,
                     const Strides& strides, int64_t offset, std::shared_ptr<const void> owner);

/// A 0-d tensor holding `value` converted to `dtype`.
Tensor scalar(double value, DType dtype = DType::Float32);

Tensor full(const Shape& shape, double value, DType dtype = DType::Float32);
Tensor zeros(const Shape& shape, DType dtype = DType::Float32);
Tensor ones(const Shape& shape, DType dtype = DType::Float32);
Tensor zeros_like(const Tensor& x);
Tensor ones_like(const Tensor& x);

}  // namespace lanes
