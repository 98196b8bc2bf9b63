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
