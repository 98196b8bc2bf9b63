//===- FatKernelOps.td - the pipelined kernel's own ops ----*- tablegen -*-===//
//
// Ops of the pipelined form that `--fat-pipeline` writes into the kernel's
// gpu.module and `--convert-fat-to-nvvm` lowers, one pattern each
// (lib/Conversion/FatToNVVM/KernelOpsToNVVM.cpp): the warpgroup-role split,
// the TMA tile copies and wgmma GEMMs on shared memory, the wait groups
// with the registers they make valid, and the
// scheduling facts ptxas needs, as side-effecting ops that no
// canonicalization moves or merges.
//
//===----------------------------------------------------------------------===//

#ifndef FAT_DIALECT_FAT_IR_FATKERNELOPS_TD
#define FAT_DIALECT_FAT_IR_FATKERNELOPS_TD

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/IR/SymbolInterfaces.td"

// A warpgroup's tile or row vector in registers (FatAttrs.td has the
// layout); convert-fat-to-nvvm turns it into one thread's registers.
def Fat_FragmentTile : Type<
    CPred<"::mlir::fat::WgmmaFragmentAttr::isFragment($_self)">,
    "a #fat.wgmma_fragment tile or row vector", "::mlir::RankedTensorType">;

def Fat_LaunchOp : Fat_Op<"launch",
    [AttrSizedOperandSegments,
     DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "runs a built attention kernel (the host side of the pipelined form)";
  let description = [{
    What `--fat-pipeline` leaves in host code where the tensorized loop
    of one attention was: the call of the kernel it built, on the whole
    tensors. With Q `[B, Hq, Sq, D]`, K `[B, Hkv, Skv, D]`, V
    `[B, Hkv, Skv, Dv]` (or the BSHD order the kernel's name says), it
    returns

    ```
    O[b, h, i, :] = Σ_j softmax_j(scale · q_i·k_j | visible(i, j)) · v_j,
    LSE[b, h, i]  = log Σ_j exp(scale · q_i·k_j)      (with `lse`)
    ```

    for KV head h / (Hq / Hkv), the visible keys those of the mask the
    kernel was built for (its name and manifest) with `diagonal` δ (none:
    Skv − Sq, the bottom-right alignment). `outs` and `lse` are the
    destinations, as on `fat.attention`. `kernel` names the entry
    `@<gpu.module>::@<func>`; its grid and parameters are the manifest in
    the module's `fat.kernels` (docs/kernel-abi.md), which the runtime
    (`libfat_runtime.so`) follows when it performs the launch. The schedule
    the kernel runs is recorded beside it as `fat.schedule`. `captures` are
    the tensors the attention's score / mask regions read (static shapes),
    passed to the kernel by address after the manifest's other parameters
    (`capture0`, `capture1`, …: row-major, contiguous).

    ```mlir
    %o = fat.launch @fat_attention_fwd_bf16_d128_h16_16_bhsd_m128n176s2q2y_opt132::@fat_attention_fwd_bf16_d128_h16_16_bhsd_m128n176s2q2y_opt132
           ins(%q, %k, %v : tensor<2x16x16384x128xbf16>, tensor<2x16x16384x128xbf16>, tensor<2x16x16384x128xbf16>)
           outs(%o0 : tensor<2x16x16384x128xbf16>) scale 0.0883883461
           -> tensor<2x16x16384x128xbf16>
    ```
  }];
  let arguments = (ins SymbolRefAttr:$kernel, AnyRankedTensor:$query,
                   AnyRankedTensor:$key, AnyRankedTensor:$value,
                   AnyRankedTensor:$output, Optional<AnyRankedTensor>:$lse,
                   Optional<Index>:$diagonal, Variadic<AnyType>:$captures,
                   F32Attr:$scale);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = [{
    $kernel `ins` `(` $query `,` $key `,` $value `:` type($query) `,`
    type($key) `,` type($value) `)` `outs` `(` $output `:` type($output) `)`
    (`lse` `(` $lse^ `:` type($lse) `)`)? (`diagonal` `(` $diagonal^ `)`)?
    (`captures` `(` $captures^ `:` type($captures) `)`)?
    `scale` $scale attr-dict `->` type($results)
  }];
  let hasVerifier = 1;
}

def Fat_WarpSpecializeOp : Fat_Op<"warp_specialize",
    [NoTerminator, RecursiveMemoryEffects]> {
  let summary = "warp specialization: a producer warpgroup and the consumers";
  let description = [{
    Splits a CTA's warpgroups into roles: warpgroup 0 (`%warpgroup` = 0)
    runs the `producer` region (the TMA loads into the K/V ring), every
    other warpgroup the `consumer` region (the GEMMs and the softmax of 64
    query rows each). `%warpgroup` must be warp-uniform (a shuffle from lane
    0 makes it provably so), or ptxas serializes the wgmmas behind the role
    branch (C7520).

    With `registers(p, c)` the roles first move registers between them
    (`setmaxnreg`): the producer drops to p, the consumers rise to c. The
    kernel starts with 65536 / threads registers per thread; for n consumer
    warpgroups the split must fit 128·p + 128·n·c ≤ 65536 (p = 24, c = 240
    for two; c = 160 for three). ptxas honours it only in a kernel with
    `nvvm.maxntid` and `nvvm.minctasm = 1`.

    Lowers to `scf.if` on `%warpgroup == 0` (tagged `fat.role`) with
    `nvvm.setmaxregister` at the start of each branch.

    ```mlir
    fat.warp_specialize %wg registers(24, 240) producer {
      fat.tma_load ...
    } consumer {
      ...
    }
    ```
  }];
  let arguments = (ins I32:$warpgroup,
                   OptionalAttr<I32Attr>:$producer_registers,
                   OptionalAttr<I32Attr>:$consumer_registers);
  let regions = (region MaxSizedRegion<1>:$producer,
                 MaxSizedRegion<1>:$consumer);
  let assemblyFormat = [{
    $warpgroup (`registers` `(` $producer_registers^ `,`
    $consumer_registers `)`)? `producer` $producer `consumer` $consumer
    attr-dict
  }];
  let hasVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [
    OpBuilder<(ins "::mlir::Value":$warpgroup,
                   "::std::optional<std::pair<int32_t, int32_t>>":$registers)>
  ];
  let extraClassDeclaration = [{
    /// The single block of a role's region (created by the builder).
    ::mlir::Block &getProducerBlock() { return getProducer().front(); }
    ::mlir::Block &getConsumerBlock() { return getConsumer().front(); }
  }];
}

def Fat_LLVMPointer : Type<
    CPred<"::llvm::isa<::mlir::LLVM::LLVMPointerType>($_self)">,
    "an LLVM pointer">;

def Fat_TmaLoadOp : Fat_Op<"tma_load",
    [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "a tile copied from global to shared memory by TMA, 64 columns a box";
  let description = [{
    The producer's copy of one operand tile (Q's rows of a query block, or
    K_j / V_j of a key block): `columns / 64` TMA boxes, box c holding the
    tensor map's elements at coordinates (64c + x, coords…) for x < 64 and
    the box's rows, written to `dst + c · box_stride` in the map's 128-byte
    swizzle; every byte completes a transaction on the mbarrier `barrier`
    (whose expected count the producer raised beforehand by arrive.expect_tx).

    ```
    smem[dst + c·box_stride + swizzle(r, x)] = T[coords…][r][64c + x]
    ```

    This is the layout `fat.wgmma_async` reads (an operand in shared memory
    is its address and the same `box_stride`), so the producer's and the
    consumer's sides of the ring say the same thing in the IR.

    Why not `nvgpu.tma.async.load`: it copies one box into a memref of the
    shared address space and takes `!nvgpu.tensormap.descriptor` and
    `!nvgpu.mbarrier.group` values, while the kernel's tensor maps are
    kernel parameters (`!llvm.ptr`, filled on the host) and its shared
    memory one run-time-aligned byte buffer: the op would need casts both
    ways for each box.

    ```mlir
    fat.tma_load %kmap[%row, %head, %batch]
        to(%stage box_stride 20480) columns 128 barrier(%full)
        : !llvm.ptr, !llvm.ptr<3>, !llvm.ptr<3>
    ```

    Lowers to one `nvvm.cp.async.bulk.tensor.shared.cluster.global` per
    box (the destination cast to the cluster's shared space).
  }];
  let arguments = (ins Fat_LLVMPointer:$tensor_map, Variadic<I32>:$coords,
                   Fat_LLVMPointer:$dst,
                   ConfinedAttr<I64Attr, [IntPositive]>:$box_stride,
                   ConfinedAttr<I64Attr, [IntPositive]>:$columns,
                   Fat_LLVMPointer:$barrier);
  let assemblyFormat = [{
    $tensor_map `[` $coords `]` `to` `(` $dst `box_stride` $box_stride `)`
    `columns` $columns `barrier` `(` $barrier `)` attr-dict `:`
    type($tensor_map) `,` type($dst) `,` type($barrier)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Columns of one box: 128 bytes of 16-bit elements.
    static constexpr int64_t kBoxColumns = 64;
  }];
}

//===----------------------------------------------------------------------===//
// The rings: shared-memory buffers handed between producer and consumers
//===----------------------------------------------------------------------===//

def Fat_RingType : TypeDef<Fat_Dialect, "Ring"> {
  let mnemonic = "ring";
  let summary = "a ring of shared-memory buffers, each guarded by mbarriers";
  let description = [{
    `stages` buffers of `buffer_bytes` bytes in the kernel's shared memory,
    the first at byte `buffer_offset` of its (1024-byte aligned) base, that
    the producer fills by TMA and the consumer warpgroups read. Iteration i
    of the ring uses stage s = i mod stages in its phase q = ⌊i / stages⌋,
    so both sides find a buffer from the iteration alone:

    ```
    buffer(i)  = base + buffer_offset + (i mod stages) · buffer_bytes
    full[s]    = base + barrier_offset + 8 s                1 arrival + tx
    empty[s]   = base + barrier_offset + 8 (stages + s)     `releases` arrivals
    parity(i)  = ⌊i / stages⌋ mod 2
    ```

    full[s] completes its phase when the producer has announced the
    stage's bytes (arrive.expect_tx) and TMA has written them; empty[s]
    when every one of the `releases` consumer threads is done with it. The
    consumer waits for phase q of full[s] (parity q mod 2); the producer
    for the previous phase of empty[s] (parity q mod 2 xor 1, which a
    fresh barrier reports complete: the first pass does not wait).
    `releases = 0` is a ring whose buffers are filled once and never given
    back (a non-persistent kernel's Q): it has no empty barriers.

    The value is the shared-memory base (`!llvm.ptr<3>` after
    `--convert-fat-to-nvvm`); the layout is the type's. K and V have rings
    of their own although they advance together: the consumers release
    K_j right after S_j = Q·K_jᵀ, long before they are done with V_j.

    Why not `!nvgpu.mbarrier.group` and its ops: `nvgpu.mbarrier.create`
    allocates its barriers as a shared-memory global of their own, while
    the kernel's layout puts them at `barrier_offset` of the one aligned
    dynamic window it shares with the buffers (every byte of the 227 KB
    counts: the ring depth and the Q buffers are sized to fill it); a group
    is only barriers, so the buffer that a barrier guards, and which of
    full / empty a side waits on with which parity, would be index
    arithmetic repeated at every producer and consumer site, where a ring
    op derives all of them from the iteration — and a persistent CTA's
    rings run on across tiles without a phase bit carried through its
    loops. The ops lower to the same NVVM mbarrier instructions
    (`mbarrier.init`, `mbarrier.arrive.expect_tx`, `mbarrier.try_wait.parity`,
    `mbarrier.arrive`) that nvgpu's would.

    ```mlir
    !fat.ring<stages = 2, buffer_offset = 32768, buffer_bytes = 40960,
              barrier_offset = 196608, releases = 256>
    ```
  }];
  let parameters = (ins "int64_t":$stages, "int64_t":$buffer_offset,
                        "int64_t":$buffer_bytes, "int64_t":$barrier_offset,
                        "int64_t":$releases);
  let assemblyFormat = "`<` struct(params) `>`";
  // Printed IR names each ring once, at the top: !ring, !ring1, …
  let genMnemonicAlias = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Bytes of the ring's mbarriers: full[stages], then empty[stages].
    int64_t getBarrierBytes() const {
      return 8 * getStages() * (getReleases() > 0 ? 2 : 1);
    }
  }];
}

