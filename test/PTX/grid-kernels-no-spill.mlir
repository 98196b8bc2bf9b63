// REQUIRES: cuobjdump
// RUN: rm -rf %t && mkdir -p %t/1k %t/4k %t/8k
// RUN: fa-t-opt %s --fat-to-ptx="seq-len=1024 output-dir=%t/1k" -o /dev/null
// RUN: fa-t-opt %s --fat-to-ptx="seq-len=4096 output-dir=%t/4k" -o /dev/null
// RUN: fa-t-opt %s --fat-to-ptx="seq-len=8192 output-dir=%t/8k" -o /dev/null
// RUN: %python %fat_src_root/scripts/sass_profile.py %t/1k/*.ptx %t/4k/*.ptx %t/8k/*.ptx | FileCheck %s

// Every default kernel of the standard grid (bf16; D = 64, 128, 256 with
// the grid's 2048 hidden units; causal or not; tuned for 1k, 4k and 8k
// keys, which covers each distinct default choice (D = 256 causal takes
// 64-key blocks at 1k): 192 rows and tile
// overlap at D64, 128/160/176-key blocks at D128, 160 keys causal from 4k, 192
// causal rows with tile overlap from 4k at D64, masked with per-row limits)
// fits its registers: no spill, no local memory.
// The perf log's measurements are of exactly these kernels.
// CHECK-NOT: spill_bytes {{[1-9]}}
// CHECK: fat_attention_fwd_bf16_d128_h16_16_bhsd_causal_m128n128s2q2_opl8t132: registers {{[0-9]+}} spill_bytes 0 local_memory 0
// CHECK: fat_attention_fwd_bf16_d128_h16_16_bhsd_m128n128s2q2_opt132: registers {{[0-9]+}} spill_bytes 0 local_memory 0
// CHECK: fat_attention_fwd_bf16_d256_h8_8_bhsd_causal_m128n64s2_ol8t132: registers {{[0-9]+}} spill_bytes 0 local_memory 0
// CHECK: fat_attention_fwd_bf16_d256_h8_8_bhsd_m128n80s2_ol8t132: registers {{[0-9]+}} spill_bytes 0 local_memory 0
// CHECK: fat_attention_fwd_bf16_d64_h32_32_bhsd_causal_m128n128s2q2_oprt132: registers {{[0-9]+}} spill_bytes 0 local_memory 0
// CHECK: fat_attention_fwd_bf16_d64_h32_32_bhsd_m192n128s2q2_ort132c: registers {{[0-9]+}} spill_bytes 0 local_memory 0
// CHECK: fat_attention_fwd_bf16_d128_h16_16_bhsd_causal_m128n160s2q2_opl8t132: registers {{[0-9]+}} spill_bytes 0 local_memory 0
// CHECK: fat_attention_fwd_bf16_d128_h16_16_bhsd_m128n160s2q2_opt132: registers {{[0-9]+}} spill_bytes 0 local_memory 0
// CHECK: fat_attention_fwd_bf16_d256_h8_8_bhsd_causal_m128n80s2_ol8t132: registers {{[0-9]+}} spill_bytes 0 local_memory 0
// CHECK: fat_attention_fwd_bf16_d256_h8_8_bhsd_m128n80s2_ol8t132: registers {{[0-9]+}} spill_bytes 0 local_memory 0
// CHECK: fat_attention_fwd_bf16_d64_h32_32_bhsd_causal_m192n128s2q2_ort132cd: registers {{[0-9]+}} spill_bytes 0 local_memory 0
// CHECK: fat_attention_fwd_bf16_d64_h32_32_bhsd_m192n128s2q2_ort132c: registers {{[0-9]+}} spill_bytes 0 local_memory 0
// CHECK: fat_attention_fwd_bf16_d128_h16_16_bhsd_causal_m128n160s2q2_opl8t132: registers {{[0-9]+}} spill_bytes 0 local_memory 0
// CHECK: fat_attention_fwd_bf16_d128_h16_16_bhsd_m128n176s2_opt132: registers {{[0-9]+}} spill_bytes 0 local_memory 0
// CHECK: fat_attention_fwd_bf16_d256_h8_8_bhsd_causal_m128n80s2_ol8t132: registers {{[0-9]+}} spill_bytes 0 local_memory 0
// CHECK: fat_attention_fwd_bf16_d256_h8_8_bhsd_m128n80s2g_ol8t132: registers {{[0-9]+}} spill_bytes 0 local_memory 0
// CHECK: fat_attention_fwd_bf16_d64_h32_32_bhsd_causal_m192n128s2q2_ort132cd: registers {{[0-9]+}} spill_bytes 0 local_memory 0
// CHECK: fat_attention_fwd_bf16_d64_h32_32_bhsd_m192n128s2q2_ort132c: registers {{[0-9]+}} spill_bytes 0 local_memory 0
// CHECK-NOT: spill_bytes {{[1-9]}}

func.func @d64(%q: memref<?x32x?x64xbf16>, %o: memref<?x32x?x64xbf16>) {
  fat.attention ins(%q, %q, %q : memref<?x32x?x64xbf16>, memref<?x32x?x64xbf16>, memref<?x32x?x64xbf16>)
      outs(%o : memref<?x32x?x64xbf16>)
  return
}
func.func @d64_causal(%q: memref<?x32x?x64xbf16>, %o: memref<?x32x?x64xbf16>) {
  fat.attention ins(%q, %q, %q : memref<?x32x?x64xbf16>, memref<?x32x?x64xbf16>, memref<?x32x?x64xbf16>)
      outs(%o : memref<?x32x?x64xbf16>) causal
  return
}
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
func.func @d256(%q: memref<?x8x?x256xbf16>, %o: memref<?x8x?x256xbf16>) {
  fat.attention ins(%q, %q, %q : memref<?x8x?x256xbf16>, memref<?x8x?x256xbf16>, memref<?x8x?x256xbf16>)
      outs(%o : memref<?x8x?x256xbf16>)
  return
}
func.func @d256_causal(%q: memref<?x8x?x256xbf16>, %o: memref<?x8x?x256xbf16>) {
  fat.attention ins(%q, %q, %q : memref<?x8x?x256xbf16>, memref<?x8x?x256xbf16>, memref<?x8x?x256xbf16>)
      outs(%o : memref<?x8x?x256xbf16>) causal
  return
}
