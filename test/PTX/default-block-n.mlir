// RUN: rm -rf %t && mkdir -p %t/a %t/s3 %t/off
// RUN: fa-t-opt %s --fat-to-ptx="output-dir=%t/a" -o /dev/null
// RUN: ls %t/a | FileCheck %s --check-prefix=AUTO
// RUN: fa-t-opt %s --fat-to-ptx="stages=3 output-dir=%t/s3" -o /dev/null
// RUN: ls %t/s3 | FileCheck %s --check-prefix=S3
// RUN: fa-t-opt %s --fat-to-ptx="persistent=off output-dir=%t/off" -o /dev/null
// RUN: ls %t/off | FileCheck %s --check-prefix=OFF
// RUN: rm -rf %t/pp && mkdir -p %t/pp && fa-t-opt %s --fat-to-ptx="pingpong=on output-dir=%t/pp" -o /dev/null
// RUN: ls %t/pp | FileCheck %s --check-prefix=PP

// block-m = 0 (defaultBlockM): 192 query rows (three consumer warpgroups)
// at D = 64 without a mask, also without persistent CTAs; 128 under the
// causal mask, at D = 128, and wherever ping-pong is forced (turns are for
// two warpgroups).
//
// block-n = 0 (defaultBlockN): 176 keys for the persistent D = 128 kernel
// without a mask, 128 with the causal mask and at D = 64 (tensor-core row
// sums; D = 256's 80 is in attention-d256.mlir). The wide block is a preference: with three stages
// it does not fit shared memory and the default falls back to 128 keys
// instead of failing; without persistent CTAs it is not taken.

// AUTO:      fat_attention_fwd_bf16_d128_h16_16_bhsd_causal_m128n128s2q2_opt132.ptx
// AUTO:      fat_attention_fwd_bf16_d128_h16_16_bhsd_m128n176s2_opt132.ptx
// AUTO:      fat_attention_fwd_bf16_d64_h16_16_bhsd_causal_m128n128s2q2_opt132.ptx
// AUTO:      fat_attention_fwd_bf16_d64_h16_16_bhsd_m192n128s2q2_ort132.ptx

// S3:        fat_attention_fwd_bf16_d128_h16_16_bhsd_m128n128s3_opt132.ptx

// OFF:       fat_attention_fwd_bf16_d128_h16_16_bhsd_m128n128s2.ptx
// OFF:       fat_attention_fwd_bf16_d64_h16_16_bhsd_m192n128s2_or.ptx

// PP:        fat_attention_fwd_bf16_d64_h16_16_bhsd_m128n128s2q2_oprt132.ptx

func.func @d128(%q: memref<?x16x?x128xbf16>, %o: memref<?x16x?x128xbf16>) {
  fat.attention ins(%q, %q, %q : memref<?x16x?x128xbf16>, memref<?x16x?x128xbf16>, memref<?x16x?x128xbf16>)
      outs(%o : memref<?x16x?x128xbf16>)
  return
}

func.func @d128_causal(%q: memref<?x16x?x128xbf16>, %o: memref<?x16x?x128xbf16>) {
  fat.attention ins(%q, %q, %q : memref<?x16x?x128xbf16>, memref<?x16x?x128xbf16>, memref<?x16x?x128xbf16>)
      outs(%o : memref<?x16x?x128xbf16>) causal
  return
}

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
