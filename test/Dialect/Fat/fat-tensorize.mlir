// RUN: fa-t-opt %s --fat-tile --fat-tensorize -split-input-file | FileCheck %s
// RUN: fa-t-opt %s --fat-tile --fat-tensorize="rowsum=vector rescale=lazy rescale-threshold=6" -split-input-file | FileCheck %s --check-prefix=FORCED
// RUN: fa-t-opt %s --fat-tile --fat-tensorize --fat-pipeline --convert-fat-to-nvvm -split-input-file | FileCheck %s --check-prefix=KERNEL
// RUN: fa-t-opt %s --fat-tile --fat-tensorize="exp2-poly=0.25" --fat-pipeline --convert-fat-to-nvvm -split-input-file | FileCheck %s --check-prefix=POLY
// RUN: not fa-t-opt %s --fat-tile --fat-tensorize="rowsum=simd" -split-input-file 2>&1 | FileCheck %s --check-prefix=BADROWSUM
// RUN: not fa-t-opt %s --fat-tile --fat-tensorize="rescale=sometimes" -split-input-file 2>&1 | FileCheck %s --check-prefix=BADRESCALE
// RUN: not fa-t-opt %s --fat-tile --fat-tensorize="rescale-threshold=20" -split-input-file 2>&1 | FileCheck %s --check-prefix=BADTHRESHOLD
// RUN: not fa-t-opt %s --fat-tile --fat-tensorize="exp2-poly=1.5" -split-input-file 2>&1 | FileCheck %s --check-prefix=BADPOLY
// RUN: not fa-t-opt %s --fat-tile --fat-tensorize="exp2-poly=half" -split-input-file 2>&1 | FileCheck %s --check-prefix=BADPOLY2

// fat-tensorize records in the tiled loop's fat.schedule which softmax
// primitives leave the per-block vector path (Tensorize.cpp; the rewrite
// itself is checked in fat-tensorize-tiled.mlir, the pipeline's keys in
// fat-pipeline.mlir). Cost model (docs/perf-log.md): D, Dv <= 64 without an
// LSE output get the row sums on the tensor cores — without a mask, or with
// a causal one whose turns hide the ones columns; the lazy rescale where the
// late P·V wait lets it run unserialized (Dv = 256 or causal, at D >= 128);
// no exponentials on the FMA pipe.

// l += rowsum(P) on the tensor cores: [O | l] += P·[V | 1], the P·V wgmma
// widened by 8 ones columns (N = Dv + 8 = 72), so every ones column of the
// accumulator holds the row's sum.
// CHECK-LABEL: func.func @d64
// CHECK:         fat.schedule = {exp2_poly = 0.000000e+00 : f64, forced = false, rescale = "always", rescale_threshold = 8.000000e+00 : f64, row_max = "online", rowsum = "mma"}
// FORCED-LABEL: func.func @d64
// FORCED:         fat.schedule = {exp2_poly = 0.000000e+00 : f64, forced = true, rescale = "lazy", rescale_threshold = 6.000000e+00 : f64, row_max = "online", rowsum = "vector"}
// S = Q·Kᵀ: D/16 = 4 k-steps of N = 128 keys; then P·[V | 1]: 128/16 = 8
// k-steps of N = 72.
// KERNEL-LABEL:  gpu.module @fat_attention_fwd_bf16_d64_h8_8_bhsd_m192n128s2q2_ort132c {
// KERNEL-COUNT-4:  wgmma.mma_async.sync.aligned.m64n128k16
// KERNEL-COUNT-8:  wgmma.mma_async.sync.aligned.m64n72k16
// KERNEL-NOT:      wgmma.mma_async.sync.aligned.m64n64k16
// exp2-poly=0.25: a quarter of each row's exponentials on the FMA pipe.
// Element k of a row's 32 goes to the polynomial when ⌊(k+1)/4⌋ > ⌊k/4⌋:
// k = 3, 7, ...; the softmax of row 0 starts with four MUFU ex2 (its α,
// then elements 0, 1, 2), then the Cody–Waite split of element 3.
// POLY:       gpu.module @fat_attention_fwd_bf16_d64_h8_8_bhsd_m192n128s2q2_ore25
// POLY-COUNT-4: ex2.approx.ftz.f32
// POLY:         %[[X:[0-9]+]] = llvm.intr.fma
// POLY:    %[[CL:[0-9]+]] = llvm.intr.maxnum(%[[X]], %{{.+}}) : (f32, f32) -> f32
// POLY:    %[[SH:[0-9]+]] = llvm.inline_asm asm_dialect = att "add.rm.ftz.f32 $0, $1, $2;", "=f,f,f" %[[CL]]
// POLY:    %[[J:[0-9]+]] = arith.subf %[[SH]], %{{.+}} : f32
// POLY:    %[[F:[0-9]+]] = arith.subf %[[CL]], %[[J]] : f32
// POLY:    %[[P3:[0-9]+]] = llvm.intr.fma(%[[F]], %{{.+}}, %{{.+}})
// POLY:    %[[P2:[0-9]+]] = llvm.intr.fma(%[[F]], %[[P3]], %{{.+}})
// POLY:    %[[P1:[0-9]+]] = llvm.intr.fma(%[[F]], %[[P2]], %{{.+}})
// POLY:    %[[SHB:[0-9]+]] = arith.bitcast %[[SH]] : f32 to i32
// POLY:    %[[E:[0-9]+]] = arith.shli %[[SHB]], %{{.+}} : i32
// POLY:    %[[PB:[0-9]+]] = arith.bitcast %[[P1]] : f32 to i32
// POLY:    %[[SUM:[0-9]+]] = arith.addi %[[PB]], %[[E]] : i32
// POLY:    arith.bitcast %[[SUM]] : i32 to f32
func.func @d64(%q: memref<?x8x?x64xbf16>, %o: memref<?x8x?x64xbf16>) {
  fat.attention ins(%q, %q, %q : memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>)
      outs(%o : memref<?x8x?x64xbf16>)
  return
}

