// RUN: fa-t-opt %s --split-input-file --fat-tile="block-m=64 block-n=64" --fat-tensorize="row-max=online" | FileCheck %s
// RUN: fa-t-opt %s --split-input-file --fat-tile="block-m=64 block-n=64" --fat-tensorize="row-max=online" --fat-to-cpu | FileCheck %s --check-prefix=CPU

// fat-tensorize moves a score region's positive constant output factor A
// (s' = A·g) into the softmax constant (c = A·log2 e, fat.softmax_max and
// fat.softmax_exp) and the LSE's factor on m (fat.finalize's scale), so the
// region yields g: the soft-cap's ×30 leaves the body, its ÷30 stays (the
// kernel's scale takes it in fat-pipeline).

// CHECK-LABEL: func.func @softcap
// CHECK:         %[[C:.+]] = arith.constant 43.2808495 : f32
// CHECK:         fat.score_mod %{{.+}} scale 1.250000e-01 {
// CHECK-NEXT:    ^bb0(%[[X:[a-z0-9_]+]]: f32,
// CHECK-NEXT:      %[[THIRTY:.+]] = arith.constant 3.000000e+01 : f32
// CHECK-NEXT:      %[[Y:.+]] = arith.divf %[[X]], %[[THIRTY]] : f32
// CHECK-NEXT:      %[[T:.+]] = math.tanh %[[Y]] : f32
// CHECK-NEXT:      fat.yield %[[T]] : f32
// CHECK:         fat.softmax_max %{{.+}}, %{{.+}} scale %[[C]]
// CHECK:         fat.softmax_exp %{{.+}}, %{{.+}} scale %[[C]]
// CHECK:         fat.finalize %{{.+}} scale 3.000000e+01
// The folded form runs on the CPU (numerics: test/CPU/test_modifications_numerics.py).
// CPU-LABEL:   llvm.func @softcap
// CPU-NOT:       fat.
func.func @softcap(%q: tensor<1x2x256x64xbf16>, %k: tensor<1x2x256x64xbf16>,
                   %v: tensor<1x2x256x64xbf16>, %o: tensor<1x2x256x64xbf16>,
                   %l: tensor<1x2x256xf32>)
    -> (tensor<1x2x256x64xbf16>, tensor<1x2x256xf32>) {
  %r:2 = fat.attention ins(%q, %k, %v : tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>)
      outs(%o : tensor<1x2x256x64xbf16>) lse(%l : tensor<1x2x256xf32>) causal
      score {
      ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
        %c = arith.constant 30.0 : f32
        %y = arith.divf %x, %c : f32
        %t = math.tanh %y : f32
        %z = arith.mulf %t, %c : f32
        fat.yield %z : f32
      } -> tensor<1x2x256x64xbf16>, tensor<1x2x256xf32>
  return %r#0, %r#1 : tensor<1x2x256x64xbf16>, tensor<1x2x256xf32>
}

// -----

// A negative factor does not commute with the row max: the body keeps it.
// CHECK-LABEL: func.func @negative_factor
// CHECK:         fat.score_mod
// CHECK:           %[[Z:.+]] = arith.mulf %{{.+}}, %{{.+}} : f32
// CHECK-NEXT:      fat.yield %[[Z]] : f32
// CHECK:         fat.softmax_max %{{.+}}, %{{.+}} scale %[[C:.+]] :
// CHECK:         fat.finalize %{{.+}} scale 1.000000e+00
func.func @negative_factor(%q: tensor<1x2x256x64xbf16>, %k: tensor<1x2x256x64xbf16>,
                           %v: tensor<1x2x256x64xbf16>, %o: tensor<1x2x256x64xbf16>)
    -> tensor<1x2x256x64xbf16> {
  %r = fat.attention ins(%q, %k, %v : tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>)
      outs(%o : tensor<1x2x256x64xbf16>)
      score {
      ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
        %c = arith.constant -2.0 : f32
        %t = math.tanh %x : f32
        %z = arith.mulf %t, %c : f32
        fat.yield %z : f32
      } -> tensor<1x2x256x64xbf16>
  return %r : tensor<1x2x256x64xbf16>
}

// -----

// A factor that is not a constant (here the score itself) stays.
// CHECK-LABEL: func.func @score_times_score
// CHECK:         fat.score_mod
// CHECK:           %[[Z:.+]] = arith.mulf %{{.+}}, %{{.+}} : f32
// CHECK-NEXT:      fat.yield %[[Z]] : f32
// CHECK:         fat.finalize %{{.+}} scale 1.000000e+00
func.func @score_times_score(%q: tensor<1x2x256x64xbf16>, %k: tensor<1x2x256x64xbf16>,
                             %v: tensor<1x2x256x64xbf16>, %o: tensor<1x2x256x64xbf16>)
    -> tensor<1x2x256x64xbf16> {
  %r = fat.attention ins(%q, %k, %v : tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>)
      outs(%o : tensor<1x2x256x64xbf16>)
      score {
      ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
        %t = math.tanh %x : f32
        %z = arith.mulf %t, %x : f32
        fat.yield %z : f32
      } -> tensor<1x2x256x64xbf16>
  return %r : tensor<1x2x256x64xbf16>
}
