// RUN: rm -rf %t && mkdir -p %t/late %t/early %t/short
// RUN: fa-t-opt %s --fat-to-ptx="seq-len=4096 output-dir=%t/late" -o /dev/null
// RUN: fa-t-opt %s --fat-to-ptx="seq-len=4096 pv-wait=early output-dir=%t/early" -o /dev/null
// RUN: fa-t-opt %s --fat-to-ptx="seq-len=1024 pv-wait=late output-dir=%t/short" -o /dev/null
// RUN: FileCheck %s --check-prefix=LATE < %t/late/fat_attention_fwd_bf16_d128_h16_16_bhsd_m128n160s2q2_opt132.ptx
// RUN: FileCheck %s --check-prefix=EARLY < %t/early/fat_attention_fwd_bf16_d128_h16_16_bhsd_m128n160s2q2z_opt132.ptx
// RUN: not grep -q FENCE_SKIP %t/early/fat_attention_fwd_bf16_d128_h16_16_bhsd_m128n160s2q2z_opt132.ptx
// RUN: FileCheck %s --check-prefix=JSON < %t/late/fat_attention_fwd_bf16_d128_h16_16_bhsd_m128n160s2q2_opt132.json
// RUN: ls %t/short | FileCheck %s --check-prefix=SHORT
// RUN: ls %t/late %t/early | FileCheck %s --check-prefix=LAZY
// RUN: grep -c "^FENCE_SKIP:" %t/short/fat_attention_fwd_bf16_d64_h32_32_bhsd_m192n128s2q2y_ort132c.ptx | FileCheck %s --check-prefix=TWO
// RUN: not fa-t-opt %s --fat-to-ptx="pv-wait=soon output-dir=%t" 2>&1 | FileCheck %s --check-prefix=BADWORD
// RUN: not fa-t-opt %s --fat-to-ptx="overlap=off pv-wait=late output-dir=%t" 2>&1 | FileCheck %s --check-prefix=PLAIN

// The P·V wait of the overlapped main loop (convert-fat-to-nvvm pv-wait).
// One iteration issues S_j = Q·K_jᵀ and O += P_{j−1}·V_{j−1}, waits for
// S_j (one group pending), runs S_j's softmax and then waits for the P·V.
// Late (the default where a block's P·V spans >= 160 keys × 128 columns):
// the softmax's exponentials come first, then the scheduling fence ptxas
// keeps (a uniform branch over a membar it never runs), the wait, and
// only then the 16-bit packs of P_j — into the registers P_{j−1} leaves.

// (The loop's softmax block comes first in the PTX, its wgmma issue after.)
// LATE:      ex2.approx.ftz.f32
// LATE:      setp.eq.u32 fence_p, [[NEVER:%r[0-9]+]], 0xffffffff;
// LATE-NEXT: @!fence_p bra.uni FENCE_SKIP;
// LATE-NEXT: membar.cta;
// LATE-NEXT: FENCE_SKIP:
// LATE-NOT:  ex2.approx
// LATE:      wgmma.wait_group.sync.aligned 0;
// LATE-NOT:  ex2.approx
// LATE:      cvt.rn.bf16x2.f32
// LATE:      wgmma.wait_group.sync.aligned 1;
// The fence is in the steady loop only (the prologue's S_0 has no P·V).
// LATE-NOT:  FENCE_SKIP

// Early: the packs precede the wait and nothing fences it (ptxas then
// lifts the wait above the softmax, perf log run 54).
// EARLY:     ex2.approx.ftz.f32
// EARLY:     cvt.rn.bf16x2.f32
// EARLY:     wgmma.wait_group.sync.aligned 0;

// JSON: "pv_wait": "late",

// Tuned for 1k keys the kernel takes 128-key blocks, where auto waits
// early: pv-wait=late is then spelled out in the name (y).
// SHORT: fat_attention_fwd_bf16_d128_h16_16_bhsd_m128n128s2q2y_opt132.ptx

// D = 256 (80-key blocks) waits late and so takes fat-tensorize's lazy
// rescale (l8); forced early, the same unforced schedule rescales every
// block instead — the lazy branch would serialize its wgmmas (C7513).
// LAZY-LABEL: early:
// LAZY:       fat_attention_fwd_bf16_d256_h8_8_bhsd_m128n80s2z_ot132.ptx
// LAZY-LABEL: late:
// LAZY:       fat_attention_fwd_bf16_d256_h8_8_bhsd_m128n80s2_ol8t132.ptx

// D = 64 waits early by default (run 57: late −6…16% with three consumer
// warpgroups); forced late, its tile-overlap kernel fences both waits that
// run a softmax under a P·V: a tile's first block (under the pending
// tile's P·V) and the steady loop's.
// TWO: {{^}}2{{$}}

// BADWORD: fat-pipeline: pv-wait must be 'auto', 'late' or 'early', got 'soon'
// PLAIN: pv-wait=late needs the overlapped main loop

func.func @d128(%q: memref<?x16x?x128xbf16>, %o: memref<?x16x?x128xbf16>) {
  fat.attention ins(%q, %q, %q : memref<?x16x?x128xbf16>, memref<?x16x?x128xbf16>, memref<?x16x?x128xbf16>)
      outs(%o : memref<?x16x?x128xbf16>)
  return
}

func.func @d64(%q: memref<?x32x?x64xbf16>, %o: memref<?x32x?x64xbf16>) {
  fat.attention ins(%q, %q, %q : memref<?x32x?x64xbf16>, memref<?x32x?x64xbf16>, memref<?x32x?x64xbf16>)
      outs(%o : memref<?x32x?x64xbf16>)
  return
}

func.func @d256(%q: memref<?x8x?x256xbf16>, %o: memref<?x8x?x256xbf16>) {
  fat.attention ins(%q, %q, %q : memref<?x8x?x256xbf16>, memref<?x8x?x256xbf16>, memref<?x8x?x256xbf16>)
      outs(%o : memref<?x8x?x256xbf16>)
  return
}
