// conv2d and conv_transpose2d rows. The references are the loop definitions of a grouped,
// strided, padded, dilated cross-correlation and its transpose in float64, written here
// independently of lanes.
#include <array>

#include "op_table.h"

namespace {

using namespace optable;
using lanes::Conv2dOptions;

struct ConvSpec {
  std::array<int64_t, 2> stride{1, 1}, padding{0, 0}, dilation{1, 1};
  int64_t groups = 1;
  Conv2dOptions options() const {
    return {{stride[0], stride[1]}, {padding[0], padding[1]}, {dilation[0], dilation[1]}, groups};
  }
};

// x (N, C, H, W) or (C, H, W), w (O, C / groups, kH, kW).
Ref conv_ref(const Ref& x_in, const Ref& w, const ConvSpec& s) {
  const bool single = x_in.ndim() == 3;
  const Shape xs = single ? Shape{1, x_in.shape[0], x_in.shape[1], x_in.shape[2]} : x_in.shape;
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  const int64_t O = w.shape[0], Cg = w.shape[1], kH = w.shape[2], kW = w.shape[3];
  const int64_t OH = (H + 2 * s.padding[0] - s.dilation[0] * (kH - 1) - 1) / s.stride[0] + 1;
  const int64_t OW = (W + 2 * s.padding[1] - s.dilation[1] * (kW - 1) - 1) / s.stride[1] + 1;
  const int64_t Og = O / s.groups;
  Ref out(single ? Shape{O, OH, OW} : Shape{N, O, OH, OW});
  const std::vector<double>& xd = x_in.data;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double sum = 0;
          const int64_t g = o / Og;
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t ki = 0; ki < kH; ++ki)
              for (int64_t kj = 0; kj < kW; ++kj) {
                const int64_t ih = oh * s.stride[0] - s.padding[0] + ki * s.dilation[0];
                const int64_t iw = ow * s.stride[1] - s.padding[1] + kj * s.dilation[1];
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                const int64_t xi = ((n * C + g * Cg + c) * H + ih) * W + iw;
                const int64_t wi = ((o * Cg + c) * kH + ki) * kW + kj;
                sum += xd[xi] * w.data[wi];
              }
          out.data[((n * O + o) * OH + oh) * OW + ow] = sum;
        }
  return out;
}

OpRow conv_row(const std::string& name, Shape x, Shape w, ConvSpec spec) {
  OpRow r;
  r.name = "conv2d_" + name;
  r.op = "conv2d";
  r.dtypes = kFloats;
  r.sample = [x, w](DType dtype, Gen& gen) -> std::vector<Tensor> {
    return {gen.uniform(x, dtype), gen.uniform(w, dtype)};
  };
  r.call = [spec](const std::vector<Tensor>& in) {
    return lanes::conv2d(in[0], in[1], spec.options());
  };
  r.reference = [spec](const std::vector<Ref>& in, DType dtype) -> Expected {
    return {conv_ref(in[0], in[1], spec), dtype};
  };
  // Sums of up to ~1600 float32 products: the rounding grows with the sum's length.
  r.rtol_float32 = 1e-4;
  r.atol_float32 = 1e-4;
  r.differentiable = true;
  return r;
}

// conv_transpose2d by its scatter definition (PyTorch's docs): every input element (n, ci, ih,
// iw) adds x * w[ci, co, ki, kj] to output (n, group * C_out/g + co, ih * s - p + ki * d, ...)
// when that lands inside the output; x (N, C_in, H, W) or (C_in, H, W), w (C_in, C_out/g, kH, kW).
struct TransposeSpec {
  std::array<int64_t, 2> stride{1, 1}, padding{0, 0}, output_padding{0, 0}, dilation{1, 1};
  int64_t groups = 1;
  lanes::ConvTranspose2dOptions options() const {
    return {{stride[0], stride[1]},
            {padding[0], padding[1]},
            {output_padding[0], output_padding[1]},
            {dilation[0], dilation[1]},
            groups};
  }
};