// -----

// An LSE output keeps the f32 vector row sums (the tensor cores would sum
// the bf16-rounded P): the P·V is N = Dv = 64 wide.
// CHECK-LABEL: func.func @d64_lse
// CHECK:         fat.schedule = {exp2_poly = 0.000000e+00 : f64, forced = false, rescale = "always", rescale_threshold = 8.000000e+00 : f64, row_max = "online", rowsum = "vector"}
// KERNEL-LABEL:  gpu.module @fat_attention_fwd_bf16_d64_h8_8_bhsd_lse_m192n128s2q2_ot132c {
// KERNEL-COUNT-4:  wgmma.mma_async.sync.aligned.m64n128k16
// KERNEL-COUNT-8:  wgmma.mma_async.sync.aligned.m64n64k16
// KERNEL-NOT:      wgmma.mma_async.sync.aligned.m64n72k16
func.func @d64_lse(%q: memref<?x8x?x64xbf16>, %o: memref<?x8x?x64xbf16>, %l: memref<?x8x?xf32>) {
  fat.attention ins(%q, %q, %q : memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>)
      outs(%o : memref<?x8x?x64xbf16>) lse(%l : memref<?x8x?xf32>)
  return
}

// -----

// Causal D = 64 below 4k keys: fat-tensorize predicts fat-pipeline's
// ping-pong (the same cost model), under which the row sums pay again.
// CHECK-LABEL: func.func @d64_causal
// CHECK:         fat.schedule = {exp2_poly = 0.000000e+00 : f64, forced = false, rescale = "always", rescale_threshold = 8.000000e+00 : f64, row_max = "online", rowsum = "mma"}
// KERNEL-LABEL:  gpu.module @fat_attention_fwd_bf16_d64_h8_8_bhsd_causal_m128n128s2q2_oprt132 {
// KERNEL-COUNT-4:  wgmma.mma_async.sync.aligned.m64n128k16
// KERNEL-COUNT-8:  wgmma.mma_async.sync.aligned.m64n72k16
func.func @d64_causal(%q: memref<?x8x?x64xbf16>, %o: memref<?x8x?x64xbf16>) {
  fat.attention ins(%q, %q, %q : memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>)
      outs(%o : memref<?x8x?x64xbf16>) causal
  return
}

// -----

// Dv = 256: no room for the ones columns (N = Dv + 8 > 256); the lazy
// rescale, since its 80-key blocks take the late P·V wait (run 55).
// CHECK-LABEL: func.func @d256
// CHECK:         fat.schedule = {exp2_poly = 0.000000e+00 : f64, forced = false, rescale = "lazy", rescale_threshold = 8.000000e+00 : f64, row_max = "online", rowsum = "vector"}
func.func @d256(%q: tensor<?x8x?x256xf16>, %o: tensor<?x8x?x256xf16>) -> tensor<?x8x?x256xf16> {
  %r = fat.attention ins(%q, %q, %q : tensor<?x8x?x256xf16>, tensor<?x8x?x256xf16>, tensor<?x8x?x256xf16>)
      outs(%o : tensor<?x8x?x256xf16>) -> tensor<?x8x?x256xf16>
  return %r : tensor<?x8x?x256xf16>
}

// BADROWSUM: fat-tensorize: rowsum must be auto, vector or mma, got 'simd'
// BADRESCALE: fat-tensorize: rescale must be auto, always or lazy, got 'sometimes'
// BADTHRESHOLD: fat-tensorize: rescale-threshold must be in [0, 16] (log2 units), got 2.000000e+01
// BADPOLY: fat-tensorize: exp2-poly must be auto or a fraction in [0, 1], got '1.5'
// BADPOLY2: fat-tensorize: exp2-poly must be auto or a fraction in [0, 1], got 'half'
