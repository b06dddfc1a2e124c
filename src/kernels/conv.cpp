#include "kernels/conv.h"

#include <cblas.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <type_traits>
#include <vector>

#include "lanes/parallel.h"

namespace lanes::kernels {

namespace {

constexpr int64_t kTileElements = int64_t{1} << 20;  // im2col tile: 4 MiB of float32
constexpr double kLargeGemm = 4e6;  // ~128^3 flops: BLAS threads one GEMM of this size well

// Sizes of one convolution; one "item" is the GEMM of one (example, group).
struct Geometry {
  int64_t N, C, H, W, O, kH, kW, OH, OW, G, Cg, Og, K;  // K = Cg * kH * kW
  ConvParams p;
  bool pointwise;  // 1x1, stride 1, no padding: the input already is the im2col matrix
};

Geometry geometry(const Tensor& x, const Tensor& w, const ConvParams& p) {
  Geometry g{};
  g.N = x.shape(0), g.C = x.shape(1), g.H = x.shape(2), g.W = x.shape(3);
  g.O = w.shape(0), g.kH = w.shape(2), g.kW = w.shape(3);
  g.OH = conv_out_size(g.H, g.kH, p.stride[0], p.padding[0], p.dilation[0]);
  g.OW = conv_out_size(g.W, g.kW, p.stride[1], p.padding[1], p.dilation[1]);
  g.G = p.groups, g.Cg = g.C / g.G, g.Og = g.O / g.G, g.K = g.Cg * g.kH * g.kW;
  g.p = p;
  g.pointwise = g.kH == 1 && g.kW == 1 && p.stride == std::array<int64_t, 2>{1, 1} &&
                p.padding == std::array<int64_t, 2>{0, 0};
  return g;
}

// Output indices [lo, hi) of a dim of size `out` whose input index o * s + off is in [0, n).
void valid_range(int64_t n, int64_t off, int64_t s, int64_t out, int64_t& lo, int64_t& hi) {
  lo = std::min(out, off >= 0 ? 0 : (-off + s - 1) / s);
  hi = std::min(out, n - off > 0 ? (n - off + s - 1) / s : 0);
  hi = std::max(hi, lo);
}

// Rows [r0, r1) of the im2col matrix of one (example, group), for output rows [oh0, oh1). Row
// (c, ki, kj) holds, for every output position, the input under kernel tap (ki, kj) of channel
// c (zero in the padding).
template <class T>
void im2col(const Geometry& g, const T* x, int64_t oh0, int64_t oh1, int64_t r0, int64_t r1,
            T* col) {
  const int64_t len = (oh1 - oh0) * g.OW;
  const auto [sh, sw] = g.p.stride;
  const auto [ph, pw] = g.p.padding;
  const auto [dh, dw] = g.p.dilation;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t c = r / (g.kH * g.kW), ki = r / g.kW % g.kH, kj = r % g.kW;
    const T* xc = x + c * g.H * g.W;
    T* dst = col + r * len;
    const int64_t offw = kj * dw - pw;
    int64_t lo, hi;
    valid_range(g.W, offw, sw, g.OW, lo, hi);
    for (int64_t oh = oh0; oh < oh1; ++oh, dst += g.OW) {
      const int64_t ih = oh * sh - ph + ki * dh;
      if (ih < 0 || ih >= g.H) {
        std::fill(dst, dst + g.OW, T(0));
        continue;
      }
      const int64_t base = ih * g.W + offw;  // input index of output column 0
      std::fill(dst, dst + lo, T(0));
      if (sw == 1)
        std::copy(xc + base + lo, xc + base + hi, dst + lo);
      else
        for (int64_t ow = lo; ow < hi; ++ow) dst[ow] = xc[base + ow * sw];
      std::fill(dst + hi, dst + g.OW, T(0));
    }
  }
}

// C (m x n, ldc) = A (m x k, lda) B (k x n, ldb), all row-major.
template <class T>
void gemm(int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb, T* c,
          int64_t ldc) {
  const auto I = [](int64_t v) { return static_cast<int>(v); };
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, I(m), I(n), I(k), 1.0f, a, I(lda), b,
                I(ldb), 0.0f, c, I(ldc));
  else
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, I(m), I(n), I(k), 1.0, a, I(lda), b,
                I(ldb), 0.0, c, I(ldc));
}

