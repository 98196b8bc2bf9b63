// RUN: fa-t-opt %s --fat-pipeline="overlap=off persistent=off" -split-input-file -verify-diagnostics | FileCheck %s
// RUN: fa-t-opt %s --fat-pipeline="overlap=on pingpong=off persistent=off" -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=OVERLAP

// The plain consumer loop (overlap = off) is the tensorized KV loop
// rewritten op by op onto the warpgroup's fragment tiles
// (AttentionKernelConsumer.cpp, rewriteKeyBlockStep): each fat.wgmma
// becomes ring wait, fat.wgmma_async and fat.wgmma_wait (S = Q·Kᵀ then
// releases K, O += P·V releases V); the softmax ops, O's rescale and P's
// rounding keep their order, names and attributes; slices and index
// arithmetic go (the rings address the blocks). This loop, written by hand,
// rounds P before it rescales O: the consumer does the same. It has no
// fat.mask, but the kernel serves every key length, so the ragged tail's
// mask (a uniform branch) comes before the softmax.

// CHECK-LABEL: gpu.module @fat_attention_fwd_bf16_d64_h2_2_bhsd_m128n128s2
// CHECK:         %[[KR:[0-9]+]] = fat.ring %{{[0-9]+}} : !ring1
// CHECK:         %[[VR:[0-9]+]] = fat.ring %{{[0-9]+}} : !ring2
// The producer is the same loop with the GEMMs' shared-memory operands as
// TMA copies into their rings: Q (defined outside the loop) once, then per
// key block K (Q·Kᵀ's B) and V (P·V's B) in the loop's order.
// CHECK:         fat.ring_acquire %{{[0-9]+}}[%{{.+}}] expect_tx 16384 : !ring
// CHECK-NEXT:    fat.tma_load
// CHECK:         scf.for
// CHECK:           fat.ring_acquire %[[KR]][%{{.+}}] expect_tx 16384 : !ring1
// CHECK-NEXT:      fat.tma_load
// CHECK-NEXT:      fat.ring_acquire %[[VR]][%{{.+}}] expect_tx 16384 : !ring2
// CHECK-NEXT:      fat.tma_load
// CHECK:         } {fat.stage = "load"}
// CHECK:         scf.for %{{.+}} iter_args(%[[O:[a-z0-9_]+]] = %{{.+}}, %[[M:[a-z0-9_]+]] = %{{.+}}, %[[L:[a-z0-9_]+]] = %{{.+}}) -> (tensor<64x64xf32, #fat.wgmma_fragment>, tensor<64xf32, #fat.wgmma_fragment>, tensor<64xf32, #fat.wgmma_fragment<partial>>)  : i32 {
// CHECK:           fat.ring_wait %[[KR]][%[[IT:[0-9]+]]]
// CHECK:           %[[SA:[0-9]+]] = fat.wgmma_async a_smem({{.+}}) transpose_b k 64 shape [64, 128, 16] bf16
// CHECK-NEXT:      %[[S:[0-9]+]] = fat.wgmma_wait pending(0) (%[[SA]])
// CHECK-NEXT:      fat.ring_release %[[KR]][%[[IT]]]
// CHECK:           %[[SM:[0-9]+]] = scf.if
// CHECK:             fat.mask %[[S]]
// CHECK:           } {fat.stage = "mask"}
// CHECK-NEXT:      %[[MN:[a-z0-9_]+]], %[[A:[a-z0-9_]+]] = fat.softmax_max %[[SM]], %[[M]] scale
// CHECK-NEXT:      %[[P:[a-z0-9_]+]], %[[LN:[a-z0-9_]+]] = fat.softmax_exp %[[SM]], %[[MN]] scale %{{.+}} rowsum(%[[L]], %[[A]])
// CHECK-NEXT:      %[[P16:[0-9]+]] = arith.truncf %[[P]] : tensor<64x128xf32, #fat.wgmma_fragment> to tensor<64x128xbf16, #fat.wgmma_fragment>
// CHECK-NEXT:      %[[OA:[0-9]+]] = fat.rescale %[[O]], %[[A]]
// CHECK-NEXT:      fat.ring_wait %[[VR]][%[[IT]]]
// CHECK:           %[[OV:[0-9]+]] = fat.wgmma_async a_regs(%[[P16]] : {{.+}}) b({{.+}}) acc(%[[OA]] : {{.+}}) k 128 shape [64, 64, 16] bf16
// CHECK-NEXT:      %[[ON:[0-9]+]] = fat.wgmma_wait pending(0) (%[[OV]])
// CHECK-NEXT:      fat.ring_release %[[VR]][%[[IT]]]
// CHECK-NEXT:      scf.yield %[[ON]], %[[MN]], %[[LN]]
// CHECK-NEXT:    } {fat.order = {{.+}}, fat.stage = "mainloop"}

