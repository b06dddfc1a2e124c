// A concatenate folded into the fused pass (or GEMM epilogue) that computes its operands: the
// pass writes each part straight into its place in the concatenation, rows apart, and the
// concatenate's own copy of every part is gone (an LSTM step's four gate gradients, joined for
// the product with the recurrent weights). Made by fuse_elementwise (fusion.cpp).
#pragma once

#include <string>
#include <vector>

#include "kernels/fused.h"
#include "lanes/tensor.h"

namespace lanes::detail {

/// The program's last `parts` outputs, concatenated along `axis` in order, are one output.
struct ConcatParts {
  int64_t axis;
  int32_t parts;

  std::string describe() const {
    return " the last " + std::to_string(parts) +
           " into concatenate[dimension=" + std::to_string(axis) + "]";
  }

  /// The node's output types from the program's (each of `shape`): the parts' one type last.
  void join_types(std::vector<TensorType>& types) const {
    types.resize(types.size() - size_t(parts) + 1);
    types.back().shape[size_t(axis)] *= parts;
  }

  /// What the pass writes into (FusedPass's `into`): a fresh tensor for each other output, then
  /// a view of `joined` (allocated here) for each part.
  std::vector<Tensor> outputs(const kernels::FusedProgram& program, const Shape& shape,
                              Tensor& joined) const {
    const size_t whole = program.outputs.size() - size_t(parts);
    std::vector<Tensor> out;
    for (size_t o = 0; o < whole; ++o)
      out.push_back(Tensor::empty(shape, program.register_type(program.outputs[o])));
    Shape all = shape;
    all[size_t(axis)] *= parts;
    joined = Tensor::empty(all, program.register_type(program.outputs.back()));
    const int64_t step = shape[size_t(axis)] * joined.strides()[size_t(axis)];
    for (int32_t k = 0; k < parts; ++k)
      out.push_back(joined.view(shape, joined.strides(), k * step));
    return out;
  }

  /// The node's outputs once the pass has run: the other outputs, then `joined`.
  std::vector<Tensor> node_outputs(std::vector<Tensor> written, const Tensor& joined) const {
    written.resize(written.size() - size_t(parts));
    written.push_back(joined);
    return written;
  }
};

}  // namespace lanes::detail
