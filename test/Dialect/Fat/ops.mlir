// RUN: fa-t-opt %s | FileCheck %s
// RUN: fa-t-opt %s | fa-t-opt | FileCheck %s
// RUN: fa-t-opt %s --mlir-print-op-generic | fa-t-opt | FileCheck %s

// Round trip of every form and attribute of fat.attention and of the tile
// ops. The custom form elides the defaults: layout(bhsd), no scale (then
// 1/sqrt(D)), no diagonal (then Skv - Sq).

// The ring type's alias (func.func @ring below) comes first in the output.
// CHECK:       ![[RT:ring]] = !fat.ring<stages = 2, buffer_offset = 32768, buffer_bytes = 40960, barrier_offset = 196608, releases = 256>

// CHECK-LABEL: func.func @tensor_defaults
// CHECK-SAME:    (%[[Q:.+]]: tensor<2x16x256x128xbf16>, %[[K:.+]]: tensor<2x4x256x128xbf16>, %[[V:.+]]: tensor<2x4x256x128xbf16>, %[[O:.+]]: tensor<2x16x256x128xbf16>)
// CHECK:         %[[R:.+]] = fat.attention ins(%[[Q]], %[[K]], %[[V]] : tensor<2x16x256x128xbf16>, tensor<2x4x256x128xbf16>, tensor<2x4x256x128xbf16>) outs(%[[O]] : tensor<2x16x256x128xbf16>) -> tensor<2x16x256x128xbf16>
// CHECK-NEXT:    return %[[R]]
func.func @tensor_defaults(%q: tensor<2x16x256x128xbf16>, %k: tensor<2x4x256x128xbf16>,
                           %v: tensor<2x4x256x128xbf16>, %o: tensor<2x16x256x128xbf16>)
    -> tensor<2x16x256x128xbf16> {
  %r = fat.attention ins(%q, %k, %v : tensor<2x16x256x128xbf16>, tensor<2x4x256x128xbf16>,
                                      tensor<2x4x256x128xbf16>)
                     outs(%o : tensor<2x16x256x128xbf16>) -> tensor<2x16x256x128xbf16>
  return %r : tensor<2x16x256x128xbf16>
}

// CHECK-LABEL: func.func @tensor_all_attributes
// CHECK:         %{{.+}}:2 = fat.attention ins(%{{.+}}, %{{.+}}, %{{.+}} : tensor<?x8x?x64xf16>, tensor<?x1x?x64xf16>, tensor<?x1x?x32xf16>) outs(%{{.+}} : tensor<?x8x?x32xf16>) lse(%{{.+}} : tensor<?x8x?xf32>) diagonal(%[[D:.+]]) scale 1.250000e-01 causal window [128, 0] -> tensor<?x8x?x32xf16>, tensor<?x8x?xf32>
func.func @tensor_all_attributes(%q: tensor<?x8x?x64xf16>, %k: tensor<?x1x?x64xf16>,
                                 %v: tensor<?x1x?x32xf16>, %o: tensor<?x8x?x32xf16>,
                                 %l: tensor<?x8x?xf32>, %d: index)
    -> (tensor<?x8x?x32xf16>, tensor<?x8x?xf32>) {
  %r:2 = fat.attention ins(%q, %k, %v : tensor<?x8x?x64xf16>, tensor<?x1x?x64xf16>, tensor<?x1x?x32xf16>)
                       outs(%o : tensor<?x8x?x32xf16>) lse(%l : tensor<?x8x?xf32>)
                       diagonal(%d) scale 0.125 causal window [128, 0]
                       -> tensor<?x8x?x32xf16>, tensor<?x8x?xf32>
  return %r#0, %r#1 : tensor<?x8x?x32xf16>, tensor<?x8x?xf32>
}

// BSHD: Q is [B, Sq, Hq, D] in memory; here Hq = 4, Hkv = 2.
// CHECK-LABEL: func.func @tensor_bshd_window
// CHECK:         fat.attention {{.*}} window [-1, 32] layout(bshd) -> tensor<1x64x4x128xf32>
func.func @tensor_bshd_window(%q: tensor<1x64x4x128xf32>, %k: tensor<1x80x2x128xf32>,
                              %v: tensor<1x80x2x128xf32>, %o: tensor<1x64x4x128xf32>)
    -> tensor<1x64x4x128xf32> {
  %r = fat.attention ins(%q, %k, %v : tensor<1x64x4x128xf32>, tensor<1x80x2x128xf32>, tensor<1x80x2x128xf32>)
                     outs(%o : tensor<1x64x4x128xf32>) window [-1, 32] layout(bshd)
                     -> tensor<1x64x4x128xf32>
  return %r : tensor<1x64x4x128xf32>
}

// The memref form writes in place and has no results; strided memrefs are
// accepted (a BSHD view of a packed QKV buffer, say).
// CHECK-LABEL: func.func @memref_form
// CHECK:         fat.attention ins(%{{.+}}, %{{.+}}, %{{.+}} : memref<2x4x100x64xbf16, strided<[76800, 64, 768, 1]>>, memref<2x4x100x64xbf16>, memref<2x4x100x64xbf16>) outs(%{{.+}} : memref<2x4x100x64xbf16>) lse(%{{.+}} : memref<2x4x100xf32>) causal
// CHECK-NOT:     ->
func.func @memref_form(%q: memref<2x4x100x64xbf16, strided<[76800, 64, 768, 1]>>,
                       %k: memref<2x4x100x64xbf16>, %v: memref<2x4x100x64xbf16>,
                       %o: memref<2x4x100x64xbf16>, %l: memref<2x4x100xf32>) {
  fat.attention ins(%q, %k, %v : memref<2x4x100x64xbf16, strided<[76800, 64, 768, 1]>>,
                                 memref<2x4x100x64xbf16>, memref<2x4x100x64xbf16>)
                outs(%o : memref<2x4x100x64xbf16>) lse(%l : memref<2x4x100xf32>) causal
  return
}