// Results of the ring ops: addresses in shared memory.
def Fat_SharedPointer : Type<
    CPred<"::llvm::isa<::mlir::LLVM::LLVMPointerType>($_self) && "
          "::llvm::cast<::mlir::LLVM::LLVMPointerType>($_self)"
          ".getAddressSpace() == 3">,
    "a shared-memory pointer (!llvm.ptr<3>)">,
    BuildableType<"::mlir::LLVM::LLVMPointerType::get($_builder.getContext(), 3)">;

class Fat_RingOp<string mnemonic, list<Trait> traits = []>
    : Fat_Op<"ring_" # mnemonic, traits> {
  let extraClassDeclaration = [{
    ::mlir::fat::RingType getRingType() {
      return ::llvm::cast<::mlir::fat::RingType>(getRing().getType());
    }
  }];
}

def Fat_RingCreateOp : Fat_Op<"ring", [Pure]> {
  let summary = "the ring of a layout at a shared-memory base";
  let description = [{
    Names the ring whose buffers and barriers lie at the offsets of its
    type from `base`, the kernel's 1024-byte aligned dynamic shared memory.
    Lowers to `base` itself (the ring's value is its base).

    ```mlir
    %k = fat.ring %smem : !fat.ring<stages = 2, buffer_offset = 32768,
        buffer_bytes = 40960, barrier_offset = 196616, releases = 256>
    ```
  }];
  let arguments = (ins Fat_SharedPointer:$base);
  let results = (outs Fat_RingType:$ring);
  let assemblyFormat = "$base attr-dict `:` type($ring)";
}

def Fat_RingInitOp : Fat_RingOp<"init", [MemoryEffects<[MemWrite]>]> {
  let summary = "initializes a ring's mbarriers (one thread, before any use)";
  let description = [{
    `mbarrier.init` of full[s] with one arrival (the producer's
    arrive.expect_tx) and, for `releases > 0`, of empty[s] with `releases`
    arrivals, stage by stage. One thread runs it; a proxy fence and a CTA
    barrier must follow before either role uses the ring.

    ```mlir
    scf.if %thread0 {
      fat.ring_init %k : !fat.ring<...>
      nvvm.fence.mbarrier.init
    }
    ```
  }];
  let arguments = (ins Fat_RingType:$ring);
  let assemblyFormat = "$ring attr-dict `:` type($ring)";
}

def Fat_RingAcquireOp : Fat_RingOp<"acquire",
    [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "the producer takes the ring's buffer of an iteration";
  let description = [{
    Waits until the consumers released the stage of iteration `i` (the
    previous phase of empty[s]; without empty barriers it does not wait),
    then announces `expect_tx` bytes on full[s] (one arrival) and returns
    the stage's buffer and full[s], the destination and barrier of the TMA
    copies that write those bytes (`fat.tma_load`).

    ```mlir
    %buf, %full = fat.ring_acquire %k[%i] expect_tx 40960 : !fat.ring<...>
    fat.tma_load %kmap[%row, %head, %batch] to(%buf box_stride 20480)
        columns 128 barrier(%full) : !llvm.ptr, !llvm.ptr<3>, !llvm.ptr<3>
    ```
  }];
  let arguments = (ins Fat_RingType:$ring, I32:$iteration,
                   ConfinedAttr<I64Attr, [IntPositive]>:$expect_tx);
  let results = (outs Fat_SharedPointer:$buffer, Fat_SharedPointer:$full);
  let assemblyFormat = [{
    $ring `[` $iteration `]` `expect_tx` $expect_tx attr-dict `:` type($ring)
  }];
  let hasVerifier = 1;
  let builders = [OpBuilder<(ins "::mlir::Value":$ring,
                                 "::mlir::Value":$iteration,
                                 "int64_t":$expectTx)>];
}

def Fat_RingWaitOp : Fat_RingOp<"wait",
    [MemoryEffects<[MemRead, MemWrite]>, AttrSizedOperandSegments]> {
  let summary = "a consumer waits until the buffer of an iteration is full";
  let description = [{
    Waits for phase ⌊i / stages⌋ of full[i mod stages]: the producer's
    copies of iteration `i` have landed, and the stage's buffer
    (`fat.ring_buffer`) may be read.

    With `if (%c) else %other[%j]` it waits for the first buffer where %c
    holds and for `%other`'s buffer j (of another ring) where it does not,
    without a branch: one wait on the selected barrier and parity. Tile
    overlap waits for the pending tile's V block this way, or — when no
    tile is pending — for the K block it has just waited for (a completed
    phase: no wait).

    ```mlir
    fat.ring_wait %k[%i] : !fat.ring<...>
    fat.ring_wait %v[%p] if(%pending) else %k[%i] : !fat.ring<...>, !fat.ring<...>
    ```
  }];
  let arguments = (ins Fat_RingType:$ring, I32:$iteration, Optional<I1>:$cond,
                   Optional<Fat_RingType>:$other_ring,
                   Optional<I32>:$other_iteration);
  let assemblyFormat = [{
    $ring `[` $iteration `]`
    (`if` `(` $cond^ `)` `else` $other_ring `[` $other_iteration `]`)?
    attr-dict `:` type($ring) (`,` type($other_ring)^)?
  }];
  let hasVerifier = 1;
  let builders = [OpBuilder<(ins "::mlir::Value":$ring,
                                 "::mlir::Value":$iteration), [{
    build($_builder, $_state, ring, iteration, ::mlir::Value(),
          ::mlir::Value(), ::mlir::Value());
  }]>];
}

def Fat_RingReleaseOp : Fat_RingOp<"release",
    [MemoryEffects<[MemRead, MemWrite]>, AttrSizedOperandSegments]> {
  let summary = "a consumer thread is done with the buffer of an iteration";
  let description = [{
    Arrives on empty[i mod stages]: once all `releases` consumer threads
    have, the producer may overwrite the stage (its `fat.ring_acquire` of
    iteration i + stages returns). Every consumer thread runs it once per
    iteration, after its last read of the buffer (for a wgmma read, after
    the `fat.wgmma_wait` that retires it).

    With `if (%c) else %other[%j]` it releases the first buffer where %c
    holds and `%other`'s buffer j where it does not, without a branch (the
    epilogue that staged O in the last V stage, or in Q for a tile without
    key blocks, gives that buffer back).

    ```mlir
    fat.ring_release %k[%i] : !fat.ring<...>
    fat.ring_release %v[%last] if(%has_keys) else %q[%t]
        : !fat.ring<...>, !fat.ring<...>
    ```
  }];
  let arguments = (ins Fat_RingType:$ring, I32:$iteration, Optional<I1>:$cond,
                   Optional<Fat_RingType>:$other_ring,
                   Optional<I32>:$other_iteration);
  let assemblyFormat = [{
    $ring `[` $iteration `]`
    (`if` `(` $cond^ `)` `else` $other_ring `[` $other_iteration `]`)?
    attr-dict `:` type($ring) (`,` type($other_ring)^)?
  }];
  let hasVerifier = 1;
  let builders = [OpBuilder<(ins "::mlir::Value":$ring,
                                 "::mlir::Value":$iteration), [{
    build($_builder, $_state, ring, iteration, ::mlir::Value(),
          ::mlir::Value(), ::mlir::Value());
  }]>];
}

