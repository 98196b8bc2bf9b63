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
    - `fat.wgmma_async` → one `wgmma.mma_async` m64nNk16 instruction in
      `llvm.inline_asm` (A from a descriptor or four registers, scale-d
      a predicate set at run time, accumulators tied through);
    - `fat.wgmma_wait` → `nvvm.wgmma.wait.group.sync.aligned N`, then an
      empty volatile `llvm.inline_asm` per returned register with a tied
      operand (the accumulators the retired groups wrote become valid
      there and nothing moves above the wait);
    - `fat.operand_fence` → the same asm per value without a wait (pins
      registers between loops, or thread ids behind a barrier);
    - `fat.schedule_fence` → a uniform branch over a `membar.cta` that
      never runs (a basic-block boundary ptxas keeps).

    The rest of the pipeline (`convert-scf-to-cf`, `convert-nvvm-to-llvm`,
    `convert-gpu-to-nvvm`, `--fat-to-ptx`) takes it from there. A host
    `fat.attention` without a `fat.kernel` has no kernel to lower: the pass
    says to run `--fat-pipeline` first.

    Example: `fa-t-opt --fat-pipeline --convert-fat-to-nvvm in.mlir`
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::NVVM::NVVMDialect",
    "::mlir::scf::SCFDialect"
  ];
}

