#include "kernels/conv.h"

#include <immintrin.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/gemm.h"
#include "lanes/determinism.h"
#include "lanes/parallel.h"
#include "runtime/thread_pool.h"

namespace lanes::kernels {

namespace {

constexpr int64_t kTileElements = int64_t{1} << 20;  // im2col tile: 4 MiB of float32
constexpr int64_t kPanelColumns = 384;  // examples side by side until a GEMM is this wide
constexpr double kLargeGemm = kParallelGemmFlops;  // one GEMM this large splits over the pool

// Sizes of one convolution in conv2d's terms (x the input, w the weight, out the output); one
// "item" is the work of `nb` consecutive examples of one group.
struct Geometry {
  int64_t N, C, H, W, O, kH, kW, OH, OW, G, Cg, Og, K, P;  // K = Cg * kH * kW, P = OH * OW
  int64_t Hq, Wq;     // a stride-phase plane of the padded input (see staged_size)
  int64_t nb;         // examples side by side in one im2col matrix
  int64_t tile_rows;  // output rows per im2col tile when nb == 1
  ConvParams p;
  bool staged;     // padded or strided: im2col reads a staged copy of the input
  bool pointwise;  // 1x1, stride 1, no padding: the input already is the im2col matrix
  int64_t chunks() const { return (N + nb - 1) / nb; }
  int64_t items() const { return chunks() * G; }
};

// (oh, ow): the output positions; at most conv_out_size of the input's (the transposes may have
// fewer).
Geometry geometry(const Shape& xs, const Shape& ws, const ConvParams& p, int64_t oh, int64_t ow) {
  Geometry g{};
  g.N = xs[0], g.C = xs[1], g.H = xs[2], g.W = xs[3];
  g.O = ws[0], g.kH = ws[2], g.kW = ws[3];
  g.OH = oh, g.OW = ow;
  g.G = p.groups, g.Cg = g.C / g.G, g.Og = g.O / g.G, g.K = g.Cg * g.kH * g.kW;
  g.P = g.OH * g.OW;
  g.Hq = (g.H + 2 * p.padding[0] + p.stride[0] - 1) / p.stride[0];
  g.Wq = (g.W + 2 * p.padding[1] + p.stride[1] - 1) / p.stride[1];
  g.p = p;
  g.staged = p.stride != std::array<int64_t, 2>{1, 1} || p.padding != std::array<int64_t, 2>{0, 0};
  g.pointwise = g.kH == 1 && g.kW == 1 && !g.staged;
  const int64_t k = std::max<int64_t>(g.K, 1), p1 = std::max<int64_t>(g.P, 1);
  // Side by side only while the matrix stays in budget and every thread still gets a chunk.
  g.nb = std::min({(kPanelColumns + p1 - 1) / p1, kTileElements / (k * p1),
                   std::max<int64_t>(1, g.N / runtime::cores())});
  // Batch-invariant (lanes/determinism.h): every example alone, so each runs the same tiles (the
  // order in which a transposed conv's columns add into an input position follows them).
  g.nb = batch_invariant() ? 1 : std::max<int64_t>(g.nb, 1);
  g.tile_rows = std::clamp<int64_t>(kTileElements / (k * std::max<int64_t>(g.OW, 1)), 1,
                                    std::max<int64_t>(g.OH, 1));
  return g;
}

void check_int_sizes(const Geometry& g, const char* op) {
  check(std::max({g.Og, g.K, g.nb * g.P}) <= INT_MAX, op, ": a GEMM of ", g.Og, " x ", g.K, " by ",
        g.K, " x ", g.P, " is too large for BLAS's int sizes");
}

// The staged image of one (example, group): zero-padded and split into stride phases, so that
// every kernel tap reads (and col2im writes) runs of W' contiguous elements whatever the stride
// and dilation. Padded element (c, h, w) lives in plane (c, h % sh, w % sw) of Hq x Wq at
// (h / sh, w / sw); a tap at offset (ki dh, kj dw) reads the plane of its phase, shifted.
int64_t staged_size(const Geometry& g) {
  return g.Cg * g.p.stride[0] * g.p.stride[1] * g.Hq * g.Wq;
}

// Where one (example, group) goes in the staged image, computed once per call (no divisions in
// the per-example loops):
// - row r (channel c, tap ki, kj) of the im2col matrix, output row oh, is the run of W' staged
//   elements from l.base[r] + oh * Wq;
// - image elements src, src + sw, ... (count of them) are the staged elements dst, dst + 1, ...
//   (a whole image row when sw == 1, else the elements of a row in one stride phase).
// - phase_taps[pi * sw + pj] lists the taps (r within a channel, dy, x) whose input lies in the
//   stride phase (pi, pj): output row oh of the tap reads plane row oh + dy from column x.
struct Layout {
  struct Run {
    int64_t src, dst, count;
  };
  struct Tap {
    int64_t r, dy, x;
  };
  std::vector<int64_t> base;
  std::vector<Run> runs;
  std::vector<std::vector<Tap>> phase_taps;
};

Layout layout(const Geometry& g) {
  const auto [sh, sw] = g.p.stride;
  const auto [ph, pw] = g.p.padding;
  Layout l;
  l.base.resize(g.K);
  l.phase_taps.resize(sh * sw);
  for (int64_t r = 0; r < g.K; ++r) {
    const int64_t c = r / (g.kH * g.kW), i = r / g.kW % g.kH * g.p.dilation[0],
                  j = r % g.kW * g.p.dilation[1];
    l.base[r] = (((c * sh + i % sh) * sw + j % sw) * g.Hq + i / sh) * g.Wq + j / sw;
    if (c == 0) l.phase_taps[i % sh * sw + j % sw].push_back({r, i / sh, j / sw});
  }
  if (!g.staged) return l;
  for (int64_t c = 0; c < g.Cg; ++c)
    for (int64_t h = 0; h < g.H; ++h) {
      const int64_t hp = h + ph, src = (c * g.H + h) * g.W;
      const int64_t dst = ((c * sh + hp % sh) * sw * g.Hq + hp / sh) * g.Wq;
      // Every phase, not the first min(sw, W): with padding, the phases an image row touches
      // need not be the first ones (W = 1, pw = 1, sw = 2 lives in phase 1 only), and a phase
      // left out was read as padding and never written back by col2im.
      for (int64_t phase = 0; phase < sw; ++phase) {
        const int64_t w0 =
            ((phase - pw) % sw + sw) % sw;  // the first w with (w + pw) % sw == phase
        if (w0 < g.W)
          l.runs.push_back(
              {src + w0, dst + phase * g.Hq * g.Wq + (w0 + pw) / sw, (g.W - w0 + sw - 1) / sw});
      }
    }
  return l;
}

#if defined(__AVX512F__)
// Masked 512-bit loads, adds and stores of float or double lanes.
template <class T>
struct Simd;
template <>
struct Simd<float> {
  static constexpr int64_t kLanes = 16;
  static __m512 load(uint32_t m, const float* p) { return _mm512_maskz_loadu_ps(__mmask16(m), p); }
  static __m512 add(__m512 a, __m512 b) { return _mm512_add_ps(a, b); }
  static void store(uint32_t m, float* p, __m512 v) { _mm512_mask_storeu_ps(p, __mmask16(m), v); }
};
template <>
struct Simd<double> {
  static constexpr int64_t kLanes = 8;
  static __m512d load(uint32_t m, const double* p) { return _mm512_maskz_loadu_pd(__mmask8(m), p); }
  static __m512d add(__m512d a, __m512d b) { return _mm512_add_pd(a, b); }
  static void store(uint32_t m, double* p, __m512d v) { _mm512_mask_storeu_pd(p, __mmask8(m), v); }
};
#endif

// dst[0, n) = src[0, n) for a short run (n usually a few dozen): a masked move handles the tail
// of a run of 7 or 14 in one step.
template <class T>
inline void copy_run(const T* src, T* dst, int64_t n) {
#if defined(__AVX512F__)
  using V = Simd<T>;
  for (; n > 0; n -= V::kLanes, src += V::kLanes, dst += V::kLanes) {
    const uint32_t m = n >= V::kLanes ? (1u << V::kLanes) - 1 : (1u << n) - 1;
    V::store(m, dst, V::load(m, src));
  }
#else
  std::copy_n(src, n, dst);
#endif
}

// Per-thread buffers, reused across the items a thread runs.
template <class T>
struct Workspace {
  std::vector<T> stage;  // a staged image (see staged_size)
  std::vector<T> col;    // the im2col matrix
  std::vector<T> tmp;    // a GEMM result or packed cotangents, Og x columns
};

// One (example, group) of x, staged for im2col (x itself when unpadded with stride 1). The
// padding of the buffer is zeroed once, when it is made, and never written after.
template <class T>
const T* stage_input(const Geometry& g, const Layout& l, const T* xg, Workspace<T>& ws) {
  if (!g.staged) return xg;
  if (ws.stage.empty()) ws.stage.assign(staged_size(g), T(0));
  T* buf = ws.stage.data();
  const int64_t step = g.p.stride[1];
  for (const Layout::Run& run : l.runs)
    for (int64_t i = 0; i < run.count; ++i) buf[run.dst + i] = xg[run.src + i * step];
  return buf;
}

// The accumulator col2im adds one (example, group) of the output into: the output itself
// (zeroed) when it needs no staging, else the zeroed staged buffer, copied out by `unstage`.
template <class T>
T* accumulator(const Geometry& g, T* outg, Workspace<T>& ws) {
  if (!g.staged) {
    std::fill_n(outg, g.Cg * g.H * g.W, T(0));
    return outg;
  }
  ws.stage.assign(staged_size(g), T(0));
  return ws.stage.data();
}
template <class T>
void unstage(const Geometry& g, const Layout& l, const Workspace<T>& ws, T* outg) {
  if (!g.staged) return;
  const T* buf = ws.stage.data();
  const int64_t step = g.p.stride[1];
  for (const Layout::Run& run : l.runs)
    for (int64_t i = 0; i < run.count; ++i) outg[run.src + i * step] = buf[run.dst + i];
}

// Rows [r0, r1), output rows [oh0, oh1) of the im2col matrix of one staged (example, group) xs,
// into col (leading dimension ld).
template <class T>
void im2col(const Geometry& g, const Layout& l, const T* xs, int64_t r0, int64_t r1, int64_t oh0,
            int64_t oh1, T* col, int64_t ld) {
  for (int64_t r = r0; r < r1; ++r) {
    const T* src = xs + l.base[r] + oh0 * g.Wq;
    T* dst = col + r * ld;
    for (int64_t oh = oh0; oh < oh1; ++oh, src += g.Wq, dst += g.OW) copy_run(src, dst, g.OW);
  }
}

#if defined(__AVX512F__)
// col2im for staged rows that fit one register: each plane row is loaded once, gets every run
// that lands in it (loaded shifted into place by a mask: lanes x .. x + W' - 1), and is stored
// once. Adding runs into memory one by one instead stalls on store-to-load forwarding, since
// overlapping runs of neighbouring taps follow each other.
template <class T>
void col2im_registers(const Geometry& g, const Layout& l, const T* col, int64_t ld, int64_t c0,
                      int64_t c1, int64_t oh0, int64_t oh1, T* xs) {
  using V = Simd<T>;
  const uint32_t run = (1u << g.OW) - 1, row = (1u << g.Wq) - 1;
  const int64_t phases = int64_t(l.phase_taps.size()), taps = g.kH * g.kW;
  for (int64_t c = c0; c < c1; ++c)
    for (int64_t phase = 0; phase < phases; ++phase) {
      T* plane = xs + (c * phases + phase) * g.Hq * g.Wq;
      const T* colc = col + c * taps * ld - oh0 * g.OW;
      for (int64_t y = 0; y < g.Hq; ++y) {
        // The first tile starts from zeros: loading them would wait on the store of the row
        // before, which overlaps the vector (store-to-load forwarding fails on masked moves).
        auto acc = V::load(oh0 == 0 ? 0 : row, plane + y * g.Wq);
        for (const Layout::Tap& t : l.phase_taps[phase]) {
          const int64_t oh = y - t.dy;
          if (oh >= oh0 && oh < oh1)
            acc = V::add(acc, V::load(run << t.x, colc + t.r * ld + oh * g.OW - t.x));
        }
        V::store(row, plane + y * g.Wq, acc);
      }
    }
}
#endif

// The transpose of im2col: adds col (output rows [oh0, oh1), leading dimension ld) of channels
// [c0, c1) into the staged image xs. Channels touch only their own planes, so they may run in
// parallel.
template <class T>
void col2im(const Geometry& g, const Layout& l, const T* col, int64_t ld, int64_t c0, int64_t c1,
            int64_t oh0, int64_t oh1, T* xs) {
#if defined(__AVX512F__)
  if (g.Wq <= Simd<T>::kLanes) return col2im_registers(g, l, col, ld, c0, c1, oh0, oh1, xs);
#endif
  const int64_t taps = g.kH * g.kW;
  for (int64_t r = c0 * taps; r < c1 * taps; ++r) {
    T* dst = xs + l.base[r] + oh0 * g.Wq;
    const T* src = col + r * ld;
    for (int64_t oh = oh0; oh < oh1; ++oh, dst += g.Wq, src += g.OW)
      for (int64_t j = 0; j < g.OW; ++j) dst[j] += src[j];
  }
}

// The im2col matrix of examples [n0, n1) of group grp side by side (n1 - n0 blocks of P
// columns), or of output rows [oh0, oh1) of one example; threaded over rows when the item runs
// alone. Returns the matrix's leading dimension.
template <class T>
int64_t build_col(const Geometry& g, const Layout& l, const T* x, int64_t n0, int64_t n1,
                  int64_t grp, int64_t oh0, int64_t oh1, Workspace<T>& ws, bool threaded) {
  const int64_t len = (oh1 - oh0) * g.OW, ld = (n1 - n0) * len;
  ws.col.resize(g.K * ld);
  for (int64_t n = n0; n < n1; ++n) {
    const T* xs = stage_input(g, l, x + (n * g.C + grp * g.Cg) * g.H * g.W, ws);
    T* dst = ws.col.data() + (n - n0) * len;
    if (threaded)
      parallel_for(g.K, std::max<int64_t>(1, 32768 / ld),
                   [&](int64_t r0, int64_t r1) { im2col(g, l, xs, r0, r1, oh0, oh1, dst, ld); });
    else
      im2col(g, l, xs, 0, g.K, oh0, oh1, dst, ld);
  }
  return ld;
}

// Copies the (Og x P) blocks of examples [n0, n1) of group grp between a (N, O, P) tensor and an
// Og x (n1 - n0) P matrix (columns side by side).
template <class T>
void pack(const Geometry& g, const T* t, int64_t n0, int64_t n1, int64_t grp, T* m) {
  const int64_t ld = (n1 - n0) * g.P;
  for (int64_t n = n0; n < n1; ++n)
    for (int64_t o = 0; o < g.Og; ++o)
      std::copy_n(t + (n * g.O + grp * g.Og + o) * g.P, g.P, m + o * ld + (n - n0) * g.P);
}
template <class T>
void unpack(const Geometry& g, const T* m, int64_t n0, int64_t n1, int64_t grp, T* t) {
  const int64_t ld = (n1 - n0) * g.P;
  for (int64_t n = n0; n < n1; ++n)
    for (int64_t o = 0; o < g.Og; ++o)
      std::copy_n(m + o * ld + (n - n0) * g.P, g.P, t + (n * g.O + grp * g.Og + o) * g.P);
}

// Runs item(n0, grp, workspace, threaded) over every item: in parallel with single-threaded
// GEMMs when there are enough items or they are small, else one by one with threaded GEMMs.
template <class T, class F>
void for_items(const Geometry& g, double item_flops, F&& item) {
  const int64_t items = g.items();
  if (items >= runtime::cores() || item_flops < kLargeGemm) {
    const auto grain = static_cast<int64_t>(std::max(1.0, 2e5 / item_flops));  // a few us
    parallel_for(items, grain, [&](int64_t begin, int64_t end) {
      Workspace<T> ws;
      for (int64_t i = begin; i < end; ++i) item(i / g.G * g.nb, i % g.G, ws, false);
    });
    return;
  }
  Workspace<T> ws;
  for (int64_t i = 0; i < items; ++i) item(i / g.G * g.nb, i % g.G, ws, true);
}

double item_flops(const Geometry& g) { return 2.0 * double(g.Og * g.K) * double(g.nb * g.P); }

// ---- conv2d ----------------------------------------------------------------------------------

template <class T>
void forward_item(const Geometry& g, const Layout& l, const T* x, const T* w, T* out, int64_t n0,
                  int64_t grp, Workspace<T>& ws, bool threaded) {
  const int64_t n1 = std::min(g.N, n0 + g.nb);
  const T* wg = w + grp * g.Og * g.K;
  if (g.pointwise) {
    for (int64_t n = n0; n < n1; ++n)
      gemm<T>(false, false, g.Og, g.P, g.K, wg, g.K, x + (n * g.C + grp * g.Cg) * g.P, g.P, 0,
              out + (n * g.O + grp * g.Og) * g.P, g.P);
    return;
  }
  if (n1 - n0 > 1) {  // one GEMM for the examples side by side, then each to its place
    const int64_t ld = build_col(g, l, x, n0, n1, grp, 0, g.OH, ws, threaded);
    ws.tmp.resize(g.Og * ld);
    gemm<T>(false, false, g.Og, ld, g.K, wg, g.K, ws.col.data(), ld, 0, ws.tmp.data(), ld);
    unpack(g, ws.tmp.data(), n0, n1, grp, out);
    return;
  }
  T* og = out + (n0 * g.O + grp * g.Og) * g.P;
  for (int64_t oh0 = 0; oh0 < g.OH; oh0 += g.tile_rows) {
    const int64_t oh1 = std::min(g.OH, oh0 + g.tile_rows);
    const int64_t ld = build_col(g, l, x, n0, n1, grp, oh0, oh1, ws, threaded);
    gemm<T>(false, false, g.Og, ld, g.K, wg, g.K, ws.col.data(), ld, 0, og + oh0 * g.OW, g.P);
  }
}

// ---- conv_transpose2d -------------------------------------------------------------------------

// Adds col (output rows [oh0, oh1) of one example, leading dimension ld) into the staged image
// acc, threaded over channels when the item runs alone.
template <class T>
void scatter(const Geometry& g, const Layout& l, const T* col, int64_t ld, int64_t oh0, int64_t oh1,
             T* acc, bool threaded) {
  const int64_t taps = g.kH * g.kW;
  if (threaded)
    parallel_for(g.Cg, std::max<int64_t>(1, 32768 / (taps * ld)),
                 [&](int64_t c0, int64_t c1) { col2im(g, l, col, ld, c0, c1, oh0, oh1, acc); });
  else
    col2im(g, l, col, ld, 0, g.Cg, oh0, oh1, acc);
}

template <class T>
void transpose_item(const Geometry& g, const Layout& l, const T* ct, const T* w, T* out, int64_t n0,
                    int64_t grp, Workspace<T>& ws, bool threaded) {
  const int64_t n1 = std::min(g.N, n0 + g.nb);
  const T* wg = w + grp * g.Og * g.K;
  auto out_of = [&](int64_t n) { return out + (n * g.C + grp * g.Cg) * g.H * g.W; };
  auto ct_of = [&](int64_t n) { return ct + (n * g.O + grp * g.Og) * g.P; };
  if (g.pointwise) {
    for (int64_t n = n0; n < n1; ++n)
      gemm<T>(true, false, g.K, g.P, g.Og, wg, g.K, ct_of(n), g.P, 0, out_of(n), g.P);
    return;
  }
  if (n1 - n0 > 1) {  // one GEMM for the examples side by side, then scatter each
    const int64_t ld = (n1 - n0) * g.P;
    ws.tmp.resize(g.Og * ld);
    pack(g, ct, n0, n1, grp, ws.tmp.data());
    ws.col.resize(g.K * ld);
    gemm<T>(true, false, g.K, ld, g.Og, wg, g.K, ws.tmp.data(), ld, 0, ws.col.data(), ld);
    for (int64_t n = n0; n < n1; ++n) {
      T* acc = accumulator(g, out_of(n), ws);
      scatter(g, l, ws.col.data() + (n - n0) * g.P, ld, 0, g.OH, acc, threaded);
      unstage(g, l, ws, out_of(n));
    }
    return;
  }
  T* acc = accumulator(g, out_of(n0), ws);
  // A tile's columns add into an input position before the next tile's, so the tile height sets
  // the order of that sum; it follows K, which a batched weight multiplies. Batch-invariant: one
  // output row per tile, whatever K.
  const int64_t tile_rows = batch_invariant() ? 1 : g.tile_rows;
  for (int64_t oh0 = 0; oh0 < g.OH; oh0 += tile_rows) {
    const int64_t oh1 = std::min(g.OH, oh0 + tile_rows), ld = (oh1 - oh0) * g.OW;
    ws.col.resize(g.K * ld);
    gemm<T>(true, false, g.K, ld, g.Og, wg, g.K, ct_of(n0) + oh0 * g.OW, g.P, 0, ws.col.data(), ld);
    scatter(g, l, ws.col.data(), ld, oh0, oh1, acc, threaded);
  }
  unstage(g, l, ws, out_of(n0));
}

// ---- conv_weight_grad -------------------------------------------------------------------------

// dw of group grp (Og x K) = beta dw + the sum over examples [n0, n0 + nb) of ct_n @ col_n^T.
template <class T>
void weight_item(const Geometry& g, const Layout& l, const T* x, const T* ct, T* dwg, int64_t n0,
                 int64_t grp, T beta, Workspace<T>& ws, bool threaded) {
  const int64_t n1 = std::min(g.N, n0 + g.nb);
  auto ct_of = [&](int64_t n) { return ct + (n * g.O + grp * g.Og) * g.P; };
  if (g.pointwise) {
    for (int64_t n = n0; n < n1; ++n, beta = 1)
      gemm<T>(false, true, g.Og, g.K, g.P, ct_of(n), g.P, x + (n * g.C + grp * g.Cg) * g.P, g.P,
              beta, dwg, g.K);
    return;
  }
  if (n1 - n0 > 1) {  // one GEMM contracting over the examples side by side
    const int64_t ld = build_col(g, l, x, n0, n1, grp, 0, g.OH, ws, threaded);
    ws.tmp.resize(g.Og * ld);
    pack(g, ct, n0, n1, grp, ws.tmp.data());
    gemm<T>(false, true, g.Og, g.K, ld, ws.tmp.data(), ld, ws.col.data(), ld, beta, dwg, g.K);
    return;
  }
  for (int64_t oh0 = 0; oh0 < g.OH; oh0 += g.tile_rows, beta = 1) {
    const int64_t oh1 = std::min(g.OH, oh0 + g.tile_rows);
    const int64_t ld = build_col(g, l, x, n0, n1, grp, oh0, oh1, ws, threaded);
    gemm<T>(false, true, g.Og, g.K, ld, ct_of(n0) + oh0 * g.OW, g.P, ws.col.data(), ld, beta, dwg,
            g.K);
  }
}

// Items of one group write the same dw block: with enough groups each thread owns whole groups;
// with few groups and many chunks, the chunks of a group are split into parts summed apart, then
// added in the parts' order (never in the order threads finish: the bits would vary by run). The
// plan depends on the shapes and the cores, not on the thread count.
template <class T>
void weight_grad(const Geometry& g, const Layout& l, const T* x, const T* ct, T* dw) {
  const int64_t chunks = g.chunks(), block = g.Og * g.K;
  const double flops = item_flops(g);
  auto group = [&](int64_t grp, int64_t c0, int64_t c1, T* dst, Workspace<T>& ws, bool threaded) {
    for (int64_t c = c0; c < c1; ++c)
      weight_item(g, l, x, ct, dst, c * g.nb, grp, T(c == c0 ? 0 : 1), ws, threaded);
  };
  if (g.G >= runtime::cores() || chunks == 1 || flops * double(chunks) < kLargeGemm) {
    const bool alone = g.G == 1 && chunks == 1 && flops >= kLargeGemm;
    const auto grain = static_cast<int64_t>(std::max(1.0, 2e5 / (flops * double(chunks))));
    parallel_for(g.G, alone ? g.G : grain, [&](int64_t begin, int64_t end) {
      Workspace<T> ws;
      for (int64_t grp = begin; grp < end; ++grp)
        group(grp, 0, chunks, dw + grp * block, ws, alone);
    });
    return;
  }
  const int64_t parts = std::min(chunks, runtime::max_chunks());
  std::vector<T> sums(size_t(parts * block));
  for (int64_t grp = 0; grp < g.G; ++grp) {
    parallel_for(parts, 1, [&](int64_t p0, int64_t p1) {
      Workspace<T> ws;
      for (int64_t q = p0; q < p1; ++q)
        group(grp, chunks * q / parts, chunks * (q + 1) / parts, sums.data() + q * block, ws,
              false);
    });
    T* dst = dw + grp * block;
    std::copy_n(sums.data(), block, dst);
    for (int64_t q = 1; q < parts; ++q)
      for (int64_t i = 0; i < block; ++i) dst[i] += sums[size_t(q * block + i)];
  }
}

// ---- entry points -----------------------------------------------------------------------------

void zero(Tensor& t) { std::memset(t.raw_mutable_data(), 0, t.numel() * dtype_size(t.dtype())); }

}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& w, const ConvParams& p) {
  const int64_t oh =
      conv_out_size(x.shape(2), w.shape(2), p.stride[0], p.padding[0], p.dilation[0]);
  const int64_t ow =
      conv_out_size(x.shape(3), w.shape(3), p.stride[1], p.padding[1], p.dilation[1]);
  const Geometry g = geometry(x.shape(), w.shape(), p, oh, ow);
  Tensor out = Tensor::empty({g.N, g.O, g.OH, g.OW}, x.dtype());
  if (out.numel() == 0) return out;
  if (g.K == 0) {  // no input channels: an empty sum
    zero(out);
    return out;
  }
  check_int_sizes(g, "conv2d");
  const Tensor xc = x.contiguous(), wc = w.contiguous();
  const Layout o = layout(g);
  auto run = [&]<class T>(const T* xd, const T* wd, T* od) {
    for_items<T>(g, item_flops(g), [&](int64_t n0, int64_t grp, Workspace<T>& ws, bool threaded) {
      forward_item(g, o, xd, wd, od, n0, grp, ws, threaded);
    });
  };
  if (x.dtype() == DType::Float32)
    run(xc.data<float>(), wc.data<float>(), out.mutable_data<float>());
  else
    run(xc.data<double>(), wc.data<double>(), out.mutable_data<double>());
  return out;
}

