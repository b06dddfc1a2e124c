#include "kernels/fused.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <new>

#include "core/arena.h"
#include "core/strided.h"
#include "kernels/copy_bytes.h"
#include "kernels/fused_convert.h"
#include "kernels/fused_steps.h"
#include "kernels/reduce.h"
#include "lanes/parallel.h"

namespace lanes::kernels {

namespace {

// Elements per tile: 8 KiB registers for the widest dtype, so that a float chain's registers and
// the input tiles it streams fit in L1 (32 KiB), as at 2048 they did not. A tile costs ~80 ns of
// dispatch and set-up, which made 512-element tiles 1.7x slower than an unfused product of 4 MB
// when they were set up per step. A fused triad of 64 MB ran in 5.0-5.3 ms at 1024 beside
// 6.5-6.9 at 2048 (alternating processes; the same process's eager add, 3.4-3.7 ms in both,
// rules out the VM's memory modes), and a 4 MB triad and a (100, 32, 32) broadcast chain were
// no slower.
constexpr int64_t kTile = 1024;
// Registers are 3 cache lines more than a multiple of 4 KiB apart: a load and a store whose
// addresses agree modulo 4 KiB look dependent to the CPU (4K aliasing), which made a 2-step chain
// 2.5x slower.
constexpr size_t kRegisterBytes = kTile * 8 + 192;
// Outputs at least this large are written with non-temporal stores: they would not stay in the
// cache anyway, and streaming skips the read-for-ownership of each line (measured 72 vs 52 GB/s
// for a triad on this machine).
constexpr size_t kStreamBytes = size_t{8} << 20;

// The iteration space over the output (operand 0, contiguous) and the inputs: size-1 dims
// dropped, dims merged where every operand is contiguous across them (strided.h's coalesce, for a
// number of operands known only at run time). Its vectors live in the pass's arena.
struct Space {
  explicit Space(std::pmr::memory_resource* arena) : shape(arena), strides(arena) {}
  std::pmr::vector<int64_t> shape;
  std::pmr::vector<std::pmr::vector<int64_t>> strides;  // per operand
};

// Fills `s` for `operands` operands of `shape`: strides_of(op) gives operand op's strides
// (0: the output, which is dense in the order of its strides).
template <class StridesOf>
void fill_space(Space& s, const Shape& shape, size_t operands, StridesOf strides_of) {
  std::pmr::memory_resource* arena = s.shape.get_allocator().resource();
  s.shape.reserve(shape.size());
  s.strides.resize(operands);
  for (auto& st : s.strides) st.reserve(shape.size());
  const auto& out = strides_of(0);
  std::pmr::vector<size_t> order(shape.size(), arena);  // the output's dims, outermost first
  for (size_t d = 0; d < order.size(); ++d) order[d] = d;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return out[a] > out[b]; });
  for (size_t d : order) {
    if (shape[d] == 1) continue;
    bool merge = !s.shape.empty();
    for (size_t op = 0; op < operands && merge; ++op)
      merge = s.strides[op].back() == strides_of(op)[d] * shape[d];
    if (merge) {
      s.shape.back() *= shape[d];
      for (size_t op = 0; op < operands; ++op) s.strides[op].back() = strides_of(op)[d];
    } else {
      s.shape.push_back(shape[d]);
      for (size_t op = 0; op < operands; ++op) s.strides[op].push_back(strides_of(op)[d]);
    }
  }
  if (s.shape.empty()) {
    s.shape.push_back(1);
    for (auto& st : s.strides) st.push_back(1);
  }
}

// Whether strides `st` lay a tile of the space out densely, row-major.
bool dense(const std::pmr::vector<int64_t>& st, const std::pmr::vector<int64_t>& shape) {
  int64_t expect = 1;
  for (size_t d = shape.size(); d-- > 0; expect *= shape[d])
    if (st[d] != expect) return false;
  return true;
}

