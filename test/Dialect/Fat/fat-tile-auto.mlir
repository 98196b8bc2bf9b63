// fat-tile's automatic block shapes (block-m = block-n = 0, the default) are
// the Hopper kernel's: the blocks fat-pipeline builds with every schedule
// choice left to the cost models. The forall records what it was tiled for.
//
// RUN: fa-t-opt %s --fat-tile -split-input-file | FileCheck %s
// RUN: fa-t-opt %s --fat-tile="stages=3" -split-input-file | FileCheck %s --check-prefix=S3
// RUN: fa-t-opt %s --fat-tile="seq-len=1024 block-m=64" -split-input-file | FileCheck %s --check-prefix=TUNED
// RUN: not fa-t-opt %s --fat-tile="stages=5" 2>&1 | FileCheck %s --check-prefix=BADS
// RUN: not fa-t-opt %s --fat-tile="seq-len=-1" 2>&1 | FileCheck %s --check-prefix=BADL

// BADS: fat-tile: option stages must be in [1, 4] (the depth of the kernel's K/V ring), or 0 for the op's entry else 2, got 5
// BADL: fat-tile: option seq-len must be a key length to tune the tiles for, or 0 (the op's static key length), got -1

// D = 64 without a mask: three consumer warpgroups (192 rows) of 128 keys.
// CHECK-LABEL: func.func @d64
// CHECK:         scf.forall {{.*}} step (1, 1, 192)
// CHECK:           fat.qk {{.*}} -> tensor<192x128xf32>
// CHECK:         } {fat.tile = {block_m = 192 : i64, block_n = 128 : i64, seq_len = 4096 : i64, stages = 2 : i64}}
// S3:          } {fat.tile = {block_m = 192 : i64, block_n = 128 : i64, seq_len = 4096 : i64, stages = 3 : i64}}
// A given block-m stays; tuned for 1k keys.
// TUNED-LABEL: func.func @d64
// TUNED:         } {fat.tile = {block_m = 64 : i64, block_n = 128 : i64, seq_len = 1024 : i64, stages = 2 : i64}}
func.func @d64(%q: tensor<1x4x4096x64xbf16>, %k: tensor<1x4x4096x64xbf16>,
               %v: tensor<1x4x4096x64xbf16>, %o: tensor<1x4x4096x64xbf16>)
    -> tensor<1x4x4096x64xbf16> {
  %r = fat.attention ins(%q, %k, %v : tensor<1x4x4096x64xbf16>, tensor<1x4x4096x64xbf16>, tensor<1x4x4096x64xbf16>)
         outs(%o : tensor<1x4x4096x64xbf16>) -> tensor<1x4x4096x64xbf16>
  return %r : tensor<1x4x4096x64xbf16>
}

// -----

// D = 128 tuned for 16k keys: persistent CTAs with vector row sums take
// 176-key blocks; three stages of them do not fit beside Q, so 128.
// CHECK-LABEL: func.func @d128
// CHECK:         } {fat.tile = {block_m = 128 : i64, block_n = 176 : i64, seq_len = 16384 : i64, stages = 2 : i64}}
// S3-LABEL:    func.func @d128
// S3:            } {fat.tile = {block_m = 128 : i64, block_n = 128 : i64, seq_len = 16384 : i64, stages = 3 : i64}}
// TUNED-LABEL: func.func @d128
// TUNED:         } {fat.tile = {block_m = 64 : i64, block_n = 128 : i64, seq_len = 1024 : i64, stages = 2 : i64}}
func.func @d128(%q: tensor<1x4x16384x128xbf16>, %k: tensor<1x4x16384x128xbf16>,
                %v: tensor<1x4x16384x128xbf16>, %o: tensor<1x4x16384x128xbf16>)
    -> tensor<1x4x16384x128xbf16> {
  %r = fat.attention ins(%q, %k, %v : tensor<1x4x16384x128xbf16>, tensor<1x4x16384x128xbf16>, tensor<1x4x16384x128xbf16>)
         outs(%o : tensor<1x4x16384x128xbf16>) -> tensor<1x4x16384x128xbf16>
  return %r : tensor<1x4x16384x128xbf16>
}

