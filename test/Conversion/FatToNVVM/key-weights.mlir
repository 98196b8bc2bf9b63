// RUN: fa-t-opt %s --convert-fat-to-nvvm | FileCheck %s

// linear-bias=weights in the kernel: fat.key_weights on a warpgroup's
// 64 x N fragment and P times its weights. Thread λ holds keys 8i +
// 2(λ mod 4) + e of P's fragment (a 16-bit tile's register 2i + r is the
// pair e = 0, 1 of row r). With P runs of n = N/P keys the weights repeat
// per run: ŵ = rnd(ex2(a·(r − (n − 1)/2))), a = G·log2 e, r the key's
// place in its run, one packed pair per 8-key group of a run; run p's
// offset (G/scale)·(k0 + p·n + (n − 1)/2), weights and offsets NaN once
// |G|·(n − 1)/2 > 35;
// one mul.rn.bf16x2 per register of P. Here N = 16 in two runs of 8: one
// pair for all four registers.

#frag = #fat.wgmma_fragment

gpu.module @k {

// CHECK-LABEL: func.func @key_weights
// CHECK-SAME:    (%{{.+}}: index, %{{.+}}: index, %[[K0:[a-z0-9]+]]: index, %[[SC:[a-z0-9]+]]: f32, %[[P0:[a-z0-9]+]]: i32, %[[P1:[a-z0-9]+]]: i32, %[[P2:[a-z0-9]+]]: i32, %[[P3:[a-z0-9]+]]: i32)
// CHECK-DAG:     %[[G:.+]] = arith.constant 2.500000e-01 : f32
// CHECK-DAG:     %[[LOG2E:.+]] = arith.constant 1.44269502 : f32
// CHECK:         %[[A:[0-9]+]] = arith.mulf %[[G]], %[[LOG2E]] : f32
// CHECK:         %[[LANE:[0-9]+]] = nvvm.read.ptx.sreg.laneid
// CHECK:         %[[Q:[0-9]+]] = arith.remui %[[LANE]], %{{.+}} : i32
// CHECK:         %[[Q2:[0-9]+]] = arith.shli %[[Q]], %{{.+}} : i32
// CHECK:         %[[QF:[0-9]+]] = arith.uitofp %[[Q2]] : i32 to f32
// CHECK-NEXT:    %[[CEN:.+]] = arith.constant 3.500000e+00 : f32
// CHECK-NEXT:    %[[KF:[0-9]+]] = arith.subf %[[QF]], %[[CEN]] : f32
// CHECK:         %[[SPREAD:[0-9]+]] = arith.mulf %{{.+}}, %{{.+}} : f32
// CHECK-NEXT:    %[[MAXS:.+]] = arith.constant 3.500000e+01 : f32
// CHECK-NEXT:    %[[EXACT:[0-9]+]] = arith.cmpf ole, %[[SPREAD]], %[[MAXS]] : f32
// CHECK-NEXT:    %[[X0:[0-9]+]] = arith.mulf %[[A]], %[[KF]] : f32
// CHECK-NEXT:    %[[E0:[0-9]+]] = llvm.inline_asm {{.*}}"ex2.approx.ftz.f32 $0, $1;", "=f,f" %[[X0]]
// CHECK-NEXT:    %[[NAN:.+]] = arith.constant 0x7FC00000 : f32
// CHECK-NEXT:    %[[W0:[0-9]+]] = arith.select %[[EXACT]], %[[E0]], %[[NAN]] : f32
// CHECK:         %[[K1:[0-9]+]] = arith.addf %[[KF]], %{{.+}} : f32
// CHECK-NEXT:    %[[X1:[0-9]+]] = arith.mulf %[[A]], %[[K1]] : f32
// CHECK-NEXT:    %[[E1:[0-9]+]] = llvm.inline_asm {{.*}}"ex2.approx.ftz.f32 $0, $1;", "=f,f" %[[X1]]
// CHECK:         %[[W1:[0-9]+]] = arith.select %[[EXACT]], %[[E1]], %{{.+}} : f32
// CHECK-NEXT:    %[[PAIR:[0-9]+]] = llvm.inline_asm {{.*}}"cvt.rn.bf16x2.f32 $0, $1, $2;", "=r,f,f" %[[W1]], %[[W0]]
// CHECK-NOT:     ex2.approx
// CHECK:         %[[GS:[0-9]+]] = arith.divf %[[G]], %[[SC]] : f32
// CHECK-NEXT:    %[[K0I:[0-9]+]] = arith.index_cast %[[K0]] : index to i32
// CHECK-NEXT:    %[[K0F:[0-9]+]] = arith.sitofp %[[K0I]] : i32 to f32
// CHECK-NEXT:    %[[MID0:.+]] = arith.constant 3.500000e+00 : f32
// CHECK-NEXT:    %[[KC0:[0-9]+]] = arith.addf %[[K0F]], %[[MID0]] : f32
// CHECK-NEXT:    %[[OFF0:[0-9]+]] = arith.mulf %[[GS]], %[[KC0]] : f32
// CHECK:         %[[O0:[0-9]+]] = arith.select %[[EXACT]], %[[OFF0]], %{{.+}} : f32
// CHECK-NEXT:    %[[MID1:.+]] = arith.constant 1.150000e+01 : f32
// CHECK-NEXT:    %[[KC1:[0-9]+]] = arith.addf %[[K0F]], %[[MID1]] : f32
// CHECK-NEXT:    %[[OFF1:[0-9]+]] = arith.mulf %[[GS]], %[[KC1]] : f32
// CHECK:         %[[O1:[0-9]+]] = arith.select %[[EXACT]], %[[OFF1]], %{{.+}} : f32
// CHECK-NEXT:    %[[R0:[0-9]+]] = llvm.inline_asm {{.*}}"mul.rn.bf16x2 $0, $1, $2;", "=r,r,r" %[[P0]], %[[PAIR]]
// CHECK-NEXT:    %[[R1:[0-9]+]] = llvm.inline_asm {{.*}}"mul.rn.bf16x2 $0, $1, $2;", "=r,r,r" %[[P1]], %[[PAIR]]
// CHECK-NEXT:    %[[R2:[0-9]+]] = llvm.inline_asm {{.*}}"mul.rn.bf16x2 $0, $1, $2;", "=r,r,r" %[[P2]], %[[PAIR]]
// CHECK-NEXT:    %[[R3:[0-9]+]] = llvm.inline_asm {{.*}}"mul.rn.bf16x2 $0, $1, $2;", "=r,r,r" %[[P3]], %[[PAIR]]
// CHECK-NEXT:    return %[[R0]], %[[R1]], %[[R2]], %[[R3]], %[[O0]], %[[O1]]
func.func @key_weights(%b: index, %h: index, %k0: index, %scale: f32,
                       %p0: i32, %p1: i32, %p2: i32, %p3: i32)
    -> (i32, i32, i32, i32, f32, f32) {
  %w, %o:2 = fat.key_weights at(%b, %h, %k0) scale %scale {
  ^bb0(%bb: index, %hh: index):
    %g = arith.constant 2.500000e-01 : f32
    fat.yield %g : f32
  } : tensor<64x16xbf16, #frag>, f32, f32
  %p = builtin.unrealized_conversion_cast %p0, %p1, %p2, %p3
      : i32, i32, i32, i32 to tensor<64x16xbf16, #frag>
  %pw = arith.mulf %p, %w : tensor<64x16xbf16, #frag>
  %r:4 = builtin.unrealized_conversion_cast %pw
      : tensor<64x16xbf16, #frag> to i32, i32, i32, i32
  return %r#0, %r#1, %r#2, %r#3, %o#0, %o#1 : i32, i32, i32, i32, f32, f32
}

// G read from a captured tensor at the head: an invariant load, clamped;
// one run of 16 keys: two pairs.
// CHECK-LABEL: func.func @key_weights_capture
// CHECK:         llvm.load %{{.+}} invariant
// CHECK-COUNT-2: "cvt.rn.bf16x2.f32 $0, $1, $2;"
// CHECK-NOT:     "cvt.rn.bf16x2.f32 $0, $1, $2;"
func.func @key_weights_capture(%b: index, %h: index, %k0: index, %scale: f32,
                               %slopes: !llvm.ptr<1>) -> (i32, f32) {
  %w, %o = fat.key_weights at(%b, %h, %k0) scale %scale
      captures(%slopes : !llvm.ptr<1>) {
  ^bb0(%bb: index, %hh: index, %t: tensor<4xf32>):
    %g = tensor.extract %t[%hh] : tensor<4xf32>
    fat.yield %g : f32
  } : tensor<64x16xbf16, #frag>, f32
  %r:4 = builtin.unrealized_conversion_cast %w
      : tensor<64x16xbf16, #frag> to i32, i32, i32, i32
  return %r#0, %o : i32, f32
}

}