// Copies n elements of type U at element stride `step` (0: a broadcast) into a dense buffer.
template <class U>
void gather_as(const char* src, int64_t step, int64_t n, char* dst) {
  const U* in = reinterpret_cast<const U*>(src);
  U* out = reinterpret_cast<U*>(dst);
  if (step != 0) {
    for (int64_t i = 0; i < n; ++i) out[i] = in[i * step];
    return;
  }
  int64_t i = 0;
#if defined(__AVX512F__)
  // 64-byte stores: GCC's fill takes 32-byte ones, and a column broadcast (each row of a tile one
  // value, as x[:, None]) was 16% of a short chain's time in them.
  if constexpr (sizeof(U) == 4 || sizeof(U) == 8) {
    const __m512i v =
        sizeof(U) == 4 ? _mm512_set1_epi32(int32_t(in[0])) : _mm512_set1_epi64(int64_t(in[0]));
    for (constexpr int64_t lanes = 64 / sizeof(U); i + lanes <= n; i += lanes)
      _mm512_storeu_si512(reinterpret_cast<void*>(out + i), v);
  }
#endif
  std::fill(out + i, out + n, in[0]);
}

void gather(const char* src, int64_t step, int64_t n, size_t size, char* dst) {
  switch (size) {
    case 1:
      return gather_as<uint8_t>(src, step, n, dst);
    case 4:
      return gather_as<uint32_t>(src, step, n, dst);
    default:
      return gather_as<uint64_t>(src, step, n, dst);
  }
}

// Copies a tile out of a register with 64-byte vector moves, non-temporal when `stream`. (glibc's
// memcpy takes `rep movsb` at these sizes, measured 1.5-2x slower here than a plain vector loop.)
void copy_out(char* dst, const char* src, size_t bytes, bool stream) {
#if defined(__AVX512F__)
  size_t i = 0;
  if (stream) {
    const size_t head = std::min(bytes, (64 - reinterpret_cast<uintptr_t>(dst) % 64) % 64);
    std::memcpy(dst, src, head);
    for (i = head; i + 64 <= bytes; i += 64)
      _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + i),
                          _mm512_loadu_si512(reinterpret_cast<const void*>(src + i)));
  } else {
    for (; i + 64 <= bytes; i += 64)
      _mm512_storeu_si512(reinterpret_cast<void*>(dst + i),
                          _mm512_loadu_si512(reinterpret_cast<const void*>(src + i)));
  }
  copy_bytes(dst + i, src + i, bytes - i);
#else
  (void)stream;
  std::memcpy(dst, src, bytes);
#endif
}

bool costly(const FusedStep& s) {
  if (s.kind == FusedStep::Kind::Unary) return unary_is_costly(UnaryOp(s.op));
  if (s.kind == FusedStep::Kind::Binary) return binary_is_costly(BinaryOp(s.op));
  return false;
}

// One thread's registers: a tile-sized buffer each (8 bytes per element: the widest dtype), kept
// per thread across calls so a small call allocates nothing, and where each register's tile is.
class Registers {
 public:
  explicit Registers(int32_t n) : at(n, arena_.resource()), filled(n, 0, arena_.resource()) {
    thread_local std::vector<char> buffers;
    if (buffers.size() < size_t(n) * kRegisterBytes + 64)
      buffers.resize(size_t(n) * kRegisterBytes + 64);
    base_ = buffers.data() + (64 - reinterpret_cast<uintptr_t>(buffers.data()) % 64) % 64;
  }
  char* buffer(int32_t r) const { return base_ + size_t(r) * kRegisterBytes; }
  // Register r holds the n elements from src, `step` apart: read in place when contiguous,
  // gathered into its buffer otherwise.
  void load(int32_t r, const char* src, int64_t step, int64_t n, size_t size) {
    if (step != 1) gather(src, step, n, size, buffer(r));
    at[r] = step == 1 ? src : buffer(r);
  }