// -----

// Causal D = 64: 192 rows (with the dynamic tile scheduler) from 2k keys,
// two warpgroups with turns below (perf log runs 139b and 140: +4.7% at
// 2k, −9% at 1k).
// CHECK-LABEL: func.func @d64_causal_2k
// CHECK:         } {fat.tile = {block_m = 192 : i64, block_n = 128 : i64, seq_len = 2048 : i64, stages = 2 : i64}}
// CHECK-LABEL: func.func @d64_causal_1k
// CHECK:         } {fat.tile = {block_m = 128 : i64, block_n = 128 : i64, seq_len = 1024 : i64, stages = 2 : i64}}
func.func @d64_causal_2k(%q: tensor<1x4x2048x64xbf16>, %k: tensor<1x4x2048x64xbf16>,
                         %v: tensor<1x4x2048x64xbf16>, %o: tensor<1x4x2048x64xbf16>)
    -> tensor<1x4x2048x64xbf16> {
  %r = fat.attention ins(%q, %k, %v : tensor<1x4x2048x64xbf16>, tensor<1x4x2048x64xbf16>, tensor<1x4x2048x64xbf16>)
         outs(%o : tensor<1x4x2048x64xbf16>) causal -> tensor<1x4x2048x64xbf16>
  return %r : tensor<1x4x2048x64xbf16>
}
func.func @d64_causal_1k(%q: tensor<1x4x1024x64xbf16>, %k: tensor<1x4x1024x64xbf16>,
                         %v: tensor<1x4x1024x64xbf16>, %o: tensor<1x4x1024x64xbf16>)
    -> tensor<1x4x1024x64xbf16> {
  %r = fat.attention ins(%q, %k, %v : tensor<1x4x1024x64xbf16>, tensor<1x4x1024x64xbf16>, tensor<1x4x1024x64xbf16>)
         outs(%o : tensor<1x4x1024x64xbf16>) causal -> tensor<1x4x1024x64xbf16>
  return %r : tensor<1x4x1024x64xbf16>
}

// -----

// f32 has no Hopper kernel (the reference path serves it): 128 × 128.
// CHECK-LABEL: func.func @f32
// CHECK:         } {fat.tile = {block_m = 128 : i64, block_n = 128 : i64, seq_len = 300 : i64, stages = 2 : i64}}
func.func @f32(%q: tensor<1x1x200x64xf32>, %k: tensor<1x1x300x64xf32>,
               %v: tensor<1x1x300x64xf32>, %o: tensor<1x1x200x64xf32>)
    -> tensor<1x1x200x64xf32> {
  %r = fat.attention ins(%q, %k, %v : tensor<1x1x200x64xf32>, tensor<1x1x300x64xf32>, tensor<1x1x300x64xf32>)
         outs(%o : tensor<1x1x200x64xf32>) causal -> tensor<1x1x200x64xf32>
  return %r : tensor<1x1x200x64xf32>
}

// -----

