#include "lanes/tensor.h"

#include <sys/mman.h>
#include <sys/sysinfo.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>

#include "core/strided.h"
#include "runtime/spin_lock.h"

namespace lanes {

namespace {
constexpr size_t kAlignment = 64;           // a cache line; also the widest SIMD load (AVX-512)
constexpr size_t kLarge = size_t{1} << 21;  // 2 MiB: a huge page; larger blocks take whole ones
constexpr size_t kPaged = size_t{1} << 16;  // blocks from 64 KiB up are whole pages
constexpr size_t kPage = size_t{1} << 12;

// The cache holds at most an eighth of the machine's memory, and at least 1 GiB. Two application
// threads each running perex_mlp (685 MB of per-example gradients a call) overflowed a fixed
// 1 GiB: every call page-faulted its outputs afresh and the pair ran 4x slower than one thread.
size_t cache_limit() {
  static const size_t limit = [] {
    struct sysinfo info {};
    const size_t ram = sysinfo(&info) == 0 ? size_t(info.totalram) * info.mem_unit : 0;
    return std::max(size_t{1} << 30, ram / 8);
  }();
  return limit;
}

// Blocks are kept after use and handed out again (a caching allocator, as MLX and PyTorch do):
// touching fresh memory costs a page fault per 4 KiB page (measured ~13 us here), which is more
// than the arithmetic of a streaming kernel. Fresh large blocks ask for transparent huge pages,
// which cut the first touch of 64 MB from ~200 ms to ~8 ms. Blocks below 2 MiB were left to
// malloc at first, but glibc returns the top of its heap to the system and maps large requests
// afresh: the 1.6 MB per-step products of an LSTM's gradient page-faulted on every call (16% of
// its time). Blocks below 4 KiB were left to malloc next, but an aligned request never takes
// glibc's per-thread cache, and one of 1 KiB or more makes it consolidate its fast bins: with
// every size cached, perex_linear's call went from 3.45-3.6 to 3.25-3.3 us.
//
// When the cache is full, the oldest blocks go back to the system to make room: refusing the new
// block instead left a cache full of a finished loop's block sizes while every call of the next
// workload (655 MB of per-example gradients) page-faulted its outputs afresh.
//
// The cache's bookkeeping lives in the cached blocks themselves (each is at least 64 bytes that
// nobody uses): a list by age and a stack per size, linked through a header at each block's
// start. A list node and a hash node allocated per cached block cost two mallocs and two frees
// per tensor, a sixth of ode_rk4's allocations (heaptrack). Only a size seen for the first time
// allocates (its stack's entry in `tops_`).
class BlockCache {
 public:
  void* take(size_t bytes) {
    std::lock_guard<runtime::SpinLock> lock(lock_);
    const auto it = tops_.find(bytes);
    if (it == tops_.end() || !it->second) return nullptr;
    Block* b = it->second;  // the newest of its size: the likeliest to be in cache still
    it->second = b->below;
    if (b->below) b->below->above = nullptr;
    unlink_by_age(b);
    cached_ -= bytes;
    return b;
  }
  bool give(void* p, size_t bytes) {
    std::lock_guard<runtime::SpinLock> lock(lock_);
    if (bytes > cache_limit()) return false;
    while (cached_ + bytes > cache_limit()) evict_oldest();
    if (tops_.size() >= kMaxSizes && !tops_.contains(bytes))
      std::erase_if(tops_, [](const auto& e) { return e.second == nullptr; });
    Block*& top = tops_[bytes];
    Block* b = new (p) Block{bytes, nullptr, top, newest_, nullptr};
    if (top) top->above = b;
    top = b;
    (newest_ ? newest_->newer : oldest_) = b;
    newest_ = b;
    cached_ += bytes;
    return true;
  }
  void clear() {
    std::lock_guard<runtime::SpinLock> lock(lock_);
    while (oldest_) evict_oldest();
  }
  size_t cached() {
    std::lock_guard<runtime::SpinLock> lock(lock_);
    return cached_;
  }
  ~BlockCache() { clear(); }

 private:
  // The header of a cached block: its size, its neighbours in its size's stack (`above`: newer)
  // and in the list by age.
  struct Block {
    size_t bytes;
    Block *above, *below;
    Block *older, *newer;
  };
  static_assert(sizeof(Block) <= kAlignment, "a cached block holds its header");
  // Distinct sizes kept before the empty stacks are dropped (a run of ever-new shapes).
  static constexpr size_t kMaxSizes = 4096;

