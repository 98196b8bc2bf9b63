// REQUIRES: cuobjdump
// RUN: rm -rf %t && mkdir -p %t
// RUN: fa-t-opt %s --fat-to-ptx="output-dir=%t" -o /dev/null
// RUN: fa-t-opt %s --fat-to-ptx="rescale=lazy output-dir=%t" -o /dev/null
// RUN: fa-t-opt %s --fat-to-ptx="rescale=always output-dir=%t/always" -o /dev/null
// RUN: fa-t-opt %s --fat-to-ptx="block-n=64 output-dir=%t" -o /dev/null
// RUN: %python %fat_src_root/scripts/sass_profile.py %t/*.ptx %t/always/*d256*.ptx | FileCheck %s

// What ptxas makes of the default kernels (scripts/sass_profile.py: ptxas
// -v and cuobjdump -sass): no local memory, the wgmma shapes of each head
// dim, and one iteration of the steady main loop on its hot path (an
// unmasked block). Per iteration and thread: blockN/2 + 2 MUFU.EX2 (P and
// the two rows' α), the QK and PV k-steps as HGMMA (D/16 + blockN/16), and
// exactly two WARPGROUP.ARRIVE / DEPBAR pairs — the overlapped schedule's
// two commit groups. More WARPGROUP instructions mean ptxas serialized the
// wgmmas (C7513), as it did for the lazy rescale's branch until the P·V
// wait moved below the softmax (pv-wait=late, the default at D = 256 and
// causal D = 128).

// D = 128, causal (vector row sums; since run 58 the lazy rescale under
// the late P·V wait: O's 64 rescale FMULs leave the hot path, the two
// commit groups stay):
// CHECK-LABEL: fat_attention_fwd_bf16_d128_h16_16_bhsd_causal_m128n128s2q2_opl8t132: registers {{[0-9]+}} spill_bytes 0 local_memory 0 mufu_ex2 {{[0-9]+}} hgmma 64x128x16:32
// CHECK-NEXT:    main loop: {{[0-9]+}} instructions per iteration; tensor 16 mufu 66
// CHECK-NEXT:    key: HGMMA 16 WARPGROUP 4 MUFU 66 FFMA {{[0-9]+}} FMUL {{[0-9]}} FADD {{[0-9]+}} FMNMX {{6[4-9]}} F2FP 32

// D = 256, causal, LSE with 64-key blocks (block-n=64; the default for
// short keys): lazy too, so none of the 130 FMULs per 64 keys that O's
// rescale (128 registers) costs every block (rescale=always, last kernel).
// CHECK-LABEL: fat_attention_fwd_bf16_d256_h8_8_bhsd_causal_lse_m128n64s2_ol8t132: registers {{[0-9]+}} spill_bytes 0 local_memory 0 mufu_ex2 {{[0-9]+}} hgmma 64x256x16:8 64x64x16:32
// CHECK-NEXT:    main loop: {{[0-9]+}} instructions per iteration; tensor 20 mufu 34
// CHECK-NEXT:    key: HGMMA 20 WARPGROUP 4 MUFU 34 FFMA {{[0-9]+}} FMUL {{[0-9]}}

// The default at D = 256 since run 55: 80-key blocks (FlashAttention-3's
// tile) with the lazy rescale under the late P·V wait — the rescale
// multiplies are gone from the hot path and the wgmmas keep their two
// commit groups (with ptxas's early wait every wgmma was serialized:
// WARPGROUP 42).
// CHECK-LABEL: fat_attention_fwd_bf16_d256_h8_8_bhsd_causal_lse_m128n80s2_ol8t132:
// CHECK-NEXT:    main loop:
// CHECK-NEXT:    key: HGMMA 21 WARPGROUP 4 MUFU 42 FFMA {{[0-9]+}} FMUL {{[0-9]}} FADD

