#include "runtime/dot_epilogue.h"

#include <optional>

#include "kernels/matmul.h"
#include "lanes/error.h"

namespace lanes::detail {

namespace {

using kernels::FusedProgram;

// The chain as a kernels::Epilogue: its pass is made once the product's output exists, then run
// block by block (or over everything, after a kernel without blocks).
class ChainEpilogue : public kernels::Epilogue {
 public:
  ChainEpilogue(const FusedProgram& program, const Shape& shape, std::vector<Tensor> others,
                int32_t product, std::vector<Tensor> into)
      : program_(program),
        shape_(shape),
        inputs_(std::move(others)),
        product_(product),
        into_(std::move(into)) {}

  void start(const Tensor& product) override {
    // A product the kernel allocated is read by the chain alone, which may write an output over
    // it; not one that is a view of an operand (a product with the identity). Such a view may be
    // transposed: read in its own order, the outputs following it as the unfused ops' would
    // (gathered into row-major tiles, jacobian_mlp's 512 x 512 chain took 5x the unfused mul's
    // time).
    // (Outputs given their places follow them: the product is gathered.)
    const bool owned = product.sole_owner();
    inputs_.insert(inputs_.begin() + product_, product);
    const bool in_order = product.is_contiguous() || !into_.empty();
    pass_.emplace(program_, shape_, inputs_, owned ? product_ : -1, in_order ? -1 : product_,
                  std::move(into_));
  }
  void block(int64_t begin, int64_t end) const override { pass_->run_elements(begin, end); }
  void all() const override { pass_->run(); }
  const std::vector<Tensor>& outputs() const { return pass_->outputs(); }

 private:
  const FusedProgram& program_;
  const Shape& shape_;
  std::vector<Tensor> inputs_;
  int32_t product_;
  std::vector<Tensor> into_;  // where the outputs go, when given (concatenated parts)
  std::optional<kernels::FusedPass> pass_;
};

class DotEpilogue : public Primitive {
 public:
  DotEpilogue(std::shared_ptr<const prim::DotGeneral> dot, FusedProgram program, Shape shape,
              int32_t product, std::optional<ConcatParts> concat)
      : dot_(std::move(dot)),
        program_(std::move(program)),
        shape_(std::move(shape)),
        product_(product),
        concat_(concat) {
    program_.plan();
  }

  std::string name() const override { return "dot_epilogue"; }
  std::string params() const override {
    return dot_->params() + " then in" + std::to_string(product_) + "=product; " +
           program_.describe() + (concat_ ? concat_->describe() : "");
  }

  std::vector<TensorType> infer(const std::vector<TensorType>& in) const override {
    check(in.size() + 1 == program_.input_types.size() + 2, "dot_epilogue: expects ",
          program_.input_types.size() + 1, " inputs, got ", in.size());
    std::vector<TensorType> chain(in.begin() + 2, in.end());
    chain.insert(chain.begin() + product_, dot_->infer({in[0], in[1]})[0]);
    for (size_t i = 0; i < chain.size(); ++i)
      check(chain[i] == TensorType{shape_, program_.input_types[i]}, "dot_epilogue: chain input ",
            i, " has shape ", fmt(chain[i].shape), " and dtype ", dtype_name(chain[i].dtype),
            ", expected ", fmt(shape_), " ", dtype_name(program_.input_types[i]));
    std::vector<TensorType> out;
    for (int32_t r : program_.outputs) out.push_back({shape_, program_.register_type(r)});
    if (concat_) concat_->join_types(out);
    return out;
  }

  std::vector<Tensor> eval(const std::vector<Tensor>& in) const override {
    Tensor joined;
    std::vector<Tensor> into;
    if (concat_) into = concat_->outputs(program_, shape_, joined);
    ChainEpilogue epilogue(program_, shape_, {in.begin() + 2, in.end()}, product_, std::move(into));
    kernels::dot_general(in[0], in[1], dot_->lhs_contracting(), dot_->rhs_contracting(),
                         dot_->lhs_batch(), dot_->rhs_batch(), &epilogue, dot_->known_finite());
    if (concat_) return concat_->node_outputs(epilogue.outputs(), joined);
    return epilogue.outputs();
  }

  double flops(const std::vector<TensorType>& in, const std::vector<TensorType>&) const override {
    const TensorType product{shape_, program_.input_types[size_t(product_)]};
    return dot_->flops({in[0], in[1]}, {product}) + program_.flops(shape_numel(shape_));
  }

 private:
  std::shared_ptr<const prim::DotGeneral> dot_;
  FusedProgram program_;
  Shape shape_;
  int32_t product_;
  std::optional<ConcatParts> concat_;
};

}  // namespace

std::shared_ptr<const Primitive> make_dot_epilogue(std::shared_ptr<const prim::DotGeneral> dot,
                                                   FusedProgram program, Shape shape,
                                                   int32_t product,
                                                   std::optional<ConcatParts> concat) {
  return std::make_shared<DotEpilogue>(std::move(dot), std::move(program), std::move(shape),
                                       product, concat);
}

}  // namespace lanes::detail
