// A fused chain's conversions around a float32 unary op, in one loop: convert[float32](x) ->
// op -> convert[out], or either conversion alone with the op. Run as separate steps over a tile,
// the compute-bound op (sqrt) and the load/store-bound conversions each ran alone; in one loop the
// CPU overlaps them: a batch at a time with the conversions in registers where convert.h can
// (float32, int32, and uint8 on AVX-512), else 256 elements at a time through L1 buffers. A
// (100, 64, 64, 3) uint8 -> sqrt -> uint8 chain went from 0.157 to ~0.10 ms on one thread.
// Results are bit-identical to the steps run one by one.
#pragma once

#include <cstdint>

#include "kernels/elementwise.h"
#include "lanes/dtype.h"

namespace lanes::kernels {

/// Whether converting_unary runs in = op's input dtype before conversion, out = the dtype
/// after (Float32 for no conversion on that side; not both Float32): in, out in {uint8, int32,
/// float32}, op one with a float32 batch form.
bool converting_unary_supported(DType in, UnaryOp op, DType out);

/// out[i] = convert<out>(op(convert<float>(x[i]))) for n contiguous elements.
void converting_unary(DType in, UnaryOp op, DType out, const void* x, void* o, int64_t n);

}  // namespace lanes::kernels