// Causal D = 64 below 4k keys: two warpgroups taking turns, whose steady
// loop runs without the mask test below the first masked block
// (splitMaskedTail; the edge copy follows): the hot path loads no
// constant and tests no block index (353 instructions against 362 with the
// test, perf log run 63), and the pinned hand-over between the two loops
// keeps the two commit groups (unpinned, ptxas serialized the wgmmas).
// CHECK-LABEL: fat_attention_fwd_bf16_d64_h16_16_bhsd_causal_m128n128s2q2_oprt132: registers {{[0-9]+}} spill_bytes 0 local_memory 0 mufu_ex2 {{[0-9]+}} hgmma 64x128x16:12 64x72x16:24
// CHECK-NEXT:    main loop: {{[0-9]+}} instructions per iteration; tensor 12 mufu 66
// CHECK-NEXT:    key: HGMMA 12 WARPGROUP 4 MUFU 66 FFMA 66 FMUL {{[0-9]+}} FADD 0 FMNMX {{6[4-9]}} F2FP 32
// CHECK-NEXT:    opcodes:
// CHECK-NOT:     LDC
// CHECK-SAME:    {{$}}

// D = 64 without a mask: tensor-core row sums (PV is 64 + 8 columns wide),
// so no FADD row sums remain on the hot path; persistent CTAs (t132) with
// tile overlap (c): three P·V sites (a tile's first turn, the steady loop,
// the last tile's), two of S = Q·Kᵀ.
// CHECK-LABEL: fat_attention_fwd_bf16_d64_h16_16_bhsd_m192n128s2q2_ort132c: registers {{[0-9]+}} spill_bytes 0 local_memory 0 mufu_ex2 {{[0-9]+}} hgmma 64x128x16:8 64x72x16:24
// CHECK-NEXT:    main loop: {{[0-9]+}} instructions per iteration; tensor 12 mufu 66
// CHECK-NEXT:    key: HGMMA 12 WARPGROUP 4 MUFU 66 FFMA {{[0-9]+}} FMUL {{[0-9]+}} FADD 0 FMNMX {{6[4-9]}} F2FP 32

// The same with the rescale every block (rescale=always; the default until
// run 55): no spill and no serialization; 130 rescale FMULs per 80 keys.
// CHECK-LABEL: fat_attention_fwd_bf16_d256_h8_8_bhsd_causal_lse_m128n80s2_ot132: registers {{[0-9]+}} spill_bytes 0 local_memory 0 mufu_ex2 {{[0-9]+}} hgmma 64x256x16:10 64x80x16:32
// CHECK-NEXT:    main loop: {{[0-9]+}} instructions per iteration; tensor 21 mufu 42
// CHECK-NEXT:    key: HGMMA 21 WARPGROUP 4 MUFU 42 FFMA {{[0-9]+}} FMUL {{1[23][0-9]}}

func.func @d64(%q: memref<?x16x?x64xbf16>, %o: memref<?x16x?x64xbf16>) {
  fat.attention ins(%q, %q, %q : memref<?x16x?x64xbf16>, memref<?x16x?x64xbf16>, memref<?x16x?x64xbf16>)
      outs(%o : memref<?x16x?x64xbf16>)
  return
}

func.func @d64_causal(%q: memref<?x16x?x64xbf16>, %o: memref<?x16x?x64xbf16>) {
  fat.attention ins(%q, %q, %q : memref<?x16x?x64xbf16>, memref<?x16x?x64xbf16>, memref<?x16x?x64xbf16>)
      outs(%o : memref<?x16x?x64xbf16>) causal
  return
}

func.func @d128_causal(%q: memref<?x16x?x128xbf16>, %o: memref<?x16x?x128xbf16>) {
  fat.attention ins(%q, %q, %q : memref<?x16x?x128xbf16>, memref<?x16x?x128xbf16>, memref<?x16x?x128xbf16>)
      outs(%o : memref<?x16x?x128xbf16>) causal
  return
}

func.func @d256_causal_lse(%q: memref<?x8x?x256xbf16>, %o: memref<?x8x?x256xbf16>, %l: memref<?x8x?xf32>) {
  fat.attention ins(%q, %q, %q : memref<?x8x?x256xbf16>, memref<?x8x?x256xbf16>, memref<?x8x?x256xbf16>)
      outs(%o : memref<?x8x?x256xbf16>) lse(%l : memref<?x8x?xf32>) causal
  return
}
