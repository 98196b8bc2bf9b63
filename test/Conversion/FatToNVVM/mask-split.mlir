// RUN: fa-t-opt %s --fat-tile --fat-tensorize --fat-pipeline --convert-fat-to-nvvm | FileCheck %s
// RUN: fa-t-opt %s --fat-tile --fat-tensorize --fat-pipeline="pingpong=off" --convert-fat-to-nvvm | FileCheck %s --check-prefix=ONE

// The ping-pong kernels without the lazy rescale run their steady loop
// twice (AttentionKernelConfig::splitMaskedTail): blocks below the first
// one a mask can touch, min(⌊Skv/N⌋, ⌊(rowFirst + diag + 1)/N⌋), with no
// mask test, then the rest with it ("mainloop-edge"). The carried values
// are pinned between the two loops.
// CHECK:       llvm.func @fat_attention_fwd_bf16_d64_h8_8_bhsd_causal_m128n128s2q2_oprt132(
// CHECK:         } {fat.stage = "mask"}
// CHECK:         %[[TAIL:[0-9]+]] = arith.divui %[[SKV:[a-z0-9]+]], %c128_i32{{.*}} : i32
// CHECK:         %[[EDGE:[0-9]+]] = arith.floordivsi %{{[0-9]+}}, %c128_i32{{.*}} : i32
// CHECK-NEXT:    %[[FIRST:[0-9]+]] = arith.minsi %[[TAIL]], %[[EDGE]] : i32
// CHECK-NEXT:    %[[CAP:[0-9]+]] = arith.minsi %[[HI:[0-9]+]], %[[FIRST]] : i32
// CHECK-NEXT:    %[[MID:[0-9]+]] = arith.maxsi %[[LO:[0-9]+]], %[[CAP]] : i32
// CHECK:         scf.for %{{.+}} = %[[LO]] to %[[MID]] step
// CHECK-NOT:     fat.stage = "mask"
// CHECK:         fat.stage = "mainloop"}
// CHECK-NEXT:    %{{.+}} = llvm.inline_asm has_side_effects
// CHECK:         scf.for %{{.+}} = %[[MID]] to %[[HI]] step
// CHECK:           } {fat.stage = "mask"}
// CHECK:         fat.stage = "mainloop-edge"}

// Without the turns (tile overlap instead) the kernel keeps one loop with
// the test in its body.
// ONE:         llvm.func @fat_attention_fwd_bf16_d64_h8_8_bhsd_causal_m128n128s2q2_ort132c(
// ONE-NOT:     arith.floordivsi
// ONE-NOT:     mainloop-edge
// ONE:         fat.stage = "mask"
// ONE:         fat.stage = "mainloop"}
// ONE-NOT:     mainloop-edge

func.func @causal(%q: memref<?x8x?x64xbf16>, %o: memref<?x8x?x64xbf16>) {
  fat.attention ins(%q, %q, %q : memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>)
      outs(%o : memref<?x8x?x64xbf16>) causal
  return
}
