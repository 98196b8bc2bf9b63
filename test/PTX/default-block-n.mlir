// RUN: rm -rf %t && mkdir -p %t/a %t/s3 %t/off
// RUN: fa-t-opt %s --fat-to-ptx="output-dir=%t/a" -o /dev/null
// RUN: ls %t/a | FileCheck %s --check-prefix=AUTO
// RUN: fa-t-opt %s --fat-to-ptx="stages=3 output-dir=%t/s3" -o /dev/null
// RUN: ls %t/s3 | FileCheck %s --check-prefix=S3
// RUN: fa-t-opt %s --fat-to-ptx="persistent=off output-dir=%t/off" -o /dev/null
// RUN: ls %t/off | FileCheck %s --check-prefix=OFF
// RUN: rm -rf %t/pp && mkdir -p %t/pp && fa-t-opt %s --fat-to-ptx="pingpong=on output-dir=%t/pp" -o /dev/null
// RUN: ls %t/pp | FileCheck %s --check-prefix=PP
// RUN: rm -rf %t/short && mkdir -p %t/short && fa-t-opt %s --fat-to-ptx="seq-len=1024 output-dir=%t/short" -o /dev/null
// RUN: ls %t/short | FileCheck %s --check-prefix=SHORT
// RUN: rm -rf %t/long && mkdir -p %t/long && fa-t-opt %s --fat-to-ptx="seq-len=4096 output-dir=%t/long" -o /dev/null
// RUN: ls %t/long | FileCheck %s --check-prefix=LONG
// RUN: FileCheck %s --check-prefix=LONGJSON < %t/long/fat_attention_fwd_bf16_d64_h16_16_bhsd_causal_m192n128s2q2_ort132cd.json
// RUN: rm -rf %t/8k && mkdir -p %t/8k && fa-t-opt %s --fat-to-ptx="seq-len=8192 output-dir=%t/8k" -o /dev/null
// RUN: ls %t/8k | FileCheck %s --check-prefix=LONGER
// RUN: rm -rf %t/static && mkdir -p %t/static && fa-t-opt %s --split-input-file --fat-to-ptx="output-dir=%t/static" -o /dev/null
// RUN: ls %t/static | FileCheck %s --check-prefix=STATIC

// block-m = 0 (defaultBlockM): 192 query rows (three consumer warpgroups)
// at D = 64 without a mask; 128 under the causal mask and at D = 128.
//
// block-n = 0 (defaultBlockN): 176 keys for the persistent D = 128 kernel
// without a mask, 128 with the causal mask and at D = 64 (tensor-core row
// sums; D = 256's 80 is in attention-d256.mlir). The wide block is a
// preference: with three stages it does not fit shared memory and the
// default falls back to 128 keys instead of failing.
//
// The blocks are fat-tile's decision, made for the schedule the cost models
// choose: a schedule choice forced later (persistent=off, pingpong=on)
// keeps them — the kernel without persistent CTAs runs fat-tile's 176-key
// blocks, the forced turns at D = 64 go round three warpgroups.

// AUTO:      fat_attention_fwd_bf16_d128_h16_16_bhsd_causal_m128n128s2q2_opl8t132.ptx
// AUTO:      fat_attention_fwd_bf16_d128_h16_16_bhsd_m128n176s2_opt132.ptx
// AUTO:      fat_attention_fwd_bf16_d64_h16_16_bhsd_causal_m128n128s2q2_oprt132.ptx
// AUTO:      fat_attention_fwd_bf16_d64_h16_16_bhsd_m192n128s2q2_ort132c.ptx

// S3:        fat_attention_fwd_bf16_d128_h16_16_bhsd_m128n128s3_opt132.ptx

// OFF:       fat_attention_fwd_bf16_d128_h16_16_bhsd_m128n176s2.ptx
// OFF:       fat_attention_fwd_bf16_d64_h16_16_bhsd_m192n128s2_or.ptx

// PP:        fat_attention_fwd_bf16_d64_h16_16_bhsd_m192n128s2q2_oprt132.ptx

// seq-len (the key length the tiles are tuned for; every kernel still serves
// every length): below 2k keys D = 128 without a mask takes 128-key blocks
// and two Q buffers, below 8k 160-key blocks and two Q buffers (both store
// O staged through Q), from 8k 176 keys and one buffer (O direct); from 4k
// the causal D = 128 kernel takes 160 keys, and
// the causal D = 64 kernel 192 query rows — three warpgroups, hence no
// ping-pong, but tile overlap and the tensor-core row sums. The manifest
// records the length.
// SHORT:     fat_attention_fwd_bf16_d128_h16_16_bhsd_causal_m128n128s2q2_opl8t132.ptx
// SHORT:     fat_attention_fwd_bf16_d128_h16_16_bhsd_m128n128s2q2_opt132.ptx
// SHORT:     fat_attention_fwd_bf16_d64_h16_16_bhsd_causal_m128n128s2q2_oprt132.ptx
// SHORT:     fat_attention_fwd_bf16_d64_h16_16_bhsd_m192n128s2q2_ort132c.ptx
// LONG:      fat_attention_fwd_bf16_d128_h16_16_bhsd_causal_m128n160s2q2_opl8t132.ptx
// LONG:      fat_attention_fwd_bf16_d128_h16_16_bhsd_m128n160s2q2_opt132.ptx
// LONG:      fat_attention_fwd_bf16_d64_h16_16_bhsd_causal_m192n128s2q2_ort132cd.ptx
// LONG:      fat_attention_fwd_bf16_d64_h16_16_bhsd_m192n128s2q2_ort132c.ptx
// LONGJSON:  "seq_len": 4096,
// LONGER:    fat_attention_fwd_bf16_d128_h16_16_bhsd_m128n176s2_opt132.ptx
// A static key length tunes like seq-len (the last split: Skv = 16384).
// STATIC:    fat_attention_fwd_bf16_d64_h4_4_bhsd_causal_m192n128s2q2_ort132cd.ptx

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

// -----

func.func @d64_causal_static(%q: memref<1x4x16384x64xbf16>, %o: memref<1x4x16384x64xbf16>) {
  fat.attention ins(%q, %q, %q : memref<1x4x16384x64xbf16>, memref<1x4x16384x64xbf16>, memref<1x4x16384x64xbf16>)
      outs(%o : memref<1x4x16384x64xbf16>) causal
  return
}