  void unlink_by_age(Block* b) {
    (b->older ? b->older->newer : oldest_) = b->newer;
    (b->newer ? b->newer->older : newest_) = b->older;
  }
  void evict_oldest() {
    Block* b = oldest_;
    if (b->above)
      b->above->below = b->below;
    else
      tops_[b->bytes] = b->below;
    if (b->below) b->below->above = b->above;
    unlink_by_age(b);
    cached_ -= b->bytes;
    std::free(b);
  }

  runtime::SpinLock lock_;  // taken on every allocation: see spin_lock.h
  Block* oldest_ = nullptr;
  Block* newest_ = nullptr;
  std::unordered_map<size_t, Block*> tops_;  // the newest block of each size
  size_t cached_ = 0;
};

BlockCache& block_cache() {
  static BlockCache* cache = new BlockCache();  // never destroyed: tensors may outlive statics
  return *cache;
}

std::atomic<size_t> g_live{0}, g_peak{0};

void count_alloc(size_t bytes) {
  const size_t live = g_live.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  size_t peak = g_peak.load(std::memory_order_relaxed);
  while (live > peak && !g_peak.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
  }
}

// RAM plus swap: no single block larger than this can ever be backed. Refusing it up front makes
// an absurd shape fail the same way whatever the kernel's overcommit policy (with overcommit
// always on, the allocation would succeed and the first write would bring in the OOM killer).
size_t memory_limit() {
  static const size_t limit = [] {
    struct sysinfo info {};
    if (sysinfo(&info) != 0) return ~size_t{0};
    return (size_t(info.totalram) + size_t(info.totalswap)) * info.mem_unit;
  }();
  return limit;
}

size_t rounded_size(size_t bytes) {
  const size_t unit = bytes >= kLarge ? kLarge : bytes >= kPaged ? kPage : kAlignment;
  return std::max(unit, (bytes + unit - 1) / unit * unit);
}
}  // namespace

MemoryStats memory_stats() { return {g_live.load(), g_peak.load(), block_cache().cached()}; }

void reset_peak_memory() { g_peak.store(g_live.load()); }

void empty_cache() { block_cache().clear(); }

Storage::Storage(size_t bytes) : bytes_(bytes) {
  if (bytes > memory_limit()) throw std::bad_alloc();
  const size_t size = rounded_size(bytes);
  data_ = block_cache().take(size);
  if (!data_) {
    data_ = std::aligned_alloc(size >= kLarge ? kLarge : size >= kPaged ? kPage : kAlignment, size);
    if (!data_) throw std::bad_alloc();
    if (size >= kLarge) madvise(data_, size, MADV_HUGEPAGE);
  }
  count_alloc(size);
}

Storage::Storage(void* data, size_t bytes, std::shared_ptr<const void> owner)
    : data_(data), bytes_(bytes), owner_(std::move(owner)) {
  check(owner_ != nullptr, "external storage needs an owner that keeps its memory alive");
}

Storage::~Storage() {
  if (owner_) return;  // the owner frees it
  const size_t size = rounded_size(bytes_);
  g_live.fetch_sub(size, std::memory_order_relaxed);
  if (block_cache().give(data_, size)) return;
  std::free(data_);
}

namespace {
// The product of the non-zero dims, in checked arithmetic: false when it overflows int64. A
// shape with a zero dim has no elements, but its other dims must still multiply without overflow
// (its strides are their products).
bool nonzero_product(const Shape& shape, int64_t& product) {
  product = 1;
  for (int64_t d : shape)
    if (d != 0 && __builtin_mul_overflow(product, d, &product)) return false;
  return true;
}

int64_t first_negative(const Shape& shape) {
  for (int64_t d : shape)
    if (d < 0) return d;
  return 0;
}

bool has_zero(const Shape& shape) {
  return std::find(shape.begin(), shape.end(), 0) != shape.end();
}
}  // namespace

int64_t check_shape(const Shape& shape, DType dtype, const char* op) {
  if (const int64_t d = first_negative(shape))
    fail(op, ": shape ", fmt(shape), " has a negative dimension (", d, ")");
  int64_t n = 0, bytes = 0;
  check(nonzero_product(shape, n), op, ": shape ", fmt(shape),
        " has more elements than an int64 can count");
  if (__builtin_mul_overflow(n, int64_t(dtype_size(dtype)), &bytes))
    fail(op, ": shape ", fmt(shape), " of ", dtype_name(dtype), " has ", n,
         " elements, more bytes than an int64 can count");
  return has_zero(shape) ? 0 : n;
}

bool shape_fits(const Shape& shape, DType dtype) {
  int64_t n = 0, bytes = 0;
  return first_negative(shape) == 0 && nonzero_product(shape, n) &&
         !__builtin_mul_overflow(n, int64_t(dtype_size(dtype)), &bytes);
}

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    // The fast path of every numel(): no check beyond the overflow flag until something is off.
    if (d <= 0 || __builtin_mul_overflow(n, d, &n)) return check_shape(shape, DType::Bool, "numel");
  }
  return n;
}

