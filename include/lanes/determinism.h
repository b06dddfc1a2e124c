// What lanes promises about the bits of a result (README, "Reproducible results").
//
// Always: the same function on the same inputs gives the same bits on every call and at every
// thread count, eager or compiled; no kernel's result depends on timing or on how the threads
// split the work, and LoopStrategy::Auto and CondStrategy::Auto decide from the inputs alone.
// (compile's rewrites that reassociate sums, the product-norm rewrite and sums of outer products
// folded into one product, may round differently from the eager ops they replace.)
//
// With batch invariance on (set_batch_invariant(true), or LANES_BATCH_INVARIANT=1 in the
// environment): also vmap(f)(xs)[i] == f(xs[i]) bit for bit, and the same bits under every
// cond and loop strategy, chunk size and memory budget. Every float product (matmul, dot_general,
// einsum, conv and their derivatives) then sums each element in one order fixed by the length of
// its contraction, whatever the number of rows or lanes multiplied together
// (src/kernels/gemm_in_order.h). Off by default: OpenBLAS and libxsmm, whose rounding depends on
// the product's shape, are faster on some rows (bench/README.md, "Batch invariance").
// Reductions are batch-invariant either way (every reduction kernel follows one order).
#pragma once

namespace lanes {

/// Whether products run in the batch-invariant order (see above).
bool batch_invariant();
/// Turns batch invariance on or off for the whole process (off by default, unless the
/// environment sets LANES_BATCH_INVARIANT=1).
void set_batch_invariant(bool on);

}  // namespace lanes
