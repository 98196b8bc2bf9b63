// RUN: not fa-t-opt %s 2>&1 | FileCheck %s --check-prefix=FILE --implicit-check-not="Stack dump"
// RUN: not fa-t-opt < %s 2>&1 | FileCheck %s --check-prefix=STDIN --implicit-check-not="Stack dump"

// Found by fa-t-fuzz-mlir once it parsed linalg (the inputs of
// --fat-raise-attention): MLIR 22's custom parser of linalg.transpose (and
// of linalg.broadcast and linalg.reduce) reports a malformed
// `permutation = [...]` and then adds a null attribute, a segfault — stock
// mlir-opt-22 crashes on this file too. fa-t-opt checks the text first
// (include/fa-t/Tools/InputChecks.h) and stops with a diagnostic.

// FILE: linalg-malformed-array.mlir:[[@LINE+3]]:{{[0-9]+}}: error: malformed `permutation = [...]`: expected integers separated by ',' and a closing ']'
// STDIN: <stdin>:[[@LINE+2]]:{{[0-9]+}}: error: malformed `permutation = [...]`
func.func @f(%a: tensor<2x3xf32>, %b: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %t = linalg.transpose ins(%a : tensor<2x3xf32>) outs(%b : tensor<3x2xf32>) permutation = [1, 0>
  return %t : tensor<3x2xf32>
}
