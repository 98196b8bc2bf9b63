// RUN: fa-t-opt %s --split-input-file --fat-tile --fat-tensorize | FileCheck %s
// RUN: fa-t-opt %s --split-input-file --fat-tile --fat-tensorize=linear-bias=vector | FileCheck %s --check-prefix=VEC

// Forcing the vector form where auto takes the columns is a forced choice
// (the manifest says so; kernel lookup prefers the cost model's kernels).
// VEC-LABEL: func.func @alibi
// VEC:         fat.score_mod
// VEC:         fat.schedule = {{{.*}}forced = true

// linear-bias=auto: fat-tensorize's cost model takes a linear position bias
// s + G·(j − i) (ALiBi) onto the tensor cores (Q·Kᵀ's bias columns) where
// it applies and pays — bf16, no LSE, no mask region computing with
// positions beside it, room in shared memory for the key columns (perf log
// run 115b: +3.8…6.1% over the vector form) — and records the choice as
// made by the cost model (forced = false). Elsewhere the region stays.

// CHECK-LABEL: func.func @alibi
// CHECK:         scf.for
// CHECK:           %[[X:.+]] = fat.bias_query_columns at(%{{.+}}) scale %{{.+}} {
// CHECK:           %[[R:.+]] = fat.bias_key_columns : tensor<128x16xbf16>
// CHECK:           %[[QX:.+]] = tensor.concat dim(1) %{{.+}}, %[[X]] : (tensor<128x64xbf16>, tensor<128x16xbf16>) -> tensor<128x80xbf16>
// CHECK:           %[[KR:.+]] = tensor.concat dim(1) %{{.+}}, %[[R]] : (tensor<128x64xbf16>, tensor<128x16xbf16>) -> tensor<128x80xbf16>
// CHECK:           fat.wgmma %[[QX]], %[[KR]] transpose_b a_from smem
// CHECK-NOT:     fat.score_mod
// CHECK:         fat.schedule = {{{.*}}forced = false, linear_bias = "mma"
func.func @alibi(%q: tensor<1x4x256x64xbf16>, %k: tensor<1x4x256x64xbf16>,
    %v: tensor<1x4x256x64xbf16>, %o: tensor<1x4x256x64xbf16>)
    -> tensor<1x4x256x64xbf16> {
  %n = fat.attention ins(%q, %k, %v : tensor<1x4x256x64xbf16>, tensor<1x4x256x64xbf16>, tensor<1x4x256x64xbf16>)
      outs(%o : tensor<1x4x256x64xbf16>) causal
      score {
      ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
        %slope = arith.constant 0.25 : f32
        %d = arith.subi %i, %j : index
        %d64 = arith.index_cast %d : index to i64
        %df = arith.sitofp %d64 : i64 to f32
        %bias = arith.mulf %slope, %df : f32
        %y = arith.subf %x, %bias : f32
        fat.yield %y : f32
      } -> tensor<1x4x256x64xbf16>
  return %n : tensor<1x4x256x64xbf16>
}

// -----

// The LSE would see the constant per row the bias columns leave out.
// CHECK-LABEL: func.func @alibi_lse
// CHECK-NOT:     fat.bias_query_columns
// CHECK:         fat.score_mod
// CHECK-NOT:     linear_bias
// CHECK:         return
func.func @alibi_lse(%q: tensor<1x4x256x64xbf16>, %k: tensor<1x4x256x64xbf16>,
    %v: tensor<1x4x256x64xbf16>, %o: tensor<1x4x256x64xbf16>, %lse: tensor<1x4x256xf32>)
    -> (tensor<1x4x256x64xbf16>, tensor<1x4x256xf32>) {
  %n:2 = fat.attention ins(%q, %k, %v : tensor<1x4x256x64xbf16>, tensor<1x4x256x64xbf16>, tensor<1x4x256x64xbf16>)
      outs(%o : tensor<1x4x256x64xbf16>) lse(%lse : tensor<1x4x256xf32>) causal
      score {
      ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
        %slope = arith.constant 0.25 : f32
        %d = arith.subi %i, %j : index
        %d64 = arith.index_cast %d : index to i64
        %df = arith.sitofp %d64 : i64 to f32
        %bias = arith.mulf %slope, %df : f32
        %y = arith.subf %x, %bias : f32
        fat.yield %y : f32
      } -> tensor<1x4x256x64xbf16>, tensor<1x4x256xf32>
  return %n#0, %n#1 : tensor<1x4x256x64xbf16>, tensor<1x4x256xf32>
}

