// RUN: fa-t-opt %s --fat-tensorize="block-n=1099511627776 stages=1099511627776" | FileCheck %s --check-prefix=TENSORIZE
// RUN: not fa-t-opt %s --fat-to-ptx="block-n=1099511627776 stages=1099511627776" 2>&1 | FileCheck %s --check-prefix=PTX
// RUN: fa-t-opt %s --fat-tensorize --split-input-file | FileCheck %s --check-prefix=HUGE-D

// Found by fa-t-fuzz-attention (UBSan: signed overflow in
// AttentionKernelConfig::vOffset). fat-tensorize's cost model sized the
// kernel with the ones chunks for whatever block options and head dims it
// was given, before convert-fat-to-nvvm had checked them: 2^40 keys per
// block times 2^40 stages overflowed int64. The model now sizes supported
// kernels only and picks the vector row sum otherwise; in --fat-to-ptx the
// block option reaches fat-tile, which names it.

// TENSORIZE: fat.attention
// TENSORIZE-SAME: fat.schedule = {exp2_poly = 0.000000e+00 : f64, forced = false, rescale = "always", rescale_threshold = 8.000000e+00 : f64, rowsum = "vector"}
// PTX: error: fat-tile: option block-n must be in [1, 1024], or 0 for the Hopper kernel's, got 1099511627776

func.func @attention(%q: memref<?x1x64x64xbf16>, %o: memref<?x1x64x64xbf16>) {
  fat.attention ins(%q, %q, %q : memref<?x1x64x64xbf16>, memref<?x1x64x64xbf16>,
                                 memref<?x1x64x64xbf16>) outs(%o : memref<?x1x64x64xbf16>)
  return
}

// -----

// A head dim the kernel does not serve (2^40) is left to the conversion's
// diagnostic: the cost model has nothing to size.
// HUGE-D-LABEL: func @huge_head_dim
// HUGE-D: fat.attention
// HUGE-D-SAME: rowsum = "vector"
func.func @huge_head_dim(%q: memref<1x1x64x1099511627776xbf16>, %o: memref<1x1x64x1099511627776xbf16>) {
  fat.attention ins(%q, %q, %q : memref<1x1x64x1099511627776xbf16>, memref<1x1x64x1099511627776xbf16>,
                                 memref<1x1x64x1099511627776xbf16>) outs(%o : memref<1x1x64x1099511627776xbf16>)
  return
}