// The overlapped schedule rewrites the same loop's ops from S to P in its
// order (the mask it lacks first, then the softmax) and places the GEMMs,
// P's rounding and O's rescale by its software pipeline: P·V of block
// j − 1 issued with S of block j, S waited for with that P·V in flight,
// O rescaled once it has retired.
// OVERLAP-LABEL: gpu.module @fat_attention_fwd_bf16_d64_h2_2_bhsd_m128n128s2
// OVERLAP:         scf.for %{{.+}} iter_args(%[[O:[a-z0-9_]+]] = %{{.+}}, %[[M:[a-z0-9_]+]] = %{{.+}}, %[[L:[a-z0-9_]+]] = %{{.+}}, %[[PP:[a-z0-9_]+]] = %{{.+}}) -> ({{.+}})  : i32 {
// OVERLAP:           %[[SA:[0-9]+]] = fat.wgmma_async a_smem({{.+}}) transpose_b
// OVERLAP:           %[[OV:[0-9]+]] = fat.wgmma_async a_regs(%[[PP]] : {{.+}}) b({{.+}}) acc(%[[O]] : {{.+}})
// OVERLAP-NEXT:      %[[S:[0-9]+]] = fat.wgmma_wait pending(1) (%[[SA]])
// OVERLAP:           %[[SM:[0-9]+]] = scf.if
// OVERLAP:             fat.mask %[[S]]
// OVERLAP:           } {fat.stage = "mask"}
// OVERLAP-NEXT:      %[[MN:[a-z0-9_]+]], %[[A:[a-z0-9_]+]] = fat.softmax_max %[[SM]], %[[M]] scale
// OVERLAP-NEXT:      %[[P:[a-z0-9_]+]], %[[LN:[a-z0-9_]+]] = fat.softmax_exp %[[SM]], %[[MN]] scale %{{.+}} rowsum(%[[L]], %[[A]])
// OVERLAP-NEXT:      %[[P16:[0-9]+]] = arith.truncf %[[P]]
// OVERLAP-NEXT:      %[[OW:[0-9]+]]:2 = fat.wgmma_wait pending(0) (%[[OV]], %[[PP]])
// OVERLAP-NEXT:      fat.ring_release
// OVERLAP-NEXT:      %[[OA:[0-9]+]] = fat.rescale %[[OW]]#0, %[[A]]
// OVERLAP-NEXT:      scf.yield %[[OA]], %[[MN]], %[[LN]], %[[P16]]
func.func @plain(%arg0: tensor<1x2x256x64xbf16>, %arg1: tensor<1x2x256x64xbf16>, %arg2: tensor<1x2x256x64xbf16>, %arg3: tensor<1x2x256x64xbf16>) -> tensor<1x2x256x64xbf16> {
  %cst = arith.constant 0.180336878 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c128 = arith.constant 128 : index
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.000000e+00 : f32
  %0 = scf.forall (%b, %h, %m) = (0, 0, 0) to (1, 2, 256) step (1, 1, 128) shared_outs(%out = %arg3) -> (tensor<1x2x256x64xbf16>) {
    %q = tensor.extract_slice %arg0[%b, %h, %m, 0] [1, 1, 128, 64] [1, 1, 1, 1] : tensor<1x2x256x64xbf16> to tensor<128x64xbf16>
    %kh = tensor.extract_slice %arg1[%b, %h, 0, 0] [1, 1, 256, 64] [1, 1, 1, 1] : tensor<1x2x256x64xbf16> to tensor<256x64xbf16>
    %vh = tensor.extract_slice %arg2[%b, %h, 0, 0] [1, 1, 256, 64] [1, 1, 1, 1] : tensor<1x2x256x64xbf16> to tensor<256x64xbf16>
    %e0 = tensor.empty() : tensor<128x64xf32>
    %o0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<128x64xf32>) -> tensor<128x64xf32>
    %e1 = tensor.empty() : tensor<128xf32>
    %m0 = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<128xf32>) -> tensor<128xf32>
    %l0 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<128xf32>) -> tensor<128xf32>
    %r:3 = scf.for %j = %c0 to %c2 step %c1 iter_args(%o = %o0, %mx = %m0, %l = %l0) -> (tensor<128x64xf32>, tensor<128xf32>, tensor<128xf32>) {
      %k0 = arith.muli %j, %c128 : index
      %k = tensor.extract_slice %kh[%k0, 0] [128, 64] [1, 1] : tensor<256x64xbf16> to tensor<128x64xbf16>
      %v = tensor.extract_slice %vh[%k0, 0] [128, 64] [1, 1] : tensor<256x64xbf16> to tensor<128x64xbf16>
      %s = fat.wgmma %q, %k transpose_b a_from smem shape [64, 128, 16] : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
      %new_max, %alpha = fat.softmax_max %s, %mx scale %cst : tensor<128x128xf32>, tensor<128xf32>
      %probs, %new_sum = fat.softmax_exp %s, %new_max scale %cst rowsum(%l, %alpha) : (tensor<128x128xf32>, tensor<128xf32>, f32, tensor<128xf32>, tensor<128xf32>) -> (tensor<128x128xf32>, tensor<128xf32>)
      %p = arith.truncf %probs : tensor<128x128xf32> to tensor<128x128xbf16>
      %oa = fat.rescale %o, %alpha : tensor<128x64xf32>, tensor<128xf32>
      %on = fat.wgmma %p, %v, %oa a_from registers shape [64, 64, 16] : tensor<128x128xbf16>, tensor<128x64xbf16>, tensor<128x64xf32> -> tensor<128x64xf32>
      scf.yield %on, %new_max, %new_sum : tensor<128x64xf32>, tensor<128xf32>, tensor<128xf32>
    }
    %output, %lse = fat.finalize %r#0, %r#2, %r#1 scale 1.250000e-01 : tensor<128x64xf32>, tensor<128xf32>, tensor<128xf32> -> tensor<128x64xbf16>, tensor<128xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %output into %out[%b, %h, %m, 0] [1, 1, 128, 64] [1, 1, 1, 1] : tensor<128x64xbf16> into tensor<1x2x256x64xbf16>
    }
  } {fat.tile = {block_m = 128 : i64, block_n = 128 : i64, seq_len = 256 : i64, stages = 2 : i64}}
  return %0 : tensor<1x2x256x64xbf16>
}

