// RUN: fa-t-opt %s --fat-tile="block-m=64 block-n=64" --fat-tensorize="rowsum=mma" -split-input-file -verify-diagnostics

// Tiles that warpgroup MMA cannot take are refused at the op, naming the
// constraint (TensorizeTiles.cpp, checkTensorizableTiles).

// f32 operands: the wgmma forms here are for 16-bit inputs.
func.func @f32(%q: tensor<1x1x64x64xf32>, %k: tensor<1x1x64x64xf32>,
               %v: tensor<1x1x64x64xf32>, %o: tensor<1x1x64x64xf32>) -> tensor<1x1x64x64xf32> {
  // expected-error @+1 {{fat-tensorize: wgmma takes f16 or bf16 operands, got 'f32'}}
  %r = fat.attention ins(%q, %k, %v : tensor<1x1x64x64xf32>, tensor<1x1x64x64xf32>,
                                      tensor<1x1x64x64xf32>)
                     outs(%o : tensor<1x1x64x64xf32>) -> tensor<1x1x64x64xf32>
  return %r : tensor<1x1x64x64xf32>
}

// -----

// rowsum=mma at Dv = 256: P·[V | 1] would need N = 264 > 256.
func.func @dv256(%q: tensor<1x1x64x64xbf16>, %k: tensor<1x1x64x64xbf16>,
                 %v: tensor<1x1x64x256xbf16>, %o: tensor<1x1x64x256xbf16>)
    -> tensor<1x1x64x256xbf16> {
  // expected-error @+1 {{fat-tensorize: Dv + 8 (P·[V | 1] with rowsum=mma) (264) must be a multiple of 8 in [8, 256]}}
  %r = fat.attention ins(%q, %k, %v : tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>,
                                      tensor<1x1x64x256xbf16>)
                     outs(%o : tensor<1x1x64x256xbf16>) -> tensor<1x1x64x256xbf16>
  return %r : tensor<1x1x64x256xbf16>
}

// -----

// A head dim that is no multiple of 16 (one k-step of S = Q·Kᵀ).
func.func @d40(%q: tensor<1x1x64x40xbf16>, %k: tensor<1x1x64x40xbf16>,
               %v: tensor<1x1x64x64xbf16>, %o: tensor<1x1x64x64xbf16>)
    -> tensor<1x1x64x64xbf16> {
  // expected-error @+1 {{fat-tensorize: the head dim D (40) must be a multiple of 16 in [16, 256]}}
  %r = fat.attention ins(%q, %k, %v : tensor<1x1x64x40xbf16>, tensor<1x1x64x40xbf16>,
                                      tensor<1x1x64x64xbf16>)
                     outs(%o : tensor<1x1x64x64xbf16>) -> tensor<1x1x64x64xbf16>
  return %r : tensor<1x1x64x64xbf16>
}

// -----

// Hand-written tiled IR that reads α·O outside the step: the rewrite would
// replace that rescale, so the step is left alone and refused.
func.func @rescale_read_twice(%q: tensor<64x64xbf16>, %k: tensor<64x64xbf16>,
                              %v: tensor<64x64xbf16>, %o: tensor<64x64xf32>,
                              %m: tensor<64xf32>, %l: tensor<64xf32>)
    -> (tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>) {
  %s = fat.qk %q, %k : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xf32>
  // expected-error @+1 {{fat-tensorize: this fat.row_max is not part of a KV step as fat-tile writes it}}
  %m1 = fat.row_max %s, %m : tensor<64x64xf32>, tensor<64xf32>
  %p = fat.exp2 %s, %m1 scale 0.18 : tensor<64x64xf32>, tensor<64xf32>
  %a = fat.exp2 %m, %m1 scale 0.18 : tensor<64xf32>, tensor<64xf32>
  %lr = fat.rescale %l, %a : tensor<64xf32>, tensor<64xf32>
  %l1 = fat.row_sum %p, %lr : tensor<64x64xf32>, tensor<64xf32>
  %or = fat.rescale %o, %a : tensor<64x64xf32>, tensor<64xf32>
  %o1 = fat.pv %p, %v, %or : tensor<64x64xf32>, tensor<64x64xbf16>, tensor<64x64xf32>
  return %o1, %m1, %l1, %or : tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>
}
