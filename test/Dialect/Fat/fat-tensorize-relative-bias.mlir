// RUN: fa-t-opt %s --fat-tile="seq-len=2048" --fat-tensorize="linear-bias=vector relative-bias=accumulator" 2>&1 | FileCheck %s
// RUN: not fa-t-opt %s --fat-tile="seq-len=2048" --fat-tensorize="linear-bias=mma relative-bias=accumulator" 2>&1 | FileCheck %s --check-prefix=COLUMNS
// RUN: not fa-t-opt %s --fat-tile="seq-len=16384 block-n=160" --fat-tensorize="linear-bias=vector relative-bias=accumulator" --fat-pipeline 2>&1 | FileCheck %s --check-prefix=SMEM

// relative-bias=accumulator on ALiBi's s − slope·(i − j): the term is −T,
// so the band's region negates the region's product; the score region goes.
// CHECK-LABEL: func.func @alibi
// CHECK:         fat.score_band
// CHECK:           %[[D:.+]] = arith.subi %{{.+}}, %{{.+}} : index
// CHECK:           %[[P:.+]] = arith.mulf %{{.+}}, %{{.+}} : f32
// CHECK-NEXT:      %[[N:.+]] = arith.negf %[[P]] : f32
// CHECK-NEXT:      fat.yield %[[N]] : f32
// CHECK-NOT:     fat.score_mod
// CHECK:         relative_bias = "accumulator"

// With linear-bias=mma the key columns take the region first; forcing the
// accumulator then says which option to change.
// COLUMNS: error: fat-tensorize: relative-bias=accumulator: linear-bias=mma has taken the score region onto Q·Kᵀ's extra columns; pass linear-bias=vector to have the accumulator take it

// At D = 128 with 160-key blocks the terms' stages (2 × 16 × (128 + 160)
// bytes) leave no room: fat-pipeline names the sizes.
// SMEM: error: 'scf.forall' op fat-pipeline: relative-bias=accumulator's terms (9216 bytes) leave the kernel 239744 bytes of shared memory, more than the 232448 a block may use; lower block-n or stages, or take relative-bias=vector
func.func @alibi(%q: tensor<1x4x?x128xbf16>, %k: tensor<1x4x?x128xbf16>,
                 %v: tensor<1x4x?x128xbf16>, %o: tensor<1x4x?x128xbf16>)
    -> tensor<1x4x?x128xbf16> {
  %n = fat.attention ins(%q, %k, %v : tensor<1x4x?x128xbf16>, tensor<1x4x?x128xbf16>, tensor<1x4x?x128xbf16>)
      outs(%o : tensor<1x4x?x128xbf16>) causal
      score {
      ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
        %slope = arith.constant 0.25 : f32
        %d = arith.subi %i, %j : index
        %d64 = arith.index_cast %d : index to i64
        %df = arith.sitofp %d64 : i64 to f32
        %bias = arith.mulf %slope, %df : f32
        %y = arith.subf %x, %bias : f32
        fat.yield %y : f32
      } -> tensor<1x4x?x128xbf16>
  return %n : tensor<1x4x?x128xbf16>
}