Ref conv_transpose_ref(const Ref& x_in, const Ref& w, const TransposeSpec& s) {
  const bool single = x_in.ndim() == 3;
  const Shape xs = single ? Shape{1, x_in.shape[0], x_in.shape[1], x_in.shape[2]} : x_in.shape;
  const int64_t N = xs[0], Cin = xs[1], H = xs[2], W = xs[3];
  const int64_t Cog = w.shape[1], kH = w.shape[2], kW = w.shape[3], Cig = Cin / s.groups;
  const int64_t Cout = Cog * s.groups;
  int64_t out_size[2];
  for (int i = 0; i < 2; ++i)
    out_size[i] = (xs[2 + i] - 1) * s.stride[i] - 2 * s.padding[i] +
                  s.dilation[i] * (w.shape[2 + i] - 1) + s.output_padding[i] + 1;
  const int64_t OH = out_size[0], OW = out_size[1];
  Ref out(single ? Shape{Cout, OH, OW} : Shape{N, Cout, OH, OW});
  for (int64_t n = 0; n < N; ++n)
    for (int64_t ci = 0; ci < Cin; ++ci)
      for (int64_t ih = 0; ih < H; ++ih)
        for (int64_t iw = 0; iw < W; ++iw) {
          const double v = x_in.data[((n * Cin + ci) * H + ih) * W + iw];
          const int64_t g = ci / Cig;
          for (int64_t co = 0; co < Cog; ++co)
            for (int64_t ki = 0; ki < kH; ++ki)
              for (int64_t kj = 0; kj < kW; ++kj) {
                const int64_t oh = ih * s.stride[0] - s.padding[0] + ki * s.dilation[0];
                const int64_t ow = iw * s.stride[1] - s.padding[1] + kj * s.dilation[1];
                if (oh < 0 || oh >= OH || ow < 0 || ow >= OW) continue;
                out.data[((n * Cout + g * Cog + co) * OH + oh) * OW + ow] +=
                    v * w.data[((ci * Cog + co) * kH + ki) * kW + kj];
              }
        }
  return out;
}

OpRow transpose_row(const std::string& name, Shape x, Shape w, TransposeSpec spec) {
  OpRow r;
  r.name = "conv_transpose2d_" + name;
  r.op = "conv_transpose2d";
  r.dtypes = kFloats;
  r.sample = [x, w](DType dtype, Gen& gen) -> std::vector<Tensor> {
    return {gen.uniform(x, dtype), gen.uniform(w, dtype)};
  };
  r.call = [spec](const std::vector<Tensor>& in) {
    return lanes::conv_transpose2d(in[0], in[1], spec.options());
  };
  r.reference = [spec](const std::vector<Ref>& in, DType dtype) -> Expected {
    return {conv_transpose_ref(in[0], in[1], spec), dtype};
  };
  r.rtol_float32 = 1e-4;
  r.atol_float32 = 1e-4;
  r.differentiable = true;
  return r;
}

// stride, padding, output_padding, dilation, groups.
TransposeSpec tspec(std::array<int64_t, 2> s, std::array<int64_t, 2> p = {0, 0},
                    std::array<int64_t, 2> op = {0, 0}, std::array<int64_t, 2> d = {1, 1},
                    int64_t g = 1) {
  return {s, p, op, d, g};
}

void convt(const Shape& x, const Shape& w, const lanes::ConvTranspose2dOptions& o = {}) {
  lanes::conv_transpose2d(lanes::zeros(x), lanes::zeros(w), o);
}

ConvSpec stride(int64_t sh, int64_t sw) { return {{sh, sw}, {0, 0}, {1, 1}, 1}; }
ConvSpec padding(int64_t ph, int64_t pw) { return {{1, 1}, {ph, pw}, {1, 1}, 1}; }
ConvSpec dilation(int64_t dh, int64_t dw) { return {{1, 1}, {0, 0}, {dh, dw}, 1}; }
ConvSpec groups(int64_t g) { return {{1, 1}, {0, 0}, {1, 1}, g}; }

Tensor f32(const Shape& s) { return lanes::zeros(s); }

void conv(const Shape& x, const Shape& w, const Conv2dOptions& o = {}) {
  lanes::conv2d(f32(x), f32(w), o);
}