// -----

// f16 overflows with G/scale times key offsets.
// CHECK-LABEL: func.func @alibi_f16
// CHECK-NOT:     fat.bias_query_columns
// CHECK:         fat.score_mod
// CHECK-NOT:     linear_bias
// CHECK:         return
func.func @alibi_f16(%q: tensor<1x4x256x64xf16>, %k: tensor<1x4x256x64xf16>,
    %v: tensor<1x4x256x64xf16>, %o: tensor<1x4x256x64xf16>)
    -> tensor<1x4x256x64xf16> {
  %n = fat.attention ins(%q, %k, %v : tensor<1x4x256x64xf16>, tensor<1x4x256x64xf16>, tensor<1x4x256x64xf16>)
      outs(%o : tensor<1x4x256x64xf16>) causal
      score {
      ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
        %slope = arith.constant 0.25 : f32
        %d = arith.subi %i, %j : index
        %d64 = arith.index_cast %d : index to i64
        %df = arith.sitofp %d64 : i64 to f32
        %bias = arith.mulf %slope, %df : f32
        %y = arith.subf %x, %bias : f32
        fat.yield %y : f32
      } -> tensor<1x4x256x64xf16>
  return %n : tensor<1x4x256x64xf16>
}

// -----

// A mask region that computes with positions keeps the bias beside it on the
// vector units (the query columns spilled there).
// CHECK-LABEL: func.func @alibi_window_region
// CHECK-NOT:     fat.bias_query_columns
// CHECK:         fat.score_mod
// CHECK:         fat.mask_mod
// CHECK-NOT:     linear_bias
// CHECK:         return
func.func @alibi_window_region(%q: tensor<1x4x256x64xbf16>, %k: tensor<1x4x256x64xbf16>,
    %v: tensor<1x4x256x64xbf16>, %o: tensor<1x4x256x64xbf16>)
    -> tensor<1x4x256x64xbf16> {
  %n = fat.attention ins(%q, %k, %v : tensor<1x4x256x64xbf16>, tensor<1x4x256x64xbf16>, tensor<1x4x256x64xbf16>)
      outs(%o : tensor<1x4x256x64xbf16>) causal
      score {
      ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
        %slope = arith.constant 0.25 : f32
        %d = arith.subi %i, %j : index
        %d64 = arith.index_cast %d : index to i64
        %df = arith.sitofp %d64 : i64 to f32
        %bias = arith.mulf %slope, %df : f32
        %y = arith.subf %x, %bias : f32
        fat.yield %y : f32
      }
      mask {
      ^bb0(%b: index, %h: index, %i: index, %j: index):
        %w = arith.subi %i, %j : index
        %c64 = arith.constant 64 : index
        %near = arith.cmpi ult, %w, %c64 : index
        fat.yield %near : i1
      } -> tensor<1x4x256x64xbf16>
  return %n : tensor<1x4x256x64xbf16>
}

// -----

// D = 256 causal from 2k keys: the key columns do not fit beside two 80-key K and V
// stages (at 1k keys and below, 64-key blocks leave room).
// CHECK-LABEL: func.func @alibi_d256
// CHECK-NOT:     fat.bias_query_columns
// CHECK:         fat.score_mod
// CHECK-NOT:     linear_bias
// CHECK:         return
func.func @alibi_d256(%q: tensor<1x4x4096x256xbf16>, %k: tensor<1x4x4096x256xbf16>,
    %v: tensor<1x4x4096x256xbf16>, %o: tensor<1x4x4096x256xbf16>)
    -> tensor<1x4x4096x256xbf16> {
  %n = fat.attention ins(%q, %k, %v : tensor<1x4x4096x256xbf16>, tensor<1x4x4096x256xbf16>, tensor<1x4x4096x256xbf16>)
      outs(%o : tensor<1x4x4096x256xbf16>) causal
      score {
      ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
        %slope = arith.constant 0.25 : f32
        %d = arith.subi %i, %j : index
        %d64 = arith.index_cast %d : index to i64
        %df = arith.sitofp %d64 : i64 to f32
        %bias = arith.mulf %slope, %df : f32
        %y = arith.subf %x, %bias : f32
        fat.yield %y : f32
      } -> tensor<1x4x4096x256xbf16>
  return %n : tensor<1x4x4096x256xbf16>
}