// Tile ops, in the order one online-softmax step uses them.
// CHECK-LABEL: func.func @tile_ops
// CHECK:         %[[S:.+]] = fat.qk %{{.+}}, %{{.+}} : tensor<64x128xbf16>, tensor<32x128xbf16> -> tensor<64x32xf32>
// CHECK:         %[[SM:.+]] = fat.mask %[[S]] at(%{{.+}}, %{{.+}}) kv_len(%{{.+}}) diagonal(%{{.+}}) causal window [8, 0] : tensor<64x32xf32>
// CHECK:         %[[M1:.+]] = fat.row_max %[[SM]], %[[M0:.+]] : tensor<64x32xf32>, tensor<64xf32>
// CHECK:         %[[P:.+]] = fat.exp2 %[[SM]], %[[M1]] scale 1.275160e-01 : tensor<64x32xf32>, tensor<64xf32>
// CHECK:         %[[A:.+]] = fat.exp2 %[[M0]], %[[M1]] scale 1.275160e-01 : tensor<64xf32>, tensor<64xf32>
// CHECK:         %[[L1:.+]] = fat.rescale %{{.+}}, %[[A]] : tensor<64xf32>, tensor<64xf32>
// CHECK:         %[[L2:.+]] = fat.row_sum %[[P]], %[[L1]] : tensor<64x32xf32>, tensor<64xf32>
// CHECK:         %[[O1:.+]] = fat.rescale %{{.+}}, %[[A]] : tensor<64x128xf32>, tensor<64xf32>
// CHECK:         %[[O2:.+]] = fat.pv %[[P]], %{{.+}}, %[[O1]] : tensor<64x32xf32>, tensor<32x128xbf16>, tensor<64x128xf32>
// CHECK:         fat.finalize %[[O2]], %[[L2]], %[[M1]] scale 8.838830e-02 : tensor<64x128xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<64x128xbf16>, tensor<64xf32>
func.func @tile_ops(%q: tensor<64x128xbf16>, %k: tensor<32x128xbf16>, %v: tensor<32x128xbf16>,
                    %o: tensor<64x128xf32>, %m: tensor<64xf32>, %l: tensor<64xf32>,
                    %i0: index, %j0: index, %n: index, %d: index)
    -> (tensor<64x128xbf16>, tensor<64xf32>) {
  %s = fat.qk %q, %k : tensor<64x128xbf16>, tensor<32x128xbf16> -> tensor<64x32xf32>
  %sm = fat.mask %s at(%i0, %j0) kv_len(%n) diagonal(%d) causal window [8, 0] : tensor<64x32xf32>
  %m1 = fat.row_max %sm, %m : tensor<64x32xf32>, tensor<64xf32>
  %p = fat.exp2 %sm, %m1 scale 0.127516 : tensor<64x32xf32>, tensor<64xf32>
  %a = fat.exp2 %m, %m1 scale 0.127516 : tensor<64xf32>, tensor<64xf32>
  %l1 = fat.rescale %l, %a : tensor<64xf32>, tensor<64xf32>
  %l2 = fat.row_sum %p, %l1 : tensor<64x32xf32>, tensor<64xf32>
  %o1 = fat.rescale %o, %a : tensor<64x128xf32>, tensor<64xf32>
  %o2 = fat.pv %p, %v, %o1 : tensor<64x32xf32>, tensor<32x128xbf16>, tensor<64x128xf32>
  %out, %lse = fat.finalize %o2, %l2, %m1 scale 0.0883883 : tensor<64x128xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<64x128xbf16>, tensor<64xf32>
  return %out, %lse : tensor<64x128xbf16>, tensor<64xf32>
}

// The tensorized level (FatTensorOps.td): fat.wgmma with and without an
// accumulator, A from shared memory or registers; the softmax ops with
// their optional lazy threshold, polynomial fraction and row sum.
// CHECK-LABEL: func.func @tensorized
// CHECK-SAME:    (%[[Q:.+]]: tensor<128x64xbf16>, %[[K:.+]]: tensor<64x64xbf16>, %[[V:.+]]: tensor<64x72xbf16>, %[[O:.+]]: tensor<128x72xf32>, %[[M:.+]]: tensor<128xf32>, %[[L:.+]]: tensor<128xf32>, %[[C:.+]]: f32)
// CHECK:         %[[S:.+]] = fat.wgmma %[[Q]], %[[K]] transpose_b a_from smem shape [64, 64, 16] : tensor<128x64xbf16>, tensor<64x64xbf16> -> tensor<128x64xf32>
// CHECK:         %[[MN:[a-z0-9_]+]], %[[A:[a-z0-9_]+]] = fat.softmax_max %[[S]], %[[M]] scale %[[C]] lazy threshold 8.000000e+00 : tensor<128x64xf32>, tensor<128xf32>
// CHECK:         %{{.+}} = fat.softmax_max %[[S]], %[[M]] scale %[[C]] : tensor<128x64xf32>, tensor<128xf32>
// CHECK:         %[[P:[a-z0-9_]+]], %{{.+}} = fat.softmax_exp %[[S]], %[[MN]] scale %[[C]] exp2_poly 2.500000e-01 rowsum(%[[L]], %[[A]]) : (tensor<128x64xf32>, tensor<128xf32>, f32, tensor<128xf32>, tensor<128xf32>) -> (tensor<128x64xf32>, tensor<128xf32>)
// CHECK:         %{{.+}} = fat.softmax_exp %[[S]], %[[MN]] scale %[[C]] : (tensor<128x64xf32>, tensor<128xf32>, f32) -> tensor<128x64xf32>
// CHECK:         %[[P16:.+]] = arith.truncf %[[P]]
// CHECK:         fat.wgmma %[[P16]], %[[V]], %[[O]] a_from registers shape [64, 72, 16] : tensor<128x64xbf16>, tensor<64x72xbf16>, tensor<128x72xf32> -> tensor<128x72xf32>
func.func @tensorized(%q: tensor<128x64xbf16>, %k: tensor<64x64xbf16>, %v: tensor<64x72xbf16>,
                      %o: tensor<128x72xf32>, %m: tensor<128xf32>, %l: tensor<128xf32>,
                      %c: f32) {
  %s = fat.wgmma %q, %k transpose_b a_from smem shape [64, 64, 16]
      : tensor<128x64xbf16>, tensor<64x64xbf16> -> tensor<128x64xf32>
  %m1, %a = fat.softmax_max %s, %m scale %c lazy threshold 8.0 : tensor<128x64xf32>, tensor<128xf32>
  %m2, %a2 = fat.softmax_max %s, %m scale %c : tensor<128x64xf32>, tensor<128xf32>
  %p, %l1 = fat.softmax_exp %s, %m1 scale %c exp2_poly 0.25 rowsum(%l, %a)
      : (tensor<128x64xf32>, tensor<128xf32>, f32, tensor<128xf32>, tensor<128xf32>)
      -> (tensor<128x64xf32>, tensor<128xf32>)
  %p2 = fat.softmax_exp %s, %m1 scale %c : (tensor<128x64xf32>, tensor<128xf32>, f32) -> tensor<128x64xf32>
  %p16 = arith.truncf %p : tensor<128x64xf32> to tensor<128x64xbf16>
  %o1 = fat.wgmma %p16, %v, %o a_from registers shape [64, 72, 16]
      : tensor<128x64xbf16>, tensor<64x72xbf16>, tensor<128x72xf32> -> tensor<128x72xf32>
  return
}