static Rows rows{
    {
        conv_row("3x3", {2, 3, 7, 6}, {4, 3, 3, 3}, {}),
        conv_row("stride2", {2, 3, 9, 8}, {4, 3, 3, 3}, stride(2, 2)),
        conv_row("stride2x1", {2, 2, 9, 7}, {3, 2, 2, 3}, stride(2, 1)),
        conv_row("padding1", {2, 3, 6, 7}, {4, 3, 3, 3}, padding(1, 1)),
        conv_row("padding2x0", {1, 2, 5, 6}, {3, 2, 3, 3}, padding(2, 0)),
        conv_row("dilation2", {1, 2, 9, 9}, {3, 2, 3, 3}, dilation(2, 2)),
        conv_row("groups2", {2, 4, 6, 6}, {6, 2, 3, 3}, groups(2)),
        conv_row("depthwise", {2, 3, 6, 5}, {3, 1, 3, 3}, groups(3)),
        conv_row("depthwise_multiplier2", {2, 3, 6, 5}, {6, 1, 3, 3}, groups(3)),
        conv_row("1x1", {2, 5, 4, 3}, {3, 5, 1, 1}, {}),
        conv_row("1x1_groups", {2, 4, 4, 3}, {6, 2, 1, 1}, groups(2)),
        conv_row("1x1_stride2", {2, 5, 5, 4}, {3, 5, 1, 1}, stride(2, 2)),
        conv_row("single_example", {3, 6, 6}, {2, 3, 3, 3}, padding(1, 1)),
        conv_row("everything", {2, 4, 11, 10}, {4, 2, 3, 2}, {{2, 3}, {2, 1}, {2, 1}, 2}),
        conv_row("kernel_fills_padded_input", {1, 2, 3, 4}, {2, 2, 5, 4}, padding(1, 0)),
        // Large enough for BLAS threading and (single example) a threaded im2col.
        conv_row("one_large_example", {1, 16, 40, 40}, {32, 16, 3, 3}, {}),
        // K * W' > the im2col tile budget: the output rows come in two tiles.
        conv_row("tiled_im2col", {1, 64, 40, 40}, {2, 64, 5, 5}, {}),
        // Many examples: parallel over (example, group) with single-threaded GEMMs.
        conv_row("many_examples", {16, 3, 8, 8}, {4, 3, 3, 3}, padding(1, 1)),
        // Small images side by side in one im2col matrix (a 5 x 5 output: 16 examples per GEMM).
        conv_row("side_by_side", {40, 3, 9, 9}, {4, 3, 3, 3}, {{2, 2}, {1, 1}, {1, 1}, 1}),
        transpose_row("3x3", {2, 3, 5, 4}, {3, 4, 3, 3}, tspec({1, 1})),
        transpose_row("stride2", {2, 3, 4, 5}, {3, 2, 3, 3}, tspec({2, 2})),
        transpose_row("stride2_padding1", {2, 4, 5, 5}, {4, 3, 5, 5}, tspec({2, 2}, {1, 1})),
        transpose_row("output_padding", {2, 3, 4, 3}, {3, 2, 3, 2}, tspec({2, 3}, {1, 0}, {1, 2})),
        // output_padding >= stride is allowed when below the dilation: rows no input reaches.
        transpose_row("output_padding_dilation", {1, 2, 4, 4}, {2, 3, 3, 3},
                      tspec({1, 1}, {0, 0}, {1, 0}, {2, 1})),
        transpose_row("dilation2", {1, 2, 4, 5}, {2, 3, 3, 2}, tspec({1, 1}, {1, 0}, {0, 0}, {2, 2})),
        transpose_row("groups2", {2, 4, 4, 4}, {4, 3, 3, 3}, tspec({1, 2}, {0, 1}, {0, 1}, {1, 1}, 2)),
        transpose_row("depthwise", {2, 3, 5, 4}, {3, 1, 3, 3}, tspec({2, 1}, {1, 1}, {0, 0}, {1, 1}, 3)),
        transpose_row("1x1", {2, 5, 4, 3}, {5, 3, 1, 1}, tspec({1, 1})),
        transpose_row("1x1_groups", {2, 4, 3, 3}, {4, 3, 1, 1}, tspec({1, 1}, {0, 0}, {0, 0}, {1, 1}, 2)),
        transpose_row("1x1_stride2", {2, 3, 3, 4}, {3, 2, 1, 1}, tspec({2, 2}, {0, 0}, {1, 0})),
        transpose_row("single_example", {3, 4, 5}, {3, 2, 3, 3}, tspec({2, 2}, {1, 1}, {1, 1})),
        transpose_row("everything", {2, 4, 5, 4}, {4, 2, 3, 2},
                      tspec({2, 3}, {2, 1}, {1, 0}, {2, 1}, 2)),
        transpose_row("padding_crops", {1, 1, 2, 2}, {1, 1, 3, 3}, tspec({1, 1}, {1, 1})),
        // Many small examples side by side in one GEMM, then scattered.
        transpose_row("side_by_side", {40, 4, 5, 5}, {4, 3, 5, 5}, tspec({2, 2}, {2, 2}, {1, 1})),
        // One large example: threaded GEMM and threaded col2im, in row tiles of the matrix.
        transpose_row("one_large_example", {1, 2, 40, 40}, {2, 64, 5, 5}, tspec({1, 1})),
    },
    {
        {"conv2d_input_rank",
         [] {
           conv({3, 4}, {2, 3, 1, 1});
         },
         {"conv2d", "(3, 4)", "rank"}},
        {"conv2d_input_rank5",
         [] {
           conv({1, 1, 3, 4, 4}, {2, 3, 1, 1});
         },
         {"conv2d", "(1, 1, 3, 4, 4)"}},
        {"conv2d_weight_rank",
         [] {
           conv({1, 3, 4, 4}, {2, 3, 1});
         },
         {"conv2d", "weight", "(2, 3, 1)"}},
        {"conv2d_channel_mismatch",
         [] {
           conv({1, 3, 5, 5}, {2, 4, 3, 3});
         },
         {"conv2d", "channel", "(1, 3, 5, 5)", "(2, 4, 3, 3)"}},
        {"conv2d_groups_channel_mismatch",
         [] {
           conv({1, 4, 5, 5}, {2, 4, 3, 3}, groups(2).options());
         },
         {"conv2d", "channel", "groups"}},
        {"conv2d_groups_not_dividing_c",
         [] {
           conv({1, 3, 5, 5}, {2, 1, 3, 3}, groups(2).options());
         },
         {"conv2d", "groups", "3 input channels"}},
        {"conv2d_groups_not_dividing_o",
         [] {
           conv({1, 4, 5, 5}, {3, 2, 3, 3}, groups(2).options());
         },
         {"conv2d", "groups", "3 output channels"}},
        {"conv2d_groups_zero",
         [] {
           conv({1, 4, 5, 5}, {3, 2, 3, 3}, groups(0).options());
         },
         {"conv2d", "groups"}},
        {"conv2d_kernel_too_big",
         [] {
           conv({1, 1, 3, 3}, {1, 1, 5, 5});
         },
         {"conv2d", "kernel", "padded input", "(1, 1, 3, 3)"}},
        {"conv2d_dilated_kernel_too_big",
         [] {
           conv({1, 1, 5, 9}, {1, 1, 3, 3}, dilation(3, 1).options());
         },
         {"conv2d", "kernel height 7", "padded input 5"}},
        {"conv2d_stride_zero",
         [] {
           conv({1, 1, 5, 5}, {1, 1, 3, 3}, stride(0, 1).options());
         },
         {"conv2d", "stride", "(0, 1)"}},
        {"conv2d_stride_negative",
         [] {
           conv({1, 1, 5, 5}, {1, 1, 3, 3}, stride(1, -2).options());
         },
         {"conv2d", "stride", "(1, -2)"}},
        {"conv2d_dilation_zero",
         [] {
           conv({1, 1, 5, 5}, {1, 1, 3, 3}, dilation(0, 1).options());
         },
         {"conv2d", "dilation"}},
        {"conv2d_padding_negative",
         [] {
           conv({1, 1, 5, 5}, {1, 1, 3, 3}, padding(-1, 0).options());
         },
         {"conv2d", "padding"}},
        {"conv2d_stride_length",
         [] {
           conv({1, 1, 5, 5}, {1, 1, 3, 3}, {{1}, {0, 0}, {1, 1}, 1});
         },
         {"conv2d", "stride", "2 values"}},
        {"conv2d_integer_input",
         [] {
           lanes::conv2d(lanes::zeros({1, 1, 5, 5}, DType::Int32), f32({1, 1, 3, 3}));
         },
         {"conv2d", "int32"}},
        {"conv2d_integer_both",
         [] {
           lanes::conv2d(lanes::zeros({1, 1, 5, 5}, DType::Int64),
                         lanes::zeros({1, 1, 3, 3}, DType::Int64));
         },
         {"conv2d", "int64"}},
        {"conv_transpose2d_input_rank",
         [] {
           convt({3, 4}, {3, 2, 1, 1});
         },
         {"conv_transpose2d", "(3, 4)", "rank"}},
        {"conv_transpose2d_weight_rank",
         [] {
           convt({1, 3, 4, 4}, {3, 2, 1});
         },
         {"conv_transpose2d", "weight", "(3, 2, 1)", "rank 4"}},
        {"conv_transpose2d_channel_mismatch",
         [] {
           convt({1, 3, 5, 5}, {2, 4, 3, 3});
         },
         {"conv_transpose2d", "channel", "(1, 3, 5, 5)", "(2, 4, 3, 3)"}},
        {"conv_transpose2d_groups_not_dividing",
         [] {
           convt({1, 3, 5, 5}, {3, 1, 3, 3}, tspec({1, 1}, {0, 0}, {0, 0}, {1, 1}, 2).options());
         },
         {"conv_transpose2d", "groups = 2", "3 input channels"}},
        {"conv_transpose2d_groups_zero",
         [] {
           convt({1, 4, 5, 5}, {4, 2, 3, 3}, tspec({1, 1}, {0, 0}, {0, 0}, {1, 1}, 0).options());
         },
         {"conv_transpose2d", "groups"}},
        {"conv_transpose2d_stride_zero",
         [] {
           convt({1, 1, 5, 5}, {1, 1, 3, 3}, tspec({0, 1}).options());
         },
         {"conv_transpose2d", "stride", "(0, 1)"}},
        {"conv_transpose2d_dilation_negative",
         [] {
           convt({1, 1, 5, 5}, {1, 1, 3, 3}, tspec({1, 1}, {0, 0}, {0, 0}, {1, -1}).options());
         },
         {"conv_transpose2d", "dilation"}},
        {"conv_transpose2d_padding_negative",
         [] {
           convt({1, 1, 5, 5}, {1, 1, 3, 3}, tspec({1, 1}, {0, -1}).options());
         },
         {"conv_transpose2d", "padding"}},
        {"conv_transpose2d_output_padding_too_big",
         [] {
           convt({1, 1, 5, 5}, {1, 1, 3, 3}, tspec({2, 2}, {0, 0}, {2, 0}).options());
         },
         {"conv_transpose2d", "output_padding", "(2, 0)", "stride (2, 2)"}},
        {"conv_transpose2d_output_padding_negative",
         [] {
           convt({1, 1, 5, 5}, {1, 1, 3, 3}, tspec({2, 2}, {0, 0}, {0, -1}).options());
         },
         {"conv_transpose2d", "output_padding", "(0, -1)"}},
        {"conv_transpose2d_output_not_positive",
         [] {
           convt({1, 1, 2, 2}, {1, 1, 3, 3}, tspec({1, 1}, {2, 0}).options());
         },
         {"conv_transpose2d", "output height would be 0", "(1, 1, 2, 2)"}},
        {"conv_transpose2d_output_padding_length",
         [] {
           convt({1, 1, 5, 5}, {1, 1, 3, 3}, {{1, 1}, {0, 0}, {0}, {1, 1}, 1});
         },
         {"conv_transpose2d", "output_padding", "2 values"}},
        {"conv_transpose2d_integer",
         [] {
           lanes::conv_transpose2d(lanes::zeros({1, 1, 5, 5}, DType::Int32),
                                   lanes::zeros({1, 1, 3, 3}));
         },
         {"conv_transpose2d", "int32"}},
        {"conv_transpose2d_undefined",
         [] {
           lanes::conv_transpose2d(Tensor(), lanes::zeros({1, 1, 3, 3}));
         },
         {"conv_transpose2d", "undefined"}},
    }};

}  // namespace