// D = 64 with a linear position bias (ALiBi): two consumer warpgroups
// either way. Without an LSE fat-tensorize's linear-bias=auto takes the bias
// onto the tensor cores, whose query columns spilled in the 160 registers
// of three; writing the LSE keeps the region on the vector units, whose
// per-element index math spilled there too (perf log run 83).
// CHECK-LABEL: func.func @d64_alibi
// CHECK:         } {fat.tile = {block_m = 128 : i64, block_n = 128 : i64, seq_len = 4096 : i64, stages = 2 : i64}}
// CHECK-LABEL: func.func @d64_alibi_lse
// CHECK:         } {fat.tile = {block_m = 128 : i64, block_n = 128 : i64, seq_len = 4096 : i64, stages = 2 : i64}}
func.func @d64_alibi(%q: tensor<1x4x4096x64xbf16>, %k: tensor<1x4x4096x64xbf16>,
                     %v: tensor<1x4x4096x64xbf16>, %o: tensor<1x4x4096x64xbf16>)
    -> tensor<1x4x4096x64xbf16> {
  %r = fat.attention ins(%q, %k, %v : tensor<1x4x4096x64xbf16>, tensor<1x4x4096x64xbf16>, tensor<1x4x4096x64xbf16>)
         outs(%o : tensor<1x4x4096x64xbf16>)
         score {
         ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
           %d = arith.subi %i, %j : index
           %d64 = arith.index_cast %d : index to i64
           %df = arith.sitofp %d64 : i64 to f32
           %c = arith.constant 0.0625 : f32
           %bias = arith.mulf %c, %df : f32
           %y = arith.subf %s, %bias : f32
           fat.yield %y : f32
         } -> tensor<1x4x4096x64xbf16>
  return %r : tensor<1x4x4096x64xbf16>
}
func.func @d64_alibi_lse(%q: tensor<1x4x4096x64xbf16>, %k: tensor<1x4x4096x64xbf16>,
                         %v: tensor<1x4x4096x64xbf16>, %o: tensor<1x4x4096x64xbf16>,
                         %lse: tensor<1x4x4096xf32>)
    -> (tensor<1x4x4096x64xbf16>, tensor<1x4x4096xf32>) {
  %r:2 = fat.attention ins(%q, %k, %v : tensor<1x4x4096x64xbf16>, tensor<1x4x4096x64xbf16>, tensor<1x4x4096x64xbf16>)
         outs(%o : tensor<1x4x4096x64xbf16>) lse(%lse : tensor<1x4x4096xf32>)
         score {
         ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
           %d = arith.subi %i, %j : index
           %d64 = arith.index_cast %d : index to i64
           %df = arith.sitofp %d64 : i64 to f32
           %c = arith.constant 0.0625 : f32
           %bias = arith.mulf %c, %df : f32
           %y = arith.subf %s, %bias : f32
           fat.yield %y : f32
         } -> tensor<1x4x4096x64xbf16>, tensor<1x4x4096xf32>
  return %r#0, %r#1 : tensor<1x4x4096x64xbf16>, tensor<1x4x4096xf32>
}

// -----

