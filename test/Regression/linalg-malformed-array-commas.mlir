// RUN: not fa-t-opt %s 2>&1 | FileCheck %s --implicit-check-not="Stack dump"
// RUN: echo 'func.func @f(%%a: tensor<2xf32>, %%b: tensor<2xf32>) { %%t = linalg.transpose ins(%%a : tensor<2xf32>) outs(%%b : tensor<2xf32>) permutation = [0,, 1] return }' | not fa-t-opt 2>&1 | FileCheck %s --check-prefix=DOUBLE --implicit-check-not="Stack dump"
// RUN: echo 'func.func @f(%%a: tensor<2xf32>, %%b: tensor<2xf32>) { %%t = linalg.transpose ins(%%a : tensor<2xf32>) outs(%%b : tensor<2xf32>) permutation = [0, 1,] return }' | not fa-t-opt 2>&1 | FileCheck %s --check-prefix=TRAILING --implicit-check-not="Stack dump"
// RUN: echo 'func.func @f(%%a: tensor<2xf32>, %%b: tensor<2xf32>) { %%t = linalg.transpose ins(%%a : tensor<2xf32>) outs(%%b : tensor<2xf32>) permutation = [0 1] return }' | not fa-t-opt 2>&1 | FileCheck %s --check-prefix=NOCOMMA --implicit-check-not="Stack dump"
// RUN: echo 'func.func @f(%%a: tensor<2xf32>, %%b: tensor<2xf32>) { %%t = linalg.transpose ins(%%a : tensor<2xf32>) outs(%%b : tensor<2xf32>) permutation = [-, 1] return }' | not fa-t-opt 2>&1 | FileCheck %s --check-prefix=MINUS --implicit-check-not="Stack dump"
// RUN: echo 'func.func @f(%%a: tensor<2xf32>, %%b: tensor<2x3xf32>) { %%t = linalg.broadcast ins(%%a : tensor<2xf32>) outs(%%b : tensor<2x3xf32>) dimensions = : f32) return }' | not fa-t-opt 2>&1 | FileCheck %s --check-prefix=NOLIST --implicit-check-not="Stack dump"
// RUN: echo 'func.func @f() attributes {dimensions = array<i64: 1>, permutation = array<i64: 1, 0>} { return }' | fa-t-opt | FileCheck %s --check-prefix=GENERIC

// Found by CI's seeded fa-t-fuzz-mlir run (2026-12-01) once the lit corpus
// grew: `permutation = [, 1,2 ]` — a leading comma — passed fa-t's text
// check (which only looked at the characters allowed inside the brackets)
// and crashed MLIR 22's linalg.transpose parser (a null attribute, as in
// linalg-malformed-array.mlir). The check now parses the list: integers
// separated by single commas, then ']'. Doubled and trailing commas, a
// lone '-' and integers without commas are refused the same way; so is
// `dimensions =` followed by no list at all (the next seeded run's find,
// which crashed linalg.broadcast's parser). The generic attribute syntax
// (`dimensions = array<i64: 1>`) passes.

// CHECK: linalg-malformed-array-commas.mlir:[[@LINE+8]]:{{[0-9]+}}: error: malformed `permutation = [...]`: expected integers separated by ','
// DOUBLE: <stdin>:1:{{[0-9]+}}: error: malformed `permutation = [...]`
// TRAILING: <stdin>:1:{{[0-9]+}}: error: malformed `permutation = [...]`
// NOCOMMA: <stdin>:1:{{[0-9]+}}: error: malformed `permutation = [...]`
// MINUS: <stdin>:1:{{[0-9]+}}: error: malformed `permutation = [...]`
// NOLIST: <stdin>:1:{{[0-9]+}}: error: malformed `dimensions = [...]`
// GENERIC: func.func @f() attributes {dimensions = array<i64: 1>, permutation = array<i64: 1, 0>}
func.func @f(%p: tensor<2x8x8xf32>, %s0: tensor<2x8x8xf32>) -> tensor<2x8x8xf32> {
  %pt = linalg.transpose ins(%p : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) permutation = [, 1,2 ]0
  return %pt : tensor<2x8x8xf32>
}
