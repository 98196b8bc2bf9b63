// RUN: fa-t-opt %s --convert-fat-to-nvvm | FileCheck %s

// Each op of the pipelined kernel (FatKernelOps.td) and its one pattern in
// convert-fat-to-nvvm, on hand-written IR: the pass needs nothing but the
// ops themselves.

// CHECK-LABEL: gpu.module @k
// CHECK-LABEL: llvm.func @roles
// CHECK-SAME:    (%[[WG:[a-z0-9]+]]: i32, %[[X:[a-z0-9]+]]: f32, %[[N:[a-z0-9]+]]: i32)
// CHECK:         %[[P:[0-9]+]] = arith.cmpi eq, %[[WG]], %c0_i32 : i32
// CHECK-NEXT:    scf.if %[[P]] {
// CHECK-NEXT:      nvvm.setmaxregister decrease 24
// CHECK-NEXT:      llvm.inline_asm has_side_effects asm_dialect = att "{\0A\09.reg .pred fence_p;\0A\09setp.eq.u32 fence_p, $0, 0xffffffff;\0A\09@!fence_p bra.uni FENCE_SKIP;\0A\09membar.cta;\0AFENCE_SKIP:\0A\09}", "r" %[[N]] : (i32) -> ()
// CHECK-NEXT:    } else {
// CHECK-NEXT:      nvvm.setmaxregister increase 240
// CHECK-NEXT:      %[[FX:[0-9]+]] = llvm.inline_asm has_side_effects asm_dialect = att "", "=f,0" %[[X]] : (f32) -> f32
// CHECK-NEXT:      %[[FN:[0-9]+]] = llvm.inline_asm has_side_effects asm_dialect = att "", "=r,0" %[[N]] : (i32) -> i32
// CHECK-NEXT:      llvm.fadd %[[FX]], %[[FX]] : f32
// CHECK-NEXT:      llvm.add %[[FN]], %[[FN]] : i32
// CHECK-NEXT:    } {fat.role = ["producer", "consumer"]}
// CHECK-NEXT:    llvm.return

// The wait retires all groups but `pending` and returns the registers
// they wrote, each through a tied asm after the wait_group; a tile's are
// all of its registers in order.
// CHECK-LABEL: llvm.func @wait
// CHECK-SAME:    (%[[A:[a-z0-9]+]]: f32, %[[P:[a-z0-9]+]]: i32, %[[T0:[a-z0-9]+]]: f32, %[[T1:[a-z0-9]+]]: f32)
// CHECK-NEXT:    nvvm.wgmma.wait.group.sync.aligned 1
// CHECK-NEXT:    %[[WA:[0-9]+]] = llvm.inline_asm has_side_effects asm_dialect = att "", "=f,0" %[[A]] : (f32) -> f32
// CHECK-NEXT:    llvm.inline_asm has_side_effects asm_dialect = att "", "=r,0" %[[P]] : (i32) -> i32
// CHECK-NEXT:    %[[W0:[0-9]+]] = llvm.inline_asm has_side_effects asm_dialect = att "", "=f,0" %[[T0]] : (f32) -> f32
// CHECK-NEXT:    %[[W1:[0-9]+]] = llvm.inline_asm has_side_effects asm_dialect = att "", "=f,0" %[[T1]] : (f32) -> f32
// CHECK-NEXT:    nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-NEXT:    llvm.fadd %[[WA]], %[[WA]] : f32
// CHECK-NEXT:    llvm.fadd %[[W0]], %[[W1]] : f32