Strides contiguous_strides(const Shape& shape) {
  Strides strides(shape.size());
  int64_t step = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = step;
    step *= shape[i];
  }
  return strides;
}

Tensor Tensor::empty(const Shape& shape, DType dtype) {
  const auto bytes = size_t(check_shape(shape, dtype, "tensor") * int64_t(dtype_size(dtype)));
  std::shared_ptr<Storage> storage;
  // The one place tensor storage is allocated: a request the system refuses is bad input (an
  // absurd shape), reported as such; make_shared frees what it took before rethrowing.
  try {
    storage = std::make_shared<Storage>(bytes);
  } catch (const std::bad_alloc&) {
    fail("tensor: cannot allocate ", bytes, " bytes for shape ", fmt(shape), " of ",
         dtype_name(dtype), ": out of memory");
  }
  return Tensor(std::move(storage), shape, contiguous_strides(shape), 0, dtype);
}

const Tensor::Impl Tensor::undefined_{};

// Views and tracers check their shapes too (a loop over the dims while all is well), so that no
// tensor, however it was made, has a shape whose element count wrapped around.
Tensor::Tensor(std::shared_ptr<Storage> storage, Shape shape, Strides strides, int64_t offset,
               DType dtype) {
  if (!shape_fits(shape, dtype)) check_shape(shape, dtype, "tensor view");
  impl_ = std::make_shared<const Impl>(
      Impl{std::move(storage), std::move(shape), std::move(strides), offset, dtype});
}

Tensor from_external(void* data, size_t bytes, DType dtype, const Shape& shape,
                     const Strides& strides, int64_t offset, std::shared_ptr<const void> owner) {
  check(strides.size() == shape.size(), "from_external: ", strides.size(), " strides for ",
        shape.size(), " dims");
  check_shape(shape, dtype, "from_external");
  // The lowest and highest element the view reaches must lie inside the memory.
  int64_t low = offset, high = offset;
  bool empty = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    empty = empty || shape[i] == 0;
    const int64_t reach = (shape[i] - 1) * strides[i];
    (reach < 0 ? low : high) += reach;
  }
  const int64_t elements = int64_t(bytes / dtype_size(dtype));
  check(empty || (low >= 0 && high < elements), "from_external: shape ", fmt(shape),
        " with strides ", fmt(strides), " from offset ", offset, " reaches outside the ", bytes,
        " bytes given");
  return Tensor(std::make_shared<Storage>(data, bytes, std::move(owner)), shape, strides, offset,
                dtype);
}

Tensor Tensor::traced(Tracer tracer, Shape shape, DType dtype) {
  check(tracer.trace_id != 0, "traced: trace id 0 is reserved for concrete tensors");
  if (!shape_fits(shape, dtype)) check_shape(shape, dtype, "traced tensor");
  // No strides: a tracer has no memory layout, and creating one per traced op would cost an
  // allocation.
  Tensor t;
  t.impl_ = std::make_shared<const Impl>(Impl{nullptr, std::move(shape), {}, 0, dtype, tracer});
  return t;
}

int64_t Tensor::shape(int64_t axis) const {
  const int64_t n = ndim();
  check(axis >= -n && axis < n, "shape: axis ", axis, " out of range for a tensor of shape ",
        fmt(shape()));
  return shape()[axis < 0 ? axis + n : axis];
}

bool Tensor::is_contiguous() const {
  if (is_tracer()) return true;  // no layout yet: whatever runs it will be given one
  int64_t step = 1;
  const Shape& dims = shape();
  const Strides& steps = strides();
  for (size_t i = dims.size(); i-- > 0;) {
    if (dims[i] != 1 && steps[i] != step) return false;
    step *= dims[i];
  }
  return true;
}

namespace {
void check_has_values(const Tensor& t) {
  // (fail, not check: these run on every data access, and a check computes its message first)
  if (t.is_tracer())
    fail("cannot read the values of a traced tensor of shape ", fmt(t.shape()), " ",
         dtype_name(t.dtype()),
         ": inside vmap/grad/make_graph/compile values exist only when the transformed function "
         "runs; compute with lanes ops instead of reading elements");
  check(t.defined(), "cannot read the values of an undefined tensor");
}
}  // namespace

