//===- FatDialect.td - the fat dialect ---------------------*- tablegen -*-===//
//
// The `fat` dialect: fused attention and the tile-level primitives of its
// online-softmax decomposition.
//
//===----------------------------------------------------------------------===//

#ifndef FAT_DIALECT_FAT_IR_FATDIALECT_TD
#define FAT_DIALECT_FAT_IR_FATDIALECT_TD

include "mlir/IR/OpBase.td"

def Fat_Dialect : Dialect {
  let name = "fat";
  let cppNamespace = "::mlir::fat";
  let summary = "Fused attention, lowered step by step to tensorized Hopper kernels";
  let description = [{
    The `fat` dialect holds `fat.attention`, the whole scaled-dot-product
    attention operation, and the small tile-level operations that its tiled
    form is written in (scores, mask, row max, exp2, row sum, rescale, P·V,
    finalize). Each tile op is one formula of the online softmax, so a later
    pass can replace exactly one primitive (the row sum, the rescale) with a
    tensor-core form without touching the others.

    Lowering, one pass per step:
    `fat.attention` --fat-tile--> tiled online softmax (tile ops in loops)
    --fat-tensorize--> the tensorized level (`fat.wgmma`, `fat.softmax_max`,
    `fat.softmax_exp`: the tiles as the Hopper kernel computes them)
    --fat-decompose--> linalg/arith/math on tiles --fat-to-cpu--> LLVM (host).
    See docs/architecture.md for the levels and the GPU path.
  }];
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::tensor::TensorDialect",
    // The kernel ops' shared-memory pointers are !llvm.ptr<3>.
    "::mlir::LLVM::LLVMDialect"
  ];
}

class Fat_Op<string mnemonic, list<Trait> traits = []>
    : Op<Fat_Dialect, mnemonic, traits>;

#endif // FAT_DIALECT_FAT_IR_FATDIALECT_TD
