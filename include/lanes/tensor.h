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
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  void* data_;
  size_t bytes_;
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

/// Number of elements of a shape (1 for a scalar).
int64_t shape_numel(const Shape& shape);
/// Row-major (C order) strides of a shape, in elements.
Strides contiguous_strides(const Shape& shape);

/// What a traced tensor stands for: a value of a graph being recorded (src/ir/trace.h).
struct Tracer;

class Tensor {
 public:
  /// An undefined tensor (no storage); defined() is false. Most ops reject it.
  Tensor() = default;

  /// A fresh, uninitialised, contiguous tensor. Kernels fill it.
  static Tensor empty(const Shape& shape, DType dtype);
  /// A view of `storage` (no copy).
  Tensor(std::shared_ptr<Storage> storage, Shape shape, Strides strides, int64_t offset,
         DType dtype);

  bool defined() const { return storage_ != nullptr || tracer_ != nullptr; }
  /// A tensor recorded by a transform (make_graph, vmap, grad, compile) while it traces a
  /// function: it has a shape and dtype but no values until the transformed function runs.
  bool is_tracer() const { return tracer_ != nullptr; }
  const std::shared_ptr<const Tracer>& tracer() const { return tracer_; }
  static Tensor traced(std::shared_ptr<const Tracer> tracer, Shape shape, DType dtype);
  const Shape& shape() const { return shape_; }
  int64_t shape(int64_t axis) const;  // negative axes count from the end
  const Strides& strides() const { return strides_; }
  int64_t offset() const { return offset_; }
  DType dtype() const { return dtype_; }
  int64_t ndim() const { return static_cast<int64_t>(shape_.size()); }
  int64_t numel() const { return shape_numel(shape_); }
  const std::shared_ptr<Storage>& storage() const { return storage_; }

  /// Row-major with no gaps: the storage elements [offset, offset + numel) in order.
  bool is_contiguous() const;

  /// Pointer to the first element (at offset). T must match dtype().
  template <class T>
  const T* data() const {
    check_type(dtype_of<T>());
    return static_cast<const T*>(storage_->data()) + offset_;
  }
  /// Writable pointer, for kernels filling a tensor they just created with empty().
  template <class T>
  T* mutable_data() const {
    check_type(dtype_of<T>());
    return static_cast<T*>(storage_->data()) + offset_;
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
  /// Another view of the same storage.
  Tensor view(Shape shape, Strides strides, int64_t offset) const;

 private:
  void check_type(DType requested) const;

  std::shared_ptr<Storage> storage_;
  std::shared_ptr<const Tracer> tracer_;
  Shape shape_;
  Strides strides_;
  int64_t offset_ = 0;
  DType dtype_ = DType::Float32;
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
/// A 0-d tensor holding `value` converted to `dtype`.
Tensor scalar(double value, DType dtype = DType::Float32);

Tensor full(const Shape& shape, double value, DType dtype = DType::Float32);
Tensor zeros(const Shape& shape, DType dtype = DType::Float32);
Tensor ones(const Shape& shape, DType dtype = DType::Float32);
Tensor zeros_like(const Tensor& x);
Tensor ones_like(const Tensor& x);

}  // namespace lanes