// A soft-cap reads the score only: 192 rows as without a region. Under a
// causal mask its bounded scores take two warpgroups at every length (perf
// log runs 113 and 117), where a region-free causal kernel takes 192 rows
// from 4k keys.
// CHECK-LABEL: func.func @d64_softcap
// CHECK:         } {fat.tile = {block_m = 192 : i64, block_n = 128 : i64, seq_len = 4096 : i64, stages = 2 : i64}}
// CHECK-LABEL: func.func @d64_softcap_causal
// CHECK:         } {fat.tile = {block_m = 128 : i64, block_n = 128 : i64, seq_len = 4096 : i64, stages = 2 : i64}}
// CHECK-LABEL: func.func @d64_softcap_causal_16k
// CHECK:         } {fat.tile = {block_m = 128 : i64, block_n = 128 : i64, seq_len = 16384 : i64, stages = 2 : i64}}
func.func @d64_softcap(%q: tensor<1x4x4096x64xbf16>, %k: tensor<1x4x4096x64xbf16>,
                       %v: tensor<1x4x4096x64xbf16>, %o: tensor<1x4x4096x64xbf16>)
    -> tensor<1x4x4096x64xbf16> {
  %r = fat.attention ins(%q, %k, %v : tensor<1x4x4096x64xbf16>, tensor<1x4x4096x64xbf16>, tensor<1x4x4096x64xbf16>)
         outs(%o : tensor<1x4x4096x64xbf16>)
         score {
         ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
           %c = arith.constant 30.0 : f32
           %x = arith.divf %s, %c : f32
           %t = math.tanh %x : f32
           %y = arith.mulf %t, %c : f32
           fat.yield %y : f32
         } -> tensor<1x4x4096x64xbf16>
  return %r : tensor<1x4x4096x64xbf16>
}
func.func @d64_softcap_causal(%q: tensor<1x4x4096x64xbf16>, %k: tensor<1x4x4096x64xbf16>,
                       %v: tensor<1x4x4096x64xbf16>, %o: tensor<1x4x4096x64xbf16>)
    -> tensor<1x4x4096x64xbf16> {
  %r = fat.attention ins(%q, %k, %v : tensor<1x4x4096x64xbf16>, tensor<1x4x4096x64xbf16>, tensor<1x4x4096x64xbf16>)
         outs(%o : tensor<1x4x4096x64xbf16>) causal
         score {
         ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
           %c = arith.constant 30.0 : f32
           %x = arith.divf %s, %c : f32
           %t = math.tanh %x : f32
           %y = arith.mulf %t, %c : f32
           fat.yield %y : f32
         } -> tensor<1x4x4096x64xbf16>
  return %r : tensor<1x4x4096x64xbf16>
}
func.func @d64_softcap_causal_16k(%q: tensor<1x4x16384x64xbf16>, %k: tensor<1x4x16384x64xbf16>,
                       %v: tensor<1x4x16384x64xbf16>, %o: tensor<1x4x16384x64xbf16>)
    -> tensor<1x4x16384x64xbf16> {
  %r = fat.attention ins(%q, %k, %v : tensor<1x4x16384x64xbf16>, tensor<1x4x16384x64xbf16>, tensor<1x4x16384x64xbf16>)
         outs(%o : tensor<1x4x16384x64xbf16>) causal
         score {
         ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
           %c = arith.constant 30.0 : f32
           %x = arith.divf %s, %c : f32
           %t = math.tanh %x : f32
           %y = arith.mulf %t, %c : f32
           fat.yield %y : f32
         } -> tensor<1x4x16384x64xbf16>
  return %r : tensor<1x4x16384x64xbf16>
}

// -----

