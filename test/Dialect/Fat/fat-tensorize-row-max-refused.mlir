// RUN: not fa-t-opt %s --fat-tile --fat-tensorize="row-max=bound" -split-input-file 2>&1 | FileCheck %s --check-prefix=REFUSED

// Refused by name: no score region (nothing bounds the scores), a region
// whose output is unbounded (a bias added to s), a cap so wide that the
// smallest P would leave the normal numbers (c·(U − L) = 2·50·log2 e), and
// f16 inputs (P rounded to f16 is normal only down to 2^−14).
// REFUSED: error: fat-tensorize: row-max=bound needs a score region whose output is bounded
// REFUSED: error: fat-tensorize: row-max=bound needs a score region whose output is bounded
// REFUSED: error: fat-tensorize: row-max=bound needs c·(U − L) <= 96 (the smallest P stays a normal number); this region's scores lie in [-1.0, 1.0], c·(U − L) = 144.3
// REFUSED: error: fat-tensorize: row-max=bound needs bf16 inputs
func.func @plain(%q: memref<?x8x?x64xbf16>, %o: memref<?x8x?x64xbf16>) {
  fat.attention ins(%q, %q, %q : memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>)
      outs(%o : memref<?x8x?x64xbf16>)
  return
}

// -----

func.func @bias(%q: memref<?x8x?x64xbf16>, %o: memref<?x8x?x64xbf16>) {
  fat.attention ins(%q, %q, %q : memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>)
      outs(%o : memref<?x8x?x64xbf16>)
      score {
      ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
        %c = arith.constant 0.5 : f32
        %y = arith.addf %x, %c : f32
        fat.yield %y : f32
      }
  return
}

// -----

func.func @cap50(%q: memref<?x8x?x64xbf16>, %o: memref<?x8x?x64xbf16>) {
  fat.attention ins(%q, %q, %q : memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>)
      outs(%o : memref<?x8x?x64xbf16>)
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

// -----

func.func @f16(%q: memref<?x8x?x64xf16>, %o: memref<?x8x?x64xf16>) {
  fat.attention ins(%q, %q, %q : memref<?x8x?x64xf16>, memref<?x8x?x64xf16>, memref<?x8x?x64xf16>)
      outs(%o : memref<?x8x?x64xf16>)
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