// One commit group per op, one wgmma step per 16 of K. The descriptors:
// address bits 4..17, 128B swizzle (bit 62), 8-row groups 1024 bytes
// apart (64 << 32), the leading stride 16 (1 << 16) for a K-major operand
// and the box stride for an MN-major B (3072 = 192 << 16 more: 191 <<
// 16). Step s of a K-major operand adds (s / 4)·box_stride + 32·(s mod 4)
// bytes (>> 4: 2, 4, 6, then 4096 → 256 and 2048 → 128); of an MN-major B
// 2048·s (128). A from shared memory starts from 0 (scale-d 0, no tied
// inputs), then accumulates; A from registers takes the run-time scale-d on
// its first step only, and step s reads P's i32 registers 4s .. 4s + 3.
// CHECK-LABEL: llvm.func @mma
// CHECK-SAME:    (%[[QA:[a-z0-9]+]]: i64, %[[VA:[a-z0-9]+]]: i64, %[[SD:[a-z0-9]+]]: i32, %[[R0:[a-z0-9]+]]: i32, %[[R1:[a-z0-9]+]]: i32, %[[R2:[a-z0-9]+]]: i32, %[[R3:[a-z0-9]+]]: i32, %[[R4:[a-z0-9]+]]: i32, %[[R5:[a-z0-9]+]]: i32, %[[R6:[a-z0-9]+]]: i32, %[[R7:[a-z0-9]+]]: i32)
// CHECK:         %[[QLO:[0-9]+]] = arith.andi %[[QA]], %c262143_i64{{[_0-9]*}}
// CHECK:         %[[QSH:[0-9]+]] = arith.shrui %[[QLO]], %c4_i64{{[_0-9]*}}
// CHECK:         %[[QD:[0-9]+]] = arith.ori %[[QSH]], %c4611686293305360384_i64{{[_0-9]*}}
// CHECK:         arith.andi %[[VA]]
// CHECK:         %[[KD:[0-9]+]] = arith.ori %{{[0-9]+}}, %c4611686293305360384_i64{{[_0-9]*}}
// CHECK:         nvvm.wgmma.fence.aligned
// CHECK:         %[[S:[0-9]+]] = llvm.inline_asm has_side_effects asm_dialect = att "{\0A.reg .pred p;\0Asetp.ne.b32 p, $6, 0;\0Awgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {$0, $1, $2, $3}, $4, $5, p, 1, 1, 0, 0;\0A}", "=f,=f,=f,=f,l,l,r" %[[QD]], %[[KD]], %c0_i32{{[_0-9]*}} : (i64, i64, i32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK:         %[[A1:[0-9]+]] = arith.addi %[[QD]], %c2_i64{{[_0-9]*}}
// CHECK:         %[[B1:[0-9]+]] = arith.addi %[[KD]], %c2_i64{{[_0-9]*}}
// CHECK:         llvm.inline_asm {{.+}}"=f,=f,=f,=f,l,l,r,0,1,2,3" %[[A1]], %[[B1]], %c1_i32{{[_0-9]*}}
// CHECK:         arith.addi %[[QD]], %c4_i64{{[_0-9]*}}
// CHECK:         arith.addi %[[QD]], %c6_i64{{[_0-9]*}}
// CHECK:         %[[A4:[0-9]+]] = arith.addi %[[QD]], %c256_i64{{[_0-9]*}}
// CHECK:         %[[B4:[0-9]+]] = arith.addi %[[KD]], %c128_i64{{[_0-9]*}}
// CHECK:         llvm.inline_asm {{.+}} %[[A4]], %[[B4]], %{{.+}}, %[[S0:[0-9]+]], %[[S1:[0-9]+]], %[[S2:[0-9]+]], %[[S3:[0-9]+]] :
// CHECK-NOT:     wgmma.mma_async
// CHECK:         nvvm.wgmma.commit.group.sync.aligned
// CHECK:         arith.andi %[[VA]]
// CHECK:         %[[VD:[0-9]+]] = arith.ori %{{[0-9]+}}, %c4611686293317877760_i64
// CHECK:         nvvm.wgmma.fence.aligned
// CHECK:         %[[O:[0-9]+]] = llvm.inline_asm has_side_effects asm_dialect = att "{\0A.reg .pred p;\0Asetp.ne.b32 p, $9, 0;\0Awgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {$0, $1, $2, $3}, {$4, $5, $6, $7}, $8, p, 1, 1, 1;\0A}", "=f,=f,=f,=f,r,r,r,r,l,r,0,1,2,3" %[[R0]], %[[R1]], %[[R2]], %[[R3]], %[[VD]], %[[SD]], %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}} :
// CHECK:         %[[V1:[0-9]+]] = arith.addi %[[VD]], %c128_i64{{[_0-9]*}}
// CHECK:         llvm.inline_asm {{.+}} %[[R4]], %[[R5]], %[[R6]], %[[R7]], %[[V1]], %c1_i32{{[_0-9]*}},
// CHECK:         llvm.extractvalue
// CHECK:         nvvm.wgmma.commit.group.sync.aligned
// A TMA tile copy of 192 columns: three boxes, box c at dst + c·box_stride
// (the first at dst itself) from column 64c, the op's other coordinates
// after it, each completing on the same barrier.
// A ring's ops are its layout's arithmetic: stage s = i mod 2, parity
// ⌊i/2⌋ mod 2, full[s] at 196608 + 8s, empty[s] at 196608 + 8(2 + s),
// buffer at 32768 + 40960s. Init: full then empty, stage by stage.
// CHECK-LABEL: llvm.func @ring(
// CHECK-SAME:    %[[BASE:[a-z0-9]+]]: !llvm.ptr<3>, %[[I:[a-z0-9]+]]: i32)
// CHECK:         %[[F0:[0-9]+]] = llvm.getelementptr %[[BASE]]
// CHECK-NEXT:    %[[ONE:.+]] = arith.constant 1 : i32
// CHECK-NEXT:    nvvm.mbarrier.init %[[F0]], %[[ONE]]
// CHECK:         %[[E0:[0-9]+]] = llvm.getelementptr %[[BASE]]
// CHECK-NEXT:    %[[ALL:.+]] = arith.constant 256 : i32
// CHECK-NEXT:    nvvm.mbarrier.init %[[E0]], %[[ALL]]
// CHECK-COUNT-2: nvvm.mbarrier.init
// CHECK-NOT:     nvvm.mbarrier.init
// The producer's acquire: full[s] and empty[s]; wait for empty[s] with
// the flipped parity, then expect the bytes on full[s]; the buffer is the
// copies' destination.
// CHECK:         %[[S:[0-9]+]] = arith.remui %[[I]], %c2_i32{{[_0-9]*}} : i32
// CHECK:         %[[Q:[0-9]+]] = arith.divui %[[I]], %c2_i32{{[_0-9]*}} : i32
// CHECK:         %[[PAR:[0-9]+]] = arith.andi %[[Q]], %c1_i32{{[_0-9]*}} : i32
// CHECK:         %[[FB:[0-9]+]] = arith.muli %[[S]], %c8_i32{{[_0-9]*}} : i32
// CHECK-NEXT:    %[[FO:[0-9]+]] = arith.addi %c196608_i32{{[_0-9]*}}, %[[FB]] : i32
// CHECK-NEXT:    %[[FULL:[0-9]+]] = llvm.getelementptr %[[BASE]][%[[FO]]]
// CHECK:         %[[ES:[0-9]+]] = arith.addi %[[S]], %c2_i32{{[_0-9]*}} : i32
// CHECK:         %[[EB:[0-9]+]] = arith.muli %[[ES]], %c8_i32{{[_0-9]*}} : i32
// CHECK-NEXT:    %[[EO:[0-9]+]] = arith.addi %c196608_i32{{[_0-9]*}}, %[[EB]] : i32
// CHECK-NEXT:    %[[EMPTY:[0-9]+]] = llvm.getelementptr %[[BASE]][%[[EO]]]
// CHECK:         %[[FLIP:[0-9]+]] = arith.xori %[[PAR]], %c1_i32{{[_0-9]*}} : i32
// CHECK:         nvvm.mbarrier.try_wait.parity %[[EMPTY]], %[[FLIP]]
// CHECK-NEXT:    %c36864_i32 = arith.constant 36864 : i32
// CHECK-NEXT:    nvvm.mbarrier.arrive.expect_tx %[[FULL]], %c36864_i32
// CHECK:         %[[BB:[0-9]+]] = arith.muli %[[S]], %c40960_i32 : i32
// CHECK-NEXT:    %[[BO:[0-9]+]] = arith.addi %c32768_i32, %[[BB]] : i32
// CHECK-NEXT:    llvm.getelementptr %[[BASE]][%[[BO]]]
// The consumer's wait: full[s] with the phase's parity.
// CHECK:         %[[WS:[0-9]+]] = arith.remui %[[I]], %c2_i32{{[_0-9]*}} : i32
// CHECK:         %[[WQ:[0-9]+]] = arith.divui %[[I]], %c2_i32{{[_0-9]*}} : i32
// CHECK:         %[[WPAR:[0-9]+]] = arith.andi %[[WQ]], %c1_i32{{[_0-9]*}} : i32
// CHECK:         %[[WB:[0-9]+]] = arith.muli %[[WS]], %c8_i32{{[_0-9]*}} : i32
// CHECK-NEXT:    %[[WO:[0-9]+]] = arith.addi %c196608_i32{{[_0-9]*}}, %[[WB]] : i32
// CHECK-NEXT:    %[[WFULL:[0-9]+]] = llvm.getelementptr %[[BASE]][%[[WO]]]
// CHECK:         nvvm.mbarrier.try_wait.parity %[[WFULL]], %[[WPAR]]
// fat.ring_buffer, read; then the release arrives on empty[s].
// CHECK:         %[[RS:[0-9]+]] = arith.remui %[[I]], %c2_i32{{[_0-9]*}} : i32
// CHECK:         %[[RB:[0-9]+]] = arith.muli %[[RS]], %c40960_i32{{[_0-9]*}} : i32
// CHECK-NEXT:    %[[RO:[0-9]+]] = arith.addi %c32768_i32{{[_0-9]*}}, %[[RB]] : i32
// CHECK-NEXT:    %[[RBUF:[0-9]+]] = llvm.getelementptr %[[BASE]][%[[RO]]]
// CHECK-NEXT:    llvm.load %[[RBUF]]
// CHECK:         %[[LS:[0-9]+]] = arith.remui %[[I]], %c2_i32{{[_0-9]*}} : i32
// CHECK:         %[[LE:[0-9]+]] = arith.addi %[[LS]], %c2_i32{{[_0-9]*}} : i32
// CHECK:         %[[LB:[0-9]+]] = arith.muli %[[LE]], %c8_i32{{[_0-9]*}} : i32
// CHECK-NEXT:    %[[LO:[0-9]+]] = arith.addi %c196608_i32{{[_0-9]*}}, %[[LB]] : i32
// CHECK-NEXT:    %[[LBAR:[0-9]+]] = llvm.getelementptr %[[BASE]][%[[LO]]]
// CHECK-NEXT:    nvvm.mbarrier.arrive %[[LBAR]]
// CHECK-NEXT:    llvm.return
// The `if (%c) else` forms select one of two slots' barrier (and parity)
// and wait or arrive once, without a branch.
// CHECK-LABEL: llvm.func @ring_select
// CHECK-SAME:    %[[SB:[a-z0-9]+]]: !llvm.ptr<3>, %[[SI:[a-z0-9]+]]: i32, %[[SJ:[a-z0-9]+]]: i32, %[[SC:[a-z0-9]+]]: i1)
// CHECK:         %[[VQ:[0-9]+]] = arith.divui %[[SI]]
// CHECK:         %[[VPAR:[0-9]+]] = arith.andi %[[VQ]]
// CHECK:         %[[VFULL:[0-9]+]] = llvm.getelementptr %[[SB]][%{{[0-9]+}}]
// CHECK:         %[[KQ:[0-9]+]] = arith.divui %[[SJ]]
// CHECK:         %[[KPAR:[0-9]+]] = arith.andi %[[KQ]]
// CHECK-NEXT:    %[[SPAR:[0-9]+]] = arith.select %[[SC]], %[[VPAR]], %[[KPAR]] : i32
// CHECK:         %[[KO:[0-9]+]] = arith.addi %c196640_i32, %{{[0-9]+}} : i32
// CHECK-NEXT:    %[[KFULL:[0-9]+]] = llvm.getelementptr %[[SB]][%[[KO]]]
// CHECK-NEXT:    %[[SFULL:[0-9]+]] = llvm.select %[[SC]], %[[VFULL]], %[[KFULL]] : i1, !llvm.ptr<3>
// CHECK:         nvvm.mbarrier.try_wait.parity %[[SFULL]], %[[SPAR]]
// CHECK:         %[[VEMPTY:[0-9]+]] = llvm.getelementptr %[[SB]][%{{[0-9]+}}]
// CHECK:         %[[KEMPTY:[0-9]+]] = llvm.getelementptr %[[SB]][%{{[0-9]+}}]
// CHECK-NEXT:    %[[SEMPTY:[0-9]+]] = llvm.select %[[SC]], %[[VEMPTY]], %[[KEMPTY]] : i1, !llvm.ptr<3>
// CHECK-NEXT:    nvvm.mbarrier.arrive %[[SEMPTY]]
// CHECK-NEXT:    llvm.return
// A ring filled once (releases = 0) has full barriers only, and its
// acquire does not wait.
// CHECK-LABEL: llvm.func @ring_once
// CHECK-COUNT-1: nvvm.mbarrier.init
// CHECK-NOT:     nvvm.mbarrier.try_wait.parity
// CHECK:         nvvm.mbarrier.arrive.expect_tx %{{[0-9]+}}, %c16384_i32
// CHECK-NEXT:    %c0_i32{{[_0-9]*}} = arith.constant 0 : i32
// CHECK-NOT:     nvvm.mbarrier
// CHECK:         llvm.return
// CHECK-LABEL: llvm.func @tma
// CHECK-SAME:    (%[[MAP:[a-z0-9]+]]: !llvm.ptr, %[[DST:[a-z0-9]+]]: !llvm.ptr<3>, %[[BAR:[a-z0-9]+]]: !llvm.ptr<3>, %[[ROW:[a-z0-9]+]]: i32, %[[H:[a-z0-9]+]]: i32)
// CHECK:         %[[C0:.+]] = arith.constant 0 : i32
// CHECK-NEXT:    %[[D0:[0-9]+]] = llvm.addrspacecast %[[DST]] : !llvm.ptr<3> to !llvm.ptr<7>
// CHECK-NEXT:    nvvm.cp.async.bulk.tensor.shared.cluster.global %[[D0]], %[[MAP]], %[[BAR]], box[%[[C0]], %[[ROW]], %[[H]]]
// CHECK-NEXT:    %[[G1:[0-9]+]] = llvm.getelementptr %[[DST]][20480] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8
// CHECK-NEXT:    %[[C64:.+]] = arith.constant 64 : i32
// CHECK-NEXT:    %[[D1:[0-9]+]] = llvm.addrspacecast %[[G1]]
// CHECK-NEXT:    nvvm.cp.async.bulk.tensor.shared.cluster.global %[[D1]], %[[MAP]], %[[BAR]], box[%[[C64]], %[[ROW]], %[[H]]]
// CHECK-NEXT:    %[[G2:[0-9]+]] = llvm.getelementptr %[[DST]][40960]
// CHECK-NEXT:    %[[C128:.+]] = arith.constant 128 : i32
// CHECK-NEXT:    %[[D2:[0-9]+]] = llvm.addrspacecast %[[G2]]
// CHECK-NEXT:    nvvm.cp.async.bulk.tensor.shared.cluster.global %[[D2]], %[[MAP]], %[[BAR]], box[%[[C128]], %[[ROW]], %[[H]]]
// CHECK-NEXT:    llvm.return
// Without register counts (one consumer warpgroup keeps every register) no
// setmaxnreg; an empty role is an empty branch.
// CHECK-LABEL: llvm.func @no_split
// CHECK:         scf.if %{{[0-9]+}} {
// CHECK-NEXT:    } else {
// CHECK-NEXT:      llvm.inline_asm
// CHECK-NEXT:    } {fat.role = ["producer", "consumer"]}
// CHECK-NOT:     fat.
// fat.key_block_range: per 64-row group (block_m 128: rows r0 and
// min(r0 + 64, last)) the table row (batch and group clamped into [2, 3, 4])
// and its two loads; a group whose range is empty does not widen
// the union; then the union's blocks of N = 160 keys, clamped to [lo, hi).
// CHECK-LABEL: llvm.func @key_blocks
// CHECK-SAME:    (%[[LO:[a-z0-9]+]]: i32, %[[HI:[a-z0-9]+]]: i32, %[[R0:[a-z0-9]+]]: i32, %[[RL:[a-z0-9]+]]: i32, %[[B:[a-z0-9]+]]: i32, %[[T:[a-z0-9]+]]: !llvm.ptr<1>, %[[J:[a-z0-9]+]]: i32, %[[DIAG:[a-z0-9]+]]: i32)
// CHECK:         %[[ROW0:[0-9]+]] = arith.minui %{{[0-9]+}}, %[[RL]] : i32
// CHECK-NEXT:    %[[BB:[a-z0-9_]+]] = arith.constant 1 : i32
// CHECK-NEXT:    %[[BC:[0-9]+]] = arith.minui %[[B]], %[[BB]] : i32
// CHECK-NEXT:    %[[C64:[a-z0-9_]+]] = arith.constant 64 : i32
// CHECK-NEXT:    %[[G:[0-9]+]] = arith.divui %[[ROW0]], %[[C64]] : i32
// CHECK-NEXT:    %[[GM:[a-z0-9_]+]] = arith.constant 2 : i32
// CHECK-NEXT:    %[[GC:[0-9]+]] = arith.minui %[[G]], %[[GM]] : i32
// CHECK:         %[[F0:[0-9]+]] = llvm.load %{{[0-9]+}} invariant {alignment = 4 : i64} : !llvm.ptr<1> -> i32
// CHECK:         %[[E0:[0-9]+]] = llvm.load %{{[0-9]+}} invariant {alignment = 4 : i64} : !llvm.ptr<1> -> i32
// CHECK-NEXT:    %[[SEEN0:[0-9]+]] = arith.cmpi sgt, %[[E0]], %[[F0]] : i32
// CHECK:         %[[F1:[0-9]+]] = llvm.load
// CHECK:         %[[E1:[0-9]+]] = llvm.load
// CHECK:         %[[FIRST:[0-9]+]] = arith.minsi
// CHECK-NEXT:    %[[END:[0-9]+]] = arith.maxsi
// CHECK:         %[[FB:[0-9]+]] = arith.divsi %{{[0-9]+}}, %c160_i32{{[_0-9]*}} : i32
// CHECK:         %[[EB:[0-9]+]] = arith.divsi %{{[0-9]+}}, %c160_i32{{[_0-9]*}} : i32
// CHECK-NEXT:    %[[M:[0-9]+]] = arith.maxsi %[[LO]], %[[FB]] : i32
// CHECK-NEXT:    %[[NLO:[0-9]+]] = arith.minsi %[[M]], %[[HI]] : i32
// CHECK-NEXT:    %[[NHI:[0-9]+]] = arith.minsi %[[HI]], %[[EB]] : i32
// CHECK-NEXT:    llvm.add %[[NLO]], %[[NHI]] : i32

