// dot_epilogue: a dot_general and the fused elementwise chain that is the only reader of its
// output, as one node. The chain (bias, activation, relu's mask, a cast) runs on each block of the
// product as soon as the GEMM has written it, on the thread that wrote it, while the block is in
// cache (kernels::Epilogue), where a fused_elementwise node after the product would read the whole
// output back from memory in a pass of its own. Made by fuse_elementwise (fusion.cpp).
#pragma once

#include <memory>
#include <optional>

#include "kernels/fused.h"
#include "lanes/primitive.h"
#include "primitives/dot_general.h"
#include "runtime/concat_parts.h"

namespace lanes::detail {

/// The node's inputs are the product's lhs and rhs, then the chain's other inputs in the order
/// of the program's input registers; register `product` of the program is the product.
/// Its outputs are the program's, the last `concat->parts` of them joined into one when given.
std::shared_ptr<const Primitive> make_dot_epilogue(std::shared_ptr<const prim::DotGeneral> dot,
                                                   kernels::FusedProgram program, Shape shape,
                                                   int32_t product,
                                                   std::optional<ConcatParts> concat = {});

}  // namespace lanes::detail