Tensor conv_transpose2d(const Tensor& ct, const Tensor& w, const ConvParams& p,
                        std::array<int64_t, 2> input_size) {
  const Shape xs{ct.shape(0), w.shape(1) * p.groups, input_size[0], input_size[1]};
  const Geometry g = geometry(xs, w.shape(), p, ct.shape(2), ct.shape(3));
  Tensor out = Tensor::empty(xs, ct.dtype());
  if (out.numel() == 0) return out;
  // No output channels or positions in the convolution (an input image of height or width 0,
  // whose outputs are all padding): an empty sum.
  if (g.Og == 0 || g.OH == 0 || g.OW == 0) {
    zero(out);
    return out;
  }
  check_int_sizes(g, "conv_transpose2d");
  const Tensor cc = ct.contiguous(), wc = w.contiguous();
  const Layout o = layout(g);
  auto run = [&]<class T>(const T* cd, const T* wd, T* od) {
    for_items<T>(g, item_flops(g), [&](int64_t n0, int64_t grp, Workspace<T>& ws, bool threaded) {
      transpose_item(g, o, cd, wd, od, n0, grp, ws, threaded);
    });
  };
  if (ct.dtype() == DType::Float32)
    run(cc.data<float>(), wc.data<float>(), out.mutable_data<float>());
  else
    run(cc.data<double>(), wc.data<double>(), out.mutable_data<double>());
  return out;
}

Tensor conv_weight_grad(const Tensor& x, const Tensor& ct, const ConvParams& p,
                        std::array<int64_t, 2> kernel_size) {
  const Shape ws{ct.shape(1), x.shape(1) / p.groups, kernel_size[0], kernel_size[1]};
  const Geometry g = geometry(x.shape(), ws, p, ct.shape(2), ct.shape(3));
  Tensor dw = Tensor::empty(ws, x.dtype());
  if (dw.numel() == 0) return dw;
  if (g.N == 0) {  // no examples: an empty sum
    zero(dw);
    return dw;
  }
  check_int_sizes(g, "conv_weight_grad");
  const Tensor xc = x.contiguous(), cc = ct.contiguous();
  const Layout o = layout(g);
  if (x.dtype() == DType::Float32)
    weight_grad(g, o, xc.data<float>(), cc.data<float>(), dw.mutable_data<float>());
  else
    weight_grad(g, o, xc.data<double>(), cc.data<double>(), dw.mutable_data<double>());
  return dw;
}

}  // namespace lanes::kernels