def Fat_RingClaimOp : Fat_RingOp<"claim",
    [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "a writer warp takes the ring's buffer of an iteration";
  let description = [{
    The producer side of a ring that threads fill (no TMA): waits until the
    consumers released the stage of iteration `i` (the previous phase of
    empty[s], as `fat.ring_acquire` does) and returns the stage's buffer.
    The writers then store into it and `fat.ring_commit` announces it.

    ```mlir
    %buf = fat.ring_claim %band[%i] : !fat.ring<...>
    ```
  }];
  let arguments = (ins Fat_RingType:$ring, I32:$iteration);
  let results = (outs Fat_SharedPointer:$buffer);
  let assemblyFormat = "$ring `[` $iteration `]` attr-dict `:` type($ring)";
}

def Fat_RingCommitOp : Fat_RingOp<"commit",
    [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "a writer warp announces the buffer of an iteration";
  let description = [{
    Every lane of the warp that wrote the stage of iteration `i` runs it:
    the warp synchronizes (`bar.warp.sync`, which orders its lanes' stores
    before lane 0's next operation) and lane 0 arrives on full[s], the one
    arrival the barrier expects (an arrive has release semantics, so the
    consumers that wait for the phase see every lane's stores).
    `one_thread`: a single thread wrote the stage and runs it alone; it
    arrives itself, without the warp's synchronization (the producer
    thread publishing a tile, `fat.tile_loop`'s dynamic order).

    ```mlir
    fat.ring_commit %band[%i] : !fat.ring<...>
    fat.ring_commit %units[%t] one_thread : !fat.ring<...>
    ```
  }];
  let arguments = (ins Fat_RingType:$ring, I32:$iteration,
                   UnitAttr:$one_thread);
  let assemblyFormat = [{
    $ring `[` $iteration `]` (`one_thread` $one_thread^)? attr-dict `:`
    type($ring)
  }];
  let builders = [OpBuilder<(ins "::mlir::Value":$ring,
                                 "::mlir::Value":$iteration), [{
    build($_builder, $_state, ring, iteration, ::mlir::UnitAttr());
  }]>];
}

def Fat_BandStageOp : Fat_Op<"band_stage",
    [MemoryEffects<[MemWrite]>, IsolatedFromAbove]> {
  let summary = "one warp writes a key block's relative terms into shared memory";
  let description = [{
    The kernel side of `fat.score_band`: a block of `rows` M rows from
    `q_start` and `keys` N keys from `kv_start` has M + N − 1 distinct terms,
    u_x = T(b, h, q_start + M − 1, kv_start + x) · (1 / c) for x in [0, M +
    N − 1) (T's row and key enter only as j − i = x − (M − 1) + kv_start −
    q_start; 1 / c rounded once). The warp's lanes write x = lane, lane +
    32, …, each term four times, into float arrays of W = M + N elements:

    ```
    A_r[x]     at byte 4·(2rW + x)           (pairs (u_x, u_x+1), x even)
    B_r[x + 1] at byte 4·(2rW + W + x + 1)   (pairs with x odd)
    ```

    for r = 0, 1, so that `fat.band_fragment` reads every pair of adjacent
    keys with one 8-byte load, a fragment's rows r' = 0 and 1 from copies of
    their own (rows i and i + 8 share their terms 8 keys apart: from one
    array the compiler would merge the loads and copy registers instead). A captured tensor is its global address; each of T's reads
    is an invariant load with its indices clamped into the tensor (a padding
    row or key may compute an index outside it). `%lane` is the thread's
    lane; the caller commits the stage (`fat.ring_commit`).

    ```mlir
    fat.band_stage %buf lane(%lane) at(%b, %h, %q0, %k0) scale %c
        captures(%table : !llvm.ptr<1>) {
    ^bb0(%bb: index, %hh: index, %i: index, %j: index, %tab: tensor<16x8191xf32>):
      ...
      fat.yield %t : f32
    } {keys = 128 : i64, rows = 128 : i64}
    ```
  }];
  let arguments = (ins Fat_SharedPointer:$buffer, I32:$lane, Index:$batch,
                   Index:$head, Index:$q_start, Index:$kv_start, F32:$scale,
                   Variadic<AnyType>:$captures,
                   ConfinedAttr<I64Attr, [IntPositive]>:$rows,
                   ConfinedAttr<I64Attr, [IntPositive]>:$keys);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $buffer `lane` `(` $lane `)` `at` `(` $batch `,` $head `,` $q_start `,`
    $kv_start `)` `scale` $scale
    (`captures` `(` $captures^ `:` type($captures) `)`)? $body attr-dict
  }];
  let hasVerifier = 1;
}

def Fat_BandFragmentOp : Fat_Op<"band_fragment", [Pure]> {
  let summary = "a warpgroup's accumulator fragment of a key block's relative terms";
  let description = [{
    Reads the terms `fat.band_stage` wrote (for a block of `rows` M rows
    and `keys` N keys) as the f32 accumulator tile of the warpgroup whose
    first row is row `%row` of the block: element (r, c) is u_x with x = c −
    (%row + r) + M − 1. Register 4i + 2r' + e of thread λ in warp w holds
    row 16w + λ/4 + 8r', key 8i + 2(λ mod 4) + e, so each pair e = 0, 1 is
    u_x, u_x+1 for one x: from A_r'[x] where x is even, B_r'[x + 1] where odd
    (the parity is the thread's: x ≡ %row + 16w + λ/4 + 8r' + 1 mod 2), one
    8-byte shared load each (A_r, B_r: fat.band_stage's arrays).

    ```mlir
    %t = fat.band_fragment %buf row(%r) {keys = 128 : i64, rows = 128 : i64}
        : tensor<64x128xf32, #fat.wgmma_fragment>
    ```
  }];
  let arguments = (ins Fat_SharedPointer:$buffer, I32:$row,
                   ConfinedAttr<I64Attr, [IntPositive]>:$rows,
                   ConfinedAttr<I64Attr, [IntPositive]>:$keys);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $buffer `row` `(` $row `)` attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

def Fat_BiasKeysFillOp : Fat_Op<"bias_keys_fill", [MemoryEffects<[MemWrite]>]> {
  let summary = "writes fat.bias_key_columns' tile into shared memory";
  let description = [{
    The `keys` × 16 tile of `fat.bias_key_columns` (row r: [r, r, r, 256,
    256, 256, 0, …] in `elt`) at `%dst`, in the layout a wgmma reads a
    K-major B without swizzle: 8 × 8 core matrices of 128 bytes (8 rows of
    16 bytes), element (r, c) at byte ((r/8)·2 + c/8)·128 + (r mod 8)·16 +
    2·(c mod 8) — the descriptor's leading offset (between the two core
    matrices along K) 128, its stride offset (between 8-row groups) 256.
    The CTA's `threads` threads write the 16-byte pieces p = t, t +
    threads, … (piece p: row 8⌊p/16⌋ + p mod 8, columns 8·(⌊p/8⌋ mod 2)
    + 0..7), then each fences its writes for the async proxy
    (`fence.proxy.async`) through which wgmma reads. The tile is the same
    for every key block: the kernel fills it once. `%thread` is the
    thread's index in the CTA.

    ```mlir
    fat.bias_keys_fill %p thread(%tid) {elt = bf16, keys = 128 : i64,
                                        threads = 384 : i64}
    ```
  }];
  let arguments = (ins Fat_SharedPointer:$dst, I32:$thread,
                   ConfinedAttr<I64Attr, [IntPositive]>:$keys,
                   ConfinedAttr<I64Attr, [IntPositive]>:$threads,
                   TypeAttr:$elt);
  let assemblyFormat = "$dst `thread` `(` $thread `)` attr-dict";
  let hasVerifier = 1;
}

def Fat_RingBufferOp : Fat_RingOp<"buffer", [Pure]> {
  let summary = "the address of the ring's buffer of an iteration";
  let description = [{
    base + buffer_offset + (i mod stages) · buffer_bytes, in shared memory.

    ```mlir
    %v = fat.ring_buffer %vring[%i] : !fat.ring<...>
    ```
  }];
  let arguments = (ins Fat_RingType:$ring, I32:$iteration);
  let results = (outs Fat_SharedPointer:$buffer);
  let assemblyFormat = "$ring `[` $iteration `]` attr-dict `:` type($ring)";
  let builders = [OpBuilder<(ins "::mlir::Value":$ring,
                                 "::mlir::Value":$iteration)>];
}

def Fat_RingFillOp : Fat_RingOp<"fill", [MemoryEffects<[MemWrite]>]> {
  let summary = "writes a constant into the same bytes of every stage buffer";
  let description = [{
    Bytes [offset, offset + bytes) of each of the ring's stage buffers get
    the 32-bit `value` repeated: the CTA's `threads` threads, thread t the
    16-byte pieces t, t + threads, t + 2·threads, … of the stages' pieces
    in order (stage ⌊p / (bytes/16)⌋, byte offset + 16·(p mod bytes/16)),
    then each fences its writes for the async proxy (`fence.proxy.async`),
    through which TMA and wgmma read shared memory. `%thread` is the
    thread's index in the CTA. The kernel's use: under `rowsum = mma` the
    V stages carry, after V's own columns, a chunk of ones (bf16 0x3F80
    pairs, f16 0x3C00), the B operand's extra columns that make the P·V
    wgmma sum P's rows; TMA never writes them, so they are filled once.

    ```mlir
    fat.ring_fill %v thread(%tid)
        {bytes = 16384 : i64, offset = 32768 : i64, threads = 384 : i64,
         value = 1065369472 : i32} : !fat.ring<...>
    ```
  }];
  let arguments = (ins Fat_RingType:$ring, I32:$thread, I64Attr:$offset,
                   I64Attr:$bytes, I64Attr:$threads, I32Attr:$value);
  let assemblyFormat = [{
    $ring `thread` `(` $thread `)` attr-dict `:` type($ring)
  }];
  let hasVerifier = 1;
}

