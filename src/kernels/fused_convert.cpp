#include "kernels/fused_convert.h"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <type_traits>

#include "kernels/convert.h"
#include "kernels/elementwise_loops.h"
#include "kernels/elementwise_ops.h"

namespace lanes::kernels {

namespace {

// Elements per block where a side's conversion cannot stay in registers: a block's float32
// intermediate (1 KiB) stays in L1 between the parts, and the loop over blocks is short enough for
// the out-of-order window to span the parts (a hand-written uint8 -> sqrt -> uint8 loop measured
// 0.090 ms per 1.2M elements through 256-element blocks, 0.115 through 1024).
constexpr int64_t kBlock = 256;

// One block's op and conversion to Out from src (m elements): each batch converted in registers
// as it is computed, integers narrower than float32 narrowed by a plain loop after. The tail of
// fewer than a batch goes through the padded batch of the unary kernel and `convert`, as the
// separate steps compute it.
template <class Out, class F>
void op_and_convert(const float* src, Out* out, int64_t m, F f) {
  namespace cd = convert_detail;
  constexpr int64_t W = xsimd::batch<float>::size;
  constexpr bool kNarrow = std::is_integral_v<Out> && sizeof(Out) < sizeof(float);
  alignas(64) int32_t narrow[kNarrow ? kBlock : 1];
  int64_t i = 0;
  for (; i + W <= m; i += W) {
    const xsimd::batch<float> v = f(xsimd::batch<float>::load_unaligned(src + i));
    if constexpr (std::is_same_v<Out, float>)
      v.store_unaligned(out + i);
    else if constexpr (kNarrow)
      cd::to_int_batch<Out>(v).store_aligned(narrow + i);
    else
      cd::to_int_batch<Out>(v).store_unaligned(out + i);
  }
  if constexpr (kNarrow)
    for (int64_t j = 0; j < i; ++j) out[j] = static_cast<Out>(narrow[j]);
  if (i < m) {
    alignas(64) float tail[W];
    loops::simd_tail<float>(tail, m - i, f, src + i);
    convert_row(static_cast<const float*>(tail), out + i, m - i);
  }
}

template <class In, class Out, class F>
void run_block_loop(const In* x, Out* out, int64_t n, F f) {
  alignas(64) float buf[kBlock];
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t m = std::min(kBlock, n - b);
    const float* src = buf;
    if constexpr (std::is_same_v<In, float>)
      src = x + b;
    else
      convert_row(x + b, buf, m);
    op_and_convert(src, out + b, m, f);
  }
}

template <class T>
inline constexpr bool kInRegisters = std::is_same_v<T, float> || std::is_same_v<T, int32_t> ||
                                     (std::is_same_v<T, uint8_t> && convert_detail::kAvx512Batches);

// One batch at a time, both conversions in registers (convert.h): uint8 -> sqrt -> uint8 took
// 0.092 ms per 1.2M elements on one thread, 0.108 through blocks (and 0.157 as three steps over
// the tile before this loop, with the SIMD conversions).
template <class In, class Out, class F>
void run_register_loop(const In* x, Out* out, int64_t n, F f) {
  constexpr int64_t W = xsimd::batch<float>::size;
  int64_t i = 0;
  for (; i + W <= n; i += W)
    convert_detail::store_converted(f(convert_detail::load_as_float(x + i)), out + i);
  if (i < n) {
    alignas(64) float buf[W];
    convert_row(x + i, buf, n - i);
    op_and_convert(static_cast<const float*>(buf), out + i, n - i, f);
  }
}

#if defined(__AVX512VBMI__)
// uint8 -> op -> uint8 has only 256 inputs: the op runs once on each of them, through the loop a
// tile would take (lanes are independent, so every entry has the bits the loop gives that byte),
// and tiles map their bytes through that table, 64 at a time by byte permutes. sqrt_images'
// 1.2M-byte chain took 0.20-0.26 ms through the sqrt loop, 0.04-0.08 through the table.
// One table per op for the process, made by whichever thread needs it first.
template <class F>
const uint8_t* byte_table(UnaryOp op, F f) {
  static std::array<std::atomic<const uint8_t*>, 256> tables{};
  std::atomic<const uint8_t*>& slot = tables[size_t(op)];
  if (const uint8_t* t = slot.load(std::memory_order_acquire)) return t;
  alignas(64) uint8_t bytes[256];
  for (int i = 0; i < 256; ++i) bytes[i] = uint8_t(i);
  auto* table = static_cast<uint8_t*>(std::aligned_alloc(64, 256));  // (kept for the process)
  run_register_loop(static_cast<const uint8_t*>(bytes), table, 256, f);
  const uint8_t* expected = nullptr;
  if (slot.compare_exchange_strong(expected, table, std::memory_order_acq_rel)) return table;
  std::free(table);  // another thread's table won (the same bytes)
  return expected;
}

// out[i] = table[x[i]]: vpermi2b looks up the low 7 bits in each half of the table, and the
// high bit picks the half.
void map_bytes(const uint8_t* table, const uint8_t* x, uint8_t* out, int64_t n) {
  const __m512i t0 = _mm512_load_si512(table), t1 = _mm512_load_si512(table + 64);
  const __m512i t2 = _mm512_load_si512(table + 128), t3 = _mm512_load_si512(table + 192);
  auto map = [&](__m512i idx) {
    const __m512i low = _mm512_permutex2var_epi8(t0, idx, t1);
    const __m512i high = _mm512_permutex2var_epi8(t2, idx, t3);
    return _mm512_mask_blend_epi8(_mm512_movepi8_mask(idx), low, high);
  };
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) _mm512_storeu_si512(out + i, map(_mm512_loadu_si512(x + i)));
  if (i < n) {
    const __mmask64 tail = _bzhi_u64(~uint64_t{0}, unsigned(n - i));
    _mm512_mask_storeu_epi8(out + i, tail, map(_mm512_maskz_loadu_epi8(tail, x + i)));
  }
}
#endif

