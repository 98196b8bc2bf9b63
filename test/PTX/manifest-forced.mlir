// RUN: rm -rf %t && mkdir -p %t
// RUN: fa-t-opt %s --fat-to-ptx="output-dir=%t" -o /dev/null
// RUN: FileCheck %s --check-prefix=AUTO < %t/fat_attention_fwd_bf16_d64_h8_8_bhsd_m192n128s2q2_ort132c.json
// RUN: fa-t-opt %s --fat-to-ptx="rowsum=mma output-dir=%t" -o /dev/null
// RUN: FileCheck %s --check-prefix=AUTO < %t/fat_attention_fwd_bf16_d64_h8_8_bhsd_m192n128s2q2_ort132c.json
// RUN: fa-t-opt %s --fat-to-ptx="rowsum=vector output-dir=%t" -o /dev/null
// RUN: FileCheck %s --check-prefix=FORCED < %t/fat_attention_fwd_bf16_d64_h8_8_bhsd_m192n128s2q2_ot132c.json
// RUN: rm -rf %t/fresh && fa-t-opt %s --fat-to-ptx="rowsum=mma output-dir=%t/fresh" -o /dev/null
// RUN: FileCheck %s --check-prefix=FORCED < %t/fresh/fat_attention_fwd_bf16_d64_h8_8_bhsd_m192n128s2q2_ort132c.json

// The manifest says whether the cost model chose the schedule ("forced":
// false) or a pass option forced it (an ablation variant). D = 64 without
// a mask: the cost model picks rowsum=mma and persistent CTAs (kernel
// suffix _ort132c). Forcing that
// same choice into the same folder rewrites an identical kernel and keeps
// it marked as the cost model's; forcing rowsum=vector gives another kernel,
// marked forced; forcing rowsum=mma into an empty folder marks it forced.

// AUTO:       "schedule": {
// AUTO:         "forced": false,
// FORCED:     "schedule": {
// FORCED:       "forced": true,

func.func @d64(%q: memref<?x8x?x64xbf16>, %o: memref<?x8x?x64xbf16>) {
  fat.attention ins(%q, %q, %q : memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>)
      outs(%o : memref<?x8x?x64xbf16>)
  return
}
