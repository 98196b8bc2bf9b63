// RUN: not fa-t-opt %s --fat-to-ptx="block-n=1099511627776 stages=1099511627776" 2>&1 | FileCheck %s --check-prefix=PTX
// RUN: not fa-t-opt %s --fat-tile --fat-tensorize --split-input-file 2>&1 | FileCheck %s --check-prefix=HUGE-D

// Found by fa-t-fuzz-attention (UBSan: signed overflow in
// AttentionKernelConfig::vOffset). fat-tensorize's cost model sized the
// kernel with the ones chunks for whatever block options and head dims it
// was given, before convert-fat-to-nvvm had checked them: 2^40 keys per
// block times 2^40 stages overflowed int64. The model now sizes supported
// kernels only; the block options are fat-tile's now, which range-checks
// them, and a head dim no wgmma takes is named by fat-tensorize.

// PTX: error: fat-tile: option block-n must be in [1, 1024], or 0 for the Hopper kernel's, got 1099511627776

func.func @attention(%q: memref<?x1x64x64xbf16>, %o: memref<?x1x64x64xbf16>) {
  fat.attention ins(%q, %q, %q : memref<?x1x64x64xbf16>, memref<?x1x64x64xbf16>,
                                 memref<?x1x64x64xbf16>) outs(%o : memref<?x1x64x64xbf16>)
  return
}

// -----

// A head dim the kernel does not serve (2^40): fat-tile's cost model has
// nothing to size (128 x 128 tiles), fat-tensorize names the constraint.
// HUGE-D: error: fat-tensorize: the head dim D (1099511627776) must be a multiple of 16 in [16, 256]
func.func @huge_head_dim(%q: memref<1x1x64x1099511627776xbf16>, %o: memref<1x1x64x1099511627776xbf16>) {
  fat.attention ins(%q, %q, %q : memref<1x1x64x1099511627776xbf16>, memref<1x1x64x1099511627776xbf16>,
                                 memref<1x1x64x1099511627776xbf16>) outs(%o : memref<1x1x64x1099511627776xbf16>)
  return
}
