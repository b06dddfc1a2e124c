// A fused program's steps: how they group into calls on a tile, which buffer each group writes,
// and running a group (fused_steps.h); FusedProgram's own methods.
#include "kernels/fused_steps.h"

#include <algorithm>
#include <string>

#include "kernels/fused_convert.h"

namespace lanes::kernels {

namespace {

void run_step(const FusedStep& s, const char* const* reg, char* out, int64_t n) {
  switch (s.kind) {
    case FusedStep::Kind::Unary:
      return unary_contiguous(UnaryOp(s.op), s.operand_type, reg[s.args[0]], out, n);
    case FusedStep::Kind::Binary:
      return binary_contiguous(BinaryOp(s.op), s.operand_type, reg[s.args[0]], reg[s.args[1]], out,
                               n);
    case FusedStep::Kind::Select:
      return select_contiguous(s.operand_type, reinterpret_cast<const bool*>(reg[s.args[0]]),
                               reg[s.args[1]], reg[s.args[2]], out, n);
    case FusedStep::Kind::Cast:
      return cast_contiguous(s.operand_type, s.result_type, reg[s.args[0]], out, n);
  }
}

// Whether register r is read by no step but `reader` and is not an output.
bool private_to(const FusedProgram& p, int32_t r, size_t reader) {
  for (size_t k = 0; k < p.steps.size(); ++k)
    for (int32_t a : p.steps[k].args)
      if (a == r && k != reader) return false;
  return std::find(p.outputs.begin(), p.outputs.end(), r) == p.outputs.end();
}

}  // namespace

std::vector<StepGroup> plan_groups(const FusedProgram& p) {
  const int32_t nin = int32_t(p.input_types.size()), nsteps = int32_t(p.steps.size());
  auto cast_to_float = [&](int32_t k) {
    return p.steps[k].kind == FusedStep::Kind::Cast && p.steps[k].result_type == DType::Float32;
  };
  auto cast_from_float = [&](int32_t k) {
    return p.steps[k].kind == FusedStep::Kind::Cast && p.steps[k].operand_type == DType::Float32;
  };
  std::vector<StepGroup> groups;
  for (int32_t k = 0; k < nsteps; ++k) {
    int32_t first = k, last = k;
    // k-1, k, k+1 as cast -> unary -> cast: a looked-ahead unary at k + 1 takes k as its cast.
    const int32_t u = k + 1 < nsteps && cast_to_float(k) ? k + 1 : k;
    const FusedStep& s = p.steps[u];
    if (s.kind == FusedStep::Kind::Unary && s.operand_type == DType::Float32) {
      const bool pre = u == k + 1 && s.args[0] == nin + k && private_to(p, nin + k, u);
      const bool post = u + 1 < nsteps && cast_from_float(u + 1) &&
                        p.steps[u + 1].args[0] == nin + u && private_to(p, nin + u, u + 1);
      const DType in = pre ? p.steps[k].operand_type : DType::Float32;
      const DType out = post ? p.steps[u + 1].result_type : DType::Float32;
      if ((pre || post) && converting_unary_supported(in, UnaryOp(s.op), out)) {
        first = pre ? k : u;
        last = post ? u + 1 : u;
        // A cast at k that did not join its unary runs alone first.
        if (first != k) groups.push_back({k, k});
      }
    }
    groups.push_back({first, last});
    k = last;
  }
  return groups;
}

// The buffer each register's tile is written to: an input's own, and for the step ending each
// group the lowest buffer no live value holds (a value lives until its last reader, an output to
// the end of the tile). A long chain then cycles through a few buffers that stay in L1, where a
// buffer per step (an LSTM step's 22-step gradient) spread each tile over 100 KB.
std::vector<int32_t> plan_buffers(const FusedProgram& p, const std::vector<StepGroup>& groups) {
  const int32_t nin = int32_t(p.input_types.size()), nreg = p.num_registers();
  const auto end = int64_t(groups.size());
  std::vector<int64_t> last_read(size_t(nreg), -1);
  for (size_t gi = 0; gi < groups.size(); ++gi)
    for (int32_t k = groups[gi].first; k <= groups[gi].last; ++k)
      for (int32_t a : p.steps[size_t(k)].args)
        if (a >= 0) last_read[size_t(a)] = int64_t(gi);
  for (int32_t r : p.outputs) last_read[size_t(r)] = end;
  std::vector<int32_t> at(static_cast<size_t>(nreg));
  for (int32_t r = 0; r < nin; ++r) at[size_t(r)] = r;
  std::vector<int64_t> busy_until;  // per step buffer (nin + index): the group that last reads it
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const int32_t r = nin + groups[gi].last;
    size_t b = 0;
    while (b < busy_until.size() && busy_until[b] >= int64_t(gi)) ++b;
    if (b == busy_until.size()) busy_until.push_back(0);
    busy_until[b] = std::max(last_read[size_t(r)], int64_t(gi));
    at[size_t(r)] = nin + int32_t(b);
  }
  return at;
}

void run_group(const FusedProgram& p, const StepGroup& g, const char* const* reg, char* out,
               int64_t n) {
  if (g.first == g.last) return run_step(p.steps[g.first], reg, out, n);
  const bool pre = p.steps[g.first].kind == FusedStep::Kind::Cast;
  const FusedStep& unary = p.steps[g.first + (pre ? 1 : 0)];
  const DType in = pre ? p.steps[g.first].operand_type : DType::Float32;
  const DType result =
      p.steps[g.last].kind == FusedStep::Kind::Cast ? p.steps[g.last].result_type : DType::Float32;
  converting_unary(in, UnaryOp(unary.op), result, reg[p.steps[g.first].args[0]], out, n);
}

void FusedProgram::plan() {
  groups = plan_groups(*this);
  buffers = plan_buffers(*this, groups);
}

DType FusedProgram::register_type(int32_t r) const {
  const int32_t n = int32_t(input_types.size());
  return r < n ? input_types[r] : steps[r - n].result_type;
}

double FusedProgram::flops(int64_t numel) const {
  double total = 0;
  for (const FusedStep& step : steps) {
    const bool arithmetic =
        step.kind == FusedStep::Kind::Unary || step.kind == FusedStep::Kind::Binary;
    if (arithmetic && is_floating(step.operand_type)) total += double(numel);
  }
  return total;
}

// Built by appending (GCC 12 warns, wrongly, about `"x" + std::string` here: -Wrestrict).
std::string FusedProgram::describe() const {
  std::string out;
  const int32_t n = int32_t(input_types.size());
  auto name = [&](int32_t r) {
    out += r < n ? "in" : "r";
    out += std::to_string(r < n ? r : r - n);
  };
  for (size_t i = 0; i < steps.size(); ++i) {
    const FusedStep& s = steps[i];
    if (i) out += "; ";
    name(n + int32_t(i));
    out += '=';
    switch (s.kind) {
      case FusedStep::Kind::Unary:
        out += unary_name(UnaryOp(s.op));
        break;
      case FusedStep::Kind::Binary:
        out += binary_name(BinaryOp(s.op));
        break;
      case FusedStep::Kind::Select:
        out += "select";
        break;
      case FusedStep::Kind::Cast:
        out += "convert[";
        out += dtype_name(s.result_type);
        out += ']';
        break;
    }
    out += '(';
    for (int k = 0; k < 3 && s.args[k] >= 0; ++k) {
      if (k) out += ',';
      name(s.args[k]);
    }
    out += ')';
  }
  out += " -> (";
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (i) out += ',';
    name(outputs[i]);
  }
  out += ')';
  return out;
}

}  // namespace lanes::kernels