  // Row r of a multi-row tile: the n elements from src, `step` apart, copied to position `at_elem`
  // of register r's buffer (rows of one tile are not adjacent in the source).
  // (copy_bytes, not memcpy: rows are short, 32 elements for a (100, 32, 32) chain, and the
  // library call cost more than the copy.)
  void load_row(int32_t r, int64_t at_elem, const char* src, int64_t step, int64_t n, size_t size) {
    char* dst = buffer(r) + at_elem * int64_t(size);
    if (step == 1)
      copy_bytes(dst, src, size_t(n) * size);
    else
      gather(src, step, n, size, dst);
    at[r] = buffer(r);
  }
  // `rows` rows of n elements into register r's buffer, one after another: row k from
  // src + k * row_step bytes, its elements `step` apart. Everything the loop reads is a local: the
  // copies' stores may alias any memory, so a plan's fields read in the loop were reloaded after
  // every row (a product with a (100, 32, 32) select epilogue: 64.7 -> 60.7 us, one thread).
  void load_rows(int32_t r, const char* src, int64_t row_step, int64_t step, int64_t rows,
                 int64_t n, size_t size) {
    char* dst = buffer(r);
    const size_t row_bytes = size_t(n) * size;
    for (int64_t k = 0; k < rows; ++k, src += row_step, dst += row_bytes) {
      if (step == 1)
        copy_bytes(dst, src, row_bytes);
      else
        gather(src, step, n, size, dst);
    }
    at[r] = buffer(r);
  }

 private:
  detail::LocalArena<1024> arena_;  // (declared before the vectors it holds)
  char* base_;

 public:
  std::pmr::vector<const char*> at;
  // Elements of register r that hold a tile-invariant input (a splat, a row broadcast over the
  // rows): loaded once for all the tiles these registers run, not once a tile.
  std::pmr::vector<int64_t> filled;
};

// Element offset of each operand at the start of `row` of the space: the row's index in each
// outer dim (the outermost one is what is left of the row, so a 2-d space divides nothing), then
// each operand's sum in a register, stored once. (Adding into `off` after zero-filling it stalled
// on every add, the fill's store not forwarded to the load: 13% of a short compare-select-add
// chain.)
void row_offsets(const Space& s, int64_t row, int64_t* off) {
  const size_t outer = s.shape.size() - 1;
  int64_t small[8];
  std::vector<int64_t> large(outer > 8 ? outer : 0);
  int64_t* index = outer > 8 ? large.data() : small;
  for (size_t d = outer; d-- > 0;) {
    index[d] = d == 0 ? row : row % s.shape[d];
    row = d == 0 ? 0 : row / s.shape[d];
  }
  for (size_t op = 0; op < s.strides.size(); ++op) {
    const int64_t* strides = s.strides[op].data();
    int64_t at = 0;
    for (size_t d = 0; d < outer; ++d) at += index[d] * strides[d];
    off[op] = at;
  }
}

// The operands' offsets at the start of a row, walked row after row: an odometer, so the next
// row costs additions where row_offsets divides per dim.
struct RowCursor {
  explicit RowCursor(const Space& space)
      : s(space),
        off(space.strides.size(), arena_.resource()),
        index(space.shape.size() - 1, arena_.resource()) {}
  void seek(int64_t row) {
    row_offsets(s, row, off.data());
    for (int64_t d = int64_t(index.size()) - 1; d >= 0; --d) {
      index[d] = d == 0 ? row : row % s.shape[d];
      row = d == 0 ? 0 : row / s.shape[d];
    }
  }
  void next() {
    for (int64_t d = int64_t(index.size()) - 1; d >= 0; --d) {
      for (size_t op = 0; op < off.size(); ++op) off[op] += s.strides[op][d];
      if (++index[d] < s.shape[d]) return;
      for (size_t op = 0; op < off.size(); ++op) off[op] -= s.strides[op][d] * s.shape[d];
      index[d] = 0;
    }
  }

  detail::LocalArena<512> arena_;
  const Space& s;
  std::pmr::vector<int64_t> off;    // per operand (0: the output)
  std::pmr::vector<int64_t> index;  // the row's position in the outer dims
};

}  // namespace

// What a pass needs between its set-up and its tiles: the iteration space, the outputs and where
// each step writes, and the operands' base pointers. Its vectors share one arena, allocated with
// the plan: a short chain's pass allocated ~20 times for them, which cost more than its tiles.
struct FusedPass::Plan {
  template <class T>
  using Vector = std::pmr::vector<T>;

