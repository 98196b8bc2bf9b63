// RUN: not fa-t-opt %s 2>&1 | FileCheck %s --implicit-check-not="Stack dump"

// Found by fa-t-fuzz-mlir once its dictionary knew `#fat.wgmma_fragment`:
// after a malformed element type MLIR 22's tensor-type parser still asks
// the encoding to verify itself, with a null element type. The encoding
// refuses it instead of reading through the null type.

// CHECK: error: expected non-function type
// CHECK: error: #fat.wgmma_fragment expects a tensor with an element type
func.func @f(%q: tensor<64x, #fat.wgmma_fragment>bf16>) {
  return
}
