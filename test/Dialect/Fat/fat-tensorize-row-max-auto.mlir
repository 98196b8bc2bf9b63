// RUN: fa-t-opt %s --fat-tile --fat-tensorize -split-input-file | FileCheck %s
// RUN: fa-t-opt %s --fat-tile --fat-tensorize="row-max=online" -split-input-file | FileCheck %s --check-prefix=ONLINE

// row-max=auto (CostModel.cpp chooseTensorization, perf log run 112): a
// bf16 soft-cap 30·tanh(s/30) bounds the scores, and the reference at the
// bound pays at D = 128 — there with the ones columns (P·[V | 1], N = 136),
// which fat-tile's blocks leave room for (128 keys, not the 176 of the
// plain D = 128 kernel).
// CHECK-LABEL: func.func @d128
// CHECK-NOT:     fat.softmax_max
// CHECK:         fat.wgmma {{.*}} shape [64, 136, 16]
// CHECK:         } {fat.schedule = {{{.*}}forced = false, {{.*}}row_max = "bound", rowsum = "mma"}, fat.tile = {block_m = 128 : i64, block_n = 128 : i64
// A forced running maximum takes the rest of the cost model with it: the
// ones columns were chosen for the bound only, so the row sums stay on the
// vector units.
// ONLINE-LABEL: func.func @d128
// ONLINE:         fat.softmax_max
// ONLINE:         } {fat.schedule = {{{.*}}forced = true, {{.*}}row_max = "online", rowsum = "vector"}
func.func @d128(%q: memref<?x8x?x128xbf16>, %o: memref<?x8x?x128xbf16>) {
  fat.attention ins(%q, %q, %q : memref<?x8x?x128xbf16>, memref<?x8x?x128xbf16>, memref<?x8x?x128xbf16>)
      outs(%o : memref<?x8x?x128xbf16>)
      score {
      ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
        %c = arith.constant 30.0 : f32
        %y = arith.divf %x, %c : f32
        %t = math.tanh %y : f32
        %z = arith.mulf %t, %c : f32
        fat.yield %z : f32
      }
  return
}

// -----

// A kernel that writes the LSE keeps the vector row sums (the ones columns
// sum the rounded P), and with them the plain kernel's 176-key blocks; the
// reference is still the bound.
// CHECK-LABEL: func.func @d128_lse
// CHECK-NOT:     fat.softmax_max
// CHECK:         } {fat.schedule = {{{.*}}row_max = "bound", rowsum = "vector"}, fat.tile = {block_m = 128 : i64, block_n = 176 : i64
func.func @d128_lse(%q: memref<?x8x?x128xbf16>, %o: memref<?x8x?x128xbf16>, %l: memref<?x8x?xf32>) {
  fat.attention ins(%q, %q, %q : memref<?x8x?x128xbf16>, memref<?x8x?x128xbf16>, memref<?x8x?x128xbf16>)
      outs(%o : memref<?x8x?x128xbf16>) lse(%l : memref<?x8x?xf32>)
      score {
      ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
        %c = arith.constant 30.0 : f32
        %y = arith.divf %x, %c : f32
        %t = math.tanh %y : f32
        %z = arith.mulf %t, %c : f32
        fat.yield %z : f32
      }
  return
}

// -----

// A running maximum written on the op by hand stands, for fat-tile's blocks
// too: the plain kernel's 176 keys and vector sums.
// CHECK-LABEL: func.func @d128_written
// CHECK:         fat.softmax_max
// CHECK:         } {fat.schedule = {{{.*}}row_max = "online", rowsum = "vector"}, fat.tile = {block_m = 128 : i64, block_n = 176 : i64
func.func @d128_written(%q: memref<?x8x?x128xbf16>, %o: memref<?x8x?x128xbf16>) {
  fat.attention ins(%q, %q, %q : memref<?x8x?x128xbf16>, memref<?x8x?x128xbf16>, memref<?x8x?x128xbf16>)
      outs(%o : memref<?x8x?x128xbf16>)
      score {
      ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
        %c = arith.constant 30.0 : f32
        %y = arith.divf %x, %c : f32
        %t = math.tanh %y : f32
        %z = arith.mulf %t, %c : f32
        fat.yield %z : f32
      } {fat.schedule = {row_max = "online"}}
  return
}

