// REQUIRES: cuobjdump
// RUN: rm -rf %t && mkdir -p %t/nopf
// RUN: fa-t-opt %s --fat-to-ptx="seq-len=4096 relative-bias=vector output-dir=%t" -o /dev/null
// RUN: fa-t-opt %s --fat-to-ptx="seq-len=4096 capture-prefetch=0 relative-bias=vector output-dir=%t/nopf" -o /dev/null
// RUN: %python %fat_src_root/scripts/sass_profile.py %t/*.ptx %t/nopf/*.ptx | FileCheck %s

// scripts/sass_profile.py on a region that reads a captured tensor: a
// relative bias table T[h, j − i + 4095] at D = 128 (bench_mods.py's
// relative-bias). The hot path takes every forward branch inside the loop,
// here the jump to the block's clamped reads: 34 loads too, each index
// clamped by VIMNMX — the version reads a register's element at its row and
// key as they are, so the registers that share an element (row r + 1 at key
// 8(i + 1) + e is row r's 8i + e) share its clamped index and load. A tile
// inside the tensor runs the shorter in-bounds block, which the profile
// prints as the loop's shortest path: the thread's 34 distinct table
// entries as 34 loads at one address plus constant offsets (no clamps),
// and no register copies (a few IMAD at most: the versions meet in one φ
// per distinct element; with the clamped version reading 64, 30 shared
// values were copied, IMAD.MOV), the softmax's 66 MUFU and 16 HGMMA as the
// plain kernel's, and with capture-prefetch (default 1) one CCTL per block
// (the next block's lines into L1), none with capture-prefetch=0.

// CHECK-LABEL: fat_attention_fwd_bf16_d128_h16_16_bhsd_mod{{[0-9a-f]+}}_m128n128s2q2_opt132:
// CHECK-NEXT:    main loop: {{[0-9]+}} instructions per iteration; tensor 16 mufu 66
// CHECK-NEXT:    key: HGMMA 16
// CHECK-NEXT:    opcodes: {{.*}} VIMNMX {{[0-9]+}} LDG 34 {{.*}}
// CHECK-NEXT:    shortest path: {{[0-9]+}} instructions; tensor 16 mufu 66
// CHECK-NEXT:    shortest path opcodes: {{.*}} LDG 34 {{.*}} IMAD {{[0-9]}} {{.*}} CCTL 1{{( |$)}}

// CHECK-LABEL: fat_attention_fwd_bf16_d128_h16_16_bhsd_mod{{[0-9a-f]+}}_m128n128s2q2_opt132:
// CHECK:         shortest path opcodes: {{.*}} LDG 34 {{.*}}
// CHECK-NOT:     CCTL
// CHECK-SAME:    {{$}}

func.func @fat_attention_fwd(%q: tensor<?x16x?x128xbf16>, %k: tensor<?x16x?x128xbf16>, %v: tensor<?x16x?x128xbf16>, %o: tensor<?x16x?x128xbf16>, %table: tensor<16x8191xf32>) -> (tensor<?x16x?x128xbf16>) {
  %r = fat.attention
    ins(%q, %k, %v : tensor<?x16x?x128xbf16>, tensor<?x16x?x128xbf16>, tensor<?x16x?x128xbf16>)
    outs(%o : tensor<?x16x?x128xbf16>)
    captures(%table : tensor<16x8191xf32>)
 score {
^bb0(%score: f32, %b: index, %h: index, %q_idx: index, %kv_idx: index, %t: tensor<16x8191xf32>):
  %v1 = arith.subi %kv_idx, %q_idx : index
  %v2 = arith.constant 4095 : index
  %v3 = arith.addi %v1, %v2 : index
  %v4 = tensor.extract %t[%h, %v3] : tensor<16x8191xf32>
  %v5 = arith.addf %score, %v4 : f32
  fat.yield %v5 : f32
}
    -> tensor<?x16x?x128xbf16>
  return %r : tensor<?x16x?x128xbf16>
}