const void* Tensor::raw_data() const {
  check_has_values(*this);
  return static_cast<const char*>(impl_->storage->data()) + impl_->offset * dtype_size(dtype());
}

void* Tensor::raw_mutable_data() const { return const_cast<void*>(raw_data()); }

void Tensor::check_type(DType requested) const {
  check_has_values(*this);
  if (requested != dtype())
    fail("data: requested ", dtype_name(requested), " from a tensor of dtype ",
         dtype_name(dtype()));
}

template <class T>
std::vector<T> Tensor::to_vector() const {
  check_has_values(*this);
  const Tensor c = contiguous();
  std::vector<T> out(numel());
  visit_dtype(dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    const S* src = c.data<S>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<T>(src[i]);
  });
  return out;
}

template <class T>
T Tensor::item() const {
  check(numel() == 1, "item: tensor of shape ", fmt(shape()), " has ", numel(), " elements, not 1");
  return to_vector<T>()[0];
}

#define LANES_INSTANTIATE(T)                         \
  template std::vector<T> Tensor::to_vector() const; \
  template T Tensor::item() const;
LANES_INSTANTIATE(bool)
LANES_INSTANTIATE(uint8_t)
LANES_INSTANTIATE(int32_t)
LANES_INSTANTIATE(int64_t)
LANES_INSTANTIATE(float)
LANES_INSTANTIATE(double)
#undef LANES_INSTANTIATE

Tensor Tensor::contiguous() const {
  if (!defined() || is_tracer() || is_contiguous()) return *this;
  Tensor out = empty(shape(), dtype());
  detail::copy_strided(*this, out.raw_mutable_data());
  return out;
}

Tensor Tensor::view(Shape shape, Strides strides, int64_t offset) const {
  check_has_values(*this);
  return Tensor(impl_->storage, std::move(shape), std::move(strides), offset, dtype());
}

// ---- creation ---------------------------------------------------------------------------------

namespace {
template <class T, class Src>
Tensor from_data(const Src& data, const Shape& shape) {
  check(static_cast<int64_t>(data.size()) == check_shape(shape, dtype_of<T>(), "tensor"),
        "tensor: ", data.size(), " values do not fill shape ", fmt(shape));
  Tensor t = Tensor::empty(shape, dtype_of<T>());
  T* out = t.mutable_data<T>();
  for (size_t i = 0; i < data.size(); ++i) out[i] = static_cast<T>(data[i]);
  return t;
}
}  // namespace

Tensor tensor(const std::vector<float>& d, const Shape& s) { return from_data<float>(d, s); }
Tensor tensor(const std::vector<double>& d, const Shape& s) { return from_data<double>(d, s); }
Tensor tensor(const std::vector<int32_t>& d, const Shape& s) { return from_data<int32_t>(d, s); }
Tensor tensor(const std::vector<int64_t>& d, const Shape& s) { return from_data<int64_t>(d, s); }
Tensor tensor(const std::vector<uint8_t>& d, const Shape& s) { return from_data<uint8_t>(d, s); }
Tensor tensor(const std::vector<bool>& d, const Shape& s) { return from_data<bool>(d, s); }

Tensor full(const Shape& shape, double value, DType dtype) {
  Tensor t = Tensor::empty(shape, dtype);
  visit_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* out = t.mutable_data<T>();
    const T v = static_cast<T>(value);
    for (int64_t i = 0, n = t.numel(); i < n; ++i) out[i] = v;
  });
  return t;
}

Tensor scalar(double value, DType dtype) { return full({}, value, dtype); }
Tensor zeros(const Shape& shape, DType dtype) { return full(shape, 0.0, dtype); }
Tensor ones(const Shape& shape, DType dtype) { return full(shape, 1.0, dtype); }
Tensor zeros_like(const Tensor& x) { return zeros(x.shape(), x.dtype()); }
Tensor ones_like(const Tensor& x) { return ones(x.shape(), x.dtype()); }

namespace detail {

void copy_strided(const Tensor& src, void* out) {
  Shape shape = src.shape();
  std::array<Strides, 1> strides{src.strides()};
  coalesce(shape, strides);
  const int64_t len = shape.back(), step = strides[0].back();
  visit_dtype(src.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* base = static_cast<const T*>(src.raw_data());
    T* dst = static_cast<T*>(out);
    for_each_row(shape, strides, 0, num_rows(shape), [&](const std::array<int64_t, 1>& off) {
      const T* row = base + off[0];
      for (int64_t i = 0; i < len; ++i) dst[i] = row[i * step];
      dst += len;
    });
  });
}

}  // namespace detail
}  // namespace lanes
