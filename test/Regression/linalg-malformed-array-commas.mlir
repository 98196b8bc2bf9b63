// RUN: not fa-t-opt %s 2>&1 | FileCheck %s --implicit-check-not="Stack dump"
// RUN: echo 'func.func @f(%%a: tensor<2xf32>, %%b: tensor<2xf32>) { %%t = linalg.transpose ins(%%a : tensor<2xf32>) outs(%%b : tensor<2xf32>) permutation = [0,, 1] return }' | not fa-t-opt 2>&1 | FileCheck %s --check-prefix=DOUBLE --implicit-check-not="Stack dump"
// RUN: echo 'func.func @f(%%a: tensor<2xf32>, %%b: tensor<2xf32>) { %%t = linalg.transpose ins(%%a : tensor<2xf32>) outs(%%b : tensor<2xf32>) permutation = [0, 1,] return }' | not fa-t-opt 2>&1 | FileCheck %s --check-prefix=TRAILING --implicit-check-not="Stack dump"
// RUN: echo 'func.func @f(%%a: tensor<2xf32>, %%b: tensor<2xf32>) { %%t = linalg.transpose ins(%%a : tensor<2xf32>) outs(%%b : tensor<2xf32>) permutation = [0 1] return }' | not fa-t-opt 2>&1 | FileCheck %s --check-prefix=NOCOMMA --implicit-check-not="Stack dump"
// RUN: echo 'func.func @f(%%a: tensor<2xf32>, %%b: tensor<2xf32>) { %%t = linalg.transpose ins(%%a : tensor<2xf32>) outs(%%b : tensor<2xf32>) permutation = [-, 1] return }' | not fa-t-opt 2>&1 | FileCheck %s --check-prefix=MINUS --implicit-check-not="Stack dump"

// Found by CI's seeded fa-t-fuzz-mlir run (2026-12-01) once the lit corpus
// grew: `permutation = [, 1,2 ]` — a leading comma — passed fa-t's text
// check (which only looked at the characters allowed inside the brackets)
// and crashed MLIR 22's linalg.transpose parser (a null attribute, as in
// linalg-malformed-array.mlir). The check now parses the list: integers
// separated by single commas, then ']'. Doubled and trailing commas, a
// lone '-' and integers without commas are refused the same way.

// CHECK: linalg-malformed-array-commas.mlir:[[@LINE+6]]:{{[0-9]+}}: error: malformed `permutation = [...]`: expected integers separated by ','
// DOUBLE: <stdin>:1:{{[0-9]+}}: error: malformed `permutation = [...]`
// TRAILING: <stdin>:1:{{[0-9]+}}: error: malformed `permutation = [...]`
// NOCOMMA: <stdin>:1:{{[0-9]+}}: error: malformed `permutation = [...]`
// MINUS: <stdin>:1:{{[0-9]+}}: error: malformed `permutation = [...]`
func.func @f(%p: tensor<2x8x8xf32>, %s0: tensor<2x8x8xf32>) -> tensor<2x8x8xf32> {
  %pt = linalg.transpose ins(%p : tensor<2x8x8xf32>) outs(%s0 : tensor<2x8x8xf32>) permutation = [, 1,2 ]0
  return %pt : tensor<2x8x8xf32>
}
