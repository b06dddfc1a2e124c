// Dtype conversion and select.
#include <cstring>
#include <limits>

#include "kernels/convert.h"
#include "kernels/elementwise.h"
#include "kernels/elementwise_loops.h"

namespace lanes::kernels {

namespace {

/// Elements per thread at least: a conversion is as cheap as a copy.
constexpr int64_t kCastGrain = 32768;

/// A strided or broadcast row converted a buffer at a time: the same row kernel as contiguous
/// data, so a value converts the same wherever it sits.
template <class From, class To>
void convert_strided(const From* x, int64_t step, To* out, int64_t n) {
  alignas(64) From buf[loops::kBuffer];
  for (int64_t i = 0; i < n; i += loops::kBuffer) {
    const int64_t m = std::min(loops::kBuffer, n - i);
    loops::gather(x + i * step, step, m, buf);
    convert_row(static_cast<const From*>(buf), out + i, m);
  }
}

constexpr int64_t kSelectGrain = 32768;  // elements per thread at least: a cheap op

/// Branch-free blend on the bits: y ^ ((x ^ y) & mask), mask all ones where c. A random cond
/// would mispredict half the time with GCC's branches for a plain ternary; this form the compiler
/// vectorizes whole, widening the bools (measured 2.1x faster than building an xsimd mask through
/// a stack buffer per batch).
template <class U>
void select_rows(const bool* c, const U* x, const U* y, U* o, int64_t n) {
  const auto* bits = reinterpret_cast<const uint8_t*>(c);  // bools are 0 or 1
  for (int64_t i = 0; i < n; ++i) o[i] = y[i] ^ ((x[i] ^ y[i]) & (U(0) - U(bits[i])));
}

/// select_rows with one branch a single value: c ? v : y, or c ? y : v when `v_if_false`.
template <class U>
void select_splat(const bool* c, U v, const U* y, U* o, int64_t n, bool v_if_false) {
  const auto* bits = reinterpret_cast<const uint8_t*>(c);
  const U flip = v_if_false ? U(0) - U(1) : U(0);  // all ones: take v where c is false
  for (int64_t i = 0; i < n; ++i) o[i] = y[i] ^ ((v ^ y[i]) & ((U(0) - U(bits[i])) ^ flip));
}

/// The m values from p, `step` apart, contiguous: p itself for step 1, else copied to buf.
template <class U>
const U* dense(const U* p, int64_t step, int64_t m, U* buf) {
  if (step == 1) return p;
  if (step == 0)
    std::fill(buf, buf + m, p[0]);
  else
    for (int64_t i = 0; i < m; ++i) buf[i] = p[i * step];
  return buf;
}

/// select_rows over strided or broadcast operands, gathered a chunk at a time for the SIMD blend:
/// element by element, the broadcast zero of relu's gradient made a select 7x slower.
template <class U>
void select_gathered(const bool* c, const U* x, const U* y, U* o, int64_t n,
                     const std::array<int64_t, 4>& st) {
  bool cbuf[loops::kBuffer];
  U xbuf[loops::kBuffer], ybuf[loops::kBuffer];
  for (int64_t i0 = 0; i0 < n; i0 += loops::kBuffer) {
    const int64_t m = std::min(loops::kBuffer, n - i0);
    select_rows(dense(c + i0 * st[1], st[1], m, cbuf), dense(x + i0 * st[2], st[2], m, xbuf),
                dense(y + i0 * st[3], st[3], m, ybuf), o + i0, m);
  }
}

/// cond ? a : b on raw bits: the choice does not look at values, so one instantiation per
/// element size serves every dtype.
template <class U>
void select_bits(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) {
  const auto s = loops::make_space<4>(out, {&cond, &a, &b});
  const bool* cb = cond.data<bool>();
  const U* ab = static_cast<const U*>(a.raw_data());
  const U* bb = static_cast<const U*>(b.raw_data());
  U* ob = static_cast<U*>(out.raw_mutable_data());
  loops::for_rows(s, kSelectGrain, [&](const loops::Run<4>& r) {
    const int64_t n = r.n;
    const auto& st = r.step;
    for (int64_t i = 0; i < r.count; ++i) {
      const bool* c = cb + r.offset[1] + i * r.row_step[1];
      const U* x = ab + r.offset[2] + i * r.row_step[2];
      const U* y = bb + r.offset[3] + i * r.row_step[3];
      U* o = ob + r.offset[0] + i * r.row_step[0];
      if (st[1] == 1 && st[2] == 1 && st[3] == 1) {
        select_rows(c, x, y, o, n);
      } else if (st[1] == 1 && st[2] == 0 && st[3] == 1) {
        // A broadcast scalar branch (relu's gradient: select(mask, g, 0)) is blended as a
        // splat, with no gather: a (100, 32, 32) select went from 56 to 40 us (and to ~18 us
        // once rows came in runs).
        select_splat(c, x[0], y, o, n, false);
      } else if (st[1] == 1 && st[2] == 1 && st[3] == 0) {
        select_splat(c, y[0], x, o, n, true);
      } else if (st[1] == 0) {
        // One choice for the whole row: a per-lane predicate broadcast over the lane's values
        // (a masked scan freezing its carries) is a copy of the chosen row. Gathered, it took
        // 62% of a padded LSTM gradient.
        const U* src = *c ? x : y;
        const int64_t step = *c ? st[2] : st[3];
        if (step == 1)
          std::memcpy(o, src, size_t(n) * sizeof(U));
        else
          for (int64_t k = 0; k < n; ++k) o[k] = src[k * step];
      } else {
        select_gathered(c, x, y, o, n, st);
      }
    }
  });
}

}  // namespace

Tensor cast(const Tensor& x, DType dtype) {
  check(x.defined(), "cast: undefined tensor");
  Tensor out = Tensor::empty(x.shape(), dtype);
  visit_dtype(x.dtype(), [&](auto from) {
    using From = typename decltype(from)::type;
    visit_dtype(dtype, [&](auto to) {
      using To = typename decltype(to)::type;
      const auto s = loops::make_space<2>(out, {&x});
      const From* xb = x.data<From>();
      To* ob = out.mutable_data<To>();
      loops::for_rows(s, kCastGrain, [&](const loops::Run<2>& r) {
        for (int64_t i = 0; i < r.count; ++i) {
          const From* row = xb + r.offset[1] + i * r.row_step[1];
          To* o = ob + r.offset[0] + i * r.row_step[0];
          if (r.step[1] == 1)
            convert_row(row, o, r.n);
          else
            convert_strided(row, r.step[1], o, r.n);
        }
      });
    });
  });
  return out;
}

Tensor select(const Tensor& cond, const Tensor& a, const Tensor& b) {
  check(cond.dtype() == DType::Bool && cond.shape() == a.shape() && a.shape() == b.shape() &&
            a.dtype() == b.dtype(),
        "select: needs a bool cond and two operands of one shape and dtype, got ",
        fmt(cond.shape()), " ", dtype_name(cond.dtype()), ", ", fmt(a.shape()), " ",
        dtype_name(a.dtype()), ", ", fmt(b.shape()), " ", dtype_name(b.dtype()));
  Tensor out = Tensor::empty(a.shape(), a.dtype());
  switch (dtype_size(a.dtype())) {
    case 1:
      select_bits<uint8_t>(cond, a, b, out);
      break;
    case 4:
      select_bits<uint32_t>(cond, a, b, out);
      break;
    default:
      select_bits<uint64_t>(cond, a, b, out);
      break;
  }
  return out;
}

void cast_contiguous(DType from_dtype, DType to_dtype, const void* x, void* out, int64_t n) {
  visit_dtype(from_dtype, [&](auto from) {
    using From = typename decltype(from)::type;
    visit_dtype(to_dtype, [&](auto to) {
      using To = typename decltype(to)::type;
      convert_row(static_cast<const From*>(x), static_cast<To*>(out), n);
    });
  });
}

void select_contiguous(DType dtype, const bool* cond, const void* a, const void* b, void* out,
                       int64_t n) {
  auto run = [&](auto zero) {
    using U = decltype(zero);
    select_rows(cond, static_cast<const U*>(a), static_cast<const U*>(b), static_cast<U*>(out), n);
  };
  switch (dtype_size(dtype)) {
    case 1:
      return run(uint8_t{});
    case 4:
      return run(uint32_t{});
    default:
      return run(uint64_t{});
  }
}

}  // namespace lanes::kernels