// Score and mask regions with captures and offsets (memref form); the
// tile ops that carry them into the tiled form.
// CHECK-LABEL: func.func @modifications
// CHECK:         fat.attention ins({{.+}}) outs({{.+}}) offsets(%{{.+}}, %{{.+}}, %{{.+}}) captures(%{{.+}} : memref<8xf32>) causal score {
// CHECK:         ^bb0(%{{.+}}: f32, %{{.+}}: index, %[[H:.+]]: index, %{{.+}}: index, %{{.+}}: index, %[[T:.+]]: tensor<8xf32>):
// CHECK:           tensor.extract %[[T]][%[[H]]] : tensor<8xf32>
// CHECK:           fat.yield %{{.+}} : f32
// CHECK:         } mask {
// CHECK:           fat.yield %{{.+}} : i1
// CHECK:         }
// CHECK:         fat.score_mod %{{.+}} at(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) len(%{{.+}}, %{{.+}}) scale 1.250000e-01 {
// CHECK:         } : tensor<64x32xf32>
// CHECK:         fat.mask_mod %{{.+}} at(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) len(%{{.+}}, %{{.+}}) {
// CHECK:         } : tensor<64x32xf32>
// CHECK:         fat.score_mod %{{.+}} at(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) len(%{{.+}}, %{{.+}}) scale 1.000000e+00 tanh_poly {
// CHECK:           math.tanh
func.func @modifications(%q: memref<1x8x64x64xbf16>, %k: memref<1x8x64x64xbf16>,
                         %v: memref<1x8x64x64xbf16>, %o: memref<1x8x64x64xbf16>,
                         %bias: memref<8xf32>, %b0: index, %s: tensor<64x32xf32>) {
  fat.attention ins(%q, %k, %v : memref<1x8x64x64xbf16>, memref<1x8x64x64xbf16>,
                                 memref<1x8x64x64xbf16>)
                outs(%o : memref<1x8x64x64xbf16>) offsets(%b0, %b0, %b0)
                captures(%bias : memref<8xf32>) causal
                score {
                ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index, %t: tensor<8xf32>):
                  %e = tensor.extract %t[%h] : tensor<8xf32>
                  %y = arith.addf %x, %e : f32
                  fat.yield %y : f32
                }
                mask {
                ^bb0(%b: index, %h: index, %i: index, %j: index, %t: tensor<8xf32>):
                  %keep = arith.cmpi ne, %i, %j : index
                  fat.yield %keep : i1
                }
  %c0 = arith.constant 0 : index
  %s1 = fat.score_mod %s at(%c0, %c0, %c0, %c0) len(%c0, %c0) scale 0.125 {
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    fat.yield %x : f32
  } : tensor<64x32xf32>
  %s2 = fat.mask_mod %s1 at(%c0, %c0, %c0, %c0) len(%c0, %c0) {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %t = arith.constant true
    fat.yield %t : i1
  } : tensor<64x32xf32>
  %s3 = fat.score_mod %s2 at(%c0, %c0, %c0, %c0) len(%c0, %c0) scale 1.0 tanh_poly {
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %c = arith.constant 50.0 : f32
    %y = arith.divf %x, %c : f32
    %t = math.tanh %y : f32
    fat.yield %t : f32
  } : tensor<64x32xf32>
  return
}

// The producer's TMA tile copy (FatKernelOps.td).
// CHECK-LABEL: func.func @tma_load
// CHECK:         fat.tma_load %[[M:[a-z0-9]+]][%[[R:[a-z0-9]+]], %[[R]], %[[R]]] to(%[[S:[a-z0-9]+]] box_stride 16384) columns 128 barrier(%[[S]]) : !llvm.ptr, !llvm.ptr<3>, !llvm.ptr<3>
func.func @tma_load(%m: !llvm.ptr, %s: !llvm.ptr<3>, %r: i32) {
  fat.tma_load %m[%r, %r, %r] to(%s box_stride 16384) columns 128 barrier(%s)
      : !llvm.ptr, !llvm.ptr<3>, !llvm.ptr<3>
  return
}