// fat.full_key_block: the warpgroup's table row, r1 dropped at or past the
// causal edge row + 63 + diag + 1, then j·N ≥ max(r0, r2) ∧ j·N + N ≤
// min(r1', r3).
// CHECK:         %[[E:[0-9]+]] = llvm.load %{{[0-9]+}} invariant
// CHECK:         %[[E63:[0-9]+]] = arith.addi %[[R0]], %c63_i32 : i32
// CHECK-NEXT:    %[[ED:[0-9]+]] = arith.addi %[[E63]], %[[DIAG]] : i32
// CHECK-NEXT:    %[[ONE:[a-z0-9_]+]] = arith.constant 1 : i32
// CHECK-NEXT:    %[[EDGE:[0-9]+]] = arith.addi %[[ED]], %[[ONE]] : i32
// CHECK-NEXT:    %[[PAST:[0-9]+]] = arith.cmpi sge, %[[E]], %[[EDGE]] : i32
// CHECK-NEXT:    %[[INF:[a-z0-9_]+]] = arith.constant 2147483647 : i32
// CHECK-NEXT:    %[[END1:[0-9]+]] = arith.select %[[PAST]], %[[INF]], %[[E]] : i32
// CHECK:         %[[L:[0-9]+]] = arith.maxsi
// CHECK:         %[[H:[0-9]+]] = arith.minsi %[[END1]], %{{[0-9]+}} : i32
// CHECK:         %[[K0:[0-9]+]] = arith.muli %[[J]], %{{[a-z0-9_]+}} : i32
// CHECK-NEXT:    %[[GE:[0-9]+]] = arith.cmpi sge, %[[K0]], %[[L]] : i32
// CHECK:         %[[K1:[0-9]+]] = arith.addi %[[K0]], %{{[a-z0-9_]+}} : i32
// CHECK-NEXT:    %[[LE:[0-9]+]] = arith.cmpi sle, %[[K1]], %[[H]] : i32
// CHECK-NEXT:    %[[FULL:[0-9]+]] = arith.andi %[[GE]], %[[LE]] : i1
// CHECK-NEXT:    llvm.select %[[FULL]]
// CHECK-NOT:     fat.
// The ping-pong turns, two consumers: consumer 1 opens on barrier 1; a
// turn is bar.sync 1 + c and bar.arrive 1 + (2 − c), 256 threads each; the
// last turn hands over on consumer 0 only; consumer 0 closes on barrier 1.
// CHECK-LABEL: llvm.func @turns
// CHECK-SAME:    (%[[C:[a-z0-9]+]]: i32, %[[C3:[a-z0-9]+]]: i32)
// CHECK:         %[[OPEN:[0-9]+]] = arith.cmpi eq, %[[C]], %c1_i32{{[_0-9]*}} : i32
// CHECK-NEXT:    scf.if %[[OPEN]] {
// CHECK:           nvvm.barrier.arrive id = %c1_i32{{[_0-9]*}} number_of_threads = %c256_i32{{[_0-9]*}}
// CHECK-NEXT:    }
// CHECK:         %[[MINE:[0-9]+]] = arith.addi %[[C]], %c1_i32{{[_0-9]*}} : i32
// CHECK:         nvvm.barrier id = %[[MINE]] number_of_threads = %c256_i32{{[_0-9]*}}
// CHECK:         %[[NEXT:[0-9]+]] = arith.subi %c2_i32{{[_0-9]*}}, %[[C]] : i32
// CHECK:         nvvm.barrier.arrive id = %[[NEXT]] number_of_threads = %c256_i32{{[_0-9]*}}
// CHECK:         %[[NEXT2:[0-9]+]] = arith.subi %c2_i32{{[_0-9]*}}, %[[C]] : i32
// CHECK:         %[[FIRST:[0-9]+]] = arith.cmpi eq, %[[C]], %c0_i32{{[_0-9]*}} : i32
// CHECK-NEXT:    scf.if %[[FIRST]] {
// CHECK:           nvvm.barrier.arrive id = %[[NEXT2]] number_of_threads = %c256_i32{{[_0-9]*}}
// CHECK-NEXT:    }
// CHECK-NOT:     nvvm.barrier.arrive
// CHECK:         %[[CLOSE:[0-9]+]] = arith.cmpi eq, %[[C]], %c0_i32{{[_0-9]*}} : i32
// CHECK-NEXT:    scf.if %[[CLOSE]] {
// CHECK:           nvvm.barrier id = %c1_i32{{[_0-9]*}} number_of_threads = %c256_i32{{[_0-9]*}}
// Three consumers: the next is 1 + (c + 1) mod 3, and the last turn hands
// over on consumers 0 and 1.
// CHECK:         %[[C31:[0-9]+]] = arith.addi %[[C3]], %c1_i32{{[_0-9]*}} : i32
// CHECK:         %[[MOD:[0-9]+]] = arith.remui %[[C31]], %c3_i32 : i32
// CHECK:         %[[NEXT3:[0-9]+]] = arith.addi %[[MOD]], %c1_i32{{[_0-9]*}} : i32
// CHECK:         %[[IS0:[0-9]+]] = arith.cmpi eq, %[[C3]], %c0_i32{{[_0-9]*}} : i32
// CHECK-NEXT:    scf.if %[[IS0]] {
// CHECK:           nvvm.barrier.arrive id = %[[NEXT3]]
// CHECK:         %[[IS1:[0-9]+]] = arith.cmpi eq, %[[C3]], %c1_i32{{[_0-9]*}} : i32
// CHECK-NEXT:    scf.if %[[IS1]] {
// CHECK:           nvvm.barrier.arrive id = %[[NEXT3]]
// CHECK-NOT:     fat.turn