def Fat_OperandFenceOp : Fat_Op<"operand_fence",
    [MemoryEffects<[MemRead, MemWrite]>,
     DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "pins values to this point of the program";
  let description = [{
    Returns its operands unchanged (each result is the operand of the same
    position), but as values defined here: no use of a result, and no
    arithmetic on it, moves above this op, and LLVM cannot merge the
    registers before and after it. The kernel uses it where a value's
    registers must not be coalesced or rematerialized across a point: the
    loop-carried O and P between the two copies of the steady loop (joined
    with copies, ptxas would count them as redefining wgmma operands in a
    pipeline stage and serialize every wgmma, C7513), and the thread
    indices the epilogue's addresses derive from (hoisted to the kernel's
    top, they would stay live through the main loop and spill at D = 256).
    (`fat.wgmma_wait` does the same for the registers a wait makes valid.)
    A `#fat.wgmma_fragment` tile stands for all its registers.

    Lowers to one empty volatile `llvm.inline_asm` per register with a tied
    operand (`=f,0` for f32, `=r,0` for i32): no instruction is emitted.

    ```mlir
    %o0, %p0 = fat.operand_fence %o, %p
        : tensor<64x128xf32, #fat.wgmma_fragment>, i32
    ```
  }];
  let arguments = (ins Variadic<AnyTypeOf<[F32, I32, Fat_FragmentTile]>>:$inputs);
  let results = (outs Variadic<AnyTypeOf<[F32, I32, Fat_FragmentTile]>>:$results);
  let assemblyFormat = [{
    $inputs attr-dict `:` type($inputs)
  }];
  let hasVerifier = 1;
}

