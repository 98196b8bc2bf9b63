// RUN: fa-t-opt %s --transform-interpreter -split-input-file -verify-diagnostics | FileCheck %s
// RUN: fa-t-opt %s --transform-interpreter --fat-tensorize="rowsum=mma" -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=TENSORIZE

// transform.fat.tile_attention drives --fat-tile's rewrite from a transform
// script (FatTransformOps.td): the same scf.forall over (b, h, 128-row
// query block) of KV loops, tagged with fat.tile, and a handle to it.

// CHECK-LABEL: func.func @tensor_form
// CHECK:         %[[F:.+]] = scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) = (0, 0, 0) to (1, 2, 256) step (1, 1, 128)
// CHECK-COUNT-3:   fat.qk {{.+}} : tensor<128x64xbf16>, tensor<64x64xbf16> -> tensor<128x64xf32>
// CHECK:           fat.finalize
// CHECK:         } {fat.tile = {block_m = 128 : i64, block_n = 64 : i64, seq_len = 256 : i64, stages = 2 : i64}}
// CHECK:         return %[[F]]
// The tiled result feeds --fat-tensorize like fat-tile's own.
// TENSORIZE-LABEL: func.func @tensor_form
// TENSORIZE-COUNT-3: fat.wgmma {{.+}} a_from registers shape [64, 72, 16]
func.func @tensor_form(%q: tensor<1x2x256x64xbf16>, %k: tensor<1x2x256x64xbf16>,
                       %v: tensor<1x2x256x64xbf16>, %o: tensor<1x2x256x64xbf16>)
    -> tensor<1x2x256x64xbf16> {
  // expected-remark @+1 {{tiled}}
  %r = fat.attention ins(%q, %k, %v : tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>,
                                      tensor<1x2x256x64xbf16>)
                     outs(%o : tensor<1x2x256x64xbf16>) causal -> tensor<1x2x256x64xbf16>
  return %r : tensor<1x2x256x64xbf16>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %a = transform.structured.match ops{["fat.attention"]} in %root
        : (!transform.any_op) -> !transform.any_op
    %t = transform.fat.tile_attention %a tile_sizes [128, 64]
        : (!transform.any_op) -> !transform.any_op
    transform.debug.emit_remark_at %t, "tiled" : !transform.any_op
    transform.yield
  }
}

// -----

// The memref form is first brought to the tensor form (to_tensor,
// materialize_in_destination), as --fat-tile does.
// CHECK-LABEL: func.func @memref_form
// CHECK:         bufferization.to_tensor
// CHECK:         %[[F:.+]] = scf.forall
// CHECK:         } {fat.tile = {block_m = 64 : i64, block_n = 32 : i64, seq_len = 96 : i64, stages = 2 : i64}}
// CHECK:         bufferization.materialize_in_destination %[[F]]
func.func @memref_form(%q: memref<1x1x64x64xf16>, %k: memref<1x1x96x64xf16>,
                       %v: memref<1x1x96x64xf16>, %o: memref<1x1x64x64xf16>) {
  fat.attention ins(%q, %k, %v : memref<1x1x64x64xf16>, memref<1x1x96x64xf16>,
                                 memref<1x1x96x64xf16>)
                outs(%o : memref<1x1x64x64xf16>)
  return
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %a = transform.structured.match ops{["fat.attention"]} in %root
        : (!transform.any_op) -> !transform.any_op
    %t = transform.fat.tile_attention %a tile_sizes [64, 32]
        : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}

// -----

// A target that is not a fat.attention: a silenceable failure, reported.
func.func @not_attention(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-note @+1 {{target op}}
  %y = arith.addf %x, %x : tensor<4xf32>
  return %y : tensor<4xf32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %a = transform.structured.match ops{["arith.addf"]} in %root
        : (!transform.any_op) -> !transform.any_op
    // expected-error @+1 {{expected a fat.attention target}}
    %t = transform.fat.tile_attention %a tile_sizes [64, 32]
        : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}

// -----

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %a = transform.structured.match ops{["fat.attention"]} in %root
        : (!transform.any_op) -> !transform.any_op
    // expected-error @+1 {{expected block_n in [1, 1024], got 0}}
    %t = transform.fat.tile_attention %a tile_sizes [64, 0]
        : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}

// -----

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %a = transform.structured.match ops{["fat.attention"]} in %root
        : (!transform.any_op) -> !transform.any_op
    // expected-error @+1 {{expected tile_sizes [block_m, block_n], got 3 sizes}}
    %t = transform.fat.tile_attention %a tile_sizes [64, 32, 16]
        : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}
