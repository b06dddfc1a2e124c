// Fused elementwise chains: a small program of unary/binary/select/cast steps run as one pass over
// memory. The output space is cut into tiles of 1024 elements; each tile of every input is read
// once (in place when it is contiguous, gathered when strided or broadcast), every step runs the
// ordinary row kernel on L1-resident buffers (a conversion to float32, a unary op and a conversion
// back run as one loop instead: fused_convert.h), and only the program's outputs are written to
// memory, with non-temporal stores when they are larger than the cache. An unfused chain of k ops
// reads and writes k intermediate arrays instead.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/elementwise.h"
#include "kernels/reduce.h"
#include "lanes/tensor.h"

namespace lanes::kernels {

/// One step of a fused program. Registers 0 .. num_inputs-1 hold the program's inputs; step i
/// writes register num_inputs + i. `args` name registers (unused ones are -1).
struct FusedStep {
  enum class Kind : uint8_t { Unary, Binary, Select, Cast };
  Kind kind;
  uint8_t op = 0;      // UnaryOp or BinaryOp
  DType operand_type;  // the dtype of args[0] (of args[1] for select)
  DType result_type;
  std::array<int32_t, 3> args{-1, -1, -1};
};

/// Steps first..last of a program, run as one call on a tile: one step, or a conversion to
/// float32, a unary op and a conversion from float32 (either conversion may be missing) as one
/// converting_unary loop (fused_convert.h).
struct StepGroup {
  int32_t first, last;
};

struct FusedProgram {
  std::vector<DType> input_types;
  std::vector<FusedStep> steps;
  std::vector<int32_t> outputs;  // registers written to the output tensors, in order
  /// How the passes run the steps (fused_steps.h), planned once by plan() rather than by every
  /// pass: the groups called on each tile, and the register buffer each register is written to.
  /// Empty until planned (a pass then plans for itself).
  std::vector<StepGroup> groups;
  std::vector<int32_t> buffers;

  /// Fills groups and buffers, once the steps and outputs are final.
  void plan();

  int32_t num_registers() const { return int32_t(input_types.size() + steps.size()); }
  DType register_type(int32_t r) const;
  /// "exp(a) ; mul(r1, b) ; ..." for graph printing.
  std::string describe() const;
  /// Floating-point operations over `numel` elements: each arithmetic step on floats once per
  /// element (selects and casts move values).
  double flops(int64_t numel) const;
};

/// run_fused in two parts: making the pass allocates (or donates) the outputs; `run` then computes
/// every element in parallel, or `run_elements` a range of them on the calling thread. A GEMM's
/// epilogue (dot_epilogue.h) runs each block of the product's output that way as soon as the GEMM
/// has written it, while it is still in cache. `program` must outlive the pass. Input
/// `private_input` (if any) is read by nothing else, so an output may take its buffer as a donated
/// input's. With `layout_input`, the outputs are laid out in that input's memory order (a
/// transposed view), and element ranges count in that order. Given `into` (one tensor of `shape`
/// per output), the pass writes the outputs there instead: fresh row-major tensors, or views whose
/// last dim is contiguous and whose rows are apart (parts of a larger tensor), all of those with
/// the same strides.
class FusedPass {
 public:
  FusedPass(const FusedProgram& program, const Shape& shape, const std::vector<Tensor>& inputs,
            int32_t private_input = -1, int32_t layout_input = -1, std::vector<Tensor> into = {});
  ~FusedPass();
  FusedPass(const FusedPass&) = delete;
  FusedPass& operator=(const FusedPass&) = delete;
  const std::vector<Tensor>& outputs() const;
  /// Every element, in parallel.
  void run() const;
  /// Elements [begin, end) of the outputs in row-major order; several threads may each run their
  /// own ranges at once.
  void run_elements(int64_t begin, int64_t end) const;

 private:
  struct Plan;
  const Plan& plan() const;
  // The plan (with the arena its vectors are carved from) lives inside the pass, which its users
  // keep on the stack: as a heap block of ~2 KiB, a size glibc serves from its large bins, it
  // made malloc consolidate the fast bins on every fused kernel (5% of perex_linear's time).
  static constexpr size_t kPlanBytes = 2176;
  alignas(64) unsigned char plan_[kPlanBytes];
};

/// Runs the program over tensors of one shape `shape` (inputs may be any strided views of it,
/// broadcasts included); returns fresh contiguous outputs. An input whose storage nothing else
/// holds (Tensor::sole_owner), contiguous and of an output's dtype, is overwritten in place as that
/// output: each tile is read before it is written.
std::vector<Tensor> run_fused(const FusedProgram& program, const Shape& shape,
                              const std::vector<Tensor>& inputs);

/// run_fused writing into `outputs` (FusedPass's `into`): the parts of a concatenation, say,
/// written in place.
void run_fused_into(const FusedProgram& program, const Shape& shape,
                    const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs);

/// The program's one output reduced by `op` (float dtypes) over the last `reduced_dims` dims of
/// `shape`: a chain with a tail reduction, in one pass; the output has shape's leading dims.
Tensor run_fused_reduce(const FusedProgram& program, const Shape& shape,
                        const std::vector<Tensor>& inputs, ReduceOp op, int64_t reduced_dims);

}  // namespace lanes::kernels
