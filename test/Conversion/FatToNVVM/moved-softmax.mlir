// RUN: fa-t-opt %s --fat-tile --fat-tensorize="exp2-poly=0.25" -o %t.tensorized.mlir
// RUN: FileCheck %s --check-prefix=TENSORIZED < %t.tensorized.mlir
// RUN: fa-t-opt %t.tensorized.mlir --fat-pipeline | FileCheck %s
// RUN: fa-t-opt %s --fat-tile --fat-tensorize --fat-pipeline="pv-wait=early" | FileCheck %s --check-prefix=EARLY

// fat-pipeline moves the tensorized loop's softmax ops and O's rescale onto
// the consumer's fragment tiles: the same ops with fat-tensorize's
// attributes (the cost model's lazy threshold for this causal D = 128
// attention, the exp2_poly asked for), the kernel's run-time c in place of
// the constant, and its own decision added: the rescale's warp vote.
// TENSORIZED:  %[[C:.+]] = arith.constant 0.1275
// TENSORIZED:  fat.softmax_max %{{.+}}, %{{.+}} scale %[[C]] lazy threshold 8.000000e+00 : tensor<128x160xf32>, tensor<128xf32>
// TENSORIZED:  fat.softmax_exp %{{.+}}, %{{.+}} scale %[[C]] exp2_poly 2.500000e-01 rowsum(
// TENSORIZED:  fat.rescale %{{.+}}, %{{.+}} : tensor<128x128xf32>, tensor<128xf32>

// CHECK:       fat.warp_specialize
// CHECK:         %[[M:[a-z0-9_]+]], %[[A:[a-z0-9_]+]] = fat.softmax_max %{{.+}}, %{{.+}} scale %[[RC:arg[0-9]+]] lazy threshold 8.000000e+00 : tensor<64x160xf32, #fat.wgmma_fragment>, tensor<64xf32, #fat.wgmma_fragment>
// CHECK-NEXT:    fat.softmax_exp %{{.+}}, %[[M]] scale %[[RC]] exp2_poly 2.500000e-01 rowsum(%{{.+}}, %[[A]]) : (tensor<64x160xf32, #fat.wgmma_fragment>, tensor<64xf32, #fat.wgmma_fragment>, f32, tensor<64xf32, #fat.wgmma_fragment<partial>>, tensor<64xf32, #fat.wgmma_fragment>)
// CHECK:         fat.rescale %{{.+}}, %{{.+}} warp_vote : tensor<64x128xf32, #fat.wgmma_fragment>, tensor<64xf32, #fat.wgmma_fragment>

// Under pv-wait=early the vote's branch would serialize the wgmmas: the
// pipeline keeps the cost model's lazy rescale (an unforced choice) eager
// there, visibly (no threshold, no vote).
// EARLY:       rescale = "always"
// EARLY:       fat.warp_specialize
// EARLY:         fat.softmax_max %{{.+}}, %{{.+}} scale %{{.+}} : tensor<64x160xf32, #fat.wgmma_fragment>
// EARLY-NOT:     lazy threshold
// EARLY-NOT:     warp_vote
// EARLY:         llvm.return

func.func @attention(%q: tensor<1x16x4096x128xbf16>, %k: tensor<1x4x4096x128xbf16>,
                     %v: tensor<1x4x4096x128xbf16>, %o: tensor<1x16x4096x128xbf16>)
    -> tensor<1x16x4096x128xbf16> {
  %r = fat.attention ins(%q, %k, %v : tensor<1x16x4096x128xbf16>, tensor<1x4x4096x128xbf16>,
                                      tensor<1x4x4096x128xbf16>)
                     outs(%o : tensor<1x16x4096x128xbf16>) causal -> tensor<1x16x4096x128xbf16>
  return %r : tensor<1x16x4096x128xbf16>
}