// The mask's geometry (right = 0: causal; left = 64; N = 128; Skv = n,
// δ = d): the visible blocks [⌊max(r0 + d − 64, 0) / N⌋, min(⌈n / N⌉,
// ⌈max(r1 + d + 1, 0) / N⌉)), the first masked block min(n / N, ⌊(r0 + d
// + 1) / N⌋), and block j's test (j + 1)·N > n ∨ (j + 1)·N − 1 > r0 + d ∨
// j·N < r1 + d − 64.
// CHECK-LABEL: llvm.func @key_geometry
// CHECK-SAME:    (%[[R0:[a-z0-9]+]]: i32, %[[R1:[a-z0-9]+]]: i32, %[[N:[a-z0-9]+]]: i32, %[[D:[a-z0-9]+]]: i32, %[[J:[a-z0-9]+]]: i32)
// CHECK:         %[[NA:[0-9]+]] = arith.addi %[[N]], %c127_i32{{[_0-9]*}} : i32
// CHECK:         %[[NB:[0-9]+]] = arith.divui %[[NA]], %c128_i32{{[_0-9]*}} : i32
// CHECK:         %[[RD:[0-9]+]] = arith.addi %[[R1]], %[[D]] : i32
// CHECK:         %[[RD1:[0-9]+]] = arith.addi %[[RD]], %c1_i32{{[_0-9]*}} : i32
// CHECK:         %[[KE:[0-9]+]] = arith.maxsi %[[RD1]], %c0_i32{{[_0-9]*}} : i32
// CHECK:         %[[KEA:[0-9]+]] = arith.addi %[[KE]], %c127_i32{{[_0-9]*}} : i32
// CHECK:         %[[KEB:[0-9]+]] = arith.divui %[[KEA]], %c128_i32{{[_0-9]*}} : i32
// CHECK-NEXT:    %[[END:[0-9]+]] = arith.minsi %[[NB]], %[[KEB]] : i32
// CHECK:         %[[LD:[0-9]+]] = arith.addi %[[R0]], %[[D]] : i32
// CHECK:         %[[LE:[0-9]+]] = arith.subi %[[LD]], %c64_i32{{[_0-9]*}} : i32
// CHECK:         %[[LM:[0-9]+]] = arith.maxsi %[[LE]], %c0_i32{{[_0-9]*}} : i32
// CHECK:         %[[FIRST:[0-9]+]] = arith.divui %[[LM]], %c128_i32{{[_0-9]*}} : i32
// CHECK:         %[[TAIL:[0-9]+]] = arith.divui %[[N]], %c128_i32{{[_0-9]*}} : i32
// CHECK:         %[[ED:[0-9]+]] = arith.addi %[[R0]], %[[D]] : i32
// CHECK:         %[[ED1:[0-9]+]] = arith.addi %[[ED]], %c1_i32{{[_0-9]*}} : i32
// CHECK:         %[[EB:[0-9]+]] = arith.floordivsi %[[ED1]], %c128_i32{{[_0-9]*}} : i32
// CHECK-NEXT:    %[[J0:[0-9]+]] = arith.minsi %[[TAIL]], %[[EB]] : i32
// CHECK:         %[[J1:[0-9]+]] = arith.addi %[[J]], %c1_i32{{[_0-9]*}} : i32
// CHECK-NEXT:    %[[BE:[0-9]+]] = arith.muli %[[J1]], %[[BN:c128_i32[_0-9]*]] : i32
// CHECK-NEXT:    %[[PAST:[0-9]+]] = arith.cmpi sgt, %[[BE]], %[[N]] : i32
// CHECK:         %[[LAST:[0-9]+]] = arith.subi %[[BE]], %c1_i32{{[_0-9]*}} : i32
// CHECK:         %[[RE:[0-9]+]] = arith.addi %[[R0]], %[[D]] : i32
// CHECK:         %[[RE0:[0-9]+]] = arith.addi %[[RE]], %c0_i32{{[_0-9]*}} : i32
// CHECK-NEXT:    %[[CROSS:[0-9]+]] = arith.cmpi sgt, %[[LAST]], %[[RE0]] : i32
// CHECK-NEXT:    %[[OR1:[0-9]+]] = arith.ori %[[PAST]], %[[CROSS]] : i1
// CHECK-NEXT:    %[[JN:[0-9]+]] = arith.muli %[[J]], %[[BN]] : i32
// CHECK:         %[[WL:[0-9]+]] = arith.addi %[[R1]], %[[D]] : i32
// CHECK:         %[[WLE:[0-9]+]] = arith.subi %[[WL]], %c64_i32{{[_0-9]*}} : i32
// CHECK-NEXT:    %[[BEFORE:[0-9]+]] = arith.cmpi slt, %[[JN]], %[[WLE]] : i32
// CHECK-NEXT:    %[[MASKED:[0-9]+]] = arith.ori %[[OR1]], %[[BEFORE]] : i1
// CHECK-NEXT:    %[[SUM:[0-9]+]] = llvm.add %[[FIRST]], %[[END]] : i32
// CHECK-NEXT:    llvm.select %[[MASKED]], %[[SUM]], %[[J0]] : i1, i32
// fat.ring_fill: thread t's pieces t, t + 384, … < 2 stages · 2048/16; piece
// p is stage p / 128 (its buffer at 32768 + 40960·stage) at byte 16384 +
// 16·(p mod 128), one 16-byte store of four copies of the value; then the
// proxy fence.
// CHECK-LABEL: llvm.func @ring_fill
// CHECK-SAME:    (%[[BASE:[a-z0-9]+]]: !llvm.ptr<3>, %[[T:[a-z0-9]+]]: i32)
// CHECK:         %[[WORD:.+]] = arith.constant 1065369472 : i32
// CHECK:         %[[V0:[0-9]+]] = llvm.mlir.undef : vector<4xi32>
// CHECK:         %[[V1:[0-9]+]] = llvm.insertelement %[[WORD]], %[[V0]]
// CHECK-COUNT-3: llvm.insertelement %[[WORD]]
// CHECK:         scf.for %[[P:[a-z0-9]+]] = %[[T]] to %c256_i32 step %c384_i32 : i32 {
// CHECK:           %[[S:[0-9]+]] = arith.divui %[[P]], %c128_i32{{[_0-9]*}} : i32
// CHECK:           %[[STAGE:[0-9]+]] = arith.remui %[[S]], %c2_i32{{[_0-9]*}} : i32
// CHECK:           %[[W:[0-9]+]] = arith.remui %[[P]], %c128_i32{{[_0-9]*}} : i32
// CHECK:           %[[W16:[0-9]+]] = arith.muli %[[W]], %c16_i32{{[_0-9]*}} : i32
// CHECK-NEXT:      %[[OFF:[0-9]+]] = arith.addi %c16384_i32{{[_0-9]*}}, %[[W16]] : i32
// CHECK:           %[[SB:[0-9]+]] = arith.muli %[[STAGE]], %c40960_i32{{[_0-9]*}} : i32
// CHECK-NEXT:      %[[BUF:[0-9]+]] = arith.addi %c32768_i32{{[_0-9]*}}, %[[SB]] : i32
// CHECK-NEXT:      %[[BP:[0-9]+]] = llvm.getelementptr %[[BASE]][%[[BUF]]]
// CHECK-NEXT:      %[[AT:[0-9]+]] = llvm.getelementptr %[[BP]][%[[OFF]]]
// CHECK-NEXT:      llvm.store %{{[0-9]+}}, %[[AT]] {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<3>
// CHECK:         } {fat.stage = "ones"}
// CHECK-NEXT:    nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
module attributes {gpu.container_module} {
  gpu.module @k {
    llvm.func @roles(%wg: i32, %x: f32, %n: i32) {
      fat.warp_specialize %wg registers(24, 240) producer {
        fat.schedule_fence %n : i32
      } consumer {
        %fx, %fn = fat.operand_fence %x, %n : f32, i32
        %a = llvm.fadd %fx, %fx : f32
        %b = llvm.add %fn, %fn : i32
      }
      llvm.return
    }
    llvm.func @wait(%a: f32, %p: i32, %t0: f32, %t1: f32) {
      %t = builtin.unrealized_conversion_cast %t0, %t1
          : f32, f32 to tensor<64xf32, #fat.wgmma_fragment>
      %wa, %wp, %wt = fat.wgmma_wait pending(1) (%a, %p, %t)
          : f32, i32, tensor<64xf32, #fat.wgmma_fragment>
      fat.wgmma_wait pending(0) ()
      %s = llvm.fadd %wa, %wa : f32
      %r:2 = builtin.unrealized_conversion_cast %wt
          : tensor<64xf32, #fat.wgmma_fragment> to f32, f32
      %u = llvm.fadd %r#0, %r#1 : f32
      llvm.return
    }
    llvm.func @mma(%qa: i64, %va: i64, %sd: i32, %r0: i32, %r1: i32, %r2: i32,
                   %r3: i32, %r4: i32, %r5: i32, %r6: i32, %r7: i32) {
      %p = builtin.unrealized_conversion_cast %r0, %r1, %r2, %r3, %r4, %r5,
          %r6, %r7 : i32, i32, i32, i32, i32, i32, i32, i32
          to tensor<64x32xf16, #fat.wgmma_fragment>
      %s = fat.wgmma_async a_smem(%qa box_stride 4096) b(%va box_stride 2048)
          transpose_b k 80 shape [64, 8, 16] bf16 -> tensor<64x8xf32, #fat.wgmma_fragment>
      %o = fat.wgmma_async a_regs(%p : tensor<64x32xf16, #fat.wgmma_fragment>)
          b(%va box_stride 3072) acc(%s : tensor<64x8xf32, #fat.wgmma_fragment>)
          scale_d(%sd) k 32 shape [64, 8, 16] f16
          -> tensor<64x8xf32, #fat.wgmma_fragment>
      %regs:4 = builtin.unrealized_conversion_cast %o
          : tensor<64x8xf32, #fat.wgmma_fragment> to f32, f32, f32, f32
      %sum = llvm.fadd %regs#0, %regs#3 : f32
      llvm.return
    }
    llvm.func @ring(%base: !llvm.ptr<3>, %i: i32) {
      %r = fat.ring %base : !fat.ring<stages = 2, buffer_offset = 32768,
          buffer_bytes = 40960, barrier_offset = 196608, releases = 256>
      fat.ring_init %r : !fat.ring<stages = 2, buffer_offset = 32768,
          buffer_bytes = 40960, barrier_offset = 196608, releases = 256>
      %buf, %full = fat.ring_acquire %r[%i] expect_tx 36864
          : !fat.ring<stages = 2, buffer_offset = 32768, buffer_bytes = 40960,
                      barrier_offset = 196608, releases = 256>
      fat.ring_wait %r[%i] : !fat.ring<stages = 2, buffer_offset = 32768,
          buffer_bytes = 40960, barrier_offset = 196608, releases = 256>
      %b = fat.ring_buffer %r[%i] : !fat.ring<stages = 2, buffer_offset = 32768,
          buffer_bytes = 40960, barrier_offset = 196608, releases = 256>
      %x = llvm.load %b : !llvm.ptr<3> -> i32
      fat.ring_release %r[%i] : !fat.ring<stages = 2, buffer_offset = 32768,
          buffer_bytes = 40960, barrier_offset = 196608, releases = 256>
      llvm.return
    }
    llvm.func @ring_select(%base: !llvm.ptr<3>, %i: i32, %j: i32, %c: i1) {
      %v = fat.ring %base : !fat.ring<stages = 2, buffer_offset = 32768,
          buffer_bytes = 40960, barrier_offset = 196608, releases = 256>
      %k = fat.ring %base : !fat.ring<stages = 2, buffer_offset = 114688,
          buffer_bytes = 40960, barrier_offset = 196640, releases = 256>
      fat.ring_wait %v[%i] if(%c) else %k[%j]
          : !fat.ring<stages = 2, buffer_offset = 32768, buffer_bytes = 40960,
                      barrier_offset = 196608, releases = 256>,
            !fat.ring<stages = 2, buffer_offset = 114688, buffer_bytes = 40960,
                      barrier_offset = 196640, releases = 256>
      fat.ring_release %v[%i] if(%c) else %k[%j]
          : !fat.ring<stages = 2, buffer_offset = 32768, buffer_bytes = 40960,
                      barrier_offset = 196608, releases = 256>,
            !fat.ring<stages = 2, buffer_offset = 114688, buffer_bytes = 40960,
                      barrier_offset = 196640, releases = 256>
      llvm.return
    }
    llvm.func @ring_once(%base: !llvm.ptr<3>, %i: i32) {
      %r = fat.ring %base : !fat.ring<stages = 1, buffer_offset = 0,
          buffer_bytes = 16384, barrier_offset = 16384, releases = 0>
      fat.ring_init %r : !fat.ring<stages = 1, buffer_offset = 0,
          buffer_bytes = 16384, barrier_offset = 16384, releases = 0>
      %buf, %full = fat.ring_acquire %r[%i] expect_tx 16384
          : !fat.ring<stages = 1, buffer_offset = 0, buffer_bytes = 16384,
                      barrier_offset = 16384, releases = 0>
      llvm.return
    }
    llvm.func @tma(%map: !llvm.ptr, %dst: !llvm.ptr<3>, %bar: !llvm.ptr<3>,
                   %row: i32, %h: i32) {
      fat.tma_load %map[%row, %h] to(%dst box_stride 20480) columns 192
          barrier(%bar) : !llvm.ptr, !llvm.ptr<3>, !llvm.ptr<3>
      llvm.return
    }
    llvm.func @no_split(%wg: i32, %n: i32) {
      fat.warp_specialize %wg producer {
      } consumer {
        fat.schedule_fence %n : i32
      }
      llvm.return
    }
    llvm.func @key_blocks(%lo: i32, %hi: i32, %first: i32, %last: i32,
                          %b: i32, %t: !llvm.ptr<1>, %j: i32, %diag: i32) {
      %l, %h = fat.key_block_range %lo, %hi rows(%first, %last) batch(%b)
          ranges(%t : !llvm.ptr<1>)
          {block_m = 128, block_n = 160, table = array<i64: 2, 3, 4>}
      %s = llvm.add %l, %h : i32
      %full = fat.full_key_block %j row(%first) batch(%b)
          ranges(%t : !llvm.ptr<1>) edge(%diag)
          {block_n = 160, right = 0, table = array<i64: 2, 3, 4>}
      %u = llvm.select %full, %l, %h : i1, i32
      llvm.return
    }
    llvm.func @turns(%c: i32, %c3: i32) {
      fat.turns_open %c of 2
      fat.turn_begin %c of 2
      fat.turn_end %c of 2
      fat.turn_end %c of 2 last
      fat.turns_close %c of 2
      fat.turn_end %c3 of 3 last
      llvm.return
    }
    llvm.func @key_geometry(%r0: i32, %r1: i32, %n: i32, %d: i32, %j: i32) {
      %f, %e = fat.visible_key_blocks rows(%r0, %r1) kv_len(%n) edge(%d)
          {block_n = 128, left = 64, right = 0} : i32
      %j0 = fat.first_masked_key_block row(%r0) kv_len(%n) edge(%d)
          {block_n = 128, right = 0} : i32
      %m = fat.key_block_needs_mask %j rows(%r0, %r1) kv_len(%n) edge(%d)
          {block_n = 128, left = 64, right = 0} : i32
      %a = llvm.add %f, %e : i32
      %b = llvm.select %m, %a, %j0 : i1, i32
      llvm.return
    }
    llvm.func @ring_fill(%base: !llvm.ptr<3>, %t: i32) {
      %v = fat.ring %base : !fat.ring<stages = 2, buffer_offset = 32768,
          buffer_bytes = 40960, barrier_offset = 196608, releases = 256>
      fat.ring_fill %v thread(%t)
          {bytes = 2048, offset = 16384, threads = 384, value = 1065369472 : i32}
          : !fat.ring<stages = 2, buffer_offset = 32768, buffer_bytes = 40960,
                      barrier_offset = 196608, releases = 256>
      llvm.return
    }
  }

// fat.tile_loop expands to its integer arithmetic around the loop, the
// body inlined with the tile's coordinates: with pairs, an scf.while over
// positions w = 2u + k from 2·ctaid (U = ⌈nM/2⌉·Hq·B units, next position
// w + 1, w + 2G or w + 2G − 1 with G = 132), the query block p or
// nM − 1 − p; without, an scf.for over units from ctaid by G = 7, block
// u mod nM. Both carry the ring position (+ the yielded blocks) and the
// tile index (+ 1) before the body's values.
// CHECK-LABEL: gpu.module @tiles
// CHECK-LABEL: llvm.func @tiles
// CHECK-SAME:    (%[[NM:[a-z0-9]+]]: i32, %[[B:[a-z0-9]+]]: i32, %[[X:[a-z0-9]+]]: f32)
// CHECK:         %[[P1:[0-9]+]] = arith.addi %[[NM]], %c1_i32
// CHECK:         %[[UPH:[0-9]+]] = arith.divui %[[P1]], %c2_i32
// CHECK:         %[[HB:[0-9]+]] = arith.muli %c16_i32, %[[B]]
// CHECK:         %[[U:[0-9]+]] = arith.muli %[[UPH]], %[[HB]]
// CHECK:         %[[CTA:[0-9]+]] = nvvm.read.ptx.sreg.ctaid.x
// CHECK:         %[[END:[0-9]+]] = arith.muli %[[U]], %c2_i32
// CHECK:         %[[W0:[0-9]+]] = arith.muli %[[CTA]], %c2_i32
// CHECK:         %[[L:[0-9]+]]:4 = scf.while (%[[W:[a-z0-9]+]] = %[[W0]], %{{[a-z0-9]+}} = %c0_i32{{[_0-9]*}}, %{{[a-z0-9]+}} = %c0_i32{{[_0-9]*}}, %{{[a-z0-9]+}} = %[[X]])
// CHECK:           arith.cmpi ult, %[[W]], %[[END]]
// CHECK:         ^bb0(%[[WA:[a-z0-9]+]]: i32, %[[RING:[a-z0-9]+]]: i32, %[[T:[a-z0-9]+]]: i32, %[[Y:[a-z0-9]+]]: f32):
// CHECK:           %[[UNIT:[0-9]+]] = arith.shrui %[[WA]], %c1_i32
// CHECK:           %[[PP:[0-9]+]] = arith.remui %[[UNIT]], %[[UPH]]
// CHECK:           %[[LONG:[0-9]+]] = arith.subi %{{[0-9]+}}, %[[PP]]
// CHECK:           %c264_i32 = arith.constant 264 : i32
// CHECK:           %c263_i32 = arith.constant 263 : i32
// CHECK:           %[[NEXT:[0-9]+]] = arith.select %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}
// CHECK-NEXT:      %[[M:[0-9]+]] = arith.select %{{[0-9]+}}, %[[LONG]], %[[PP]]
// CHECK-NEXT:      %[[REST:[0-9]+]] = arith.divui %[[UNIT]], %[[UPH]]
// CHECK-NEXT:      arith.remui %[[REST]], %c16_i32
// CHECK-NEXT:      arith.divui %[[REST]], %c16_i32
// CHECK-NEXT:      %[[S:[0-9]+]] = llvm.fadd %[[Y]], %[[Y]]
// CHECK-NEXT:      %[[RING2:[0-9]+]] = arith.addi %[[RING]], %[[M]]
// CHECK:           %[[T2:[0-9]+]] = arith.addi %[[T]], %c1_i32
// CHECK-NEXT:      scf.yield %[[NEXT]], %[[RING2]], %[[T2]], %[[S]]
// CHECK-NEXT:    } attributes {fat.tiles = "head-major-pairs"}
// CHECK:         %[[HB8:[0-9]+]] = arith.muli %c8_i32, %[[B]]
// CHECK-NEXT:    %[[U8:[0-9]+]] = arith.muli %[[NM]], %[[HB8]]
// CHECK-NEXT:    %[[CTA8:[0-9]+]] = nvvm.read.ptx.sreg.ctaid.x
// CHECK:         scf.for %[[UU:[a-z0-9]+]] = %[[CTA8]] to %[[U8]] step %c7_i32 iter_args(%[[R8:[a-z0-9]+]] = %c0_i32{{[_0-9]*}}, %[[T8:[a-z0-9]+]] = %c0_i32{{[_0-9]*}})
// CHECK-NEXT:      arith.remui %[[UU]], %[[NM]]
// CHECK-NEXT:      %[[REST8:[0-9]+]] = arith.divui %[[UU]], %[[NM]]
// CHECK-NEXT:      %[[H8:[0-9]+]] = arith.remui %[[REST8]], %c8_i32
// CHECK-NEXT:      arith.divui %[[REST8]], %c8_i32
// CHECK-NEXT:      arith.addi %[[R8]], %[[H8]]
// CHECK:           arith.addi %[[T8]], %c1_i32
// CHECK:         } {fat.tiles = "head-major"}
// CHECK:         llvm.return %[[L]]#3
  gpu.module @tiles {
    llvm.func @tiles(%nm: i32, %b: i32, %x: f32) -> f32 {
      %pos, %n, %r = fat.tile_loop pairs query_blocks(%nm) heads 16 batch(%b) ctas 132 iter_args(%x : f32) {
      ^bb0(%m: i32, %h: i32, %bt: i32, %ring: i32, %t: i32, %y: f32):
        %s = llvm.fadd %y, %y : f32
        fat.tile_yield blocks(%m) %s : f32
      } -> f32
      %p2, %n2 = fat.tile_loop query_blocks(%nm) heads 8 batch(%b) ctas 7 {
      ^bb0(%m: i32, %h: i32, %bt: i32, %ring: i32, %t: i32):
        fat.tile_yield blocks(%h)
      }
      llvm.return %r : f32
    }
  }

// The dynamic order: the fetching role's scf.while starts at ctaid.x and,
// before each tile, claims the units ring's stage t (waits for phase ⌊t/2⌋
// of empty[t mod 2] at 2048 + 8·(2 + t mod 2), parity flipped), stores the
// unit in its 1024-byte buffer and arrives on full[t mod 2] itself (one
// thread: no warp sync); it leaves on u ≥ U = nM·16·B. Inside, the atomic
// add is issued before the body, the counter set back to 0 by the fetch
// that returned U − 1, and the next unit is min(U, 132) + the fetched
// value. longest_first: h = u mod 16, m = nM − 1 − (u / 16) mod nM. The
// following role waits for full[t mod 2], loads the unit and releases the
// stage (empty[t mod 2]) before the same exit test; head-major m = u mod
// nM, h = (u / nM) mod 8.
// CHECK-LABEL: llvm.func @dynamic_tiles
// CHECK-SAME:    (%[[SMEM:[a-z0-9]+]]: !llvm.ptr<3>, %[[CNT:[a-z0-9]+]]: !llvm.ptr<1>, %[[DNM:[a-z0-9]+]]: i32, %[[DB:[a-z0-9]+]]: i32
// CHECK:         %[[HB2:[0-9]+]] = arith.muli %c16_i32, %[[DB]]
// CHECK:         %[[U2:[0-9]+]] = arith.muli %[[DNM]], %[[HB2]]
// CHECK:         %[[C0:[0-9]+]] = nvvm.read.ptx.sreg.ctaid.x
// CHECK:         scf.while (%[[FU:[a-z0-9]+]] = %[[C0]], %{{[a-z0-9]+}} = %c0_i32{{[_0-9]*}}, %[[FT:[a-z0-9]+]] = %c0_i32{{[_0-9]*}})
// CHECK:           %[[FS:[0-9]+]] = arith.remui %[[FT]], %c2_i32
// CHECK:           nvvm.mbarrier.try_wait.parity
// CHECK:           %[[FBUF:[0-9]+]] = llvm.getelementptr %[[SMEM]][%{{[0-9]+}}]
// CHECK-NEXT:      llvm.store %[[FU]], %[[FBUF]] : i32, !llvm.ptr<3>
// CHECK-NOT:       nvvm.bar.warp.sync
// CHECK:           nvvm.mbarrier.arrive
// CHECK-NEXT:      %[[GO:[0-9]+]] = arith.cmpi ult, %[[FU]], %[[U2]]
// CHECK-NEXT:      scf.condition(%[[GO]]) %[[FU]]
// CHECK:         ^bb0(%[[BU:[a-z0-9]+]]: i32, %{{[a-z0-9]+}}: i32, %{{[a-z0-9]+}}: i32):
// CHECK:           %[[GOT:[0-9]+]] = llvm.atomicrmw add %[[CNT]], %c1_i32{{[_0-9]*}} monotonic
// CHECK:           %[[R:[0-9]+]] = arith.divui %[[BU]], %c16_i32
// CHECK:           arith.remui %[[BU]], %c16_i32
// CHECK:           %[[LAST:[0-9]+]] = arith.subi %[[U2]], %c1_i32
// CHECK-NEXT:      %[[IS:[0-9]+]] = arith.cmpi eq, %[[GOT]], %[[LAST]]
// CHECK-NEXT:      scf.if %[[IS]] {
// CHECK:             llvm.atomicrmw xchg %[[CNT]], %c0_i32{{[_0-9]*}} monotonic
// CHECK:           %[[G:[0-9]+]] = arith.minui %[[U2]], %c132_i32
// CHECK-NEXT:      %[[NEXT2:[0-9]+]] = arith.addi %[[G]], %[[GOT]]
// CHECK-NEXT:      scf.yield %[[NEXT2]]
// CHECK:         } attributes {fat.tiles = "dynamic-fetch"}
// CHECK:         scf.while (%{{[a-z0-9]+}} = %c0_i32{{[_0-9]*}}, %[[WT:[a-z0-9]+]] = %c0_i32{{[_0-9]*}}, %{{[a-z0-9]+}} = %[[DX:[a-z0-9]+]])
// CHECK:           nvvm.mbarrier.try_wait.parity
// CHECK:           %[[WU:[0-9]+]] = llvm.load %{{[0-9]+}} : !llvm.ptr<3> -> i32
// CHECK:           nvvm.mbarrier.arrive
// CHECK-NEXT:      %[[WGO:[0-9]+]] = arith.cmpi ult, %[[WU]], %{{[0-9]+}}
// CHECK-NEXT:      scf.condition(%[[WGO]]) %[[WU]]
// CHECK:         ^bb0(%[[AU:[a-z0-9]+]]: i32, %{{[a-z0-9]+}}: i32, %{{[a-z0-9]+}}: i32, %{{[a-z0-9]+}}: f32):
// CHECK-NEXT:      arith.remui %[[AU]], %[[DNM]]
// CHECK-NEXT:      %[[AR:[0-9]+]] = arith.divui %[[AU]], %[[DNM]]
// CHECK-NEXT:      arith.remui %[[AR]], %c8_i32
// CHECK:         } attributes {fat.tiles = "dynamic-follow"}
  gpu.module @dynamic_tiles {
    llvm.func @dynamic_tiles(%smem: !llvm.ptr<3>, %counter: !llvm.ptr<1>, %nm: i32, %b: i32, %x: f32) -> f32 {
      %units = fat.ring %smem : !fat.ring<stages = 2, buffer_offset = 0,
          buffer_bytes = 1024, barrier_offset = 2048, releases = 256>
      %pos, %n = fat.tile_loop longest_first query_blocks(%nm) heads 16 batch(%b) ctas 132
          units(%units : !fat.ring<stages = 2, buffer_offset = 0, buffer_bytes = 1024,
                                   barrier_offset = 2048, releases = 256>)
          fetch(%counter : !llvm.ptr<1>) {
      ^bb0(%m: i32, %h: i32, %bt: i32, %ring: i32, %t: i32):
        fat.tile_yield blocks(%m)
      }
      %p2, %n2, %r = fat.tile_loop query_blocks(%nm) heads 8 batch(%b) ctas 132
          units(%units : !fat.ring<stages = 2, buffer_offset = 0, buffer_bytes = 1024,
                                   barrier_offset = 2048, releases = 256>)
          iter_args(%x : f32) {
      ^bb0(%m: i32, %h: i32, %bt: i32, %ring: i32, %t: i32, %y: f32):
        %s = llvm.fadd %y, %y : f32
        fat.tile_yield blocks(%h) %s : f32
      } -> f32
      llvm.return %r : f32
    }
  }
}