// -----

// An op fat-tensorize does not write has no form in the consumer: refused,
// named, rather than dropped from the kernel.
func.func @no_form(%arg0: tensor<1x2x256x64xbf16>, %arg1: tensor<1x2x256x64xbf16>, %arg2: tensor<1x2x256x64xbf16>, %arg3: tensor<1x2x256x64xbf16>) -> tensor<1x2x256x64xbf16> {
  %cst = arith.constant 0.180336878 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c128 = arith.constant 128 : index
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.000000e+00 : f32
  %0 = scf.forall (%b, %h, %m) = (0, 0, 0) to (1, 2, 256) step (1, 1, 128) shared_outs(%out = %arg3) -> (tensor<1x2x256x64xbf16>) {
    %q = tensor.extract_slice %arg0[%b, %h, %m, 0] [1, 1, 128, 64] [1, 1, 1, 1] : tensor<1x2x256x64xbf16> to tensor<128x64xbf16>
    %kh = tensor.extract_slice %arg1[%b, %h, 0, 0] [1, 1, 256, 64] [1, 1, 1, 1] : tensor<1x2x256x64xbf16> to tensor<256x64xbf16>
    %vh = tensor.extract_slice %arg2[%b, %h, 0, 0] [1, 1, 256, 64] [1, 1, 1, 1] : tensor<1x2x256x64xbf16> to tensor<256x64xbf16>
    %e0 = tensor.empty() : tensor<128x64xf32>
    %o0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<128x64xf32>) -> tensor<128x64xf32>
    %e1 = tensor.empty() : tensor<128xf32>
    %m0 = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<128xf32>) -> tensor<128xf32>
    %l0 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<128xf32>) -> tensor<128xf32>
    %r:3 = scf.for %j = %c0 to %c2 step %c1 iter_args(%o = %o0, %mx = %m0, %l = %l0) -> (tensor<128x64xf32>, tensor<128xf32>, tensor<128xf32>) {
      %k0 = arith.muli %j, %c128 : index
      %k = tensor.extract_slice %kh[%k0, 0] [128, 64] [1, 1] : tensor<256x64xbf16> to tensor<128x64xbf16>
      %v = tensor.extract_slice %vh[%k0, 0] [128, 64] [1, 1] : tensor<256x64xbf16> to tensor<128x64xbf16>
      %s = fat.wgmma %q, %k transpose_b a_from smem shape [64, 128, 16] : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
      // expected-error @below {{fat-pipeline: the Hopper consumer has no form for this op in the tensorized KV loop}}
      %neg = arith.negf %s : tensor<128x128xf32>
      %new_max, %alpha = fat.softmax_max %neg, %mx scale %cst : tensor<128x128xf32>, tensor<128xf32>
      %probs, %new_sum = fat.softmax_exp %neg, %new_max scale %cst rowsum(%l, %alpha) : (tensor<128x128xf32>, tensor<128xf32>, f32, tensor<128xf32>, tensor<128xf32>) -> (tensor<128x128xf32>, tensor<128xf32>)
      %p = arith.truncf %probs : tensor<128x128xf32> to tensor<128x128xbf16>
      %oa = fat.rescale %o, %alpha : tensor<128x64xf32>, tensor<128xf32>
      %on = fat.wgmma %p, %v, %oa a_from registers shape [64, 64, 16] : tensor<128x128xbf16>, tensor<128x64xbf16>, tensor<128x64xf32> -> tensor<128x64xf32>
      scf.yield %on, %new_max, %new_sum : tensor<128x64xf32>, tensor<128xf32>, tensor<128xf32>
    }
    %output, %lse = fat.finalize %r#0, %r#2, %r#1 scale 1.250000e-01 : tensor<128x64xf32>, tensor<128xf32>, tensor<128xf32> -> tensor<128x64xbf16>, tensor<128xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %output into %out[%b, %h, %m, 0] [1, 1, 128, 64] [1, 1, 1, 1] : tensor<128x64xbf16> into tensor<1x2x256x64xbf16>
    }
  } {fat.tile = {block_m = 128 : i64, block_n = 128 : i64, seq_len = 256 : i64, stages = 2 : i64}}
  return %0 : tensor<1x2x256x64xbf16>
}