  detail::LocalArena<1536> arena;  // (first: the vectors below are carved out of it)
  const FusedProgram& p;
  Vector<Tensor> inputs;
  std::vector<Tensor> outs;
  // The output each step writes straight into (-1: its register). A step writing to memory while
  // it reads (rather than reading everything, then copying out) overlaps the loads and stores;
  // the copy-out order measured 1.7x slower for a 4 MB product. An output in a donated input's
  // buffer is written directly only if no later step reads that input.
  Vector<int32_t> direct;
  Space s;
  int64_t numel = 0, len = 1, rows = 0, chunks = 1, per = 1, grain = 1;
  bool stream = false;
  // The program's plan (FusedProgram::plan), or this pass's own when the program has none.
  std::vector<StepGroup> own_groups;
  std::vector<int32_t> own_buffers;
  const std::vector<StepGroup>* groups = &p.groups;
  const std::vector<int32_t>* buffers = &p.buffers;
  Vector<int32_t> gathered;
  // Inputs read in place, gathered (those in `gathered`: not laid out as the output), of one
  // value broadcast (a zero) or of one row broadcast over the others (a bias, in a multi-row
  // tile).
  enum class Kind : uint8_t { InPlace, Gathered, Splat, RowSplat };
  Vector<Kind> kinds;
  Vector<const char*> bases;
  Vector<int64_t> sizes;
  Vector<char*> out_bases;
  Vector<int64_t> out_sizes;
  // Outputs that are views whose rows are not adjacent (parts of a concatenation, written in
  // place; the space follows their strides): a multi-row tile goes out to them row by row. The
  // other outputs are then dense over the space: row r starts at r * len.
  Vector<bool> apart;
  bool any_apart = false;

  Plan(const FusedProgram& program, const Shape& shape, const std::vector<Tensor>& in,
       int32_t private_input, int32_t layout_input, std::vector<Tensor> into);
  // Allocates (or donates) the outputs, and chooses which steps write to them directly.
  void make_outputs(const Shape& shape, int32_t private_input, int32_t layout_input);
  // How each input is read (kinds, gathered), once the space and the rows per tile are known.
  void classify_inputs();
  // Copies output o's results of rows [row, row + count) of a tile to its view, rows apart:
  // `row_step` elements apart from `offset` (when >= 0), else where the cursor finds them.
  void write_rows(size_t o, const char* results, int64_t offset, int64_t row_step,
                  RowCursor& cursor, int64_t row, int64_t count) const;
  // Rows [row, row + count) of the space from column c0, n elements in all (whole rows when
  // count > 1): loaded into registers, run through the steps, written to the outputs.
  void tile(Registers& regs, RowCursor& cursor, int64_t row, int64_t count, int64_t c0,
            int64_t n) const;
};

