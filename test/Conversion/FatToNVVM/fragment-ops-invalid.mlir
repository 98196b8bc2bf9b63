// RUN: fa-t-opt %s --convert-fat-to-nvvm -split-input-file -verify-diagnostics

// A #fat.wgmma_fragment tile may only reach the ops that convert-fat-to-nvvm
// distributes to registers: a tile escaping into any other op is an error
// naming that op, not a cast left in the output.

#frag = #fat.wgmma_fragment
gpu.module @k {
  func.func @escape(%s0: f32, %s1: f32, %s2: f32, %s3: f32, %c: f32) -> tensor<64xf32, #frag> {
    %s = builtin.unrealized_conversion_cast %s0, %s1, %s2, %s3
        : f32, f32, f32, f32 to tensor<64x8xf32, #frag>
    %m = builtin.unrealized_conversion_cast %s0, %s1 : f32, f32 to tensor<64xf32, #frag>
    %mn, %a = fat.softmax_max %s, %m scale %c : tensor<64x8xf32, #frag>, tensor<64xf32, #frag>
    // expected-error @+1 {{'func.return' op reads a #fat.wgmma_fragment tile, which only the kernel's tile ops (fat.wgmma_async, fat.wgmma_wait, fat.operand_fence, fat.mask, fat.score_mod, fat.mask_mod, fat.softmax_max, fat.softmax_exp, fat.rescale, fat.finalize, fat.convert_layout, fat.store_output, fat.stage_output, arith.truncf, arith.constant), scf loops and branches, and casts to registers may read: convert-fat-to-nvvm has no per-thread form for it}}
    return %mn : tensor<64xf32, #frag>
  }
}

// -----

// In a kernel a captured tensor is its address (an !llvm.ptr operand that
// fat-pipeline passes from the kernel's parameters); a tensor value has no
// way into the kernel's registers.
#frag = #fat.wgmma_fragment
gpu.module @k {
  func.func @captured(%s0: f32, %s1: f32, %s2: f32, %s3: f32, %i: index,
                      %slopes: tensor<4xf32>) -> (f32, f32, f32, f32) {
    %s = builtin.unrealized_conversion_cast %s0, %s1, %s2, %s3
        : f32, f32, f32, f32 to tensor<64x8xf32, #frag>
    // expected-error @+1 {{'fat.score_mod' op on a kernel tile expects each capture as the tensor's !llvm.ptr address, got 'tensor<4xf32>'}}
    %m = fat.score_mod %s at(%i, %i, %i, %i) len(%i, %i) scale 1.0
        captures(%slopes : tensor<4xf32>) {
    ^bb0(%x: f32, %bb: index, %hh: index, %qi: index, %kj: index, %t: tensor<4xf32>):
      %a = tensor.extract %t[%hh] : tensor<4xf32>
      %y = arith.addf %x, %a : f32
      fat.yield %y : f32
    } : tensor<64x8xf32, #frag>
    %r:4 = builtin.unrealized_conversion_cast %m : tensor<64x8xf32, #frag> to f32, f32, f32, f32
    return %r#0, %r#1, %r#2, %r#3 : f32, f32, f32, f32
  }
}