/// Calls fn(TypeTag<T>) for the dtypes converting_unary handles on either side.
template <class Fn>
bool with_side(DType d, Fn&& fn) {
  switch (d) {
    case DType::UInt8:
      return fn(TypeTag<uint8_t>{}), true;
    case DType::Int32:
      return fn(TypeTag<int32_t>{}), true;
    case DType::Float32:
      return fn(TypeTag<float>{}), true;
    default:
      return false;
  }
}

bool has_float_batch_form(UnaryOp op) {
  bool simd = false;
  if (unary_accepts(op, DType::Float32))
    with_unary<float>(op, [&](auto f) { simd = loops::kSimd<decltype(f), float>; });
  return simd;
}

}  // namespace

bool converting_unary_supported(DType in, UnaryOp op, DType out) {
  auto side = [](DType d) { return d == DType::UInt8 || d == DType::Int32 || d == DType::Float32; };
  return side(in) && side(out) && !(in == DType::Float32 && out == DType::Float32) &&
         has_float_batch_form(op);
}

// Called per tile: the dispatch alone says whether the combination exists (checking
// converting_unary_supported first cost a second dispatch per tile).
void converting_unary(DType in, UnaryOp op, DType out, const void* x, void* o, int64_t n) {
  bool ran = false;
  with_side(in, [&](auto from) {
    using In = typename decltype(from)::type;
    with_side(out, [&](auto to) {
      using Out = typename decltype(to)::type;
      if constexpr (!(std::is_same_v<In, float> && std::is_same_v<Out, float>)) {
        if (!unary_accepts(op, DType::Float32)) return;
        with_unary<float>(op, [&](auto f) {
          if constexpr (loops::kSimd<decltype(f), float>) {
#if defined(__AVX512VBMI__)
            if constexpr (std::is_same_v<In, uint8_t> && std::is_same_v<Out, uint8_t>) {
              map_bytes(byte_table(op, f), static_cast<const uint8_t*>(x), static_cast<uint8_t*>(o),
                        n);
              ran = true;
              return;
            }
#endif
            if constexpr (kInRegisters<In> && kInRegisters<Out>)
              run_register_loop(static_cast<const In*>(x), static_cast<Out*>(o), n, f);
            else
              run_block_loop(static_cast<const In*>(x), static_cast<Out*>(o), n, f);
            ran = true;
          }
        });
      }
    });
  });
  check(ran, "converting_unary: unsupported ", dtype_name(in), " -> ", unary_name(op), " -> ",
        dtype_name(out));
}

}  // namespace lanes::kernels