// A ring of shared-memory buffers and its protocol (FatKernelOps.td): the
// type prints once, as an alias at the top (checked first in this file).
// CHECK-LABEL: func.func @ring
// CHECK:         %[[RING:[0-9]+]] = fat.ring %[[BASE:[a-z0-9]+]] : ![[RT]]
// CHECK-NEXT:    fat.ring_init %[[RING]] : ![[RT]]
// CHECK-NEXT:    %[[BUF:[a-z0-9_]+]], %[[FULL:[a-z0-9_]+]] = fat.ring_acquire %[[RING]][%[[I:[a-z0-9]+]]] expect_tx 40960 : ![[RT]]
// CHECK-NEXT:    fat.ring_wait %[[RING]][%[[I]]] : ![[RT]]
// CHECK-NEXT:    %{{[0-9]+}} = fat.ring_buffer %[[RING]][%[[I]]] : ![[RT]]
// CHECK-NEXT:    fat.ring_release %[[RING]][%[[I]]] : ![[RT]]
// CHECK-NEXT:    fat.ring_wait %[[RING]][%[[I]]] if(%[[C:[a-z0-9]+]]) else %[[RING]][%[[I]]] : ![[RT]], ![[RT]]
// CHECK-NEXT:    fat.ring_release %[[RING]][%[[I]]] if(%[[C]]) else %[[RING]][%[[I]]] : ![[RT]], ![[RT]]
func.func @ring(%base: !llvm.ptr<3>, %i: i32, %c: i1) {
  %r = fat.ring %base : !fat.ring<stages = 2, buffer_offset = 32768,
      buffer_bytes = 40960, barrier_offset = 196608, releases = 256>
  fat.ring_init %r : !fat.ring<stages = 2, buffer_offset = 32768,
      buffer_bytes = 40960, barrier_offset = 196608, releases = 256>
  %buf, %full = fat.ring_acquire %r[%i] expect_tx 40960
      : !fat.ring<stages = 2, buffer_offset = 32768, buffer_bytes = 40960,
                  barrier_offset = 196608, releases = 256>
  fat.ring_wait %r[%i] : !fat.ring<stages = 2, buffer_offset = 32768,
      buffer_bytes = 40960, barrier_offset = 196608, releases = 256>
  %b = fat.ring_buffer %r[%i] : !fat.ring<stages = 2, buffer_offset = 32768,
      buffer_bytes = 40960, barrier_offset = 196608, releases = 256>
  fat.ring_release %r[%i] : !fat.ring<stages = 2, buffer_offset = 32768,
      buffer_bytes = 40960, barrier_offset = 196608, releases = 256>
  fat.ring_wait %r[%i] if(%c) else %r[%i]
      : !fat.ring<stages = 2, buffer_offset = 32768, buffer_bytes = 40960,
                  barrier_offset = 196608, releases = 256>,
        !fat.ring<stages = 2, buffer_offset = 32768, buffer_bytes = 40960,
                  barrier_offset = 196608, releases = 256>
  fat.ring_release %r[%i] if(%c) else %r[%i]
      : !fat.ring<stages = 2, buffer_offset = 32768, buffer_bytes = 40960,
                  barrier_offset = 196608, releases = 256>,
        !fat.ring<stages = 2, buffer_offset = 32768, buffer_bytes = 40960,
                  barrier_offset = 196608, releases = 256>
  return
}

