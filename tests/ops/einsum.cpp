// Op-table rows of einsum: matmul, batch matmul, outer, transpose, sums, diagonals and traces,
// three operands, implicit outputs and "..." broadcasting. The reference loops over every
// assignment of values to the labels (spelled out with "..." resolved to capital letters) and
// adds the product of the operands into the output.
#include <map>

#include "op_table.h"

using namespace optable;

namespace {

// `resolved` is the spec with explicit output and "..." replaced by capitals; a size-1 dim of an
// operand broadcasts (reads index 0).
Ref einsum_ref(const std::string& resolved, const std::vector<Ref>& in) {
  const size_t arrow = resolved.find("->");
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    const size_t comma = resolved.find(',', start);
    terms.push_back(resolved.substr(start, std::min(comma, arrow) - start));
    if (comma == std::string::npos || comma > arrow) break;
    start = comma + 1;
  }
  const std::string out = resolved.substr(arrow + 2);
  std::map<char, int64_t> size;
  for (size_t k = 0; k < terms.size(); ++k)
    for (size_t d = 0; d < terms[k].size(); ++d)
      size[terms[k][d]] = std::max(size[terms[k][d]], in[k].shape[d]);
  std::string labels;
  Shape extents, out_shape;
  for (auto [l, n] : size) {
    labels += l;
    extents.push_back(n);
  }
  for (char l : out) out_shape.push_back(size[l]);
  Ref result(out_shape);
  for (int64_t f = 0; f < lanes::shape_numel(extents); ++f) {
    const std::vector<int64_t> at = unravel(f, extents);
    auto value_of = [&](char l) { return at[labels.find(l)]; };
    double product = 1;
    for (size_t k = 0; k < terms.size(); ++k) {
      std::vector<int64_t> idx;
      for (size_t d = 0; d < terms[k].size(); ++d)
        idx.push_back(in[k].shape[d] == 1 ? 0 : value_of(terms[k][d]));
      product *= in[k].at(idx);
    }
    std::vector<int64_t> o;
    for (char l : out) o.push_back(value_of(l));
    result.at(o) += product;
  }
  return result;
}

OpRow einsum_row(std::string name, std::string spec, std::string resolved,
                 std::vector<Shape> shapes) {
  OpRow r;
  r.name = std::move(name);
  r.op = "einsum";
  r.dtypes = kSignedNumbers;
  r.sample = [shapes](DType d, Gen& g) {
    std::vector<Tensor> xs;
    for (const Shape& s : shapes) xs.push_back(g.uniform(s, d, -2, 2));
    return xs;
  };
  r.call = [spec](const std::vector<Tensor>& in) { return lanes::einsum(spec, in); };
  r.reference = [resolved](const std::vector<Ref>& in, DType d) {
    return Expected{einsum_ref(resolved, in), d};
  };
  r.rtol_float32 = 1e-5;
  r.atol_float32 = 1e-5;
  r.differentiable = true;
  return r;
}

std::vector<OpRow> all_rows() {
  return {
      einsum_row("einsum_matmul", "ij,jk->ik", "ij,jk->ik", {{3, 4}, {4, 5}}),
      einsum_row("einsum_batch_matmul", "bij,bjk->bik", "bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}),
      einsum_row("einsum_implicit_matmul", "ij,jk", "ij,jk->ik", {{2, 3}, {3, 4}}),
      einsum_row("einsum_outer", "i,j->ij", "i,j->ij", {{3}, {4}}),
      einsum_row("einsum_transpose", "ij->ji", "ij->ji", {{3, 4}}),
      einsum_row("einsum_sum_all", "ij->", "ij->", {{3, 4}}),
      einsum_row("einsum_dot", "i,i", "i,i->", {{5}, {5}}),
      einsum_row("einsum_diagonal", "ii->i", "ii->i", {{4, 4}}),
      einsum_row("einsum_trace", "ii", "ii->", {{3, 3}}),
      einsum_row("einsum_batch_diagonal", "bii->bi", "bii->bi", {{2, 3, 3}}),
      einsum_row("einsum_diagonal_sum", "iji->j", "iji->j", {{3, 2, 3}}),
      einsum_row("einsum_three_operands", "ij,jk,kl->il", "ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 2}}),
      einsum_row("einsum_shared_by_three", "i,i,i->i", "i,i,i->i", {{4}, {4}, {4}}),
      einsum_row("einsum_bilinear", "bi,ij,bj->b", "bi,ij,bj->b", {{3, 4}, {4, 5}, {3, 5}}),
      einsum_row("einsum_ellipsis_broadcast", "...ij,...jk->...ik", "ABij,Bjk->ABik",
                 {{2, 1, 3, 4}, {5, 4, 2}}),
      einsum_row("einsum_ellipsis_implicit", "...i,i", "ABi,i->AB", {{2, 3, 4}, {4}}),
      einsum_row("einsum_ellipsis_middle", "i...j->j...i", "iAj->jAi", {{2, 3, 4}}),
      einsum_row("einsum_spaces_and_zero_size", "i j, j k -> i k", "ij,jk->ik", {{0, 3}, {3, 2}}),
  };
}

std::vector<ErrorRow> error_rows() {
  using lanes::ones;
  auto call = [](std::string spec, std::vector<Shape> shapes) {
    return [=] {
      std::vector<Tensor> xs;
      for (const Shape& s : shapes) xs.push_back(ones(s));
      lanes::einsum(spec, xs);
    };
  };
  return {
      {"einsum_size_mismatch",
       call("ij,jk->ik", {{2, 3}, {4, 5}}),
       {"einsum", "ij,jk->ik", "'j'", "3", "4", "(2, 3)", "(4, 5)"}},
      {"einsum_rank_mismatch", call("ijk->i", {{2, 3}}), {"einsum", "ijk->i", "rank 2"}},
      {"einsum_output_not_in_input", call("ij->ik", {{2, 3}}), {"einsum", "ij->ik", "'k'"}},
      {"einsum_repeated_output", call("ij->ii", {{2, 3}}), {"einsum", "ij->ii", "repeated"}},
      {"einsum_too_many_terms", call("i,j->ij", {{2}}), {"einsum", "i,j->ij", "operands"}},
      {"einsum_too_few_terms", call("i->i", {{2}, {3}}), {"einsum", "i->i", "operands"}},
      {"einsum_bad_character", call("i1->i", {{2, 3}}), {"einsum", "i1->i", "'1'"}},
      {"einsum_two_ellipses", call("...i...->i", {{2, 3}}), {"einsum", "\"...\""}},
      {"einsum_no_operands", [] { lanes::einsum("->", {}); }, {"einsum", "->"}},
  };
}

Rows rows{all_rows(), error_rows()};

}  // namespace
