// einsum over dot_general: each operand first loses its repeated labels (diagonals, by a mask
// and a sum) and the labels no one else needs (summed out); then operands contract left to right,
// two at a time, with dot_general (labels shared and still needed later are batch dims, shared
// and not needed are contracted); a final transpose puts the labels in the output's order.
#include <algorithm>
#include <cctype>
#include <map>
#include <numeric>
#include <string>

#include "lanes/array_ops.h"
#include "ops/internal.h"

namespace lanes {

namespace {

// A label is a letter, or for "..." a negative number: -1 the last broadcast dim, -2 the one
// before, ... so the dims "..." stands for line up from the right across operands (numpy).
using Labels = std::vector<int>;

struct Term {
  Labels labels;
  Tensor x;
};

struct Parsed {
  std::vector<Labels> inputs;
  Labels output;
};

[[noreturn]] void fail(const std::string& spec, const std::string& why) {
  throw Error("einsum: spec \"" + spec + "\": " + why);
}

std::string label_name(int l) {
  return l > 0 ? std::string("'") + char(l) + "'" : "\"...\" dim " + std::to_string(l);
}

// One operand's labels; `rank` resolves "...".
Labels parse_term(const std::string& spec, const std::string& term, int64_t rank) {
  Labels letters;
  int64_t ellipsis_at = -1;
  for (size_t i = 0; i < term.size(); ++i) {
    if (term.compare(i, 3, "...") == 0) {
      if (ellipsis_at >= 0) fail(spec, "more than one \"...\" in \"" + term + "\"");
      ellipsis_at = static_cast<int64_t>(letters.size());
      i += 2;
    } else if (std::isalpha(static_cast<unsigned char>(term[i]))) {
      letters.push_back(term[i]);
    } else {
      fail(spec, std::string("unsupported character '") + term[i] + "'");
    }
  }
  const int64_t explicit_count = static_cast<int64_t>(letters.size());
  if (ellipsis_at < 0 ? rank != explicit_count : rank < explicit_count)
    fail(spec, "term \"" + term + "\" does not fit an operand of rank " + std::to_string(rank));
  if (ellipsis_at < 0) return letters;
  Labels out(letters.begin(), letters.begin() + ellipsis_at);
  for (int64_t k = rank - explicit_count; k > 0; --k) out.push_back(-static_cast<int>(k));
  out.insert(out.end(), letters.begin() + ellipsis_at, letters.end());
  return out;
}

Parsed parse(const std::string& spec, const std::vector<Tensor>& xs) {
  std::string s;
  for (char c : spec)
    if (c != ' ') s += c;
  const size_t arrow = s.find("->");
  const std::string lhs = s.substr(0, arrow);
  Parsed p;
  size_t start = 0, operand = 0;
  while (true) {
    const size_t comma = lhs.find(',', start);
    if (operand >= xs.size())
      fail(spec, "more terms than the " + std::to_string(xs.size()) + " operands");
    p.inputs.push_back(parse_term(spec, lhs.substr(start, comma - start), xs[operand++].ndim()));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (operand != xs.size())
    fail(spec, std::to_string(operand) + " terms for " + std::to_string(xs.size()) + " operands");
  std::map<int, int> count;
  int broadcast_rank = 0;
  for (const Labels& in : p.inputs)
    for (int l : in) {
      ++count[l];
      broadcast_rank = std::max(broadcast_rank, -l);
    }
  if (arrow == std::string::npos) {  // implicit output: "..." then letters used once, sorted
    for (int k = broadcast_rank; k > 0; --k) p.output.push_back(-k);
    for (auto [l, n] : count)
      if (l > 0 && n == 1) p.output.push_back(l);
    return p;
  }
  const std::string out = s.substr(arrow + 2);
  int64_t out_rank = out.find("...") != std::string::npos ? broadcast_rank : 0;
  for (char c : out) out_rank += std::isalpha(static_cast<unsigned char>(c)) != 0;
  p.output = parse_term(spec, out, out_rank);
  for (size_t i = 0; i < p.output.size(); ++i) {
    if (!count.count(p.output[i]))
      fail(spec, "output label " + label_name(p.output[i]) + " is in no input");
    if (std::count(p.output.begin(), p.output.end(), p.output[i]) > 1)
      fail(spec, "repeated output label");
  }
  return p;
}

// Takes the diagonal of the first repeated label: x * eye over the two dims, summed over one.
Term diagonal(Term t) {
  for (size_t a = 0; a < t.labels.size(); ++a)
    for (size_t b = a + 1; b < t.labels.size(); ++b) {
      if (t.labels[a] != t.labels[b]) continue;
      const int64_t n = t.x.shape()[a];
      const Tensor mask =
          broadcast_in_dim(eye(n, t.x.dtype()), t.x.shape(), {int64_t(a), int64_t(b)});
      t.x = sum(t.x * mask, int64_t(b));
      t.labels.erase(t.labels.begin() + b);
      return diagonal(std::move(t));
    }
  return t;
}

// Sums out the labels of t not in `keep`.
Term sum_unneeded(Term t, const Labels& keep) {
  std::vector<int64_t> axes;
  Labels kept;
  for (size_t d = 0; d < t.labels.size(); ++d) {
    if (std::find(keep.begin(), keep.end(), t.labels[d]) == keep.end())
      axes.push_back(int64_t(d));
    else
      kept.push_back(t.labels[d]);
  }
  if (axes.empty()) return t;
  return {kept, sum(t.x, axes)};
}

bool has(const Labels& ls, int l) { return std::find(ls.begin(), ls.end(), l) != ls.end(); }

Term contract(const Term& a, const Term& b, const Labels& needed) {
  DotDims dims;
  Labels batch, a_free, b_free;
  for (size_t i = 0; i < a.labels.size(); ++i) {
    const auto j = std::find(b.labels.begin(), b.labels.end(), a.labels[i]) - b.labels.begin();
    if (j == int64_t(b.labels.size())) {
      a_free.push_back(a.labels[i]);
    } else if (has(needed, a.labels[i])) {
      dims.lhs_batch.push_back(int64_t(i));
      dims.rhs_batch.push_back(j);
      batch.push_back(a.labels[i]);
    } else {
      dims.lhs_contracting.push_back(int64_t(i));
      dims.rhs_contracting.push_back(j);
    }
  }
  for (int l : b.labels)
    if (!has(a.labels, l)) b_free.push_back(l);
  Labels labels = batch;
  labels.insert(labels.end(), a_free.begin(), a_free.end());
  labels.insert(labels.end(), b_free.begin(), b_free.end());
  return {labels, dot_general(a.x, b.x, dims)};
}

// Every label's size, checked across operands; size-1 "..." dims broadcast (numpy).
std::map<int, int64_t> label_sizes(const std::string& spec, const std::vector<Term>& terms) {
  std::map<int, int64_t> size;
  for (const Term& t : terms)
    for (size_t d = 0; d < t.labels.size(); ++d) {
      const int l = t.labels[d];
      const int64_t n = t.x.shape()[d];
      auto [it, fresh] = size.emplace(l, n);
      if (fresh || it->second == n) continue;
      if (l < 0 && (it->second == 1 || n == 1)) {
        it->second = std::max(it->second, n);
        continue;
      }
      fail(
          spec, "label " + label_name(l) + " has sizes " + std::to_string(it->second) + " and " +
                    std::to_string(n) + " in operands of shapes" + [&] {
                      std::string shapes;
                      for (const Term& u : terms) shapes += " " + shape_str(u.x.shape());
                      return shapes;
                    }());
    }
  return size;
}

Tensor broadcast_ellipsis(const Term& t, const std::map<int, int64_t>& size) {
  Shape shape = t.x.shape();
  for (size_t d = 0; d < shape.size(); ++d) shape[d] = size.at(t.labels[d]);
  return broadcast_to(t.x, shape);
}

}  // namespace

Tensor einsum(const std::string& spec, const std::vector<Tensor>& operands) {
  check(!operands.empty(), "einsum: spec \"", spec, "\" needs at least one operand");
  DType dtype = operands[0].dtype();
  for (size_t k = 0; k < operands.size(); ++k) {
    check(operands[k].defined(), "einsum: spec \"", spec, "\": operand ", k, " is undefined");
    dtype = promote_types(dtype, operands[k].dtype());
  }
  const Parsed p = parse(spec, operands);
  std::vector<Term> terms;
  for (size_t k = 0; k < operands.size(); ++k)
    terms.push_back({p.inputs[k], cast(operands[k], dtype)});
  const std::map<int, int64_t> size = label_sizes(spec, terms);
  for (Term& t : terms) t = diagonal({t.labels, broadcast_ellipsis(t, size)});
  // Left to right: a label stays while the output or a later operand still has it.
  auto needed_after = [&](size_t k) {
    Labels ls = p.output;
    for (size_t j = k + 1; j < terms.size(); ++j)
      ls.insert(ls.end(), terms[j].labels.begin(), terms[j].labels.end());
    return ls;
  };
  auto with = [](Labels ls, const Labels& more) {
    ls.insert(ls.end(), more.begin(), more.end());
    return ls;
  };
  Term acc = sum_unneeded(terms[0], with(needed_after(0), {}));
  for (size_t k = 1; k < terms.size(); ++k) {
    const Labels later = needed_after(k);
    acc = sum_unneeded(acc, with(later, terms[k].labels));
    const Term next = sum_unneeded(terms[k], with(later, acc.labels));
    acc = contract(acc, next, later);
  }
  acc = sum_unneeded(acc, p.output);
  std::vector<int64_t> perm;
  for (int l : p.output)
    perm.push_back(std::find(acc.labels.begin(), acc.labels.end(), l) - acc.labels.begin());
  return transpose(acc.x, perm);
}

}  // namespace lanes