// -----

// Q·Kᵀ's A is the tile's Q, copied once per tile: a Q sliced inside the KV
// loop is refused.
func.func @q_in_loop(%arg0: tensor<1x2x256x64xbf16>, %arg1: tensor<1x2x256x64xbf16>, %arg2: tensor<1x2x256x64xbf16>, %arg3: tensor<1x2x256x64xbf16>) -> tensor<1x2x256x64xbf16> {
  %cst = arith.constant 0.180336878 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c128 = arith.constant 128 : index
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.000000e+00 : f32
  // expected-error @below {{fat-pipeline: expected Q·Kᵀ to read the tile's Q from shared memory, defined outside the KV loop}}
  %0 = scf.forall (%b, %h, %m) = (0, 0, 0) to (1, 2, 256) step (1, 1, 128) shared_outs(%out = %arg3) -> (tensor<1x2x256x64xbf16>) {
    %kh = tensor.extract_slice %arg1[%b, %h, 0, 0] [1, 1, 256, 64] [1, 1, 1, 1] : tensor<1x2x256x64xbf16> to tensor<256x64xbf16>
    %vh = tensor.extract_slice %arg2[%b, %h, 0, 0] [1, 1, 256, 64] [1, 1, 1, 1] : tensor<1x2x256x64xbf16> to tensor<256x64xbf16>
    %e0 = tensor.empty() : tensor<128x64xf32>
    %o0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<128x64xf32>) -> tensor<128x64xf32>
    %e1 = tensor.empty() : tensor<128xf32>
    %m0 = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<128xf32>) -> tensor<128xf32>
    %l0 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<128xf32>) -> tensor<128xf32>
    %r:3 = scf.for %j = %c0 to %c2 step %c1 iter_args(%o = %o0, %mx = %m0, %l = %l0) -> (tensor<128x64xf32>, tensor<128xf32>, tensor<128xf32>) {
      %k0 = arith.muli %j, %c128 : index
      %q = tensor.extract_slice %arg0[%b, %h, %m, 0] [1, 1, 128, 64] [1, 1, 1, 1] : tensor<1x2x256x64xbf16> to tensor<128x64xbf16>
      %k = tensor.extract_slice %kh[%k0, 0] [128, 64] [1, 1] : tensor<256x64xbf16> to tensor<128x64xbf16>
      %v = tensor.extract_slice %vh[%k0, 0] [128, 64] [1, 1] : tensor<256x64xbf16> to tensor<128x64xbf16>
      %s = fat.wgmma %q, %k transpose_b a_from smem shape [64, 128, 16] : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
      %new_max, %alpha = fat.softmax_max %s, %mx scale %cst : tensor<128x128xf32>, tensor<128xf32>
      %probs, %new_sum = fat.softmax_exp %s, %new_max scale %cst rowsum(%l, %alpha) : (tensor<128x128xf32>, tensor<128xf32>, f32, tensor<128xf32>, tensor<128xf32>) -> (tensor<128x128xf32>, tensor<128xf32>)
      %p = arith.truncf %probs : tensor<128x128xf32> to tensor<128x128xbf16>
      %oa = fat.rescale %o, %alpha : tensor<128x64xf32>, tensor<128xf32>
      %on = fat.wgmma %p, %v, %oa a_from registers shape [64, 64, 16] : tensor<128x128xbf16>, tensor<128x64xbf16>, tensor<128x64xf32> -> tensor<128x64xf32>
      scf.yield %on, %new_max, %new_sum : tensor<128x64xf32>, tensor<128xf32>, tensor<128xf32>
    }
    %output, %lse = fat.finalize %r#0, %r#2, %r#1 scale 1.250000e-01 : tensor<128x64xf32>, tensor<128xf32>, tensor<128xf32> -> tensor<128x64xbf16>, tensor<128xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %output into %out[%b, %h, %m, 0] [1, 1, 128, 64] [1, 1, 1, 1] : tensor<128x64xbf16> into tensor<1x2x256x64xbf16>
    }
  } {fat.tile = {block_m = 128 : i64, block_n = 128 : i64, seq_len = 256 : i64, stages = 2 : i64}}
  return %0 : tensor<1x2x256x64xbf16>
}

