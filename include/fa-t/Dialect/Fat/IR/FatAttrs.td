//===- FatAttrs.td - fat attributes (layout encodings) -----*- tablegen -*-===//
//
// The layout encodings of the pipelined kernel's tiles: a tensor of a
// warpgroup's registers, named by its shape, whose distribution over the 128
// threads the encoding fixes. Ops keep their tile semantics (the tensorized
// level's, runnable on the CPU); only `--convert-fat-to-nvvm` distributes a
// tile to per-thread registers, one pattern per op.
//
//===----------------------------------------------------------------------===//

#ifndef FAT_DIALECT_FAT_IR_FATATTRS_TD
#define FAT_DIALECT_FAT_IR_FATATTRS_TD

include "fa-t/Dialect/Fat/IR/FatDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/TensorEncoding.td"

def Fat_WgmmaFragmentAttr : AttrDef<Fat_Dialect, "WgmmaFragment",
    [DeclareAttrInterfaceMethods<VerifiableTensorEncoding>]> {
  let mnemonic = "wgmma_fragment";
  let summary = "the m64nNk16 accumulator layout of one warpgroup's tile";
  let description = [{
    The encoding of a `tensor<64xNxT>` (a warpgroup's tile) or a
    `tensor<64xT>` (its row vector) held in registers as Hopper's
    `wgmma.mma_async` m64nNk16 accumulator lays it out. Thread t of the
    warpgroup (warp w = t/32, lane λ = t%32) holds

    ```
    rows     16w + λ/4 + 8r                          r ∈ {0, 1}
    columns  8i + 2(λ%4) + e                         i < N/8, e ∈ {0, 1}
    register 4i + 2r + e    of an f32 tile           (N/2 registers)
    register 2i + r         of a 16-bit tile, as the i32 pair of
                            elements e = 0 (low half) and e = 1 (N/4)
    register r              of a row vector           (2 registers)
    ```

    Every thread holds N/4 elements of each of its two rows, so a row
    reduction is a thread's own sum or max followed by two shuffles across
    the quad (lanes 4⌊λ/4⌋ .. +3). The 16-bit form is at the same time the
    A-operand layout of a register-A wgmma (k-step kk reads registers
    4kk .. 4kk+3): rounding an f32 accumulator tile to a 16-bit one moves no
    data between threads, which is why P can feed O += P·V from registers.

    `partial` (row vectors only) holds a row's value split over its quad:
    the row's value is the sum of the quad's four registers r. The vector
    row sum l of the online softmax is kept that way through the KV loop
    (l' = fma(l, α, Σ_thread p) is linear in l, so each thread updates its
    share) and reduced once at the end: `fat.convert_layout` to the plain
    encoding is two shuffles.

    ```mlir
    %s = builtin.unrealized_conversion_cast %r0, ... to
        tensor<64x128xf32, #fat.wgmma_fragment>
    %m1, %a = fat.softmax_max %s, %m scale %c
        : tensor<64x128xf32, #fat.wgmma_fragment>,
          tensor<64xf32, #fat.wgmma_fragment>
    ```
  }];
  let parameters = (ins DefaultValuedParameter<"bool", "false">:$partial);
  let hasCustomAssemblyFormat = 1;
  let builders = [AttrBuilder<(ins), [{ return $_get($_ctxt, false); }]>];
  let extraClassDeclaration = [{
    /// Registers of one thread holding `type` (a 64-row tile or row vector
    /// with this encoding): N/2 f32, N/4 i32 (16-bit pairs), or 2 f32.
    static int64_t getRegisterCount(::mlir::RankedTensorType type);
    /// The type of each of those registers: f32, or i32 holding a pair of
    /// 16-bit elements (the register-A operand's form).
    static ::mlir::Type getRegisterType(::mlir::RankedTensorType type);
    /// Whether `type` is a tile or row vector with this encoding.
    static bool isFragment(::mlir::Type type);
    /// Whether `type` is a row vector with the `partial` encoding.
    static bool isPartial(::mlir::Type type);
    /// `type` (a fragment row vector) with the `partial` flag set to
    /// `partial`.
    static ::mlir::RankedTensorType withPartial(::mlir::RankedTensorType type,
                                                bool partial);
  }];
}

#endif // FAT_DIALECT_FAT_IR_FATATTRS_TD