FusedPass::Plan::Plan(const FusedProgram& program, const Shape& shape,
                      const std::vector<Tensor>& in, int32_t private_input, int32_t layout_input,
                      std::vector<Tensor> into)
    : p(program),
      inputs(in.begin(), in.end(), arena.resource()),
      outs(std::move(into)),
      direct(program.steps.size(), -1, arena.resource()),
      s(arena.resource()),
      gathered(arena.resource()),
      kinds(arena.resource()),
      bases(arena.resource()),
      sizes(arena.resource()),
      out_bases(arena.resource()),
      out_sizes(arena.resource()),
      apart(p.outputs.size(), false, arena.resource()) {
  // Given outputs each go out from their register: no direct writes.
  check(outs.size() <= apart.size(), "fused pass: ", outs.size(), " outputs given for ",
        apart.size(), " (an internal error)");
  for (size_t o = 0; o < outs.size(); ++o) apart[o] = !outs[o].is_contiguous();
  const auto first_apart = std::find(apart.begin(), apart.end(), true);
  any_apart = first_apart != apart.end();
  if (outs.empty()) make_outputs(shape, private_input, layout_input);
  numel = shape_numel(shape);
  // Nothing to run (and the space would divide by a zero length).
  if (numel == 0 || outs.empty()) return;
  const size_t layout = any_apart ? size_t(first_apart - apart.begin()) : 0;
  fill_space(s, shape, in.size() + 1, [&](size_t op) -> const Strides& {
    return op == 0 ? outs[layout].strides() : in[op - 1].strides();
  });
  check(!any_apart || s.strides[0].back() == 1,
        "fused pass: outputs apart must have contiguous rows (an internal error)");
  len = s.shape.back();
  rows = numel / std::max<int64_t>(len, 1);
  chunks = (len + kTile - 1) / kTile;
  bool any_costly = false;
  for (const FusedStep& st : p.steps) any_costly = any_costly || costly(st);
  for (const Tensor& o : outs)
    stream = stream || (!any_apart && o.numel() * dtype_size(o.dtype()) >= kStreamBytes);
  grain = any_costly ? 8192 / int64_t(p.steps.size()) : 32768 / int64_t(p.steps.size());
  bases.reserve(in.size());
  sizes.reserve(in.size());
  for (const Tensor& t : in) {
    bases.push_back(static_cast<const char*>(t.raw_data()));
    sizes.push_back(int64_t(dtype_size(t.dtype())));
  }
  out_bases.reserve(outs.size());
  out_sizes.reserve(outs.size());
  for (const Tensor& o : outs) {
    out_bases.push_back(static_cast<char*>(o.raw_mutable_data()));
    out_sizes.push_back(int64_t(dtype_size(o.dtype())));
  }
  if (p.groups.empty() && !p.steps.empty()) {
    own_groups = plan_groups(p);
    own_buffers = plan_buffers(p, own_groups);
    groups = &own_groups;
    buffers = &own_buffers;
  }
  // Short rows share a tile: `per` whole rows, gathered one after another into the registers, so
  // the steps run on a full tile. Tile by row, a (100, 32, 32) chain with a broadcast operand
  // paid its ~80 ns of dispatch per 32 elements and ran 3x slower than contiguous.
  per = len >= kTile ? 1 : kTile / len;
  classify_inputs();
}

void FusedPass::Plan::make_outputs(const Shape& shape, int32_t private_input,
                                   int32_t layout_input) {
  const int32_t nin = int32_t(inputs.size());
  // Outputs in the memory order of input `layout_input` (a transposed view is read in order and
  // the outputs follow it, as the unfused kernels' do: empty_in_order_of), else row-major. Only
  // then may a (row-major) input's buffer become an output.
  auto fresh = [&](DType dtype) {
    return layout_input >= 0 ? empty_in_order_of(inputs[size_t(layout_input)], dtype)
                             : Tensor::empty(shape, dtype);
  };
  const bool row_major = layout_input < 0 || inputs[size_t(layout_input)].is_contiguous();
  Vector<bool> donated(inputs.size(), false, arena.resource());
  outs.reserve(p.outputs.size());
  for (size_t o = 0; o < p.outputs.size(); ++o) {
    const int32_t step = p.outputs[o] - nin;
    const DType dtype = p.register_type(p.outputs[o]);
    int32_t from = -1;
    for (int32_t i = 0; i < nin && from < 0; ++i)
      if (row_major && !donated[i] &&
          (i == private_input ? fills_storage(inputs[i], dtype) : donatable(inputs[i], dtype)))
        from = i;
    if (from >= 0) donated[from] = true;
    outs.push_back(from >= 0 ? inputs[from] : fresh(dtype));
    bool read_later = false;
    for (size_t k = step + 1; k < p.steps.size() && from >= 0; ++k)
      for (int32_t a : p.steps[k].args) read_later = read_later || a == from;
    if (!read_later && direct[step] < 0) direct[step] = int32_t(o);
  }
}

void FusedPass::Plan::classify_inputs() {
  // An input laid out as a dense tile of the space is read in place (the output's own strides,
  // unless the space follows outputs whose rows are apart).
  const int32_t nin = int32_t(inputs.size());
  kinds.reserve(inputs.size());
  for (int32_t i = 0; i < nin; ++i) {
    const auto& st = s.strides[i + 1];
    auto zero = [](int64_t x) { return x == 0; };
    Kind kind = Kind::InPlace;
    if (std::all_of(st.begin(), st.end(), zero))
      kind = Kind::Splat;
    else if (per > 1 && std::all_of(st.begin(), st.end() - 1, zero))
      kind = Kind::RowSplat;
    else if (!dense(st, s.shape))
      kind = Kind::Gathered;
    kinds.push_back(kind);
    if (kind == Kind::Gathered) gathered.push_back(i);
  }
}