def Fat_WgmmaWaitOp : Fat_Op<"wgmma_wait",
    [MemoryEffects<[MemRead, MemWrite]>,
     DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "waits for wgmma groups; returns the registers they wrote";
  let description = [{
    `wgmma.wait_group N`: every committed wgmma group but the `pending`
    most recent ones is complete. The operands are the registers the
    retired groups wrote (their accumulators) and any the caller must keep
    live up to here (an A operand a retired group read); the results are
    the same values, defined after the wait. This is the pipelined form's
    async token: an accumulator is read only through the wait that retires
    its group, so no use of it — and no arithmetic on it — can move above
    the wait (LLVM sees the wgmma's results as ordinary SSA values).

    With `pending(1)` in the overlapped loop, S_j = Q·K_jᵀ (issued first)
    is complete while O += P_{j−1}·V_{j−1} still runs:

    ```mlir
    %s = fat.wgmma_wait pending(1) (%s0)
        : tensor<64x128xf32, #fat.wgmma_fragment>
    ```

    Lowers to `nvvm.wgmma.wait.group.sync.aligned N` and one empty
    volatile `llvm.inline_asm` with a tied operand per register (as
    `fat.operand_fence`).
  }];
  let arguments = (ins ConfinedAttr<I32Attr, [IntNonNegative]>:$pending,
                   Variadic<AnyTypeOf<[F32, I32, Fat_FragmentTile]>>:$inputs);
  let results = (outs Variadic<AnyTypeOf<[F32, I32, Fat_FragmentTile]>>:$results);
  let assemblyFormat = [{
    `pending` `(` $pending `)` `(` $inputs `)` attr-dict
    (`:` type($inputs)^)?
  }];
}

def Fat_WgmmaAsyncOp : Fat_Op<"wgmma_async",
    [MemoryEffects<[MemRead, MemWrite]>, AttrSizedOperandSegments]> {
  let summary = "one warpgroup GEMM issued as one wgmma commit group";
  let description = [{
    `fat.wgmma` (`shape = [64, N, 16]`, K = `k`) as the pipelined kernel
    issues it: one warpgroup computes

    ```
    D = scale_d · C + A · B          (D, C: 64 × N f32, A: 64 × K, B: K × N)
    ```

    with C = `acc` (0 without it) and D the result, both
    `#fat.wgmma_fragment` tiles (thread t holds rows 16·(t/32) + (t%32)/4
    + 8r, columns 8i + 2·(t%4) + e in its register 4i + 2r + e). With
    `scale_d(%x)` the accumulator is ignored where %x = 0 at run time
    (tile overlap starts a tile's O on its first P·V that way).

    Operands in shared memory are given by their address (i64, in the
    shared window) and the layout TMA wrote them in: 128-byte-swizzled
    boxes of 64 16-bit columns, one 128-byte row per matrix row, the boxes
    `box_stride` bytes apart (1024-byte aligned: the swizzle's atom, so the
    descriptors' base offset is 0). A comes from shared memory (`a_smem`;
    B then stored N × K and read as Bᵀ, `transpose_b`, i.e. K-major: S =
    Q·Kᵀ, K stored [key][d]) or from registers (`a_regs(%p)`: the 16-bit
    fragment tile of K columns — the fragment layout of a 16-bit tile is
    the instruction's A layout, so P rounded in place feeds it; B then
    stored K × N, MN-major: O += P·V, V stored [key][d]). `transpose_b`
    means what it means on `fat.wgmma` (the math's Bᵀ), so the tensorized
    op's attributes carry over unchanged; PTX's imm-trans-b is its
    negation.

    The op lowers to `wgmma.fence`, K/16 `wgmma.mma_async` m64nNk16 steps
    and `wgmma.commit_group`. Step s reads A's columns [16s, 16s + 16):
    from a K-major operand at byte (s / 4)·box_stride + 32·(s mod 4) of its
    first row (the swizzle is applied by the hardware on the final
    address), from an MN-major B at byte 2048·s (16 rows), from registers
    as the tile's i32 registers 4s .. 4s + 3. The descriptors are derived
    here: stride between 8-row groups 1024 bytes; for an MN-major B, the
    leading stride (between 64-column boxes of N) is its box stride.

    With `bias(%x, %r)` (fat-tensorize's `linear-bias=mma`) the group
    ends with one more k16 step, D += X·R: X the 64 × 16 tile
    `fat.bias_query_columns` computed in registers (the A fragment, as
    a_regs), R = `fat.bias_key_columns`' N × 16 tile at shared-memory
    address %r, K-major without swizzle (the layout `fat.bias_keys_fill`
    writes: 8 × 8 core matrices of 128 bytes, the two along K 128 bytes
    apart, 8-row groups 256). Q·Kᵀ then carries the linear bias.

    The group is asynchronous: read the result only through the
    `fat.wgmma_wait` that retires it (two groups may be in flight: the
    overlapped loop issues S_j and O += P_{j−1}·V_{j−1} back to back).

    Why not `nvgpu.warpgroup.mma` / `nvvm.wgmma.mma_async`: both take A
    from shared memory only (P·V needs A in registers, to keep P out of
    shared memory), fix scale-d at compile time, and nvgpu's op waits for
    its own group (the overlapped loop keeps two groups in flight); and
    `nvgpu.warpgroup.generate.descriptor` steps a K-major B by 2048 bytes
    per k16 where 32 are needed. Each step is the PTX instruction in
    `llvm.inline_asm`, its accumulator registers tied to the result's.

    ```mlir
    %s = fat.wgmma_async a_smem(%qa box_stride 16384)
        b(%ka box_stride 16384) transpose_b k 128 shape [64, 128, 16] bf16
        -> tensor<64x128xf32, #fat.wgmma_fragment>
    %o = fat.wgmma_async a_regs(%p : tensor<64x128xbf16, #fat.wgmma_fragment>)
        b(%va box_stride 16384) acc(%o0 : tensor<64x128xf32, #fat.wgmma_fragment>)
        k 128 shape [64, 128, 16] bf16
        -> tensor<64x128xf32, #fat.wgmma_fragment>
    ```
  }];
  let arguments = (ins Optional<I64>:$a_addr,
                   OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$a_box_stride,
                   Optional<Fat_FragmentTile>:$a_regs, I64:$b_addr,
                   ConfinedAttr<I64Attr, [IntPositive]>:$b_box_stride,
                   Optional<Fat_FragmentTile>:$bias_a, Optional<I64>:$bias_b,
                   Optional<Fat_FragmentTile>:$acc,
                   Optional<I32>:$scale_d, UnitAttr:$transpose_b,
                   ConfinedAttr<I64Attr, [IntPositive]>:$k,
                   DenseI64ArrayAttr:$shape, TypeAttr:$elt);
  let results = (outs Fat_FragmentTile:$result);
  let assemblyFormat = [{
    (`a_smem` `(` $a_addr^ `box_stride` $a_box_stride `)`)?
    (`a_regs` `(` $a_regs^ `:` type($a_regs) `)`)?
    `b` `(` $b_addr `box_stride` $b_box_stride `)`
    (`bias` `(` $bias_a^ `:` type($bias_a) `,` $bias_b `)`)?
    (`acc` `(` $acc^ `:` type($acc) `)`)?
    (`scale_d` `(` $scale_d^ `)`)? (`transpose_b` $transpose_b^)?
    `k` $k `shape` $shape $elt attr-dict `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Bytes of one swizzle atom: 8 rows of 128 bytes.
    static constexpr int64_t kSwizzleAtomBytes = 1024;
    /// Bytes a descriptor's 14-bit address (>> 4) and strides reach.
    static constexpr int64_t kDescriptorWindowBytes = int64_t(1) << 18;
  }];
}

def Fat_ConvertLayoutOp : Fat_Op<"convert_layout", [Pure]> {
  let summary = "a row vector's quad shares summed into the plain layout";
  let description = [{
    The same row vector in another distribution: from
    `#fat.wgmma_fragment<partial>` (each row's value is the sum of the
    registers its quad of four threads holds) to `#fat.wgmma_fragment`
    (every thread of the quad holds the value):

    ```
    x_i = Σ_{λ mod 4} share_i(λ)      two butterfly shuffles (xor 1, 2)
    ```

    The online softmax keeps its vector row sum l partial through the KV
    loop (`fat.softmax_exp` adds each thread's own probabilities) and
    converts it once, where `fat.finalize` needs the full l. As Triton's
    `convert_layout`, it is the only op that changes a fragment's
    distribution; on a tile (the CPU's view) it is the identity.

    ```mlir
    %l = fat.convert_layout %lp
        : tensor<64xf32, #fat.wgmma_fragment<partial>>
          -> tensor<64xf32, #fat.wgmma_fragment>
    ```
  }];
  let arguments = (ins Fat_FragmentTile:$input);
  let results = (outs Fat_FragmentTile:$result);
  let assemblyFormat = [{
    $input attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Fat_ScheduleFenceOp : Fat_Op<"schedule_fence",
    [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "a basic-block boundary ptxas keeps";
  let description = [{
    ptxas schedules within basic blocks and lifts a `wgmma.wait_group` as
    far up its block as the block's instructions allow — above a softmax
    that does not touch the registers in flight, which then no longer
    overlaps the P·V (docs/perf-log.md, run 54). This op ends the block:
    placed right before the wait, it keeps what precedes it on the near
    side (the late P·V wait).

    Lowers to a uniform branch over a `membar.cta`, taken unless `%never`
    is 2^32 − 1: `%never` must be warp-uniform and not provably 2^32 − 1 (a
    sequence length, < 2^31 by the kernel ABI), so the skipped path never
    runs and is not folded away. A `trap` there instead would be a
    divergent exit (ptxas then serializes the wgmmas, C7518).

    ```mlir
    fat.schedule_fence %seq_kv : i32
    nvvm.wgmma.wait.group.sync.aligned 0
    ```
  }];
  let arguments = (ins I32:$never);
  let assemblyFormat = [{ $never attr-dict `:` type($never) }];
}

// Ping-pong: the consumer warpgroups issue their GEMMs in turns.
class Fat_TurnOp<string mnemonic, string summaryText, string text>
    : Fat_Op<mnemonic, [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = summaryText;
  let description = text # [{

    The game: the n = `consumers` consumer warpgroups (2 or 3) take turns
    0, 1, …, n − 1, 0, … to issue their GEMMs, so the tensor cores work
    for one while the others run their softmax. Consumer c's turn is named
    barrier 1 + c (ids 1 … 3; 0 is the CTA barrier, 4 the epilogue's), a
    phase of 256 threads: c's 128 threads wait on it (`bar.sync`) and the
    previous consumer's 128 complete it (`bar.arrive`) when they have
    issued. `fat.turns_open` lets consumer 0 go first, `fat.turn_begin` /
    `fat.turn_end` bracket each issue phase, `fat.turns_close` takes the
    last hand-over, so every barrier phase completes exactly. `%consumer`
    is the warpgroup's consumer index c, warp-uniform.

    ```mlir
    fat.turns_open %c of 2
    scf.for ... {
      fat.turn_begin %c of 2
      %s = fat.wgmma_async ...
      fat.turn_end %c of 2
      ...
    }
    fat.turn_begin %c of 2
    %o = fat.wgmma_async ...
    fat.turn_end %c of 2 last
    ```
  }];
  let arguments = (ins I32:$consumer, I64Attr:$consumers);
  let assemblyFormat = "$consumer `of` $consumers attr-dict";
  let hasVerifier = 1;
}

def Fat_TurnsOpenOp : Fat_TurnOp<"turns_open", "opens the consumers' game",
    [{
    The last consumer, n − 1, hands the first turn to consumer 0: it
    arrives on barrier 1 (`bar.arrive 1, 256`, on consumer n − 1 only).
  }]> {
}

def Fat_TurnBeginOp : Fat_TurnOp<"turn_begin",
    "waits for the consumer's turn to issue its GEMMs", [{
    Consumer c waits until the previous consumer handed it the turn
    (`bar.sync 1 + c, 256`).
  }]> {
}

def Fat_TurnEndOp : Fat_TurnOp<"turn_end",
    "hands the turn to the next consumer", [{
    Consumer c, done issuing, hands the turn to c' = (c + 1) mod n
    (`bar.arrive 1 + c', 256`; 2 − c for n = 2). With `last` (the game's
    last turn of each consumer) consumer n − 1 hands nothing over: its
    extra arrive of `fat.turns_open` stands for it.
  }]> {
  let arguments = (ins I32:$consumer, I64Attr:$consumers, UnitAttr:$last);
  let assemblyFormat = "$consumer `of` $consumers (`last` $last^)? attr-dict";
}

def Fat_TurnsCloseOp : Fat_TurnOp<"turns_close", "closes the consumers' game",
    [{
    Consumer 0 takes the last hand-over (`bar.sync 1, 256`, on consumer 0
    only): after it every phase of every turn barrier has completed.
  }]> {
}

def Fat_TileLoopOp : Fat_Op<"tile_loop", [RecursiveMemoryEffects,
    AttrSizedOperandSegments, DeclareOpInterfaceMethods<OpAsmOpInterface,
                              ["getAsmBlockArgumentNames", "getAsmResultNames"]>]> {
  let summary = "a persistent CTA's loop over its tiles";
  let description = [{
    Runs the body once for each tile this CTA owns, in the order below, and
    carries `iter_args` from tile to tile. With nM = `query_blocks`
    (⌈Sq / block-m⌉), Hq = `heads`, B = `batch` and G = `ctas` (the most CTAs
    the kernel launches: the SMs), the work units are u ∈ [0, U),
    head-major, u = (b·Hq + h)·P + p, and CTA c takes u = c, c + G, c + 2G, …
    (`ctaid.x` = c; min(U, G) CTAs are launched, so the step G is a
    constant):
    - without `pairs`: P = nM, unit p is query block m = p;
    - `pairs` (causal): P = ⌈nM / 2⌉, unit p is the query blocks p and
      nM − 1 − p (one block when they coincide), run one after the other.
      Under a causal mask a query block's keys grow linearly with m, so
      every pair costs the same (nM + 1 blocks when Sq = Skv, M = N) and the
      static round robin is balanced within one unit.
    Head-major units keep the CTAs running together on few heads, which
    share their K/V blocks in L2.

    **Dynamic order** (`units`): CTA c's first unit is c, and every later
    one is taken from a counter in global memory, u = G' + atomicAdd(n, 1)
    with G' = min(U, G) the CTAs launched, so a CTA that finishes early
    takes the next unit instead of a fixed one (tiles of data-dependent
    cost — a document mask's — balance as the hardware's own CTA
    scheduler would balance them, and each CTA still loads the next tile's
    Q under the current one). One role takes the units (`fetch(%n)`: the
    producer thread) and publishes each in the `units` ring, a 4-byte
    stage per tile: it claims stage t, stores u, commits it (`one_thread`);
    the other roles follow (no `fetch`): they wait for stage t, read u and
    release it. A unit u ≥ U is published once at the end, and every role
    leaves its loop on it. U fetches are made in all (each CTA's last one
    fails); the one that returns U − 1 is the last of the launch and sets
    the counter back to 0, so the launcher zeroes it once and gives each
    stream its own. The units run in the order of the one-CTA-per-tile
    grid: head-major (u = (b·Hq + h)·nM + m), or with `longest_first` the
    causal grid's order, heads fastest and the query blocks from the last
    (u = (b·nM + y)·Hq + h, m = nM − 1 − y), so the longest tiles start
    first and the short ones fill the end. `pairs` has no dynamic form.

    The body's arguments are the tile's query block m, head h and batch
    entry b, then the ring position (the K/V ring blocks the CTA's earlier
    tiles took) and the tile's index among the CTA's tiles (the Q ring's
    iteration), then the carried values. `fat.tile_yield blocks(%n)` ends it
    with the ring blocks this tile took and the carried values for the next
    tile. The results are the final ring position, the tile count and the
    carried values.

    `--convert-fat-to-nvvm` expands it to integer arithmetic around an
    `scf.for` (an `scf.while` over pair positions w = 2u + k with `pairs`,
    whose successor is computed before the body so that only it, the ring
    position and the tile index live across it), tagged `fat.tiles`.

    ```mlir
    %pos, %n, %o = fat.tile_loop pairs query_blocks(%nm) heads 16 batch(%b)
        ctas 132 iter_args(%o0 : tensor<64x128xf32, #fat.wgmma_fragment>) {
    ^bb0(%m_block: i32, %head: i32, %batch: i32, %ring_base: i32,
         %tile_index: i32, %o: tensor<64x128xf32, #fat.wgmma_fragment>):
      ...
      fat.tile_yield blocks(%blocks) %o1 : tensor<64x128xf32, #fat.wgmma_fragment>
    } -> tensor<64x128xf32, #fat.wgmma_fragment>

    // The producer thread of a dynamic order, and the consumers that follow.
    %pos, %n = fat.tile_loop longest_first query_blocks(%nm) heads 16
        batch(%b) ctas 132 units(%units : !fat.ring<...>)
        fetch(%counter : !llvm.ptr<1>) { ... }
    %pos, %n = fat.tile_loop longest_first query_blocks(%nm) heads 16
        batch(%b) ctas 132 units(%units : !fat.ring<...>) { ... }
    ```
  }];
  let arguments = (ins I32:$query_blocks, I32:$batch,
                   Optional<Fat_RingType>:$units,
                   Optional<Fat_LLVMPointer>:$counter,
                   Variadic<AnyType>:$inits, I64Attr:$heads, I64Attr:$ctas,
                   UnitAttr:$pairs, UnitAttr:$longest_first);
  let results = (outs I32:$ring_position, I32:$tiles,
                      Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    (`pairs` $pairs^)? (`longest_first` $longest_first^)?
    `query_blocks` `(` $query_blocks `)` `heads` $heads
    `batch` `(` $batch `)` `ctas` $ctas
    (`units` `(` $units^ `:` type($units) `)`)?
    (`fetch` `(` $counter^ `:` type($counter) `)`)?
    (`iter_args` `(` $inits^ `:` type($inits) `)`)? $body
    (`->` type($results)^)? attr-dict
  }];
  let hasVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [
    OpBuilder<(ins "::mlir::Value":$queryBlocks, "::mlir::Value":$batch,
                   "::mlir::ValueRange":$inits, "int64_t":$heads,
                   "int64_t":$ctas, "bool":$pairs,
                   CArg<"bool", "false">:$longestFirst,
                   CArg<"::mlir::Value", "{}">:$units,
                   CArg<"::mlir::Value", "{}">:$counter)>
  ];
  let extraClassDeclaration = [{
    /// The body's tile coordinates, ring position and tile index, and its
    /// carried values.
    static constexpr unsigned kTileArgs = 5;
    ::mlir::Block &getBodyBlock() { return getBody().front(); }
    ::mlir::ValueRange getCarried() {
      return getBodyBlock().getArguments().drop_front(kTileArgs);
    }
  }];
}

def Fat_TileYieldOp : Fat_Op<"tile_yield",
    [Pure, Terminator, HasParent<"TileLoopOp">]> {
  let summary = "the end of a tile: its ring blocks and the carried values";
  let description = [{
    Ends `fat.tile_loop`'s body with the K/V ring blocks the tile took (the
    next tile's ring position grows by them) and the values carried to the
    next tile.

    ```mlir
    fat.tile_yield blocks(%n) %o : tensor<64x128xf32, #fat.wgmma_fragment>
    ```
  }];
  let arguments = (ins I32:$blocks, Variadic<AnyType>:$carried);
  let assemblyFormat = [{
    `blocks` `(` $blocks `)` ($carried^ `:` type($carried))? attr-dict
  }];
}

// The mask's geometry over key blocks: which blocks a tile's rows see and
// which need fat.mask. A row i sees key k when
//   k < Skv,   k ≤ i + δ + right (causal: right = 0),   k ≥ i + δ − left
// (δ = `diag`, the key aligned with row 0); an op without `right` / `left`
// has no such edge, and `edge(%diag)` comes with either. The values are i32
// in the kernel and `index` in the tiled form (`--fat-tile`), one type per
// op; `--convert-fat-to-nvvm` and `--fat-decompose` expand them with the
// same arithmetic (`expandKeyGeometry`).
class Fat_KeyGeometryOp<string mnemonic, list<string> sameType>
    : Fat_Op<mnemonic, [Pure, AllTypesMatch<sameType>,
                        OptionalTypesMatchWith<"the diagonal has the lengths' type",
                                       "kv_len", "diag", "$_self">]>;

def Fat_VisibleKeyBlocksOp : Fat_KeyGeometryOp<"visible_key_blocks",
    ["row_first", "row_last", "kv_len", "first_block", "end_block"]> {
  let summary = "the key blocks any row of a tile can see";
  let description = [{
    For the rows [row_first, row_last] of a tile and key blocks of N =
    `block_n` keys, the blocks [first, end) holding a key some row sees
    (the mask's geometry above):

    ```
    end   = min(⌈Skv / N⌉, ⌈max(row_last + δ + right + 1, 0) / N⌉)
    first = ⌊max(row_first + δ − left, 0) / N⌋
    ```

    (without `right`, end = ⌈Skv / N⌉; without `left`, first = 0). The
    range is empty when end ≤ first: a tile no key is visible to writes O
    = 0 and LSE = −inf. Both roles compute it, so the producer loads the
    blocks the consumers use; blocks outside are never loaded.

    ```mlir
    %first, %end = fat.visible_key_blocks rows(%row0, %row_last)
        kv_len(%skv) edge(%diag) {block_n = 128 : i64, right = 0 : i64} : i32
    ```
  }];
  let arguments = (ins AnySignlessIntegerOrIndex:$row_first,
                   AnySignlessIntegerOrIndex:$row_last,
                   AnySignlessIntegerOrIndex:$kv_len,
                   Optional<AnySignlessIntegerOrIndex>:$diag, I64Attr:$block_n,
                   OptionalAttr<I64Attr>:$left, OptionalAttr<I64Attr>:$right);
  let results = (outs AnySignlessIntegerOrIndex:$first_block,
                      AnySignlessIntegerOrIndex:$end_block);
  let assemblyFormat = [{
    `rows` `(` $row_first `,` $row_last `)` `kv_len` `(` $kv_len `)`
    (`edge` `(` $diag^ `)`)? attr-dict `:` type($kv_len)
  }];
  let hasVerifier = 1;
  // From an attention's mask (causal, window = [left, right], −1: none).
  let builders = [OpBuilder<(ins "::mlir::Value":$rowFirst,
      "::mlir::Value":$rowLast, "::mlir::Value":$kvLen, "::mlir::Value":$diag,
      "int64_t":$blockN, "bool":$causal, "int64_t":$windowLeft,
      "int64_t":$windowRight)>];
}

def Fat_FirstMaskedKeyBlockOp : Fat_KeyGeometryOp<"first_masked_key_block",
    ["row_first", "kv_len", "block"]> {
  let summary = "the first key block from which every block may need the mask";
  let description = [{
    For a tile from row `row_first` and blocks of N = `block_n` keys, the
    block j₀ where the right-hand tests of `fat.key_block_needs_mask` —
    the ragged tail (j + 1)·N > Skv and the causal or right-window edge
    (j + 1)·N − 1 > row_first + δ + right — become true and stay true:

    ```
    j₀ = min(⌊Skv / N⌋, ⌊(row_first + δ + right + 1) / N⌋)   (floor)
    ```

    Blocks below j₀ need no mask, so a consumer loop split at j₀ runs its
    first part without the test (the masked-tail split). Tiles with a left
    window edge, whose masked blocks also lie at the start, are not split:
    the op has no `left`.

    ```mlir
    %j0 = fat.first_masked_key_block row(%row0) kv_len(%skv) edge(%diag)
        {block_n = 128 : i64, right = 0 : i64} : i32
    ```
  }];
  let arguments = (ins AnySignlessIntegerOrIndex:$row_first,
                   AnySignlessIntegerOrIndex:$kv_len,
                   Optional<AnySignlessIntegerOrIndex>:$diag,
                   I64Attr:$block_n, OptionalAttr<I64Attr>:$right);
  let results = (outs AnySignlessIntegerOrIndex:$block);
  let assemblyFormat = [{
    `row` `(` $row_first `)` `kv_len` `(` $kv_len `)`
    (`edge` `(` $diag^ `)`)? attr-dict `:` type($kv_len)
  }];
  let hasVerifier = 1;
  let builders = [OpBuilder<(ins "::mlir::Value":$rowFirst,
      "::mlir::Value":$kvLen, "::mlir::Value":$diag, "int64_t":$blockN,
      "bool":$causal, "int64_t":$windowRight)>];
}

def Fat_KeyBlockNeedsMaskOp : Fat_KeyGeometryOp<"key_block_needs_mask",
    ["block", "row_first", "row_last", "kv_len"]> {
  let summary = "whether a key block needs the mask for some row of a tile";
  let description = [{
    Key block j (keys [j·N, j·N + N), N = `block_n`) needs `fat.mask` for
    some row of [row_first, row_last] when it holds a key past Skv or
    across an edge of the mask's geometry:

    ```
    (j + 1)·N > Skv
      ∨ (j + 1)·N − 1 > row_first + δ + right     (causal / right edge)
      ∨ j·N < row_last + δ − left                 (left edge)
    ```

    Uniform over the tile, so a branch on it is too: only the blocks on
    an edge or the ragged tail pay for the mask.

    ```mlir
    %edge = fat.key_block_needs_mask %j rows(%row0, %row_last)
        kv_len(%skv) edge(%diag) {block_n = 128 : i64, right = 0 : i64} : i32
    ```
  }];
  let arguments = (ins AnySignlessIntegerOrIndex:$block,
                   AnySignlessIntegerOrIndex:$row_first,
                   AnySignlessIntegerOrIndex:$row_last,
                   AnySignlessIntegerOrIndex:$kv_len,
                   Optional<AnySignlessIntegerOrIndex>:$diag, I64Attr:$block_n,
                   OptionalAttr<I64Attr>:$left, OptionalAttr<I64Attr>:$right);
  let results = (outs I1:$needs_mask);
  let assemblyFormat = [{
    $block `rows` `(` $row_first `,` $row_last `)` `kv_len` `(` $kv_len `)`
    (`edge` `(` $diag^ `)`)? attr-dict `:` type($kv_len)
  }];
  let hasVerifier = 1;
  let builders = [OpBuilder<(ins "::mlir::Value":$block,
      "::mlir::Value":$rowFirst, "::mlir::Value":$rowLast,
      "::mlir::Value":$kvLen, "::mlir::Value":$diag, "int64_t":$blockN,
      "bool":$causal, "int64_t":$windowLeft, "int64_t":$windowRight)>];
}

def Fat_KeyBlockRangeOp : Fat_Op<"key_block_range", [Pure]> {
  let summary = "a tile's key blocks narrowed to its query groups' key ranges";
  let description = [{
    Block sparsity in the kernel (fat.attention's `kv_ranges`). `ranges` is
    the address of the row-major i32 table `r` of shape `table` = [B, G, C]
    (C = 2, 4 or 6): key range [r0, r1) per batch entry and 64 query rows. The
    tile's rows [row_first, row_last] span the groups of rows row_first +
    64t (t < block_m / 64, each clamped to row_last); the union of their
    ranges lies in [first, end) with first the least r0 and end the greatest
    r1 over the groups with r1 > r0, so of the key blocks [lo, hi) of N =
    block_n keys the tile needs only

    ```
    lo' = min(max(lo, ⌊max(first, 0) / N⌋), hi)
    hi' = min(hi, ⌈max(end, 0) / N⌉)
    ```

    (a tile whose groups see no key gets hi' ≤ lo': no blocks). Both roles
    compute it, so the producer loads the blocks the consumers compute.
    Batch and group indices are clamped into the table, as every capture
    read.

    ```mlir
    %lo1, %hi1 = fat.key_block_range %lo, %hi rows(%first, %last)
        batch(%b) ranges(%r : !llvm.ptr<1>)
        {block_m = 128, block_n = 160, table = array<i64: 4, 64, 4>}
    ```
  }];
  let arguments = (ins I32:$lo, I32:$hi, I32:$row_first, I32:$row_last,
                   I32:$batch, AnyType:$ranges, I64Attr:$block_m,
                   I64Attr:$block_n, DenseI64ArrayAttr:$table);
  let results = (outs I32:$first_block, I32:$end_block);
  let assemblyFormat = [{
    $lo `,` $hi `rows` `(` $row_first `,` $row_last `)` `batch` `(` $batch `)`
    `ranges` `(` $ranges `:` type($ranges) `)` attr-dict
  }];
  let hasVerifier = 1;
}

def Fat_FullKeyBlockOp : Fat_Op<"full_key_block", [Pure]> {
  let summary = "whether a key block lies in a warpgroup's full key range";
  let description = [{
    With the four-column table `r` of fat.key_block_range and the group
    g = ⌊row / 64⌋ of a warpgroup's 64 rows (row a multiple of 64), key
    block `block` (keys [block·N, block·N + N), N = block_n) is full when

    ```
    block·N ≥ max(r0, r2)  ∧  block·N + N ≤ min(r1', r3)
    ```

    where the table promises the mask region true ([r2, r3)) and the range
    test holds ([r0, r1)): the kernel then skips `fat.mask_mod` on the
    block. With `right` (a causal or right-window edge: key ≤ row + diag +
    right) an end r1 ≥ row + 63 + diag + right + 1 is not a bound (r1' =
    2^31 − 1): keys past the last row's edge are `fat.mask`'s, which hides
    them whatever the region says, so a diagonal block inside a document
    counts as full. Uniform over the warpgroup.

    ```mlir
    %full = fat.full_key_block %j row(%wg_row) batch(%b)
        ranges(%r : !llvm.ptr<1>) edge(%diag)
        {block_n = 160, right = 0 : i64, table = array<i64: 4, 64, 4>}
    ```
  }];
  let arguments = (ins I32:$block, I32:$row, I32:$batch, AnyType:$ranges,
                   Optional<I32>:$diag, I64Attr:$block_n,
                   OptionalAttr<I64Attr>:$right, DenseI64ArrayAttr:$table);
  let results = (outs I1:$full);
  let assemblyFormat = [{
    $block `row` `(` $row `)` `batch` `(` $batch `)`
    `ranges` `(` $ranges `:` type($ranges) `)` (`edge` `(` $diag^ `)`)?
    attr-dict
  }];
  let hasVerifier = 1;
}

def Fat_FullKeyBlocksOp : Fat_Op<"full_key_blocks", [Pure]> {
  let summary = "the key blocks of a warpgroup's full key range";
  let description = [{
    fat.full_key_block's blocks at once: with the same table, group and
    edge, the blocks [first, end) of N = block_n keys that lie inside
    [max(r0, r2), min(r1', r3)):

    ```
    first = ⌈max(r0, r2) / N⌉,   end = max(⌊min(r1', r3) / N⌋, first)
    ```

    so fat.full_key_block holds for block j exactly when first ≤ j < end.
    The consumer's steady loop runs its copy without the mask region on the
    full blocks that follow its first block (per warpgroup: each has its own
    group). Uniform over the warpgroup.

    ```mlir
    %first, %end = fat.full_key_blocks row(%wg_row) batch(%b)
        ranges(%r : !llvm.ptr<1>) edge(%diag)
        {block_n = 128, right = 0 : i64, table = array<i64: 4, 64, 4>}
    ```
  }];
  let arguments = (ins I32:$row, I32:$batch, AnyType:$ranges,
                   Optional<I32>:$diag, I64Attr:$block_n,
                   OptionalAttr<I64Attr>:$right, DenseI64ArrayAttr:$table);
  let results = (outs I32:$first_block, I32:$end_block);
  let assemblyFormat = [{
    `row` `(` $row `)` `batch` `(` $batch `)`
    `ranges` `(` $ranges `:` type($ranges) `)` (`edge` `(` $diag^ `)`)?
    attr-dict
  }];
  let hasVerifier = 1;
}

def Fat_KeyBlockHoleOp : Fat_Op<"key_block_hole", [Pure]> {
  let summary = "the key blocks no row of a tile sees, inside its key range";
  let description = [{
    The six-column table `r` of fat.key_block_range (C = 6) adds per
    batch entry and 64 query rows a hole [r4, r5): keys that no row of the
    group sees (the caller's promise, as the full range is; a sliding
    window with attention sinks has one between the sinks and the window).
    Over the tile's groups (rows row_first + 64t, clamped to row_last; a
    group with r1 ≤ r0 sees nothing and does not narrow the hole), the keys
    no row sees include [max r4, min r5), so the whole key blocks of N =
    block_n keys

    ```
    hole_first = min(max(⌈max r4 / N⌉, lo), hi)
    hole_end   = max(min(⌊min r5 / N⌋, hi), hole_first)
    ```

    are invisible to every row of the tile and the kernel walks
    [lo, hole_first) then [hole_end, hi) (both roles, so the producer
    loads the blocks the consumers compute). An empty hole (r5 ≤ r4 in
    some group) gives hole_end = hole_first. [lo, hi) is the tile's range
    from fat.key_block_range.

    ```mlir
    %h0, %h1 = fat.key_block_hole %lo, %hi rows(%first, %last)
        batch(%b) ranges(%r : !llvm.ptr<1>)
        {block_m = 128, block_n = 128, table = array<i64: 1, 256, 6>}
    ```
  }];
  let arguments = (ins I32:$lo, I32:$hi, I32:$row_first, I32:$row_last,
                   I32:$batch, AnyType:$ranges, I64Attr:$block_m,
                   I64Attr:$block_n, DenseI64ArrayAttr:$table);
  let results = (outs I32:$hole_first, I32:$hole_end);
  let assemblyFormat = [{
    $lo `,` $hi `rows` `(` $row_first `,` $row_last `)` `batch` `(` $batch `)`
    `ranges` `(` $ranges `:` type($ranges) `)` attr-dict
  }];
  let hasVerifier = 1;
}

def Fat_StoreOutputOp : Fat_Op<"store_output", [AttrSizedOperandSegments]> {
  let summary = "stores a warpgroup's output rows and their LSE";
  let description = [{
    The end of a tile: the warpgroup's 64 rows, starting at query row
    `row`, of the 16-bit output tile O (`fat.finalize`'s output) and of
    the f32 row vector LSE, each optional, stored straight from registers:

    ```
    o_ptr[b·sb + h·sh + (row + ρ)·ss + c] = O[ρ, c]   for row + ρ < num_rows
    lse_ptr[b·lb + h·lh + row + ρ]        = LSE[ρ]    for row + ρ < num_rows
    ```

    (element strides `strides(sb, sh, ss)`, `strides(lb, lh)`). Rows at or
    past `num_rows` (the ragged tail of the query block) are not written.
    In the fragment layout (FatAttrs.td) thread t's row 16w + λ/4 + 8r is
    one predicated branch: its O registers 2i + r are one 32-bit store each
    (columns 8i + 2(λ%4), +1), and its LSE register r is stored by the
    quad's first lane (the quad's four lanes hold the same value).
    Unlike `vector.store` or `nvgpu` stores, the op keeps the tile in its
    register layout, so no data moves between threads; `fat.stage_output`
    is the coalesced alternative for O.

    ```mlir
    fat.store_output o %o : tensor<64x128xbf16, #fat.wgmma_fragment>
        to %optr : !llvm.ptr<1> strides(%sb, %sh, %ss)
        lse %lse : tensor<64xf32, #fat.wgmma_fragment>
        to %lptr : !llvm.ptr<1> strides(%lb, %lh)
        rows(%row, %seq_q) batch(%b) head(%h)
    ```
  }];
  let arguments = (ins Optional<Fat_FragmentTile>:$output,
                   Optional<AnyType>:$o_ptr, Variadic<I64>:$o_strides,
                   Optional<Fat_FragmentTile>:$lse,
                   Optional<AnyType>:$lse_ptr, Variadic<I64>:$lse_strides,
                   I32:$row, I32:$num_rows, I32:$batch, I32:$head);
  let assemblyFormat = [{
    (`o` $output^ `:` type($output) `to` $o_ptr `:` type($o_ptr)
     `strides` `(` $o_strides `)`)?
    (`lse` $lse^ `:` type($lse) `to` $lse_ptr `:` type($lse_ptr)
     `strides` `(` $lse_strides `)`)?
    `rows` `(` $row `,` $num_rows `)` `batch` `(` $batch `)`
    `head` `(` $head `)` attr-dict
  }];
  let hasVerifier = 1;
}

def Fat_StageOutputOp : Fat_Op<"stage_output", [AttrSizedOperandSegments]> {
  let summary = "stores a warpgroup's output rows through a ring's buffer";
  let description = [{
    The same rows of O as `fat.store_output` writes (same addressing, rows
    at or past `num_rows` skipped), in 16-byte pieces: each warp w of the
    warpgroup puts its 16 rows into shared memory by `stmatrix` (an 8×8
    matrix per lane octet, exactly the accumulator pairs the lanes hold)
    and reads them back as whole rows, so one warp instruction writes 512
    contiguous bytes of O. It does so in rounds of R = `columns` columns
    through a region of its own of 16 rows × 2R bytes, whose 16-byte chunk
    c of row ρ lies at ρ·2R + 16·(c ⊕ (ρ mod 8)) (the eight rows of an
    stmatrix tile on eight bank groups).

    The regions lie in a buffer that no GEMM reads any more, named as the
    rings name them (`!fat.ring`, above). By default that is the tile's Q
    buffer `%q[%t]`, done with after the tile's last Q·Kᵀ: with consumer
    index k = ⌊tid / 128⌋ − 1 (warpgroup 0 produces), warp w's region
    starts at

    ```
    ⌊w·32R / 8192⌋·q_box_stride + 8192·k + (w·32R mod 8192)
    ```

    bytes into it — warpgroup k's 64 rows of the Q boxes (64 columns, 128
    bytes per row, one box every `q_box_stride` bytes). With `or %v[%j]
    if (%has_keys)` (kernels with one Q buffer) the regions are instead
    packed, at (4k + w)·32R, into the V buffer of iteration j — the one
    the tile's last P·V read — when `has_keys` (else Q as above), after
    the named barrier `barrier = [id, threads]` has seen every consumer
    past its last P·V. A `fence.proxy.async` ends the op: the producer's
    TMA may overwrite the bytes next; giving the buffer back is the
    caller's `fat.ring_release`.

    ```mlir
    fat.stage_output %o : tensor<64x128xbf16, #fat.wgmma_fragment>
        to %optr : !llvm.ptr<1> strides(%sb, %sh, %ss)
        through %q[%t] : !ring
        rows(%row, %seq_q) batch(%b) head(%h)
        {columns = 64 : i64, q_box_stride = 16384 : i64}
    fat.stage_output %o : tensor<64x128xbf16, #fat.wgmma_fragment>
        to %optr : !llvm.ptr<1> strides(%sb, %sh, %ss)
        through %q[%t] : !ring or %v[%j] : !ring2 if (%has_keys)
        rows(%row, %seq_q) batch(%b) head(%h)
        {barrier = array<i64: 8, 256>, columns = 64 : i64,
         q_box_stride = 16384 : i64}
    ```
  }];
  let arguments = (ins Fat_FragmentTile:$output, AnyType:$o_ptr,
                   Variadic<I64>:$o_strides, Fat_RingType:$q_ring,
                   I32:$q_iteration, Optional<Fat_RingType>:$v_ring,
                   Optional<I32>:$v_iteration, Optional<I1>:$has_keys,
                   I32:$row, I32:$num_rows, I32:$batch, I32:$head,
                   I64Attr:$columns, I64Attr:$q_box_stride,
                   OptionalAttr<DenseI64ArrayAttr>:$barrier);
  let assemblyFormat = [{
    $output `:` type($output) `to` $o_ptr `:` type($o_ptr)
    `strides` `(` $o_strides `)`
    `through` $q_ring `[` $q_iteration `]` `:` type($q_ring)
    (`or` $v_ring^ `[` $v_iteration `]` `:` type($v_ring)
     `if` `(` $has_keys `)`)?
    `rows` `(` $row `,` $num_rows `)` `batch` `(` $batch `)`
    `head` `(` $head `)` attr-dict
  }];
  let hasVerifier = 1;
}

#endif // FAT_DIALECT_FAT_IR_FATKERNELOPS_TD
