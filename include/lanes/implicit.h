// Implicit inputs: the state a traced function reads without taking it as an argument, a
// Variable's value (lanes/variable.h) or a random::Generator's counter (lanes/random.h).
//
// A transform that keeps what it traced across calls must not bake such state in as a constant,
// so while it traces it opens a frame, and every read of state inside becomes a hidden input of
// its trace instead (after the argument leaves, before the captured values):
//  - compile's frame: a Variable's value, and a Generator's counter c, from which draw j of the
//    call takes the key fold_in(key(seed), c + j) exactly as the eager draws would. At each call
//    compile reads the Variables again and advances each Generator by the draws of one call.
//  - vmap's frame: a Variable's value (an unmapped hidden argument, so the cache of batched
//    graphs stays valid across assigns); for a Generator, VmapOptions::randomness decides: Error
//    throws, Same takes one key K from the generator (in the context outside the vmap) as an
//    unmapped hidden argument, Different feeds lane i the key fold_in(K, i) as a mapped hidden
//    argument. Draw j of a lane then uses fold_in(lane key, j).
//  - grad over Variables: their values are the traced values being differentiated.
//  - a while_loop / scan body: a Variable reads the value of the call; a Generator draw is an
//    error (the body runs every iteration but is traced once: it would repeat its numbers).
// Transforms that trace without a frame (grad, jvp, make_graph, cond branches) see the state as
// it is when they trace, which they do on every call.
// Frames nest as the transforms do (a thread-local stack); a read asks the innermost frame, which
// asks those outside it for the value it feeds in, so compile(vmap(f)) reads a Variable once per
// call and vmap's keys come from compile's counter: the numbers are the same compiled or not.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "lanes/primitive.h"
#include "lanes/tensor.h"

namespace lanes {

/// How vmap treats draws from a random::Generator inside the mapped function (torch.func's
/// randomness). Drawing from explicit keys is always allowed: keys are ordinary inputs.
enum class Randomness {
  Error,      // drawing from a Generator inside vmap is a lanes::Error (the default)
  Same,       // every lane sees the same draw
  Different,  // lane i sees what the per-example loop gives with a generator at fold_in(K, i)
};

namespace detail {

struct VariableState;   // lanes/variable.h
struct GeneratorState;  // lanes/random.h

/// What a compiled graph reads at each call besides its arguments, in hidden-input order: a
/// Variable's value (of `type` when traced) or a Generator's counter (advanced by `draws`).
struct ImplicitInput {
  std::shared_ptr<VariableState> var;
  std::shared_ptr<GeneratorState> gen;
  TensorType type;
  int64_t draws = 0;
};

/// Values for a compiled graph's hidden inputs at one call, into `values`: the Variables' values
/// now and each Generator's counter, advanced by its draws. False (and nothing advanced) when a
/// Variable's shape or dtype is not the traced one: the caller retraces.
bool read_implicit(const std::vector<ImplicitInput>& inputs, std::vector<Tensor>& values);

class Frame;

/// compile's frame (RAII), opened just before compile traces.
class CompileFrame {
 public:
  CompileFrame();
  ~CompileFrame();
  CompileFrame(const CompileFrame&) = delete;
  CompileFrame& operator=(const CompileFrame&) = delete;
  /// The hidden inputs the trace made, in order.
  std::vector<ImplicitInput> inputs() const;

 private:
  std::unique_ptr<Frame> frame_;
};

/// vmap's frame (RAII), opened just before vmap traces one example.
class VmapFrame {
 public:
  VmapFrame(Randomness randomness, int64_t size);
  ~VmapFrame();
  VmapFrame(const VmapFrame&) = delete;
  VmapFrame& operator=(const VmapFrame&) = delete;
  /// The values of the hidden arguments the trace made, in order: whole-batch lane keys (mapped
  /// at axis 0) or unmapped values, concrete or traced by an enclosing transform.
  struct Hidden {
    Tensor value;
    bool mapped = false;
  };
  std::vector<Hidden> hidden() const;

 private:
  std::unique_ptr<Frame> frame_;
};

/// The lanes of the next VmapFrame made on this thread stand for these examples (RAII): lane j
/// gets the key fold_in(K, lanes[j]) under Randomness::Different instead of fold_in(K, j). A vmap
/// over Ragged arguments sets it around each group's call, so that every lane draws what the
/// per-example loop draws for its example.
class LaneExamples {
 public:
  explicit LaneExamples(Tensor lanes);
  ~LaneExamples();
  LaneExamples(const LaneExamples&) = delete;
  LaneExamples& operator=(const LaneExamples&) = delete;
};

/// One vmap over Ragged arguments (RAII): every vmap and trace inside it that asks for a
/// Generator's key gets the same key K, taken once from outside (a grouped run makes a vmap call
/// per group, a padded one traces f more than once; the generator still advances once per call).
class RaggedCallFrame {
 public:
  RaggedCallFrame();
  ~RaggedCallFrame();
  RaggedCallFrame(const RaggedCallFrame&) = delete;
  RaggedCallFrame& operator=(const RaggedCallFrame&) = delete;

 private:
  std::unique_ptr<Frame> frame_;
};

/// A loop body's trace (RAII): traced once and run on every iteration, so a draw from a Generator
/// there would repeat its numbers; it is an error naming `loop` (explicit keys are fine).
class LoopBodyFrame {
 public:
  explicit LoopBodyFrame(const char* loop);
  ~LoopBodyFrame();
  LoopBodyFrame(const LoopBodyFrame&) = delete;
  LoopBodyFrame& operator=(const LoopBodyFrame&) = delete;

 private:
  std::unique_ptr<Frame> frame_;
};

/// Whether any transform is tracing on this thread (then a Variable may not be assigned).
bool tracing();

/// A Variable's value as the innermost frame sees it (the value now when there is none).
Tensor read_variable(const std::shared_ptr<VariableState>& var);
/// A Generator's next key (0-d Int64 bits) as the innermost frame sees it.
Tensor generator_key(const std::shared_ptr<GeneratorState>& gen);

/// grad over Variables (RAII): while it lives, reading vars[i] gives values[i].
class VariableOverride {
 public:
  VariableOverride(const std::vector<std::shared_ptr<VariableState>>& vars,
                   const std::vector<Tensor>& values);
  ~VariableOverride();
  VariableOverride(const VariableOverride&) = delete;
  VariableOverride& operator=(const VariableOverride&) = delete;

 private:
  std::unique_ptr<Frame> frame_;
};

}  // namespace detail
}  // namespace lanes