// The output of one (example, group): its weight rows times its im2col matrix, built in tiles
// of output rows in `col`. `threaded_im2col` when this item runs alone (BLAS threads the GEMM).
template <class T>
void run_item(const Geometry& g, const T* x, const T* w, T* out, int64_t item, std::vector<T>& col,
              bool threaded_im2col) {
  const int64_t n = item / g.G, grp = item % g.G, ohw = g.OH * g.OW;
  const T* xg = x + (n * g.C + grp * g.Cg) * g.H * g.W;
  const T* wg = w + grp * g.Og * g.K;
  T* og = out + (n * g.O + grp * g.Og) * ohw;
  if (g.pointwise) {
    gemm(g.Og, ohw, g.K, wg, g.K, xg, ohw, og, ohw);
    return;
  }
  const int64_t tile_rows = std::clamp<int64_t>(kTileElements / (g.K * g.OW), 1, g.OH);
  col.resize(g.K * tile_rows * g.OW);
  for (int64_t oh0 = 0; oh0 < g.OH; oh0 += tile_rows) {
    const int64_t oh1 = std::min(g.OH, oh0 + tile_rows), len = (oh1 - oh0) * g.OW;
    if (threaded_im2col)
      parallel_for(g.K, std::max<int64_t>(1, 32768 / len),
                   [&](int64_t r0, int64_t r1) { im2col(g, xg, oh0, oh1, r0, r1, col.data()); });
    else
      im2col(g, xg, oh0, oh1, 0, g.K, col.data());
    gemm(g.Og, len, g.K, wg, g.K, col.data(), len, og + oh0 * g.OW, ohw);
  }
}

template <class T>
void conv(const Geometry& g, const T* x, const T* w, T* out) {
  const int64_t items = g.N * g.G;
  const double flops = 2.0 * double(g.Og) * double(g.K) * double(g.OH * g.OW);
  if (items >= num_threads() || flops < kLargeGemm) {
    const auto grain = static_cast<int64_t>(std::max(1.0, 2e5 / flops));  // a few us per chunk
    parallel_for(items, grain, [&](int64_t begin, int64_t end) {
      std::vector<T> col;
      for (int64_t i = begin; i < end; ++i) run_item(g, x, w, out, i, col, false);
    });
    return;
  }
  std::vector<T> col;
  for (int64_t i = 0; i < items; ++i) run_item(g, x, w, out, i, col, true);
}

}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& w, const ConvParams& p) {
  const Geometry g = geometry(x, w, p);
  Tensor out = Tensor::empty({g.N, g.O, g.OH, g.OW}, x.dtype());
  if (out.numel() == 0) return out;
  if (g.K == 0) {  // no input channels: an empty sum
    std::memset(out.raw_mutable_data(), 0, out.numel() * dtype_size(out.dtype()));
    return out;
  }
  check(std::max({g.Og, g.K, g.OH * g.OW, g.H * g.W}) <= INT_MAX, "conv2d: a GEMM of ", g.Og, " x ",
        g.K, " by ", g.K, " x ", g.OH * g.OW, " is too large for BLAS's int sizes");
  const Tensor xc = x.contiguous(), wc = w.contiguous();
  if (x.dtype() == DType::Float32)
    conv(g, xc.data<float>(), wc.data<float>(), out.mutable_data<float>());
  else
    conv(g, xc.data<double>(), wc.data<double>(), out.mutable_data<double>());
  return out;
}

}  // namespace lanes::kernels