// The pipelined kernel's own ops (FatKernelOps.td), on registers and on
// #fat.wgmma_fragment tiles.
// CHECK-LABEL: func.func @kernel_ops
// CHECK-SAME:    (%[[WG:[a-z0-9]+]]: i32, %[[X:[a-z0-9]+]]: f32, %[[N:[a-z0-9]+]]: i32, %[[T:[a-z0-9]+]]: tensor<64x16xf32, #fat.wgmma_fragment>)
// CHECK:         fat.warp_specialize %[[WG]] registers(24, 240) producer {
// CHECK-NEXT:      fat.schedule_fence %[[N]] : i32
// CHECK-NEXT:    } consumer {
// CHECK-NEXT:      %{{.+}}:3 = fat.operand_fence %[[X]], %[[N]], %[[T]] : f32, i32, tensor<64x16xf32, #fat.wgmma_fragment>
// CHECK-NEXT:      %{{.+}}:2 = fat.wgmma_wait pending(1) (%[[X]], %[[T]]) : f32, tensor<64x16xf32, #fat.wgmma_fragment>
// CHECK-NEXT:      fat.wgmma_wait pending(0) ()
// CHECK-NEXT:    }
// CHECK:         fat.warp_specialize %[[WG]] producer {
// CHECK:         %[[S:.+]] = fat.wgmma_async a_smem(%[[D:[a-z0-9_]+]] box_stride 8192) b(%[[D]] box_stride 2048) transpose_b k 128 shape [64, 16, 16] bf16 -> tensor<64x16xf32, #fat.wgmma_fragment>
// CHECK-NEXT:    %[[P:.+]] = arith.truncf %[[S]] : tensor<64x16xf32, #fat.wgmma_fragment> to tensor<64x16xf16, #fat.wgmma_fragment>
// CHECK-NEXT:    fat.wgmma_async a_regs(%[[P]] : tensor<64x16xf16, #fat.wgmma_fragment>) b(%[[D]] box_stride 1024) acc(%[[S]] : tensor<64x16xf32, #fat.wgmma_fragment>) scale_d(%[[N]]) k 16 shape [64, 16, 16] f16 -> tensor<64x16xf32, #fat.wgmma_fragment>
func.func @kernel_ops(%wg: i32, %x: f32, %n: i32,
                      %t: tensor<64x16xf32, #fat.wgmma_fragment>) {
  fat.warp_specialize %wg registers(24, 240) producer {
    fat.schedule_fence %n : i32
  } consumer {
    %y, %m, %u = fat.operand_fence %x, %n, %t
        : f32, i32, tensor<64x16xf32, #fat.wgmma_fragment>
    %w:2 = fat.wgmma_wait pending(1) (%x, %t)
        : f32, tensor<64x16xf32, #fat.wgmma_fragment>
    fat.wgmma_wait pending(0) ()
  }
  fat.warp_specialize %wg producer {
    fat.schedule_fence %n : i32
  } consumer {
    fat.schedule_fence %n : i32
  }
  %d = arith.constant 0 : i64
  %s = fat.wgmma_async a_smem(%d box_stride 8192) b(%d box_stride 2048)
      transpose_b k 128
      shape [64, 16, 16] bf16 -> tensor<64x16xf32, #fat.wgmma_fragment>
  %p = arith.truncf %s : tensor<64x16xf32, #fat.wgmma_fragment>
      to tensor<64x16xf16, #fat.wgmma_fragment>
  %o = fat.wgmma_async a_regs(%p : tensor<64x16xf16, #fat.wgmma_fragment>)
      b(%d box_stride 1024) acc(%s : tensor<64x16xf32, #fat.wgmma_fragment>)
      scale_d(%n) k 16 shape [64, 16, 16] f16
      -> tensor<64x16xf32, #fat.wgmma_fragment>
  return
}

// fat.launch: the host's call of a built kernel (the pipelined form), with
// and without the LSE and the diagonal.
// CHECK-LABEL: func.func @launch
// CHECK:         %[[O:[a-z0-9_]+]]:2 = fat.launch @k::@k ins(%{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : tensor<1x2x64x64xbf16>, tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>) outs(%{{[a-z0-9_]+}} : tensor<1x2x64x64xbf16>) lse(%{{[a-z0-9_]+}} : tensor<1x2x64xf32>) diagonal(%{{[a-z0-9_]+}}) scale 1.250000e-01 -> tensor<1x2x64x64xbf16>, tensor<1x2x64xf32>
// CHECK:         fat.launch @k::@k ins({{.*}}) outs({{.*}}) scale 5.000000e-01 {fat.schedule = {pingpong = true}} -> tensor<1x2x64x64xbf16>
// CHECK:         return %[[O]]#0
gpu.module @k {
}
func.func @launch(%q: tensor<1x2x64x64xbf16>, %k: tensor<1x1x64x64xbf16>, %v: tensor<1x1x64x64xbf16>,
                  %o: tensor<1x2x64x64xbf16>, %l: tensor<1x2x64xf32>, %d: index) -> tensor<1x2x64x64xbf16> {
  %r:2 = fat.launch @k::@k ins(%q, %k, %v : tensor<1x2x64x64xbf16>, tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>)
           outs(%o : tensor<1x2x64x64xbf16>) lse(%l : tensor<1x2x64xf32>) diagonal(%d) scale 0.125
           -> tensor<1x2x64x64xbf16>, tensor<1x2x64xf32>
  %s = fat.launch @k::@k ins(%q, %k, %v : tensor<1x2x64x64xbf16>, tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>)
           outs(%r#0 : tensor<1x2x64x64xbf16>) scale 0.5 {fat.schedule = {pingpong = true}}
           -> tensor<1x2x64x64xbf16>
  return %r#0 : tensor<1x2x64x64xbf16>
}

// A kernel's warpgroup tiles: the #fat.wgmma_fragment encoding on a tile and
// a row vector, the GPU forms of fat.mask (row_limits) and fat.rescale
// (warp_vote), the rounding of P to a 16-bit fragment.
// CHECK-LABEL: func.func @fragments
// CHECK-SAME:    (%[[S:.+]]: tensor<64x128xf32, #fat.wgmma_fragment>, %[[M:.+]]: tensor<64xf32, #fat.wgmma_fragment>, %[[C:.+]]: f32, %[[I:.+]]: index)
// CHECK:         %[[SM:.+]] = fat.mask %[[S]] at(%[[I]], %[[I]]) kv_len(%[[I]]) diagonal(%[[I]]) causal row_limits : tensor<64x128xf32, #fat.wgmma_fragment>
// CHECK:         %[[MN:[a-z0-9_]+]], %[[A:[a-z0-9_]+]] = fat.softmax_max %[[SM]], %[[M]] scale %[[C]] : tensor<64x128xf32, #fat.wgmma_fragment>, tensor<64xf32, #fat.wgmma_fragment>
// CHECK:         %[[P:.+]] = fat.softmax_exp %[[SM]], %[[MN]] scale %[[C]] : (tensor<64x128xf32, #fat.wgmma_fragment>, tensor<64xf32, #fat.wgmma_fragment>, f32) -> tensor<64x128xf32, #fat.wgmma_fragment>
// CHECK:         arith.truncf %[[P]] : tensor<64x128xf32, #fat.wgmma_fragment> to tensor<64x128xbf16, #fat.wgmma_fragment>
// CHECK:         fat.rescale %[[P]], %[[A]] warp_vote : tensor<64x128xf32, #fat.wgmma_fragment>, tensor<64xf32, #fat.wgmma_fragment>
func.func @fragments(%s: tensor<64x128xf32, #fat.wgmma_fragment>,
                     %m: tensor<64xf32, #fat.wgmma_fragment>, %c: f32, %i: index) {
  %sm = fat.mask %s at(%i, %i) kv_len(%i) diagonal(%i) causal row_limits
      : tensor<64x128xf32, #fat.wgmma_fragment>
  %m1, %a = fat.softmax_max %sm, %m scale %c
      : tensor<64x128xf32, #fat.wgmma_fragment>, tensor<64xf32, #fat.wgmma_fragment>
  %p = fat.softmax_exp %sm, %m1 scale %c
      : (tensor<64x128xf32, #fat.wgmma_fragment>, tensor<64xf32, #fat.wgmma_fragment>, f32)
      -> tensor<64x128xf32, #fat.wgmma_fragment>
  %p16 = arith.truncf %p : tensor<64x128xf32, #fat.wgmma_fragment> to tensor<64x128xbf16, #fat.wgmma_fragment>
  %o = fat.rescale %p, %a warp_vote
      : tensor<64x128xf32, #fat.wgmma_fragment>, tensor<64xf32, #fat.wgmma_fragment>
  return
}

// Block sparsity in the kernel: a tile's key blocks narrowed to its groups'
// ranges, and a warpgroup's full-block predicate (with and without a causal
// edge).
// CHECK-LABEL: func.func @key_block_ops
// CHECK:         %{{.+}}, %{{.+}} = fat.key_block_range %{{.+}}, %{{.+}} rows(%{{.+}}, %{{.+}}) batch(%{{.+}}) ranges(%{{.+}} : !llvm.ptr<1>) {block_m = 128 : i64, block_n = 160 : i64, table = array<i64: 2, 3, 4>}
// CHECK:         fat.full_key_block %{{.+}} row(%{{.+}}) batch(%{{.+}}) ranges(%{{.+}} : !llvm.ptr<1>) edge(%{{.+}}) {block_n = 160 : i64, right = 0 : i64, table = array<i64: 2, 3, 4>}
// CHECK:         fat.full_key_block %{{.+}} row(%{{.+}}) batch(%{{.+}}) ranges(%{{.+}} : !llvm.ptr<1>) {block_n = 160 : i64, table = array<i64: 2, 3, 4>}
func.func @key_block_ops(%lo: i32, %hi: i32, %b: i32, %t: !llvm.ptr<1>) -> (i1, i1) {
  %l, %h = fat.key_block_range %lo, %hi rows(%lo, %hi) batch(%b) ranges(%t : !llvm.ptr<1>)
      {block_m = 128, block_n = 160, table = array<i64: 2, 3, 4>}
  %f = fat.full_key_block %l row(%lo) batch(%b) ranges(%t : !llvm.ptr<1>) edge(%h)
      {block_n = 160, right = 0, table = array<i64: 2, 3, 4>}
  %g = fat.full_key_block %l row(%lo) batch(%b) ranges(%t : !llvm.ptr<1>)
      {block_n = 160, table = array<i64: 2, 3, 4>}
  return %f, %g : i1, i1
}

// A warpgroup's full blocks at once.
// CHECK-LABEL: func.func @full_key_blocks
// CHECK:         fat.full_key_blocks row(%{{.+}}) batch(%{{.+}}) ranges(%{{.+}} : !llvm.ptr<1>) edge(%{{.+}}) {block_n = 128 : i64, right = 0 : i64, table = array<i64: 2, 3, 4>}
func.func @full_key_blocks(%r: i32, %b: i32, %t: !llvm.ptr<1>) -> (i32, i32) {
  %f0, %f1 = fat.full_key_blocks row(%r) batch(%b) ranges(%t : !llvm.ptr<1>) edge(%r)
      {block_n = 128, right = 0, table = array<i64: 2, 3, 4>}
  return %f0, %f1 : i32, i32
}

// A six-column table's hole: the blocks no row of the tile sees.
// CHECK-LABEL: func.func @key_block_hole
// CHECK:         %[[A:.+]], %[[B:.+]] = fat.key_block_hole %{{.+}}, %{{.+}} rows(%{{.+}}, %{{.+}}) batch(%{{.+}}) ranges(%{{.+}} : !llvm.ptr<1>) {block_m = 128 : i64, block_n = 128 : i64, table = array<i64: 1, 64, 6>}
// CHECK-NEXT:    return %[[A]], %[[B]] : i32, i32
func.func @key_block_hole(%lo: i32, %hi: i32, %b: i32, %t: !llvm.ptr<1>) -> (i32, i32) {
  %h0, %h1 = fat.key_block_hole %lo, %hi rows(%lo, %hi) batch(%b) ranges(%t : !llvm.ptr<1>)
      {block_m = 128, block_n = 128, table = array<i64: 1, 64, 6>}
  return %h0, %h1 : i32, i32
}

// The epilogue's stores: O and the LSE from registers, O alone through
// shared memory (in the tile's Q buffer, or in the last V buffer behind a
// named barrier).
!qring = !fat.ring<stages = 2, buffer_offset = 0, buffer_bytes = 32768, barrier_offset = 180224, releases = 256>
!vring = !fat.ring<stages = 2, buffer_offset = 98304, buffer_bytes = 40960, barrier_offset = 180256, releases = 256>
// CHECK-LABEL: func.func @epilogue_stores
// CHECK-SAME:    %[[Q:[^:]+]]: !ring{{[0-9]*}}, %[[V:[^:]+]]: !ring{{[0-9]*}}, %{{.+}}: i64, %[[X:[^:]+]]: i32, %[[HAS:[^:]+]]: i1
// CHECK:         fat.store_output o %{{.+}} : tensor<64x64xbf16, #fat.wgmma_fragment> to %{{.+}} : !llvm.ptr<1> strides(%{{.+}}, %{{.+}}, %{{.+}}) lse %{{.+}} : tensor<64xf32, #fat.wgmma_fragment> to %{{.+}} : !llvm.ptr<1> strides(%{{.+}}, %{{.+}}) rows(%{{.+}}, %{{.+}}) batch(%{{.+}}) head(%{{.+}})
// CHECK-NEXT:    fat.store_output lse %{{.+}} : tensor<64xf32, #fat.wgmma_fragment> to %{{.+}} : !llvm.ptr<1> strides(%{{.+}}, %{{.+}}) rows(
// CHECK-NEXT:    fat.stage_output %{{.+}} : tensor<64x64xbf16, #fat.wgmma_fragment> to %{{.+}} : !llvm.ptr<1> strides(%{{.+}}, %{{.+}}, %{{.+}}) through %[[Q]][%[[X]]] : !ring{{[0-9]*}} rows(%[[X]], %[[X]]) batch(%[[X]]) head(%[[X]]) {columns = 32 : i64, q_box_stride = 16384 : i64}
// CHECK-NEXT:    fat.stage_output %{{.+}} through %[[Q]][%[[X]]] : !ring{{[0-9]*}} or %[[V]][%[[X]]] : !ring{{[0-9]*}} if(%[[HAS]]) rows({{.+}} {barrier = array<i64: 4, 256>, columns = 64 : i64, q_box_stride = 16384 : i64}
func.func @epilogue_stores(%o: tensor<64x64xbf16, #fat.wgmma_fragment>,
                           %lse: tensor<64xf32, #fat.wgmma_fragment>,
                           %p: !llvm.ptr<1>, %q: !qring, %v: !vring,
                           %s: i64, %x: i32, %has: i1) {
  fat.store_output o %o : tensor<64x64xbf16, #fat.wgmma_fragment>
      to %p : !llvm.ptr<1> strides(%s, %s, %s)
      lse %lse : tensor<64xf32, #fat.wgmma_fragment> to %p : !llvm.ptr<1>
      strides(%s, %s) rows(%x, %x) batch(%x) head(%x)
  fat.store_output lse %lse : tensor<64xf32, #fat.wgmma_fragment>
      to %p : !llvm.ptr<1> strides(%s, %s) rows(%x, %x) batch(%x) head(%x)
  fat.stage_output %o : tensor<64x64xbf16, #fat.wgmma_fragment>
      to %p : !llvm.ptr<1> strides(%s, %s, %s) through %q[%x] : !qring
      rows(%x, %x) batch(%x) head(%x) {columns = 32, q_box_stride = 16384}
  fat.stage_output %o : tensor<64x64xbf16, #fat.wgmma_fragment>
      to %p : !llvm.ptr<1> strides(%s, %s, %s) through %q[%x] : !qring
      or %v[%x] : !vring if (%has) rows(%x, %x) batch(%x) head(%x)
      {barrier = array<i64: 4, 256>, columns = 64, q_box_stride = 16384}
  return
}

// The kernel's epilogue: l as the quad's shares, converted once; fat.finalize
// with a run-time c = scale·log2 e, from a sum or from acc's ones columns.
// CHECK-LABEL: func.func @epilogue_tiles
// CHECK:         %[[L:.+]] = fat.convert_layout %{{.+}} : tensor<64xf32, #fat.wgmma_fragment<partial>> -> tensor<64xf32, #fat.wgmma_fragment>
// CHECK:         fat.finalize %{{.+}}, %[[L]], %{{.+}} exp2_scale %{{.+}} : tensor<64x128xf32, #fat.wgmma_fragment>, tensor<64xf32, #fat.wgmma_fragment>, tensor<64xf32, #fat.wgmma_fragment> -> tensor<64x128xbf16, #fat.wgmma_fragment>, tensor<64xf32, #fat.wgmma_fragment>
// CHECK:         fat.finalize %{{.+}}, ones_columns, %{{.+}} exp2_scale %{{.+}} : tensor<64x136xf32, #fat.wgmma_fragment>, tensor<64xf32, #fat.wgmma_fragment> -> tensor<64x128xbf16, #fat.wgmma_fragment>, tensor<64xf32, #fat.wgmma_fragment>
func.func @epilogue_tiles(%o: tensor<64x128xf32, #fat.wgmma_fragment>,
                          %ones: tensor<64x136xf32, #fat.wgmma_fragment>,
                          %lp: tensor<64xf32, #fat.wgmma_fragment<partial>>,
                          %m: tensor<64xf32, #fat.wgmma_fragment>, %c: f32) {
  %l = fat.convert_layout %lp : tensor<64xf32, #fat.wgmma_fragment<partial>>
      -> tensor<64xf32, #fat.wgmma_fragment>
  %o1, %lse1 = fat.finalize %o, %l, %m exp2_scale %c
      : tensor<64x128xf32, #fat.wgmma_fragment>, tensor<64xf32, #fat.wgmma_fragment>,
        tensor<64xf32, #fat.wgmma_fragment>
        -> tensor<64x128xbf16, #fat.wgmma_fragment>, tensor<64xf32, #fat.wgmma_fragment>
  %o2, %lse2 = fat.finalize %ones, ones_columns, %m exp2_scale %c
      : tensor<64x136xf32, #fat.wgmma_fragment>, tensor<64xf32, #fat.wgmma_fragment>
        -> tensor<64x128xbf16, #fat.wgmma_fragment>, tensor<64xf32, #fat.wgmma_fragment>
  return
}

// Ping-pong's turns among the consumer warpgroups.
// CHECK-LABEL: func.func @turns
// CHECK-SAME:    (%[[C:[^:]+]]: i32)
// CHECK-NEXT:    fat.turns_open %[[C]] of 2
// CHECK-NEXT:    fat.turn_begin %[[C]] of 2
// CHECK-NEXT:    fat.turn_end %[[C]] of 2{{$}}
// CHECK-NEXT:    fat.turn_end %[[C]] of 3 last
// CHECK-NEXT:    fat.turns_close %[[C]] of 2
func.func @turns(%c: i32) {
  fat.turns_open %c of 2
  fat.turn_begin %c of 2
  fat.turn_end %c of 2
  fat.turn_end %c of 3 last
  fat.turns_close %c of 2
  return
}

// The mask's geometry over key blocks, with and without edges.
// CHECK-LABEL: func.func @key_geometry
// CHECK-SAME:    (%[[R0:[^:]+]]: i32, %[[R1:[^:]+]]: i32, %[[N:[^:]+]]: i32, %[[D:[^:]+]]: i32, %[[J:[^:]+]]: i32)
// CHECK-NEXT:    %{{.+}}, %{{.+}} = fat.visible_key_blocks rows(%[[R0]], %[[R1]]) kv_len(%[[N]]) edge(%[[D]]) {block_n = 128 : i64, left = 64 : i64, right = 0 : i64} : i32
// CHECK-NEXT:    %{{.+}}, %{{.+}} = fat.visible_key_blocks rows(%[[R0]], %[[R1]]) kv_len(%[[N]]) {block_n = 80 : i64} : i32
// CHECK-NEXT:    %{{.+}} = fat.first_masked_key_block row(%[[R0]]) kv_len(%[[N]]) edge(%[[D]]) {block_n = 128 : i64, right = 0 : i64} : i32
// CHECK-NEXT:    %{{.+}} = fat.key_block_needs_mask %[[J]] rows(%[[R0]], %[[R1]]) kv_len(%[[N]]) edge(%[[D]]) {block_n = 128 : i64, left = 64 : i64} : i32
func.func @key_geometry(%r0: i32, %r1: i32, %n: i32, %d: i32, %j: i32) -> (i32, i32, i32, i32, i32, i1) {
  %f, %e = fat.visible_key_blocks rows(%r0, %r1) kv_len(%n) edge(%d) {block_n = 128, left = 64, right = 0} : i32
  %f2, %e2 = fat.visible_key_blocks rows(%r0, %r1) kv_len(%n) {block_n = 80} : i32
  %j0 = fat.first_masked_key_block row(%r0) kv_len(%n) edge(%d) {block_n = 128, right = 0} : i32
  %m = fat.key_block_needs_mask %j rows(%r0, %r1) kv_len(%n) edge(%d) {block_n = 128, left = 64} : i32
  return %f, %e, %f2, %e2, %j0, %m : i32, i32, i32, i32, i32, i1
}

// A constant written into every stage buffer of a ring.
// CHECK-LABEL: func.func @ring_fill
// CHECK-NEXT:    fat.ring_fill %{{.+}} thread(%{{.+}}) {bytes = 2048 : i64, offset = 32768 : i64, threads = 384 : i64, value = 1065369472 : i32} : !ring{{[0-9]*}}
func.func @ring_fill(%v: !vring, %t: i32) {
  fat.ring_fill %v thread(%t) {bytes = 2048, offset = 32768, threads = 384, value = 1065369472 : i32} : !vring
  return
}

// A persistent CTA's tile loop: the tile's coordinates, ring position and
// tile index as the body's first arguments, then the carried values.
// CHECK-LABEL: func.func @tile_loop
// CHECK-SAME:    (%[[NM:[^:]+]]: i32, %[[B:[^:]+]]: i32, %[[X:[^:]+]]: f32)
// CHECK-NEXT:    %[[POS:[a-z_0-9]+]], %[[N:[a-z_0-9]+]], %[[R:[a-z_0-9]+]] = fat.tile_loop pairs query_blocks(%[[NM]]) heads 16 batch(%[[B]]) ctas 132 iter_args(%[[X]] : f32) {
// CHECK-NEXT:    ^bb0(%[[M:[a-z_0-9]+]]: i32, %{{[a-z_0-9]+}}: i32, %{{[a-z_0-9]+}}: i32, %{{[a-z_0-9]+}}: i32, %{{[a-z_0-9]+}}: i32, %[[Y:[a-z_0-9]+]]: f32):
// CHECK-NEXT:      fat.tile_yield blocks(%[[M]]) %[[Y]] : f32
// CHECK-NEXT:    } -> f32
// CHECK-NEXT:    %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} = fat.tile_loop query_blocks(%[[NM]]) heads 8 batch(%[[B]]) ctas 7 {
// CHECK:           fat.tile_yield blocks(%{{.+}}){{$}}
// CHECK-NEXT:    }{{$}}
func.func @tile_loop(%nm: i32, %b: i32, %x: f32) -> f32 {
  %pos, %n, %r = fat.tile_loop pairs query_blocks(%nm) heads 16 batch(%b) ctas 132 iter_args(%x : f32) {
  ^bb0(%m: i32, %h: i32, %bt: i32, %ring: i32, %t: i32, %y: f32):
    fat.tile_yield blocks(%m) %y : f32
  } -> f32
  %p2:2 = fat.tile_loop query_blocks(%nm) heads 8 batch(%b) ctas 7 {
  ^bb0(%m: i32, %h: i32, %bt: i32, %ring: i32, %t: i32):
    fat.tile_yield blocks(%h)
  }
  return %r : f32
}

// A term of j − i as Q·Kᵀ's accumulator (fat-tensorize
// relative-bias=accumulator), and its kernel forms: the band writer's stage
// and a warpgroup's fragment of it.
// CHECK-LABEL: func.func @score_band
// CHECK:         %[[T:.+]] = fat.score_band at(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) len(%{{.+}}, %{{.+}}) scale %{{.+}} captures(%{{.+}} : tensor<4x255xf32>) {
// CHECK:           arith.subi
// CHECK:           fat.yield %{{.+}} : f32
// CHECK:         } : tensor<128x128xf32>
// CHECK:         fat.band_stage %{{.+}} lane(%{{.+}}) at(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) scale %{{.+}} {
// CHECK:         } {keys = 128 : i64, rows = 128 : i64}
// CHECK:         fat.band_fragment %{{.+}} row(%{{.+}}) {keys = 128 : i64, rows = 128 : i64} : tensor<64x128xf32, #fat.wgmma_fragment>
func.func @score_band(%b: index, %h: index, %q0: index, %k0: index, %table: tensor<4x255xf32>,
                      %c: f32, %buf: !llvm.ptr<3>, %lane: i32)
    -> (tensor<128x128xf32>, tensor<64x128xf32, #fat.wgmma_fragment>) {
  %t = fat.score_band at(%b, %h, %q0, %k0) len(%q0, %k0) scale %c captures(%table : tensor<4x255xf32>) {
  ^bb0(%bb: index, %hh: index, %i: index, %j: index, %tab: tensor<4x255xf32>):
    %d = arith.subi %j, %i : index
    %o = arith.constant 127 : index
    %x = arith.addi %d, %o : index
    %e = tensor.extract %tab[%hh, %x] : tensor<4x255xf32>
    fat.yield %e : f32
  } : tensor<128x128xf32>
  fat.band_stage %buf lane(%lane) at(%b, %h, %q0, %k0) scale %c {
  ^bb0(%bb: index, %hh: index, %i: index, %j: index):
    %d = arith.subi %j, %i : index
    %di = arith.index_cast %d : index to i32
    %f = arith.sitofp %di : i32 to f32
    fat.yield %f : f32
  } {keys = 128 : i64, rows = 128 : i64}
  %r = arith.constant 0 : i32
  %frag = fat.band_fragment %buf row(%r) {keys = 128 : i64, rows = 128 : i64} : tensor<64x128xf32, #fat.wgmma_fragment>
  return %t, %frag : tensor<128x128xf32>, tensor<64x128xf32, #fat.wgmma_fragment>
}

// A linear positional bias's extra Q·Kᵀ columns (fat-tensorize linear-bias=mma).
// CHECK-LABEL: func.func @bias_columns
// CHECK:         %[[X:.+]] = fat.bias_query_columns at(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) scale %{{.+}} captures(%{{.+}} : tensor<4xf32>) {
// CHECK:           fat.yield %{{.+}} : f32
// CHECK:         } : tensor<128x16xbf16>
// CHECK:         %{{.+}} = fat.bias_key_columns : tensor<128x16xbf16>
func.func @bias_columns(%b: index, %h: index, %q0: index, %k0: index, %slopes: tensor<4xf32>,
                        %c: f32) -> (tensor<128x16xbf16>, tensor<128x16xbf16>) {
  %x = fat.bias_query_columns at(%b, %h, %q0, %k0) scale %c captures(%slopes : tensor<4xf32>) {
  ^bb0(%bb: index, %hh: index, %s: tensor<4xf32>):
    %g = tensor.extract %s[%hh] : tensor<4xf32>
    fat.yield %g : f32
  } : tensor<128x16xbf16>
  %r = fat.bias_key_columns : tensor<128x16xbf16>
  return %x, %r : tensor<128x16xbf16>, tensor<128x16xbf16>
}
