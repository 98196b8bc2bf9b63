// RUN: fa-t-opt %s --fat-tile | FileCheck %s

// fat-tile rewrites the functions that hold a fat.attention and leaves the
// rest of the module as it is (its greedy driver would fold them): running
// it on IR it has nothing to tile in, such as a built kernel, changes
// nothing, and a stepwise pipeline equals the one-shot one.
// CHECK-LABEL: func.func @untouched
// CHECK:         %[[A:.+]] = arith.constant 1 : i32
// CHECK:         %[[B:.+]] = arith.constant 2 : i32
// CHECK:         %[[S:.+]] = arith.addi %[[A]], %[[B]] : i32
// CHECK:         return %[[S]]
// CHECK-LABEL: func.func @tiled
// CHECK:         scf.forall
// CHECK-NOT:     fat.attention
func.func @untouched() -> i32 {
  %a = arith.constant 1 : i32
  %b = arith.constant 2 : i32
  %s = arith.addi %a, %b : i32
  return %s : i32
}
func.func @tiled(%q: tensor<1x2x256x64xbf16>, %o: tensor<1x2x256x64xbf16>) -> tensor<1x2x256x64xbf16> {
  %r = fat.attention ins(%q, %q, %q : tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>)
         outs(%o : tensor<1x2x256x64xbf16>) -> tensor<1x2x256x64xbf16>
  return %r : tensor<1x2x256x64xbf16>
}
