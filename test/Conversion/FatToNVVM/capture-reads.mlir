// RUN: fa-t-opt %s --fat-tile="seq-len=4096" --fat-tensorize="relative-bias=vector" --fat-pipeline --convert-fat-to-nvvm | FileCheck %s --check-prefix=EARLY
// RUN: fa-t-opt %s --fat-tile="seq-len=4096" --fat-tensorize="relative-bias=vector" --fat-pipeline --convert-fat-to-nvvm="capture-reads=late" | FileCheck %s --check-prefix=LATE
// RUN: not fa-t-opt %s --convert-fat-to-nvvm="capture-reads=soon" 2>&1 | FileCheck %s --check-prefix=BAD

// Where a score region's reads of a captured tensor are issued: a relative
// bias table T[h, j − i + 4095] at D = 128 (bench_mods.py's relative-bias).
// The region's lowering versions the tile's reads (in bounds: one address
// plus constant offsets; else each index clamped) in an scf.if that yields
// the loaded values only (tagged fat.score_reads); the elements, s + T, use
// them after it. The reads depend on the block's position, not on S, so
// with capture-reads=early (default) the version moves to the top of its
// block — in the overlapped key loop's step before the wait for K_j, the
// GEMMs' issue and the `wait_group 1` that retires S = Q·Kᵀ — and the
// loads run while the step waits; the wait's register fences and the
// elements stay after it. With capture-reads=late the version follows the
// wait and its fences.

// EARLY-LABEL: llvm.func @fat_attention_fwd
// EARLY:         } {fat.score_reads}
// EARLY-NEXT:    arith.constant
// EARLY:         nvvm.mbarrier.try_wait.parity
// EARLY:         nvvm.wgmma.wait.group.sync.aligned 0
// EARLY:         } {fat.stage = "mask"}
// EARLY:         scf.for
// EARLY:         %[[READS:[0-9]+]]:64 = scf.if %{{[0-9]+}} -> (f32,
// EARLY:           nvvm.prefetch level = {{ *}}L1
// EARLY:           llvm.load %{{[0-9]+}} invariant : !llvm.ptr<1> -> f32
// EARLY:         } else {
// EARLY:           arith.minsi
// EARLY:           llvm.load %{{[0-9]+}} invariant : !llvm.ptr<1> -> f32
// EARLY:         } {fat.score_reads}
// EARLY:         nvvm.mbarrier.try_wait.parity
// EARLY:         nvvm.wgmma.fence.aligned
// EARLY:         nvvm.wgmma.wait.group.sync.aligned 1
// EARLY-NEXT:    llvm.inline_asm has_side_effects asm_dialect = att "", "=f,0"
// EARLY:         arith.addf %{{[0-9]+}}, %[[READS]]#0 fastmath<contract> : f32
// EARLY:         fat.stage = "mainloop"

// LATE-LABEL:  llvm.func @fat_attention_fwd
// LATE:          nvvm.wgmma.wait.group.sync.aligned 0
// LATE:          } {fat.score_reads}
// LATE:          } {fat.stage = "mask"}
// LATE:          nvvm.wgmma.wait.group.sync.aligned 1
// LATE-NEXT:     llvm.inline_asm has_side_effects asm_dialect = att "", "=f,0"
// LATE:          %[[READS:[0-9]+]]:64 = scf.if %{{[0-9]+}} -> (f32,
// LATE:          } {fat.score_reads}
// LATE:          arith.addf %{{[0-9]+}}, %[[READS]]#0 fastmath<contract> : f32
// LATE:          fat.stage = "mainloop"

// BAD: convert-fat-to-nvvm: capture-reads must be early or late, got 'soon'

func.func @fat_attention_fwd(%q: tensor<?x16x?x128xbf16>, %k: tensor<?x16x?x128xbf16>, %v: tensor<?x16x?x128xbf16>, %o: tensor<?x16x?x128xbf16>, %table: tensor<16x8191xf32>) -> (tensor<?x16x?x128xbf16>) {
  %r = fat.attention
    ins(%q, %k, %v : tensor<?x16x?x128xbf16>, tensor<?x16x?x128xbf16>, tensor<?x16x?x128xbf16>)
    outs(%o : tensor<?x16x?x128xbf16>)
    captures(%table : tensor<16x8191xf32>)
 score {
^bb0(%score: f32, %b: index, %h: index, %q_idx: index, %kv_idx: index, %t: tensor<16x8191xf32>):
  %v1 = arith.subi %kv_idx, %q_idx : index
  %v2 = arith.constant 4095 : index
  %v3 = arith.addi %v1, %v2 : index
  %v4 = tensor.extract %t[%h, %v3] : tensor<16x8191xf32>
  %v5 = arith.addf %score, %v4 : f32
  fat.yield %v5 : f32
}
    -> tensor<?x16x?x128xbf16>
  return %r : tensor<?x16x?x128xbf16>
}