// -----

// D = 64: the bound pays under a causal mask (+5%) and loses without one
// (−3.6%: the soft-cap's tanh and exp2 bind MUFU there, not the maximum).
// CHECK-LABEL: func.func @d64_causal
// CHECK-NOT:     fat.softmax_max
// CHECK:         row_max = "bound"
// CHECK-LABEL: func.func @d64
// CHECK:         fat.softmax_max
// CHECK:         row_max = "online"
func.func @d64_causal(%q: memref<?x8x?x64xbf16>, %o: memref<?x8x?x64xbf16>) {
  fat.attention ins(%q, %q, %q : memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>)
      outs(%o : memref<?x8x?x64xbf16>) causal
      score {
      ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
        %c = arith.constant 30.0 : f32
        %y = arith.divf %x, %c : f32
        %t = math.tanh %y : f32
        %z = arith.mulf %t, %c : f32
        fat.yield %z : f32
      }
  return
}
func.func @d64(%q: memref<?x8x?x64xbf16>, %o: memref<?x8x?x64xbf16>) {
  fat.attention ins(%q, %q, %q : memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>)
      outs(%o : memref<?x8x?x64xbf16>)
      score {
      ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
        %c = arith.constant 30.0 : f32
        %y = arith.divf %x, %c : f32
        %t = math.tanh %y : f32
        %z = arith.mulf %t, %c : f32
        fat.yield %z : f32
      }
  return
}

// -----

// Not where the bound is not provable or P would not stay normal: f16 (P
// normal only to 2^-14), a cap too wide (A = 50: c·(U − L) = 144 > 96), an
// unbounded region (a bias).
// CHECK-LABEL: func.func @f16
// CHECK:         row_max = "online"
// CHECK-LABEL: func.func @wide
// CHECK:         row_max = "online"
// CHECK-LABEL: func.func @bias
// CHECK:         row_max = "online"
func.func @f16(%q: memref<?x8x?x128xf16>, %o: memref<?x8x?x128xf16>) {
  fat.attention ins(%q, %q, %q : memref<?x8x?x128xf16>, memref<?x8x?x128xf16>, memref<?x8x?x128xf16>)
      outs(%o : memref<?x8x?x128xf16>)
      score {
      ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
        %c = arith.constant 30.0 : f32
        %y = arith.divf %x, %c : f32
        %t = math.tanh %y : f32
        %z = arith.mulf %t, %c : f32
        fat.yield %z : f32
      }
  return
}
func.func @wide(%q: memref<?x8x?x128xbf16>, %o: memref<?x8x?x128xbf16>) {
  fat.attention ins(%q, %q, %q : memref<?x8x?x128xbf16>, memref<?x8x?x128xbf16>, memref<?x8x?x128xbf16>)
      outs(%o : memref<?x8x?x128xbf16>)
      score {
      ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
        %c = arith.constant 50.0 : f32
        %y = arith.divf %x, %c : f32
        %t = math.tanh %y : f32
        %z = arith.mulf %t, %c : f32
        fat.yield %z : f32
      }
  return
}
func.func @bias(%q: memref<?x8x?x128xbf16>, %o: memref<?x8x?x128xbf16>) {
  fat.attention ins(%q, %q, %q : memref<?x8x?x128xbf16>, memref<?x8x?x128xbf16>, memref<?x8x?x128xbf16>)
      outs(%o : memref<?x8x?x128xbf16>)
      score {
      ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
        %c = arith.constant 0.5 : f32
        %z = arith.addf %x, %c : f32
        fat.yield %z : f32
      }
  return
}