// -----

// Under a causal mask from 4k keys at D = 64 and 128 the bias becomes
// weights on P (linearBiasAsWeights, perf log run 147): fat.key_weights
// gives the block's 128 weights and one offset per 64-key run, both softmax
// ops add the offsets, P is multiplied by the weights after its rounding and
// P·V reads [V | ones] (the row sums on the tensor cores). D = 64 keeps the
// plain kernel's 192 rows. Below 4k keys (@alibi above, 256 keys) the
// columns with two warpgroups.
// CHECK-LABEL: func.func @alibi_4k
// CHECK-NOT:     fat.bias_query_columns
// CHECK:         %[[S:.+]] = fat.wgmma {{.*}} : tensor<192x64xbf16>, tensor<128x64xbf16> -> tensor<192x128xf32>
// CHECK:         %[[M:.+]] = fat.mask %[[S]]
// CHECK:         %[[W:.+]], %[[O:.+]]:2 = fat.key_weights at(%{{.+}}, %{{.+}}, %{{.+}}) scale %{{.+}} {
// CHECK:         } : tensor<128xbf16>, f32, f32
// CHECK:         %{{.+}}, %[[A:.+]] = fat.softmax_max %[[M]], %{{.+}} scale %{{.+}} offset(%[[O]]#0, %[[O]]#1)
// CHECK:         %[[E:.+]] = fat.softmax_exp %[[M]], %{{.+}} scale %{{.+}} offset(%[[O]]#0, %[[O]]#1)
// CHECK:         %[[P:.+]] = arith.truncf %[[E]] : tensor<192x128xf32> to tensor<192x128xbf16>
// CHECK:         %[[WB:.+]] = linalg.broadcast ins(%[[W]] : tensor<128xbf16>)
// CHECK:         %[[PW:.+]] = arith.mulf %[[P]], %[[WB]] : tensor<192x128xbf16>
// CHECK:         fat.wgmma %[[PW]], %{{.+}}, %{{.+}} a_from registers shape [64, 72, 16]
// CHECK-NOT:     fat.score_mod
// CHECK:         fat.schedule = {{{.*}}forced = false, linear_bias = "weights"{{.*}}rowsum = "mma"}, fat.tile = {block_m = 192 : i64
// CHECK:         return
func.func @alibi_4k(%q: tensor<1x4x4096x64xbf16>, %k: tensor<1x4x4096x64xbf16>,
    %v: tensor<1x4x4096x64xbf16>, %o: tensor<1x4x4096x64xbf16>)
    -> tensor<1x4x4096x64xbf16> {
  %n = fat.attention ins(%q, %k, %v : tensor<1x4x4096x64xbf16>, tensor<1x4x4096x64xbf16>, tensor<1x4x4096x64xbf16>)
      outs(%o : tensor<1x4x4096x64xbf16>) causal
      score {
      ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
        %slope = arith.constant 0.25 : f32
        %d = arith.subi %i, %j : index
        %d64 = arith.index_cast %d : index to i64
        %df = arith.sitofp %d64 : i64 to f32
        %bias = arith.mulf %slope, %df : f32
        %y = arith.subf %x, %bias : f32
        fat.yield %y : f32
      } -> tensor<1x4x4096x64xbf16>
  return %n : tensor<1x4x4096x64xbf16>
}

// -----