void FusedPass::Plan::tile(Registers& regs, RowCursor& cursor, int64_t row, int64_t count,
                           int64_t c0, int64_t n) const {
  const int32_t nin = int32_t(inputs.size());
  const char** reg = regs.at.data();
  cursor.seek(row);
  const int64_t out_offset = cursor.off[0] + c0;
  int64_t out_row_step = -1;  // how far apart the tile's rows are in the outputs, when fixed
  // A splat's n elements, or a row splat's `count` rows, are the same in every tile: loaded only
  // when these registers hold fewer.
  auto invariant = [&](int32_t i, auto load) {
    if (regs.filled[i] < n) load();
    regs.filled[i] = std::max(regs.filled[i], n);
    reg[i] = regs.buffer(i);
  };
  auto splat = [&](int32_t i) {
    invariant(i, [&] { regs.load(i, bases[i], 0, n, size_t(sizes[i])); });
  };
  if (count == 1) {
    for (int32_t i = 0; i < nin; ++i) {
      if (kinds[i] == Kind::Splat) {
        splat(i);
        continue;
      }
      const int64_t step = s.strides[i + 1].back();
      regs.load(i, bases[i] + (cursor.off[i + 1] + c0 * step) * sizes[i], step, n,
                size_t(sizes[i]));
      regs.filled[i] = 0;  // (a row splat's register: a part of one row now)
    }
  } else {
    for (int32_t i = 0; i < nin; ++i) {
      if (kinds[i] == Kind::Splat) {
        splat(i);
      } else if (kinds[i] == Kind::RowSplat) {
        invariant(i, [&] {
          regs.load_rows(i, bases[i], 0, s.strides[i + 1].back(), count, len, size_t(sizes[i]));
        });
      } else {
        reg[i] = bases[i] + cursor.off[i + 1] * sizes[i];
      }
    }
    // Rows that stay within one index of the dims outside the next-to-last are a fixed stride
    // apart in every operand: walked by that stride, not by the cursor (which costs a pass over
    // every dim and operand per row).
    const size_t d = s.shape.size() - 2;
    if (s.shape.size() >= 2 && cursor.index[d] + count <= s.shape[d]) {
      out_row_step = s.strides[0][d];
      for (int32_t i : gathered)
        regs.load_rows(i, bases[i] + cursor.off[i + 1] * sizes[i], s.strides[i + 1][d] * sizes[i],
                       s.strides[i + 1].back(), count, len, size_t(sizes[i]));
    } else {
      for (int64_t r = 0; r < count; ++r, cursor.next())
        for (int32_t i : gathered)
          regs.load_row(i, r * len, bases[i] + cursor.off[i + 1] * sizes[i],
                        s.strides[i + 1].back(), len, size_t(sizes[i]));
    }
  }
  const int64_t dense_offset = any_apart ? row * len + c0 : out_offset;
  auto out_tile = [&](size_t o) { return out_bases[o] + dense_offset * out_sizes[o]; };
  for (const StepGroup& g : *groups) {
    const int32_t k = g.last;
    char* dst =
        direct[k] >= 0 && !stream ? out_tile(direct[k]) : regs.buffer((*buffers)[size_t(nin + k)]);
    run_group(p, g, reg, dst, n);
    reg[nin + k] = dst;
  }
  // The other outputs last: a donated input's tile is fully read by now.
  for (size_t o = 0; o < outs.size(); ++o) {
    if (apart[o] && count > 1) {
      write_rows(o, reg[p.outputs[o]], out_row_step >= 0 ? out_offset : -1, out_row_step, cursor,
                 row, count);
      continue;
    }
    char* dst = apart[o] ? out_bases[o] + out_offset * out_sizes[o] : out_tile(o);
    if (reg[p.outputs[o]] != dst)
      copy_out(dst, reg[p.outputs[o]], size_t(n * out_sizes[o]), stream);
  }
}

