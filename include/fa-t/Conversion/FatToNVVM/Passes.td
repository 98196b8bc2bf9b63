//===- Passes.td - fat.attention to Hopper kernels ---------*- tablegen -*-===//
#ifndef FAT_CONVERSION_FATTONVVM_PASSES_TD
#define FAT_CONVERSION_FATTONVVM_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertFatToNVVM : Pass<"convert-fat-to-nvvm", "::mlir::ModuleOp"> {
  let summary = "Lower the pipelined kernel's fat ops to NVVM, one pattern each";
  let description = [{
    Runs on the kernels `--fat-pipeline` wrote into `gpu.module`s and
    replaces the ops of the pipelined form that are not NVVM yet
    (FatKernelOps.td), each by one pattern of
    `populateFatKernelToNVVMPatterns`:

    - `fat.warp_specialize` → `scf.if` on warpgroup 0 (tagged `fat.role =
      ["producer", "consumer"]`) with `nvvm.setmaxregister` decrease /
      increase at the start of each branch;
    - `fat.tma_load` → one `nvvm.cp.async.bulk.tensor` TMA copy per
      64-column box;
    - the ring ops → their layout's arithmetic (stage i mod stages,
      parity ⌊i / stages⌋ mod 2, the stage's barrier and buffer
      addresses) and `nvvm.mbarrier.init` (`fat.ring_init`),
      `try_wait.parity` on the empty barrier with the parity flipped and
      `arrive.expect_tx` on the full one (`fat.ring_acquire`),
      `try_wait.parity` on the full one (`fat.ring_wait`), `arrive` on
      the empty one (`fat.ring_release`), a loop of 16-byte stores and a
      proxy fence (`fat.ring_fill`); `!fat.ring` becomes its base,
      `!llvm.ptr<3>`;
    - `fat.wgmma_async` → `wgmma.fence`, K/16 `wgmma.mma_async` m64nNk16
      instructions in `llvm.inline_asm` and `wgmma.commit_group` (the
      shared-memory descriptors derived from the operands' addresses and
      box strides, each step's K advance from their layout; A from
      registers four i32 registers per step; scale-d a predicate set at
      run time; the accumulator tile's registers tied through);
    - `fat.wgmma_wait` → `nvvm.wgmma.wait.group.sync.aligned N`, then an
      empty volatile `llvm.inline_asm` per register of the returned
      values with a tied operand (the accumulators the retired groups
      wrote become valid there and nothing moves above the wait);
    - `fat.operand_fence` → the same asm per register without a wait
      (pins registers between loops, or thread ids behind a barrier);
    - `fat.schedule_fence` → a uniform branch over a `membar.cta` that
      never runs (a basic-block boundary ptxas keeps);
    - the turn ops (ping-pong) → named barriers of 256 threads:
      `bar.sync 1 + c` (`fat.turn_begin`), `bar.arrive` on the next
      consumer's (`fat.turn_end`; with `last`, every consumer but the
      last), consumer n − 1's arrive on barrier 1 (`fat.turns_open`) and
      consumer 0's sync on it (`fat.turns_close`);
    - the mask-geometry ops (`fat.visible_key_blocks`,
      `fat.first_masked_key_block`, `fat.key_block_needs_mask`) and block
      sparsity's (`fat.key_block_range`, `fat.key_block_hole`,
      `fat.full_key_block(s)`) → their formulas in i32 arithmetic (the
      tables' rows as invariant loads).

    The consumer works at warpgroup-tile granularity: tiles
    `tensor<64xNxT, #fat.wgmma_fragment>` (FatAttrs.td) become, by a 1:N
    type conversion, the registers thread t holds of them (f32 register
    4i + 2r + e = row 16·warp + lane/4 + 8r, column 8i + 2·(lane % 4) + e;
    a row vector's register r; a 16-bit tile's pairs packed in i32), and
    each tile op gets one pattern of `populateWgmmaFragmentToNVVMPatterns`
    doing its math on them: `fat.mask` (per-row limits with `row_limits`,
    else each key's index), `fat.softmax_max` (the thread's max, two quad
    shuffles, m' and α), `fat.softmax_exp` (MUFU `ex2` or the FMA-pipe
    polynomial per column, the thread's partial row sum), `arith.truncf`
    (`cvt.rn.bf16x2` / `f16x2` pairs, already the register-A layout) and
    `fat.rescale` (with `warp_vote` behind a warp vote on the rows whose
    α ≠ 1), and `arith.constant` splats (each register the value). The
    `scf.for` / `scf.if` that carry tiles carry their registers instead
    (MLIR's SCF structural type conversion). A row's work is issued as
    soon as its inputs are ready (ptxas keeps the issue order). The
    epilogue's `fat.store_output` / `fat.stage_output` store the thread's
    registers of O and the LSE, each formed next to its store; a tile
    read by any other op is an error naming that op.

    The rest of the pipeline (`convert-scf-to-cf`, `convert-nvvm-to-llvm`,
    `convert-gpu-to-nvvm`, `--fat-to-ptx`) takes it from there. A host
    `fat.attention` or tiled loop left (no `fat.launch` of a built kernel
    in its place) has no kernel to lower: the pass says to run
    `--fat-tile`, `--fat-tensorize` and `--fat-pipeline` first.

    The scalar math of a modification's body takes the kernel's forms, none
    of them a libdevice call: `math.exp` is MUFU `ex2.approx` of x·log2 e
    (as the softmax's), `math.absf` LLVM's fabs, and `math.tanh` (a
    soft-cap's) by `tanh`: `approx` is MUFU `tanh.approx.f32`, one
    instruction with a relative error of 2^−11, `precise` computes
    1 − 2/(1 + e^2|x|) on MUFU ex2 and rcp (absolute error a few 1e-7), and
    `auto` (default) takes `approx` for a tanh with the `afn` fast-math flag
    — fat-pipeline sets it in bf16 kernels, whose P (2^−8) hides the
    difference: a soft-cap runs 1.5x faster at the same error against
    float64 (perf log run 76) — and `precise` for the others. A forced
    choice is not in the kernel's name: build it into its own folder.

    A region's read of a captured tensor whose index moves with the key (a
    relative bias table's `T[h, j − i + c]`, document ids `doc[b, j]`) takes
    new cache lines every key block, and its loads come right after the
    scores' wait, so an L2 round trip (hundreds of cycles) would sit on the
    softmax's path each block. With `capture-prefetch=n` (1 to 8) the tile's
    in-bounds version also issues `prefetch.global.L1` for the same reads n
    key blocks ahead (the loop's next block starts one block width on): per
    read and thread one instruction, lane λ taking line λ mod m of the
    thread's span of m lines, so that a warp's instruction covers the
    warp's lines; the index clamped into the tensor. A hint: the values read
    are the same either way. Default 1: one block ahead gains 4…6% for a
    D = 128 relative bias table and 6% for dense document ids at 4k keys,
    ±1% at D = 64 and with block masks, and two blocks ahead nothing more
    (perf log, run 117).

    Those reads depend on the tile's position, not on its scores, but are
    written where the scores are first used, after the wait that retires
    the Q·Kᵀ GEMM. With `capture-reads=early` (default) the pass moves a
    score region's versioned reads of a tile — invariant loads, their
    prefetches and the arithmetic after the wait that they need — to the
    earliest point of their block, right after the last op whose results
    they read: in the key loop's step its top, so the loads are in flight
    through the wait for K_j, the turn and the GEMMs; the register fences
    and everything else with a memory effect stay. +1.5…5.7% for a
    relative bias table over issuing them just above the scores' wait, and
    that +0.4…2.5% over `late`, which leaves every read where the lowering
    wrote it (perf log, runs 127–133). A mask region's reads (document ids)
    stay where they are: moved, the D = 128 document kernels spilled 24…60
    bytes.

    Example: `fa-t-opt --fat-tile --fat-tensorize --fat-pipeline
    --convert-fat-to-nvvm in.mlir`
  }];
  let options = [
    Option<"tanh", "tanh", "std::string", /*default=*/"\"auto\"",
           "The kernel's tanh: auto (approx where the op has afn), approx "
           "(tanh.approx.f32) or precise (MUFU ex2 + rcp)">,
    Option<"capturePrefetch", "capture-prefetch", "int64_t",
           /*default=*/"::mlir::fat::kDefaultCapturePrefetch",
           "Key blocks ahead that a region's reads moving with the key "
           "prefetch into L1 (0: none, at most 8)">,
    Option<"captureReads", "capture-reads", "std::string",
           /*default=*/"\"early\"",
           "Where a score region's reads of captured tensors are issued: "
           "early (at the top of their block) or late (at their first use)">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::math::MathDialect",
    "::mlir::NVVM::NVVMDialect", "::mlir::scf::SCFDialect"
  ];
}

def FatEmitKernels : Pass<"fat-emit-kernels", "::mlir::ModuleOp"> {
  let summary = "Write each serialized fat kernel as <name>.ptx + <name>.json";
  let description = [{
    Runs after `gpu-module-to-binary{format=isa}`: for every `gpu.binary`
    named in the module attribute `fat.kernels` it writes the PTX text of its
    object to `<output-dir>/<name>.ptx` and the launch manifest
    (docs/kernel-abi.md) to `<output-dir>/<name>.json`. Without
    `output-dir` nothing is written and the IR is unchanged.
  }];
  let options = [
    Option<"outputDir", "output-dir", "std::string", /*default=*/"\"\"",
           "Directory the .ptx and .json files are written to">
  ];
}

#endif // FAT_CONVERSION_FATTONVVM_PASSES_TD