// With the LSE (the vector form at every length) the same problem keeps two
// warpgroups: its per-element region was not measured with three.
// CHECK-LABEL: func.func @alibi_4k_lse
// CHECK:         %[[S:.+]] = fat.wgmma {{.*}} : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
// CHECK:         fat.score_mod %[[S]]
// CHECK:         fat.tile = {block_m = 128 : i64
func.func @alibi_4k_lse(%q: tensor<1x4x4096x64xbf16>, %k: tensor<1x4x4096x64xbf16>,
    %v: tensor<1x4x4096x64xbf16>, %o: tensor<1x4x4096x64xbf16>, %lse: tensor<1x4x4096xf32>)
    -> (tensor<1x4x4096x64xbf16>, tensor<1x4x4096xf32>) {
  %n:2 = fat.attention ins(%q, %k, %v : tensor<1x4x4096x64xbf16>, tensor<1x4x4096x64xbf16>, tensor<1x4x4096x64xbf16>)
      outs(%o : tensor<1x4x4096x64xbf16>) lse(%lse : tensor<1x4x4096xf32>) causal
      score {
      ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
        %slope = arith.constant 0.25 : f32
        %d = arith.subi %i, %j : index
        %d64 = arith.index_cast %d : index to i64
        %df = arith.sitofp %d64 : i64 to f32
        %bias = arith.mulf %slope, %df : f32
        %y = arith.subf %x, %bias : f32
        fat.yield %y : f32
      } -> tensor<1x4x4096x64xbf16>, tensor<1x4x4096xf32>
  return %n#0, %n#1 : tensor<1x4x4096x64xbf16>, tensor<1x4x4096xf32>
}

// -----

// At D = 128 from 8k keys the plain causal kernel takes 160-key blocks,
// where the ones columns the weights need do not fit: fat-tile sees the
// choice coming and keeps 128.
// CHECK-LABEL: func.func @alibi_d128_16k
// CHECK:         fat.key_weights
// CHECK:         fat.schedule = {{{.*}}linear_bias = "weights"{{.*}}fat.tile = {block_m = 128 : i64, block_n = 128 : i64
func.func @alibi_d128_16k(%q: tensor<1x4x16384x128xbf16>, %k: tensor<1x4x16384x128xbf16>,
    %v: tensor<1x4x16384x128xbf16>, %o: tensor<1x4x16384x128xbf16>)
    -> tensor<1x4x16384x128xbf16> {
  %n = fat.attention ins(%q, %k, %v : tensor<1x4x16384x128xbf16>, tensor<1x4x16384x128xbf16>, tensor<1x4x16384x128xbf16>)
      outs(%o : tensor<1x4x16384x128xbf16>) causal
      score {
      ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
        %slope = arith.constant 0.25 : f32
        %d = arith.subi %i, %j : index
        %d64 = arith.index_cast %d : index to i64
        %df = arith.sitofp %d64 : i64 to f32
        %bias = arith.mulf %slope, %df : f32
        %y = arith.subf %x, %bias : f32
        fat.yield %y : f32
      } -> tensor<1x4x16384x128xbf16>
  return %n : tensor<1x4x16384x128xbf16>
}

// -----

// A constant slope past the weights' exact range (|G| ≤ 35/31.5 for 64-key
// runs) stays per score: auto's choice is no error, the region the vector
// form's (the ones columns already chosen).
// CHECK-LABEL: func.func @alibi_steep
// CHECK-NOT:     fat.key_weights
// CHECK:         fat.score_mod
// CHECK-NOT:     linear_bias
// CHECK:         fat.schedule = {{{.*}}forced = false{{.*}}rowsum = "mma"}
func.func @alibi_steep(%q: tensor<1x4x4096x64xbf16>, %k: tensor<1x4x4096x64xbf16>,
    %v: tensor<1x4x4096x64xbf16>, %o: tensor<1x4x4096x64xbf16>)
    -> tensor<1x4x4096x64xbf16> {
  %n = fat.attention ins(%q, %k, %v : tensor<1x4x4096x64xbf16>, tensor<1x4x4096x64xbf16>, tensor<1x4x4096x64xbf16>)
      outs(%o : tensor<1x4x4096x64xbf16>) causal
      score {
      ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
        %slope = arith.constant 1.5 : f32
        %d = arith.subi %i, %j : index
        %d64 = arith.index_cast %d : index to i64
        %df = arith.sitofp %d64 : i64 to f32
        %bias = arith.mulf %slope, %df : f32
        %y = arith.subf %x, %bias : f32
        fat.yield %y : f32
      } -> tensor<1x4x4096x64xbf16>
  return %n : tensor<1x4x4096x64xbf16>
}
