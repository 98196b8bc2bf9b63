// RUN: fa-t-opt %s --fat-tile --fat-tensorize="row-max=bound rowsum=vector" -split-input-file | FileCheck %s
// RUN: fa-t-opt %s --fat-tile --fat-tensorize="row-max=bound rowsum=mma" -split-input-file | FileCheck %s --check-prefix=MMA
// RUN: fa-t-opt %s --fat-tile --fat-tensorize="row-max=bound rowsum=mma" --fat-pipeline -split-input-file | FileCheck %s --check-prefix=KERNEL
// RUN: fa-t-opt %s --fat-tile --fat-tensorize -split-input-file | FileCheck %s --check-prefix=AUTO
// RUN: not fa-t-opt %s --fat-tile --fat-tensorize="row-max=top" -split-input-file 2>&1 | FileCheck %s --check-prefix=BADWORD

// row-max=bound (BoundRowMax.cpp): the soft-cap 30·tanh(s/30) bounds the
// scores; fat-tensorize moves its 30 into the softmax constant (c = 30·log2 e
// = 43.28) and the region yields tanh ∈ [−1, 1], so the reference is U = 1
// for every row: c·(U − L) = 86.6 ≤ 96. No fat.softmax_max, no rescale of O
// or l; the vector row sum adds without α; the loop carries m = U.
// CHECK-LABEL: func.func @softcap
// CHECK-DAG:     %[[U:.+]] = arith.constant dense<1.000000e+00> : tensor<192xf32>
// CHECK-DAG:     %[[C:.+]] = arith.constant 43.2808495 : f32
// CHECK:         scf.for {{.*}} iter_args(%[[O:[a-z0-9_]+]] = %{{.+}}, %{{[a-z0-9_]+}} = %{{.+}}, %[[L:[a-z0-9_]+]] = %{{.+}})
// CHECK-NOT:       fat.softmax_max
// CHECK-NOT:       fat.rescale
// CHECK:           fat.score_mod
// CHECK:           %[[S:[0-9]+]] = fat.mask
// CHECK:           %[[P:[a-z0-9_]+]], %[[L1:[a-z0-9_]+]] = fat.softmax_exp %[[S]], %[[U]] scale %[[C]] rowsum(%[[L]]) :
// CHECK:           %[[P16:.+]] = arith.truncf %[[P]]
// CHECK:           %[[O1:.+]] = fat.wgmma %[[P16]], %{{.+}}, %[[O]] a_from registers
// CHECK:           scf.yield %[[O1]], %[[U]], %[[L1]]
// CHECK:         fat.schedule = {{{.*}}forced = true, {{.*}}row_max = "bound"
// With the ones columns the accumulator is [O | l] without a rescale.
// MMA-LABEL: func.func @softcap
// MMA-NOT:     fat.softmax_max
// MMA-NOT:     fat.rescale
// MMA:         fat.softmax_exp %{{.+}}, %{{.+}} scale %{{.+}} : (tensor<192x128xf32>, tensor<192xf32>, f32) -> tensor<192x128xf32>
// MMA:         fat.wgmma {{.*}} shape [64, 72, 16]
// The kernel takes the reference as a constant (b in the name) and has no
// row maximum or rescale on its tiles.
// KERNEL-LABEL: func.func @softcap
// KERNEL:         fat.launch @[[K:fat_attention_fwd_bf16_d64_h8_8_bhsd_mod[0-9a-f]+_m[0-9]+n[0-9]+s2q2_orbt132c]]::
// KERNEL-SAME:      row_max = "bound"
// KERNEL:         gpu.module @[[K]]
// KERNEL-NOT:       fat.softmax_max
// KERNEL-NOT:       fat.rescale
// KERNEL:           fat.softmax_exp
// KERNEL-NOT:       fat.softmax_max
// KERNEL-NOT:       fat.rescale
// KERNEL:         }
// AUTO-LABEL: func.func @softcap
// AUTO:         fat.softmax_max
// AUTO:         row_max = "online"
// BADWORD: error: fat-tensorize: row-max must be auto, online or bound, got 'top'
func.func @softcap(%q: memref<?x8x?x64xbf16>, %o: memref<?x8x?x64xbf16>) {
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
