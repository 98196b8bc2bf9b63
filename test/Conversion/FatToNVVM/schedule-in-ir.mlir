// RUN: fa-t-opt %s --fat-tile --fat-tensorize --fat-pipeline="persistent=off" --convert-fat-to-nvvm | FileCheck %s --check-prefix=OVERLAP
// RUN: fa-t-opt %s --fat-tile --fat-tensorize --fat-pipeline="overlap=off persistent=off" --convert-fat-to-nvvm | FileCheck %s --check-prefix=PLAIN
// RUN: fa-t-opt %s --fat-tile --fat-tensorize --fat-pipeline="persistent=on pingpong=off tile-overlap=off" --convert-fat-to-nvvm | FileCheck %s --check-prefix=PERSIST

// The schedule is visible in the kernel IR: convert-fat-to-nvvm tags its
// structured ops with the warpgroup role, the stage and the issue order of
// the main loop (attributes close their regions, so they print inner first).

// OVERLAP-LABEL: llvm.func @fat_attention_fwd_bf16_d128_h16_4_bhsd_causal_m128n128s2_ol8(
// The producer's K/V loads, then the consumers: the causal mask on the
// diagonal blocks, the overlapped main loop, its prologue, the epilogue's
// loop over the staged rows of O and the role split closing both.
// OVERLAP:       } {fat.stage = "load"}
// OVERLAP:       } {fat.stage = "mask"}
// OVERLAP:       } {fat.order = ["wait K(j), V(j-1)", "S(j) = Q*K(j)^T", "O += P(j-1)*V(j-1)", "wait S (1 pending)", "softmax(j)", "wait O", "O = alpha*O"], fat.stage = "mainloop"}
// OVERLAP:       } {fat.stage = "prologue"}
// OVERLAP:       } {fat.stage = "epilogue"}
// OVERLAP:       } {fat.role = ["producer", "consumer"]}
// OVERLAP-NOT:   fat.tiles

// PLAIN-LABEL:   llvm.func @fat_attention_fwd_bf16_d128_h16_4_bhsd_causal_m128n128s2_nl8(
// PLAIN:         } {fat.stage = "load"}
// PLAIN:         } {fat.stage = "mask"}
// PLAIN:         } {fat.order = ["wait K(j)", "S(j) = Q*K(j)^T", "wait S", "softmax(j)", "O = alpha*O", "wait V(j)", "O += P(j)*V(j)", "wait O"], fat.stage = "mainloop"}
// PLAIN-NOT:     fat.stage = "prologue"
// PLAIN:         } {fat.role = ["producer", "consumer"]}

// Persistent: both roles loop over the work units, pairs of query blocks
// of one head (causal).
// PERSIST-LABEL: llvm.func @fat_attention_fwd_bf16_d128_h16_4_bhsd_causal_m128n128s2q2_ol8t132(
// PERSIST:       } {fat.stage = "load"}
// PERSIST:       } attributes {fat.tiles = "head-major-pairs"}
// PERSIST:       fat.stage = "mainloop"}
// PERSIST:       } {fat.stage = "prologue"}
// PERSIST:       } attributes {fat.tiles = "head-major-pairs"}
// PERSIST:       } {fat.role = ["producer", "consumer"]}

func.func @gqa_causal(%q: memref<?x16x?x128xbf16>, %kv: memref<?x4x?x128xbf16>,
                      %o: memref<?x16x?x128xbf16>) {
  fat.attention ins(%q, %kv, %kv : memref<?x16x?x128xbf16>, memref<?x4x?x128xbf16>,
                                   memref<?x4x?x128xbf16>) outs(%o : memref<?x16x?x128xbf16>) causal
  return
}