// -----

// P·V's A is P, rounded in the loop: the consumer packs it where its
// schedule puts P·V. Anything else is refused.
func.func @p_not_rounded(%arg0: tensor<1x2x256x64xbf16>, %arg1: tensor<1x2x256x64xbf16>, %arg2: tensor<1x2x256x64xbf16>, %arg3: tensor<1x2x256x64xbf16>) -> tensor<1x2x256x64xbf16> {
  %cst = arith.constant 0.180336878 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c128 = arith.constant 128 : index
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.000000e+00 : f32
  // expected-error @below {{fat-pipeline: expected P·V's A to be P rounded by arith.truncf in the KV loop}}
  %0 = scf.forall (%b, %h, %m) = (0, 0, 0) to (1, 2, 256) step (1, 1, 128) shared_outs(%out = %arg3) -> (tensor<1x2x256x64xbf16>) {
    %q = tensor.extract_slice %arg0[%b, %h, %m, 0] [1, 1, 128, 64] [1, 1, 1, 1] : tensor<1x2x256x64xbf16> to tensor<128x64xbf16>
    %kh = tensor.extract_slice %arg1[%b, %h, 0, 0] [1, 1, 256, 64] [1, 1, 1, 1] : tensor<1x2x256x64xbf16> to tensor<256x64xbf16>
    %vh = tensor.extract_slice %arg2[%b, %h, 0, 0] [1, 1, 256, 64] [1, 1, 1, 1] : tensor<1x2x256x64xbf16> to tensor<256x64xbf16>
    %e0 = tensor.empty() : tensor<128x64xf32>
    %o0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<128x64xf32>) -> tensor<128x64xf32>
    %e1 = tensor.empty() : tensor<128xf32>
    %m0 = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<128xf32>) -> tensor<128xf32>
    %l0 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<128xf32>) -> tensor<128xf32>
    %r:3 = scf.for %j = %c0 to %c2 step %c1 iter_args(%o = %o0, %mx = %m0, %l = %l0) -> (tensor<128x64xf32>, tensor<128xf32>, tensor<128xf32>) {
      %k0 = arith.muli %j, %c128 : index
      %k = tensor.extract_slice %kh[%k0, 0] [128, 64] [1, 1] : tensor<256x64xbf16> to tensor<128x64xbf16>
      %v = tensor.extract_slice %vh[%k0, 0] [128, 64] [1, 1] : tensor<256x64xbf16> to tensor<128x64xbf16>
      %s = fat.wgmma %q, %k transpose_b a_from smem shape [64, 128, 16] : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
      %new_max, %alpha = fat.softmax_max %s, %mx scale %cst : tensor<128x128xf32>, tensor<128xf32>
      %probs, %new_sum = fat.softmax_exp %s, %new_max scale %cst rowsum(%l, %alpha) : (tensor<128x128xf32>, tensor<128xf32>, f32, tensor<128xf32>, tensor<128xf32>) -> (tensor<128x128xf32>, tensor<128xf32>)
      %p = tensor.empty() : tensor<128x128xbf16>
      %oa = fat.rescale %o, %alpha : tensor<128x64xf32>, tensor<128xf32>
      %on = fat.wgmma %p, %v, %oa a_from registers shape [64, 64, 16] : tensor<128x128xbf16>, tensor<128x64xbf16>, tensor<128x64xf32> -> tensor<128x64xf32>
      scf.yield %on, %new_max, %new_sum : tensor<128x64xf32>, tensor<128xf32>, tensor<128xf32>
    }
    %output, %lse = fat.finalize %r#0, %r#2, %r#1 scale 1.250000e-01 : tensor<128x64xf32>, tensor<128xf32>, tensor<128xf32> -> tensor<128x64xbf16>, tensor<128xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %output into %out[%b, %h, %m, 0] [1, 1, 128, 64] [1, 1, 1, 1] : tensor<128x64xbf16> into tensor<1x2x256x64xbf16>
    }
  } {fat.tile = {block_m = 128 : i64, block_n = 128 : i64, seq_len = 256 : i64, stages = 2 : i64}}
  return %0 : tensor<1x2x256x64xbf16>
}

