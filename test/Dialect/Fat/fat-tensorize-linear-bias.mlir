// RUN: fa-t-opt %s --split-input-file --fat-tile --fat-tensorize="linear-bias=mma" --verify-diagnostics | FileCheck %s

// linear-bias=mma: ALiBi's s − slope_h·(i − j) leaves the vector units. Q·Kᵀ
// takes one more k16 step on extra columns (TensorizeBias.cpp): beside Q the
// region's factor G = slope_h (here read from a capture) as
// fat.bias_query_columns at the block's (q_start, kv_start), beside K the key
// offsets fat.bias_key_columns; the region goes, and the softmax constant
// becomes scale·log2 e = 0.125·1.4427 (the scores are unscaled again).

// CHECK-LABEL: func.func @alibi
// CHECK-DAG:     %[[C:.+]] = arith.constant 0.180336878 : f32
// CHECK-DAG:     %[[SC:.+]] = arith.constant 1.250000e-01 : f32
// CHECK:         scf.forall (%[[B:.+]], %[[H:.+]], %[[I0:.+]]) =
// CHECK:           scf.for
// CHECK:             %[[X:.+]] = fat.bias_query_columns at(%[[B]], %[[H]], %[[I0]], %[[J0:.+]]) scale %[[SC]] captures(%[[SL:.+]] : tensor<4xf32>) {
// CHECK-NEXT:        ^bb0(%{{.+}}: index, %[[HH:.+]]: index, %[[T:.+]]: tensor<4xf32>):
// CHECK-NEXT:          %[[G:.+]] = tensor.extract %[[T]][%[[HH]]] : tensor<4xf32>
// CHECK-NEXT:          fat.yield %[[G]] : f32
// CHECK-NEXT:        } : tensor<128x16xbf16>
// CHECK-NEXT:        %[[R:.+]] = fat.bias_key_columns : tensor<128x16xbf16>
// CHECK-NEXT:        %[[QX:.+]] = tensor.concat dim(1) %[[Q:.+]], %[[X]] : (tensor<128x64xbf16>, tensor<128x16xbf16>) -> tensor<128x80xbf16>
// CHECK-NEXT:        %[[KR:.+]] = tensor.concat dim(1) %[[K:.+]], %[[R]] : (tensor<128x64xbf16>, tensor<128x16xbf16>) -> tensor<128x80xbf16>
// CHECK-NEXT:        %[[S:.+]] = fat.wgmma %[[QX]], %[[KR]] transpose_b a_from smem shape [64, 128, 16] : tensor<128x80xbf16>, tensor<128x80xbf16> -> tensor<128x128xf32>
// CHECK-NEXT:        %[[SM:.+]] = fat.mask %[[S]] at(%{{.+}}, %[[J0]])
// CHECK-NEXT:        %{{.+}}, %{{.+}} = fat.softmax_max %[[SM]], %{{.+}} scale %[[C]]
// CHECK-NEXT:        fat.softmax_exp %[[SM]], %{{.+}} scale %[[C]]
// CHECK-NOT:     fat.score_mod
// CHECK:         linear_bias = "mma"
func.func @alibi(%q: tensor<1x4x256x64xbf16>, %k: tensor<1x4x256x64xbf16>,
                 %v: tensor<1x4x256x64xbf16>, %o: tensor<1x4x256x64xbf16>,
                 %slopes: tensor<4xf32>) -> tensor<1x4x256x64xbf16> {
  %n = fat.attention ins(%q, %k, %v : tensor<1x4x256x64xbf16>, tensor<1x4x256x64xbf16>, tensor<1x4x256x64xbf16>)
      outs(%o : tensor<1x4x256x64xbf16>) captures(%slopes : tensor<4xf32>) causal
      score {
      ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index, %sl: tensor<4xf32>):
        %slope = tensor.extract %sl[%h] : tensor<4xf32>
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

// The term the other way round, s + slope·(i − j): G = −slope (the region's
// slice of the factor cloned, then negated; the constant folds).

// CHECK-LABEL: func.func @alibi_reversed
// CHECK:         fat.bias_query_columns
// CHECK-NEXT:    ^bb0(%{{.+}}: index, %{{.+}}: index):
// CHECK-NEXT:      %[[G:.+]] = arith.constant -2.500000e-01 : f32
// CHECK-NEXT:      fat.yield %[[G]] : f32
func.func @alibi_reversed(%q: tensor<1x4x256x64xbf16>, %k: tensor<1x4x256x64xbf16>,
                          %v: tensor<1x4x256x64xbf16>, %o: tensor<1x4x256x64xbf16>)
    -> tensor<1x4x256x64xbf16> {
  %n = fat.attention ins(%q, %k, %v : tensor<1x4x256x64xbf16>, tensor<1x4x256x64xbf16>, tensor<1x4x256x64xbf16>)
      outs(%o : tensor<1x4x256x64xbf16>)
      score {
      ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
        %slope = arith.constant 0.25 : f32
        %d = arith.subi %i, %j : index
        %d64 = arith.index_cast %d : index to i64
        %df = arith.sitofp %d64 : i64 to f32
        %bias = arith.mulf %df, %slope : f32
        %y = arith.addf %x, %bias : f32
        fat.yield %y : f32
      } -> tensor<1x4x256x64xbf16>
  return %n : tensor<1x4x256x64xbf16>
}

// -----

// The LSE would see the per-row constant the biased scores miss.
func.func @alibi_lse(%q: tensor<1x4x256x64xbf16>, %k: tensor<1x4x256x64xbf16>,
                     %v: tensor<1x4x256x64xbf16>, %o: tensor<1x4x256x64xbf16>,
                     %lse: tensor<1x4x256xf32>)
    -> (tensor<1x4x256x64xbf16>, tensor<1x4x256xf32>) {
  // expected-error @+1 {{linear-bias=mma needs a kernel that writes no LSE}}
  %r:2 = fat.attention ins(%q, %k, %v : tensor<1x4x256x64xbf16>, tensor<1x4x256x64xbf16>, tensor<1x4x256x64xbf16>)
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
  return %r#0, %r#1 : tensor<1x4x256x64xbf16>, tensor<1x4x256xf32>
}

// -----

// A factor that reads the key is no linear bias.
func.func @not_linear(%q: tensor<1x4x256x64xbf16>, %k: tensor<1x4x256x64xbf16>,
                      %v: tensor<1x4x256x64xbf16>, %o: tensor<1x4x256x64xbf16>)
    -> tensor<1x4x256x64xbf16> {
  // expected-error @+1 {{linear-bias=mma needs the score region to be s + G·(j − i)}}
  %n = fat.attention ins(%q, %k, %v : tensor<1x4x256x64xbf16>, tensor<1x4x256x64xbf16>, tensor<1x4x256x64xbf16>)
      outs(%o : tensor<1x4x256x64xbf16>)
      score {
      ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
        %j64 = arith.index_cast %j : index to i64
        %slope = arith.sitofp %j64 : i64 to f32
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

func.func @no_region(%q: tensor<1x4x256x64xbf16>, %k: tensor<1x4x256x64xbf16>,
                     %v: tensor<1x4x256x64xbf16>, %o: tensor<1x4x256x64xbf16>)
    -> tensor<1x4x256x64xbf16> {
  // expected-error @+1 {{linear-bias=mma needs a score region s + G·(j − i); this attention has none}}
  %n = fat.attention ins(%q, %k, %v : tensor<1x4x256x64xbf16>, tensor<1x4x256x64xbf16>, tensor<1x4x256x64xbf16>)
      outs(%o : tensor<1x4x256x64xbf16>) -> tensor<1x4x256x64xbf16>
  return %n : tensor<1x4x256x64xbf16>
}

// -----

// f16 cannot hold the query columns' G/scale times key offsets.
func.func @alibi_f16(%q: tensor<1x4x256x64xf16>, %k: tensor<1x4x256x64xf16>,
                     %v: tensor<1x4x256x64xf16>, %o: tensor<1x4x256x64xf16>)
    -> tensor<1x4x256x64xf16> {
  // expected-error @+1 {{linear-bias=mma needs bf16 inputs}}
  %n = fat.attention ins(%q, %k, %v : tensor<1x4x256x64xf16>, tensor<1x4x256x64xf16>, tensor<1x4x256x64xf16>)
      outs(%o : tensor<1x4x256x64xf16>)
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
