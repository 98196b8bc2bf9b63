// RUN: fa-t-opt %s --fat-tile --fat-tensorize="tanh-poly=on" -split-input-file | FileCheck %s
// RUN: fa-t-opt %s --fat-tile --fat-tensorize="tanh-poly=off" -split-input-file | FileCheck %s --check-prefix=OFF
// RUN: fa-t-opt %s --fat-tile --fat-tensorize -split-input-file | FileCheck %s --check-prefix=AUTO
// RUN: fa-t-opt %s --fat-tile --fat-tensorize="tanh-poly=on" --fat-pipeline -split-input-file | FileCheck %s --check-prefix=KERNEL
// RUN: not fa-t-opt %s --fat-tile --fat-tensorize="tanh-poly=half" -split-input-file 2>&1 | FileCheck %s --check-prefix=BADWORD

// tanh-poly: a score region whose tanh takes a constant multiple of the
// score (the soft-cap 30·tanh(s/30): after fat-tensorize moves the 30 into
// the softmax constant, tanh(s/30)) gets fat.score_mod's tanh_poly — the
// polynomial on the FMA pipe where a warp's |s/30| ≤ 1 — recorded in the
// schedule where taken.
// CHECK-LABEL: func.func @softcap
// CHECK:         fat.score_mod %{{.+}} at(%{{.+}}) len(%{{.+}}) scale {{.+}} tanh_poly {
// CHECK:           %[[Y:.+]] = arith.divf
// CHECK-NEXT:      math.tanh %[[Y]] : f32
// CHECK:         fat.schedule = {{{.*}}forced = true{{.*}}tanh_poly = true}
// OFF-LABEL: func.func @softcap
// OFF-NOT:       tanh_poly
// OFF:           fat.score_mod
// OFF-NOT:       tanh_poly
// OFF:         fat.schedule = {{{.*}}forced = true
// OFF-NOT:       tanh_poly
// auto keeps MUFU's tanh (the form lost 1…17%, perf log run 153).
// AUTO-LABEL: func.func @softcap
// AUTO-NOT:      tanh_poly
// AUTO:        fat.schedule = {{{.*}}forced = false
// AUTO-NOT:      tanh_poly
// The kernel's score region keeps it (h in the name), and its manifest.
// KERNEL-LABEL: func.func @softcap
// KERNEL:         fat.launch @[[K:fat_attention_fwd_bf16_d64_h8_8_bhsd_mod[0-9a-f]+_m[0-9]+n[0-9]+s2q2_[a-z0-9]+h]]::
// KERNEL-SAME:      tanh_poly = true
// KERNEL:         gpu.module @[[K]]
// KERNEL:           fat.score_mod {{.*}} tanh_poly {
// BADWORD: fat-tensorize: tanh-poly must be auto, on or off, got 'half'
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

// -----

// A tanh of a position (not a multiple of the score) keeps MUFU's tanh,
// even where forced, and the schedule does not record it.
// CHECK-LABEL: func.func @tanh_of_position
// CHECK-NOT:     tanh_poly
// CHECK:         fat.score_mod
// CHECK-NOT:     tanh_poly
// CHECK:         return
// AUTO-LABEL: func.func @tanh_of_position
// AUTO-NOT:      tanh_poly
// AUTO:          return
func.func @tanh_of_position(%q: memref<?x8x?x64xbf16>, %o: memref<?x8x?x64xbf16>) {
  fat.attention ins(%q, %q, %q : memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>)
      outs(%o : memref<?x8x?x64xbf16>)
      score {
      ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
        %d = arith.subi %i, %j : index
        %d64 = arith.index_cast %d : index to i64
        %df = arith.sitofp %d64 : i64 to f32
        %c = arith.constant 0.125 : f32
        %y = arith.mulf %df, %c : f32
        %t = math.tanh %y : f32
        %z = arith.addf %x, %t : f32
        fat.yield %z : f32
      }
  return
}

// -----

// f16: forced, it is taken there too.
// AUTO-LABEL: func.func @softcap_f16
// AUTO-NOT:      tanh_poly
// AUTO:          return
// CHECK-LABEL: func.func @softcap_f16
// CHECK:         fat.score_mod {{.*}} tanh_poly {
func.func @softcap_f16(%q: memref<?x8x?x64xf16>, %o: memref<?x8x?x64xf16>) {
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