// -----

// rowsum=mma: the loop carries O and l apart and assembles [α·O | α·l]
// around a P·[V | 1] wgmma; the kernel carries the [O | l] accumulator
// tile (its ones columns sum P, the V ring's ones chunks filled once) and
// l unchanged, so l's rescale, the broadcast, both concats and the slices
// have no form, and O's rescale scales the whole accumulator.
// CHECK-LABEL: gpu.module @fat_attention_fwd_bf16_d64_h2_2_bhsd_m128n128s2_nr
// CHECK:         fat.ring_fill %{{[0-9]+}} thread(%{{[0-9]+}}) {bytes = 16384 : i64, offset = 16384 : i64
// CHECK:         scf.for %{{.+}} iter_args(%[[ACC:[a-z0-9_]+]] = %{{.+}}, %[[M:[a-z0-9_]+]] = %{{.+}}, %[[L:[a-z0-9_]+]] = %{{.+}}) -> (tensor<64x72xf32, #fat.wgmma_fragment>, tensor<64xf32, #fat.wgmma_fragment>, tensor<64xf32, #fat.wgmma_fragment>)  : i32 {
// CHECK:           %[[MN:[a-z0-9_]+]], %[[A:[a-z0-9_]+]] = fat.softmax_max %{{[0-9]+}}, %[[M]] scale
// CHECK-NEXT:      %[[P:[a-z0-9_]+]] = fat.softmax_exp %{{[0-9]+}}, %[[MN]] scale %{{[a-z0-9_]+}} :
// CHECK-NEXT:      %[[AA:[0-9]+]] = fat.rescale %[[ACC]], %[[A]] : tensor<64x72xf32, #fat.wgmma_fragment>
// CHECK-NEXT:      %[[P16:[0-9]+]] = arith.truncf %[[P]]
// CHECK-NEXT:      fat.ring_wait
// CHECK:           %[[OV:[0-9]+]] = fat.wgmma_async a_regs(%[[P16]] : {{.+}}) b({{.+}}) acc(%[[AA]] : {{.+}}) k 128 shape [64, 72, 16] bf16
// CHECK-NEXT:      %[[ON:[0-9]+]] = fat.wgmma_wait pending(0) (%[[OV]])
// CHECK-NEXT:      fat.ring_release
// CHECK-NEXT:      scf.yield %[[ON]], %[[MN]], %[[L]]
func.func @ones_columns(%arg0: tensor<1x2x256x64xbf16>, %arg1: tensor<1x2x256x64xbf16>, %arg2: tensor<1x2x256x64xbf16>, %arg3: tensor<1x2x256x64xbf16>) -> tensor<1x2x256x64xbf16> {
  %cst = arith.constant 0.180336878 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c128 = arith.constant 128 : index
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.000000e+00 : f32
  %ones = arith.constant dense<1.000000e+00> : tensor<128x8xbf16>
  %0 = scf.forall (%b, %h, %m) = (0, 0, 0) to (1, 2, 256) step (1, 1, 128) shared_outs(%out = %arg3) -> (tensor<1x2x256x64xbf16>) {
    %q = tensor.extract_slice %arg0[%b, %h, %m, 0] [1, 1, 128, 64] [1, 1, 1, 1] : tensor<1x2x256x64xbf16> to tensor<128x64xbf16>
    %kh = tensor.extract_slice %arg1[%b, %h, 0, 0] [1, 1, 256, 64] [1, 1, 1, 1] : tensor<1x2x256x64xbf16> to tensor<256x64xbf16>
    %vh = tensor.extract_slice %arg2[%b, %h, 0, 0] [1, 1, 256, 64] [1, 1, 1, 1] : tensor<1x2x256x64xbf16> to tensor<256x64xbf16>
    %e0 = tensor.empty() : tensor<128x64xf32>
    %o0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<128x64xf32>) -> tensor<128x64xf32>
    %e1 = tensor.empty() : tensor<128xf32>
    %m0 = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<128xf32>) -> tensor<128xf32>
    %l0 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<128xf32>) -> tensor<128xf32>
    %r:3 = scf.for %j = %c0 to %c2 step %c1 iter_args(%o = %o0, %mx = %m0, %l = %l0) -> (tensor<128x64xf32>, tensor<128xf32>, tensor<128xf32>) {
      %k0 = arith.muli %j, %c128 : index
      %k = tensor.extract_slice %kh[%k0, 0] [128, 64] [1, 1] : tensor<256x64xbf16> to tensor<128x64xbf16>
      %v = tensor.extract_slice %vh[%k0, 0] [128, 64] [1, 1] : tensor<256x64xbf16> to tensor<128x64xbf16>
      %s = fat.wgmma %q, %k transpose_b a_from smem shape [64, 128, 16] : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
      %new_max, %alpha = fat.softmax_max %s, %mx scale %cst : tensor<128x128xf32>, tensor<128xf32>
      %probs = fat.softmax_exp %s, %new_max scale %cst : (tensor<128x128xf32>, tensor<128xf32>, f32) -> tensor<128x128xf32>
      %oa = fat.rescale %o, %alpha : tensor<128x64xf32>, tensor<128xf32>
      %p = arith.truncf %probs : tensor<128x128xf32> to tensor<128x128xbf16>
      %la = fat.rescale %l, %alpha : tensor<128xf32>, tensor<128xf32>
      %e8 = tensor.empty() : tensor<128x8xf32>
      %lb = linalg.broadcast ins(%la : tensor<128xf32>) outs(%e8 : tensor<128x8xf32>) dimensions = [1]
      %acc = tensor.concat dim(1) %oa, %lb : (tensor<128x64xf32>, tensor<128x8xf32>) -> tensor<128x72xf32>
      %v1 = tensor.concat dim(1) %v, %ones : (tensor<128x64xbf16>, tensor<128x8xbf16>) -> tensor<128x72xbf16>
      %accn = fat.wgmma %p, %v1, %acc a_from registers shape [64, 72, 16] : tensor<128x128xbf16>, tensor<128x72xbf16>, tensor<128x72xf32> -> tensor<128x72xf32>
      %on = tensor.extract_slice %accn[0, 0] [128, 64] [1, 1] : tensor<128x72xf32> to tensor<128x64xf32>
      %ln = tensor.extract_slice %accn[0, 64] [128, 1] [1, 1] : tensor<128x72xf32> to tensor<128xf32>
      scf.yield %on, %new_max, %ln : tensor<128x64xf32>, tensor<128xf32>, tensor<128xf32>
    }
    %output, %lse = fat.finalize %r#0, %r#2, %r#1 scale 1.250000e-01 : tensor<128x64xf32>, tensor<128xf32>, tensor<128xf32> -> tensor<128x64xbf16>, tensor<128xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %output into %out[%b, %h, %m, 0] [1, 1, 128, 64] [1, 1, 1, 1] : tensor<128x64xbf16> into tensor<1x2x256x64xbf16>
    }
  } {fat.tile = {block_m = 128 : i64, block_n = 128 : i64, seq_len = 256 : i64, stages = 2 : i64}}
  return %0 : tensor<1x2x256x64xbf16>
}

