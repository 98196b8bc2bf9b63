// RUN: fa-t-opt %s --fat-pipeline -split-input-file -verify-diagnostics

// fat-pipeline reads the attention off loops tagged fat.tile; one written by
// hand that is not fat-tile's (wrong index count, a fat.tile that is not a
// dictionary, no tensorized KV loop inside) is refused by name, never read
// past its shape.

func.func @not_a_dictionary(%o: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{fat-pipeline: expected fat-tile's loop: three indices (b, h, query block) and a fat.tile dictionary}}
  %r = scf.forall (%i) in (4) shared_outs(%a = %o) -> (tensor<4xf32>) {
    scf.forall.in_parallel {
    }
  } {fat.tile = 3}
  return %r : tensor<4xf32>
}

// -----

func.func @no_kv_loop(%o: tensor<1x1x64x64xbf16>) -> tensor<1x1x64x64xbf16> {
  // expected-error @+1 {{fat-pipeline: expected the tensorized KV loop of one attention (the Q·Kᵀ and P·V fat.wgmma, fat.softmax_max, fat.softmax_exp, fat.rescale of O, fat.finalize) in this fat.tile loop}}
  %r = scf.forall (%b, %h, %i) in (1, 1, 1) shared_outs(%a = %o) -> (tensor<1x1x64x64xbf16>) {
    scf.forall.in_parallel {
    }
  } {fat.tile = {block_m = 64 : i64, block_n = 64 : i64, stages = 2 : i64, seq_len = 64 : i64}}
  return %r : tensor<1x1x64x64xbf16>
}