def FatTensorize : Pass<"fat-tensorize"> {
  let summary = "Move softmax primitives onto the tensor cores (FlashAttention-T)";
  let description = [{
    Decides how the Hopper kernel computes the softmax primitives that
    FlashAttention runs on the vector units, and applies the decision:

    - on the tiled form (after `--fat-tile`) it rewrites each KV step into
      the tensorized level (FatTensorOps.td, TensorizeTiles.cpp):
      `fat.qk` → `fat.wgmma` (A and B in shared memory), the row max and α
      → `fat.softmax_max`, the numerators and the vector row sum →
      `fat.softmax_exp`, `fat.pv` (and `fat.row_sum` with `rowsum=mma`) →
      `arith.truncf` of P and `fat.wgmma` with A in registers on [V | 1].
      The cost model reads D, Dv, the mask, the LSE and fat-tile's
      `fat.tile` record off the tiles; tiles warpgroup MMA cannot take are
      refused naming the constraint. `--fat-to-cpu` runs the result.
    - on an untiled `fat.attention` (the `--fat-to-ptx` path, whose kernel
      `convert-fat-to-nvvm` still builds from the op) it records the same
      choice as keys of the op's `fat.schedule` dictionary:

    - `rowsum`: `"vector"` (l += Σ_j P_ij with FADDs, a quad reduction at
      the end) or `"mma"`: the P·V wgmma gets 8 extra B columns of ones, so
      its accumulator holds [O | l] = P·[V | 1] and the tensor cores do the
      row sums; α·l then rides along with α·O.
    - `rescale`: `"always"` (O ← α·O, l ← α·l every block) or `"lazy"`: the
      reference max m of a row only moves when c·(rowmax S − m) > τ
      (`rescale_threshold`, log2 units), so P = exp2(c·S − c·m) ≤ 2^τ and
      warps whose rows all kept m skip the rescale. O/l and the LSE do not
      depend on which m was used; O, l ≤ 2^τ·(…) stay far from overflow.
    - `exp2_poly`: the fraction φ of the exponentials P = 2^x computed on
      the FMA pipe by 2^x = p(x − ⌊x⌋)·2^⌊x⌋ (a degree-3 minimax polynomial,
      relative error ≤ 8.6e-5, below bf16/f16 rounding; exponent added as an
      integer) instead of MUFU.EX2, which issues 16 per cycle per SM against
      128 FMAs: where the exponentials bound the loop (small head dims),
      both pipes then work while the tensor cores run.

    `auto` applies the cost model — per head dim and mask, from the measured
    ablation in docs/perf-log.md (runs 6, 10 and 30): row sums on the
    tensor cores where the P·V is narrow (D, Dv ≤ 64), no LSE is written, and
    either every block is full (no mask) or the causal kernel takes
    ping-pong turns (predicted with fat-pipeline's own cost model, so
    forcing `pingpong=off` there alone keeps these row sums);
    the lazy rescale where the P·V wait is late and O's rescale weighs most
    (Dv = 256, or the causal mask at Dv >= 128: runs 55 and 58; with
    ptxas's early wait its branch serializes the overlapped wgmmas, so
    convert-fat-to-nvvm drops it again under a forced `pv-wait=early`), the
    eager one elsewhere; all exponentials on MUFU (exp2_poly = 0: the FMA
    pipe is the busier one in this kernel, run 14). Forcing a choice is for
    ablation.

    Example: `fa-t-opt --fat-tile="block-m=128 block-n=64"
    --fat-tensorize="rowsum=mma" in.mlir` turns a D = 64 step's P·V into
    `fat.wgmma %p16, %v_ones, %acc a_from registers shape [64, 72, 16]`;
    `fa-t-opt --fat-tensorize="rowsum=mma" in.mlir` gives
    `fat.attention ... {fat.schedule = {exp2_poly = 0.0 : f64, forced = true,
    rescale = "always", rescale_threshold = 8.0 : f64, rowsum = "mma"}}`
    (`forced`: some choice came from an option, not the cost model; the
    manifest says so and kernel lookup prefers the cost model's kernels).
  }];
  let options = [
    Option<"rowsum", "rowsum", "std::string", /*default=*/"\"auto\"",
           "Row sums: auto, vector or mma">,
    Option<"rescale", "rescale", "std::string", /*default=*/"\"auto\"",
           "Rescale of O and l: auto, always or lazy">,
    Option<"rescaleThreshold", "rescale-threshold", "double",
           /*default=*/"8.0", "Lazy-rescale threshold τ, log2 units (0..16)">,
    Option<"exp2Poly", "exp2-poly", "std::string", /*default=*/"\"auto\"",
           "Exponentials on the FMA pipe: auto, or a fraction in [0, 1] of "
           "them computed by the polynomial instead of MUFU.EX2">,
    Option<"blockM", "block-m", "int64_t", /*default=*/"0",
           "Target kernel's query rows per CTA, 0 = by head dim and mask "
           "(for the shared-memory fit)">,
    Option<"blockN", "block-n", "int64_t", /*default=*/"0",
           "Target kernel's keys per block, 0 = by head dim (shared-memory fit)">,
    Option<"stages", "stages", "int64_t", /*default=*/"2",
           "Target kernel's K/V ring depth (shared-memory fit)">,
    Option<"seqLen", "seq-len", "int64_t", /*default=*/"0",
           "Key-sequence length the target kernel's tiles are tuned for, 0 = "
           "the op's static key length (shared-memory fit)">
  ];
}

def FatPipeline : Pass<"fat-pipeline", "::mlir::ModuleOp"> {
  let summary = "Choose the asynchronous schedule and build the pipelined Hopper kernel";
  let description = [{
    Chooses, for every host `fat.attention`, the consumer-warpgroup
    schedule and records it as keys of its `fat.schedule` dictionary:

    - `overlap`: iteration j issues S_j = Q·K_jᵀ and O += P_{j−1}·V_{j−1}
      back to back, waits for S_j only (wgmma.wait_group 1), and runs the
      softmax of S_j while the P·V is in flight;
    - `pingpong`: the consumer warpgroups take turns issuing their GEMMs
      (named barriers 1 … n, round the n = 2 or 3 warpgroups), so one's
      softmax overlaps the others' GEMMs;
    - `persistent`: min(U, num-sms) CTAs for U work units, CTA c taking
      units c, c + G, c + 2G, … (G = num-sms), head-major so that the CTAs
      running together share K/V blocks in L2. A unit is a query block, or
      with a causal mask the pair of query blocks p and ⌈Sq/M⌉ − 1 − p of
      one head, whose keys add up to the same count for every p (so the
      static round robin is balanced). The K/V ring and its phases run on
      across tiles, Q has a full and an empty barrier, so the producer
      loads the next tile while the consumers finish the current one and
      store O;
    - `tile_overlap` (persistent CTAs with overlap): the overlapped loops of
      a CTA's tiles are chained — the last O += P·V of tile t is issued in
      the same turn as the first S = Q·Kᵀ of tile t+1 and runs under that
      block's softmax, after which tile t's O is stored; the first P·V of a
      tile starts its accumulator (wgmma scale-d = 0). A tile of n key
      blocks takes n GEMM-issue turns instead of n + 1, so the tensor cores
      see no fill and drain at tile boundaries.

    The producer warpgroup (TMA, `stages`-deep K and V rings with full and
    empty mbarriers, setmaxnreg 24/240) is the same for every choice.
    `auto`: overlap everywhere (+5.5% over the grid, perf-log run 5);
    persistent CTAs except with windows (+12…31% at S = 512, ±5% at long
    S: perf-log runs 15–19); ping-pong with them at D ≤ 128 and block-m =
    128, except at D = 64 without a mask, where it ties with the row sums
    on the tensor cores (+1…5%: run 20); tile overlap for persistent,
    overlapped kernels without ping-pong (D = 64: +8% at S ≤ 1k, +2…5%
    above; causal D = 64 from 4k keys, 192 rows: +7…9%; with turns −1…3%:
    runs 34–41).

    Then it builds, for each `fat.attention` (tensor or memref form), the
    kernel of that schedule: a `gpu.module` holding one `llvm.func` for
    sm_90a (docs/kernel-abi.md) in the pipelined form — warp
    specialization as `fat.warp_specialize` regions, the TMA ring as
    `nvvm.cp.async.bulk.tensor` loads and `nvvm.mbarrier.*` ops, each
    wgmma step as `fat.wgmma_async`, the wait groups as `fat.wgmma_wait`
    (which returns the registers the retired groups wrote: the async
    token), and the scheduling facts ptxas needs as ops
    (`fat.operand_fence`, `fat.schedule_fence`) that `--convert-fat-to-nvvm`
    lowers. The kernel depends only on the op's static configuration
    (dtype, D, Dv, Hq, Hkv, causal, window, layout, LSE), its
    `fat.schedule` and the pass options, so identical configurations share
    one module. The
    op itself stays (the host calls the kernel through the runtime) and is
    tagged `fat.kernel = @<module>::@<entry>`; the launch manifest of each
    kernel is recorded in the module attribute `fat.kernels`.

    One CTA computes `block-m` query rows of one (head, batch); the grid is
    (⌈Sq/block-m⌉, Hq, B), or (Hq, ⌈Sq/block-m⌉, B) with the query blocks in
    reverse (longest first) for causal kernels:
    ```
    warpgroup 0 (producer, 1 thread): TMA Q once, then K_j, V_j into a
        `stages`-deep ring, full[s] / empty[s] mbarriers
    warpgroups 1..block-m/64 (consumers, 64 query rows each):
        S = Q·K_jᵀ (wgmma, smem descriptors)      mask edges, ragged tail
        m' = max(m, rowmax S)   P = exp2(c·S − c·m')   α = exp2(c·m − c·m')
        l = α·l + rowsum P      O = α·O + P·V_j (wgmma, P in registers)
    end: O /= l (0 for an empty row), LSE = (c·m + log2 l)·ln 2, or −inf
    ```
    with c = scale·log2(e) a kernel parameter.

    The FlashAttention-T primitives come from the op's `fat.schedule`
    (`--fat-tensorize`; without it: vector row sums, eager rescale, MUFU
    exponentials); with `rowsum=mma` the P·V wgmma gets 8 columns of ones
    (N = Dv + 8), so the tensor cores compute l = P·1 and α·l rides with
    α·O. After the build `fat.schedule` holds what the kernel does, with
    its `block_m`, `block_n`, `stages`, `q_buffers`, `o_store` and
    `pv_wait`: the kernel drops tile overlap where one Q buffer fits or its
    registers would not hold the pending tile, and a cost-model lazy
    rescale under `pv-wait=early`. Entries already on the op (written by
    hand) are decisions made: the kernel's entries win over this pass's
    options, and a schedule key stands unless its option is given (`on` /
    `off`); the cost model sees the op's `block_m`.

    Epilogue (`o-store`): O/l is packed to 16 bits and, by default, staged
    through shared memory: each warp writes its 16 rows with `stmatrix`
    into its warpgroup's rows of the tile's Q buffer (dead once the last
    S = Q·Kᵀ is done; a row's 16-byte chunks XOR-swizzled by row mod 8 so
    neither side conflicts on banks), then reads them back and stores whole
    row segments 16 bytes per thread. `o-store=direct` stores each
    accumulator pair from registers (4 bytes, 8 rows per warp store).

    P·V wait (`pv-wait`): the overlapped loop issues S_j = Q·K_jᵀ and
    O += P_{j−1}·V_{j−1}, waits for S_j, runs its softmax and then waits
    for the P·V. ptxas lifts that second wait as high as its basic block
    allows (the 16-bit packs of P_j may take P_{j−1}'s registers only after
    it), so by default (`late`, where a block's P·V spans at least 160
    keys × 128 columns or the lazy rescale pays) the packs follow the wait
    and a branch over a `membar.cta` that never runs fences it below the
    exponentials (ptxas schedules within basic blocks); `early` leaves it
    to ptxas. Example: `fat-pipeline{pv-wait=early}`.

    The schedule stays visible in the kernel it builds: the role split is
    the `fat.warp_specialize` (an `scf.if` tagged `fat.role` once lowered),
    and the structured ops carry `fat.stage` ("ones",
    "load", "prologue", "mainloop", "mainloop-edge", "mask", "rescale",
    "epilogue"; ping-pong kernels without the lazy rescale run their main
    loop over the blocks no mask touches, then a "mainloop-edge" copy with
    the mask test over the rest), `fat.order` (the issue order of one
    main-loop iteration) and, for
    persistent kernels, `fat.tiles` ("head-major-pairs" or "head-major").

    Example: `fa-t-opt --fat-pipeline="block-n=128" in.mlir` on a causal
    D = 128 op gives `fat.attention ... {fat.kernel = @k::@k,
    fat.schedule = {forced = false, overlap = true, persistent = true,
    pingpong = true, tile_overlap = false, ...}}` and `gpu.module @k`.
  }];
  let options = [
    Option<"overlap", "overlap", "std::string", /*default=*/"\"auto\"",
           "Intra-warpgroup overlap: auto, on or off">,
    Option<"pingpong", "pingpong", "std::string", /*default=*/"\"auto\"",
           "Consumer warpgroups take turns issuing GEMMs: auto, on or off">,
    Option<"persistent", "persistent", "std::string", /*default=*/"\"auto\"",
           "Persistent CTAs looping over the tiles: auto, on or off">,
    Option<"tileOverlap", "tile-overlap", "std::string", /*default=*/"\"auto\"",
           "A tile's last P·V issued with the next tile's first Q·Kᵀ "
           "(persistent CTAs with overlap): auto, on or off">,
    Option<"sm", "sm", "std::string", /*default=*/"\"sm_90a\"",
           "Target architecture (only sm_90a: wgmma and setmaxnreg need it)">,
    Option<"blockM", "block-m", "int64_t", /*default=*/"0",
           "Query rows per CTA: 64, 128 or 192 (one to three consumer "
           "warpgroups); 0 picks by head dim, mask, schedule and seq-len "
           "(defaultBlockM: 192 at D = 64 without ping-pong, without a mask "
           "or causal at seq-len >= 4096; else 128)">,
    Option<"blockN", "block-n", "int64_t", /*default=*/"0",
           "Keys per KV block: 64 to 192 in steps of 16; 0 picks by head dim, "
           "mask, schedule and seq-len (defaultBlockN: 80 above D = 128, 64 "
           "for seq-len <= 512 or causal <= 1024; at "
           "D = 128 with persistent CTAs 176 without a mask (128 for seq-len "
           "< 2048, 160 below 8192), 160 causal at seq-len >= 4096; else "
           "128)">,
    Option<"stages", "stages", "int64_t", /*default=*/"2",
           "Depth of the K/V shared-memory ring (1..4)">,
    Option<"qBuffers", "q-buffers", "int64_t", /*default=*/"0",
           "Q buffers in shared memory: 1, or 2 for persistent kernels (the "
           "next tile's Q loads while this tile runs); 0 = 2 where they fit "
           "beside the K/V ring, else 1">,
    Option<"seqLen", "seq-len", "int64_t", /*default=*/"0",
           "Key-sequence length to tune the default tiles for (every kernel "
           "serves every length); 0 = the op's static key length, if any">,
    Option<"ptxVersion", "ptx", "int64_t", /*default=*/"80",
           "PTX ISA version the kernel is built for (80 = PTX 8.0)">,
    Option<"numSMs", "num-sms", "int64_t", /*default=*/"132",
           "SMs of the target: the most CTAs a persistent kernel launches">,
    Option<"oStore", "o-store", "std::string", /*default=*/"\"auto\"",
           "How the epilogue writes O: 'staged' (stmatrix into the "
           "warpgroup's dead Q rows, then 16-byte stores of whole row "
           "segments; needs Dv <= D, no tile overlap and block-m <= 128), 'direct' (4-byte "
           "stores from the accumulator registers), 'auto' = staged where "
           "it can be">,
    Option<"pvWait", "pv-wait", "std::string", /*default=*/"\"auto\"",
           "Where the overlapped main loop waits for P(j-1)·V(j-1): 'late' "
           "(after the softmax of S(j), behind a scheduling fence; the P(j) "
           "packs follow the wait), 'early' (where ptxas puts it: before "
           "the softmax), 'auto' = late at Dv >= 128 where block-n × Dv >= "
           "160 × 128, Dv = 256 or the mask is causal">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::NVVM::NVVMDialect",
    "::mlir::scf::SCFDialect"
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