void FusedPass::Plan::write_rows(size_t o, const char* results, int64_t offset, int64_t row_step,
                                 RowCursor& cursor, int64_t row, int64_t count) const {
  const int64_t size = out_sizes[o];
  const size_t bytes = size_t(len * size);
  char* out = out_bases[o];
  if (row_step >= 0) {
    for (int64_t r = 0; r < count; ++r, results += bytes)
      copy_bytes(out + (offset + r * row_step) * size, results, bytes);
    return;
  }
  cursor.seek(row);
  for (int64_t r = 0; r < count; ++r, cursor.next(), results += bytes)
    copy_bytes(out + cursor.off[0] * size, results, bytes);
}

FusedPass::FusedPass(const FusedProgram& program, const Shape& shape,
                     const std::vector<Tensor>& inputs, int32_t private_input, int32_t layout_input,
                     std::vector<Tensor> into) {
  static_assert(sizeof(Plan) <= kPlanBytes && alignof(Plan) <= 64, "FusedPass::kPlanBytes");
  new (plan_) Plan(program, shape, inputs, private_input, layout_input, std::move(into));
}

FusedPass::~FusedPass() { std::destroy_at(&plan()); }

const FusedPass::Plan& FusedPass::plan() const {
  return *std::launder(reinterpret_cast<const Plan*>(plan_));
}

const std::vector<Tensor>& FusedPass::outputs() const { return plan().outs; }

void FusedPass::run() const {
  const Plan& pl = plan();
  if (pl.numel == 0) return;
  const int64_t units = pl.per > 1 ? (pl.rows + pl.per - 1) / pl.per : pl.rows * pl.chunks;
  parallel_for(units, std::max<int64_t>(1, pl.grain / std::min(pl.len * pl.per, kTile)),
               [&](int64_t b, int64_t e) {
                 Registers regs(pl.p.num_registers());
                 RowCursor cursor(pl.s);
                 for (int64_t u = b; u < e; ++u) {
                   const int64_t row = pl.per > 1 ? u * pl.per : u / pl.chunks;
                   const int64_t count = pl.per > 1 ? std::min(pl.per, pl.rows - row) : 1;
                   const int64_t c0 = pl.per > 1 ? 0 : u % pl.chunks * kTile;
                   const int64_t n = pl.per > 1 ? count * pl.len : std::min(kTile, pl.len - c0);
                   pl.tile(regs, cursor, row, count, c0, n);
                 }
#if defined(__AVX512F__)
                 if (pl.stream) _mm_sfence();  // the streamed stores visible before the join
#endif
               });
}

void FusedPass::run_elements(int64_t begin, int64_t end) const {
  const Plan& pl = plan();
  if (begin >= end) return;
  Registers regs(pl.p.num_registers());
  RowCursor cursor(pl.s);
  for (int64_t at = begin; at < end;) {
    const int64_t row = at / pl.len, c0 = at % pl.len;
    // Whole short rows share a tile as in run(); a partial row goes by itself, a tile at a time.
    const int64_t whole = c0 == 0 && pl.per > 1 ? std::min(pl.per, (end - at) / pl.len) : 0;
    const int64_t count = std::max<int64_t>(whole, 1);
    const int64_t n = whole > 0 ? whole * pl.len : std::min({kTile, pl.len - c0, end - at});
    pl.tile(regs, cursor, row, count, c0, n);
    at += n;
  }
#if defined(__AVX512F__)
  if (pl.stream) _mm_sfence();
#endif
}

std::vector<Tensor> run_fused(const FusedProgram& p, const Shape& shape,
                              const std::vector<Tensor>& inputs) {
  const FusedPass pass(p, shape, inputs);
  pass.run();
  return pass.outputs();
}

void run_fused_into(const FusedProgram& p, const Shape& shape, const std::vector<Tensor>& inputs,
                    const std::vector<Tensor>& outputs) {
  FusedPass(p, shape, inputs, -1, -1, outputs).run();
}