// -----

// The consumer masks the scores before the softmax reads them: a mask
// after fat.softmax_max is refused (the CPU oracle would run it there).
func.func @mask_after_max(%arg0: tensor<1x2x256x64xbf16>, %arg1: tensor<1x2x256x64xbf16>, %arg2: tensor<1x2x256x64xbf16>, %arg3: tensor<1x2x256x64xbf16>) -> tensor<1x2x256x64xbf16> {
  %cst = arith.constant 0.180336878 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c128 = arith.constant 128 : index
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.000000e+00 : f32
  %0 = scf.forall (%b, %h, %m) = (0, 0, 0) to (1, 2, 256) step (1, 1, 128) shared_outs(%out = %arg3) -> (tensor<1x2x256x64xbf16>) {
    %q = tensor.extract_slice %arg0[%b, %h, %m, 0] [1, 1, 128, 64] [1, 1, 1, 1] : tensor<1x2x256x64xbf16> to tensor<128x64xbf16>
    %kh = tensor.extract_slice %arg1[%b, %h, 0, 0] [1, 1, 256, 64] [1, 1, 1, 1] : tensor<1x2x256x64xbf16> to tensor<256x64xbf16>
    %vh = tensor.extract_slice %arg2[%b, %h, 0, 0] [1, 1, 256, 64] [1, 1, 1, 1] : tensor<1x2x256x64xbf16> to tensor<256x64xbf16>
    %e0 = tensor.empty() : tensor<128x64xf32>
    %o0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<128x64xf32>) -> tensor<128x64xf32>
    %e1 = tensor.empty() : tensor<128xf32>
    %m0 = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<128xf32>) -> tensor<128xf32>
    %l0 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<128xf32>) -> tensor<128xf32>
    %r:3 = scf.for %j = %c0 to %c2 step %c1 iter_args(%o = %o0, %mx = %m0, %l = %l0) -> (tensor<128x64xf32>, tensor<128xf32>, tensor<128xf32>) {
      %k0 = arith.muli %j, %c128 : index
      %k = tensor.extract_slice %kh[%k0, 0] [128, 64] [1, 1] : tensor<256x64xbf16> to tensor<128x64xbf16>
      %v = tensor.extract_slice %vh[%k0, 0] [128, 64] [1, 1] : tensor<256x64xbf16> to tensor<128x64xbf16>
      %s = fat.wgmma %q, %k transpose_b a_from smem shape [64, 128, 16] : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
      %new_max, %alpha = fat.softmax_max %s, %mx scale %cst : tensor<128x128xf32>, tensor<128xf32>
      // expected-error @below {{fat-pipeline: expected the score and mask modifications and the mask before fat.softmax_max in the tensorized KV loop}}
      %late = fat.mask %s at(%c0, %k0) kv_len(%c128) diagonal(%c0) causal : tensor<128x128xf32>
      %probs, %new_sum = fat.softmax_exp %s, %new_max scale %cst rowsum(%l, %alpha) : (tensor<128x128xf32>, tensor<128xf32>, f32, tensor<128xf32>, tensor<128xf32>) -> (tensor<128x128xf32>, tensor<128xf32>)
      %p = arith.truncf %probs : tensor<128x128xf32> to tensor<128x128xbf16>
      %oa = fat.rescale %o, %alpha : tensor<128x64xf32>, tensor<128xf32>
      %on = fat.wgmma %p, %v, %oa a_from registers shape [64, 64, 16] : tensor<128x128xbf16>, tensor<128x64xbf16>, tensor<128x64xf32> -> tensor<128x64xf32>
      scf.yield %on, %new_max, %new_sum : tensor<128x64xf32>, tensor<128xf32>, tensor<128xf32>
    }
    %output, %lse = fat.finalize %r#0, %r#2, %r#1 scale 1.250000e-01 : tensor<128x64xf32>, tensor<128xf32>, tensor<128xf32> -> tensor<128x64xbf16>, tensor<128xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %output into %out[%b, %h, %m, 0] [1, 1, 128, 64] [1, 1, 1, 1] : tensor<128x64xbf16> into tensor<1x2x256x64xbf16>
    }
  } {fat.tile = {block_m = 128 : i64, block_n = 128 : i64, seq_len = 256 : i64, stages = 2 : i64}}
  return %0 : tensor<1x2x256x64xbf16>
}