// D = 128 with ALiBi on the tensor cores: the plain kernel's 176-key
// blocks (the key columns, 176 × 32 bytes, fit beside them). Where the
// region stays on the vector units (the LSE is written) it reads positions:
// 128-key blocks, where 160 / 176 spilled the per-element index math (perf
// log run 86). The soft-cap takes its reference at the bound with the ones
// columns (row-max=bound, run 112), which leave room for 128-key blocks.
// CHECK-LABEL: func.func @d128_alibi
// CHECK:         } {fat.tile = {block_m = 128 : i64, block_n = 176 : i64, seq_len = 16384 : i64, stages = 2 : i64}}
// Causal below 8k keys the plain kernel's 160 keys would leave one Q buffer
// beside the key columns: 128 keys with two measured faster (run 116b).
// CHECK-LABEL: func.func @d128_alibi_causal_4k
// CHECK:         } {fat.tile = {block_m = 128 : i64, block_n = 128 : i64, seq_len = 4096 : i64, stages = 2 : i64}}
// CHECK-LABEL: func.func @d128_alibi_lse
// CHECK:         } {fat.tile = {block_m = 128 : i64, block_n = 128 : i64, seq_len = 16384 : i64, stages = 2 : i64}}
// CHECK-LABEL: func.func @d128_softcap
// CHECK:         } {fat.tile = {block_m = 128 : i64, block_n = 128 : i64, seq_len = 16384 : i64, stages = 2 : i64}}
func.func @d128_alibi(%q: tensor<1x4x16384x128xbf16>, %k: tensor<1x4x16384x128xbf16>,
                      %v: tensor<1x4x16384x128xbf16>, %o: tensor<1x4x16384x128xbf16>)
    -> tensor<1x4x16384x128xbf16> {
  %r = fat.attention ins(%q, %k, %v : tensor<1x4x16384x128xbf16>, tensor<1x4x16384x128xbf16>, tensor<1x4x16384x128xbf16>)
         outs(%o : tensor<1x4x16384x128xbf16>)
         score {
         ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
           %d = arith.subi %i, %j : index
           %d64 = arith.index_cast %d : index to i64
           %df = arith.sitofp %d64 : i64 to f32
           %c = arith.constant 0.0625 : f32
           %bias = arith.mulf %c, %df : f32
           %y = arith.subf %s, %bias : f32
           fat.yield %y : f32
         } -> tensor<1x4x16384x128xbf16>
  return %r : tensor<1x4x16384x128xbf16>
}
func.func @d128_alibi_causal_4k(%q: tensor<1x4x4096x128xbf16>, %k: tensor<1x4x4096x128xbf16>,
                      %v: tensor<1x4x4096x128xbf16>, %o: tensor<1x4x4096x128xbf16>)
    -> tensor<1x4x4096x128xbf16> {
  %r = fat.attention ins(%q, %k, %v : tensor<1x4x4096x128xbf16>, tensor<1x4x4096x128xbf16>, tensor<1x4x4096x128xbf16>)
         outs(%o : tensor<1x4x4096x128xbf16>) causal
         score {
         ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
           %d = arith.subi %i, %j : index
           %d64 = arith.index_cast %d : index to i64
           %df = arith.sitofp %d64 : i64 to f32
           %c = arith.constant 0.0625 : f32
           %bias = arith.mulf %c, %df : f32
           %y = arith.subf %s, %bias : f32
           fat.yield %y : f32
         } -> tensor<1x4x4096x128xbf16>
  return %r : tensor<1x4x4096x128xbf16>
}
func.func @d128_alibi_lse(%q: tensor<1x4x16384x128xbf16>, %k: tensor<1x4x16384x128xbf16>,
                         %v: tensor<1x4x16384x128xbf16>, %o: tensor<1x4x16384x128xbf16>,
                         %lse: tensor<1x4x16384xf32>)
    -> (tensor<1x4x16384x128xbf16>, tensor<1x4x16384xf32>) {
  %r:2 = fat.attention ins(%q, %k, %v : tensor<1x4x16384x128xbf16>, tensor<1x4x16384x128xbf16>, tensor<1x4x16384x128xbf16>)
         outs(%o : tensor<1x4x16384x128xbf16>) lse(%lse : tensor<1x4x16384xf32>)
         score {
         ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
           %d = arith.subi %i, %j : index
           %d64 = arith.index_cast %d : index to i64
           %df = arith.sitofp %d64 : i64 to f32
           %c = arith.constant 0.0625 : f32
           %bias = arith.mulf %c, %df : f32
           %y = arith.subf %s, %bias : f32
           fat.yield %y : f32
         } -> tensor<1x4x16384x128xbf16>, tensor<1x4x16384xf32>
  return %r#0, %r#1 : tensor<1x4x16384x128xbf16>, tensor<1x4x16384xf32>
}
func.func @d128_softcap(%q: tensor<1x4x16384x128xbf16>, %k: tensor<1x4x16384x128xbf16>,
                        %v: tensor<1x4x16384x128xbf16>, %o: tensor<1x4x16384x128xbf16>)
    -> tensor<1x4x16384x128xbf16> {
  %r = fat.attention ins(%q, %k, %v : tensor<1x4x16384x128xbf16>, tensor<1x4x16384x128xbf16>, tensor<1x4x16384x128xbf16>)
         outs(%o : tensor<1x4x16384x128xbf16>)
         score {
         ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
           %c = arith.constant 30.0 : f32
           %y = arith.divf %s, %c : f32
           %t = math.tanh %y : f32
           %z = arith.mulf %t, %c : f32
           fat.yield %z : f32
         } -> tensor<1x4x16384x128xbf16>
  return %r : tensor<1x4x16384x128xbf16>
}