// The chain reduced over its trailing dims: each output element is one row of the chain's
// iteration space (the trailing dims, coalesced per input), computed tile by tile into registers
// and fed to a RowReduction, which reduces it in the order the unfused reduction would (so the
// result does not depend on fusion); nothing of the chain's full size reaches memory.
Tensor run_fused_reduce(const FusedProgram& p, const Shape& shape,
                        const std::vector<Tensor>& inputs, ReduceOp op, int64_t reduced_dims) {
  const int32_t nin = int32_t(inputs.size()), nreg = p.num_registers();
  const size_t keep = shape.size() - size_t(reduced_dims);
  const Shape outer_shape(shape.begin(), shape.begin() + keep);
  const Shape inner_shape(shape.begin() + keep, shape.end());
  const DType dtype = p.register_type(p.outputs[0]);
  Tensor out = Tensor::empty(outer_shape, dtype);
  const int64_t outer = shape_numel(outer_shape), inner = shape_numel(inner_shape);
  if (outer == 0) return out;
  std::vector<Strides> inner_strides, outer_strides;
  for (const Tensor& t : inputs) {
    outer_strides.emplace_back(t.strides().begin(), t.strides().begin() + keep);
    inner_strides.emplace_back(t.strides().begin() + keep, t.strides().end());
  }
  const Strides dense_inner = contiguous_strides(inner_shape);
  Space s(std::pmr::get_default_resource());
  fill_space(s, inner_shape, inputs.size() + 1, [&](size_t op) -> const Strides& {
    return op == 0 ? dense_inner : inner_strides[op - 1];
  });
  const int64_t len = s.shape.back(), rows = inner / std::max<int64_t>(len, 1);
  const size_t size = dtype_size(dtype);
  std::vector<const char*> bases;
  for (const Tensor& t : inputs) bases.push_back(static_cast<const char*>(t.raw_data()));
  char* results = static_cast<char*>(out.raw_mutable_data());
  const int64_t grain =
      std::max<int64_t>(1, 32768 / std::max<int64_t>(1, inner * int64_t(p.steps.size())));
  const std::vector<StepGroup> groups = p.groups.empty() ? plan_groups(p) : p.groups;
  const std::vector<int32_t> buffers = p.groups.empty() ? plan_buffers(p, groups) : p.buffers;
  parallel_for(outer, grain, [&](int64_t b, int64_t e) {
    const std::unique_ptr<RowReduction> reduction = make_row_reduction(op, dtype);
    Registers regs(nreg);
    const char** reg = regs.at.data();
    std::vector<int64_t> off(inputs.size() + 1), start(inputs.size());
    for (int64_t o = b; o < e; ++o) {
      // Each input's offset at the start of row o of the outer dims.
      for (int32_t i = 0; i < nin; ++i) {
        start[i] = 0;
        for (int64_t d = int64_t(keep) - 1, rest = o; d >= 0; --d) {
          start[i] += rest % outer_shape[d] * outer_strides[i][d];
          rest /= outer_shape[d];
        }
      }
      char* acc = results + o * int64_t(size);
      for (int64_t row = 0; row < rows; ++row) {
        row_offsets(s, row, off.data());
        for (int64_t c0 = 0; c0 < len; c0 += kTile) {
          const int64_t n = std::min(kTile, len - c0);
          for (int32_t i = 0; i < nin; ++i) {
            const int64_t in_size = int64_t(dtype_size(inputs[i].dtype()));
            const int64_t step = s.strides[i + 1].back();
            regs.load(i, bases[i] + (start[i] + off[i + 1] + c0 * step) * in_size, step, n,
                      size_t(in_size));
          }
          for (const StepGroup& g : groups) {
            char* dst = regs.buffer(buffers[size_t(nin + g.last)]);
            run_group(p, g, reg, dst, n);
            reg[nin + g.last] = dst;
          }
          reduction->feed(reg[p.outputs[0]], n);
        }
      }
      reduction->finish(acc);
    }
  });
  return out;
}

}  // namespace lanes::kernels
