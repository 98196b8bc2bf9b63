// RUN: fa-t-opt %s --fat-decompose | FileCheck %s

// Each tile op becomes one linalg.generic whose body is its formula.
// Loops: (i, j) over a [M, N] tile, (i, j, d) for the two contractions.
// CHECK-DAG: #[[QA:.+]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[KB:.+]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[MN:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[TILE:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.+]] = affine_map<(d0, d1) -> (d0)>
// CHECK-DAG: #[[VEC:.+]] = affine_map<(d0) -> (d0)>
// CHECK-DAG: #[[VB:.+]] = affine_map<(d0, d1, d2) -> (d2, d1)>
// CHECK-LABEL: func.func @step
// CHECK-SAME:    (%[[Q:.+]]: tensor<64x128xbf16>, %[[K:.+]]: tensor<32x128xbf16>, %[[V:.+]]: tensor<32x128xbf16>, %[[O:.+]]: tensor<64x128xf32>, %[[M:.+]]: tensor<64xf32>, %[[L:.+]]: tensor<64xf32>, %[[I0:.+]]: index, %[[J0:.+]]: index, %[[N:.+]]: index, %[[DIAG:.+]]: index)

// s_ij = Σ_d q_id · k_jd   (bf16 widened to f32, f32 accumulation)
// CHECK:     %[[Z:.+]] = linalg.fill
// CHECK:     %[[S:.+]] = linalg.generic {indexing_maps = [#[[QA]], #[[KB]], #[[MN]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[Q]], %[[K]] : {{.+}}) outs(%[[Z]] : tensor<64x32xf32>)
// CHECK:       %[[QF:.+]] = arith.extf %{{.+}} : bf16 to f32
// CHECK:       %[[KF:.+]] = arith.extf %{{.+}} : bf16 to f32
// CHECK:       %[[PR:.+]] = arith.mulf %[[QF]], %[[KF]]
// CHECK:       %[[AC:.+]] = arith.addf %{{.+}}, %[[PR]]
// CHECK:       linalg.yield %[[AC]]

// visible = k < kv_len ∧ k ≤ q + δ ∧ k ≥ q + δ − 8   (q = i0 + i, k = j0 + j)
// CHECK:     %[[SM:.+]] = linalg.generic {indexing_maps = [#[[TILE]], #[[TILE]]], iterator_types = ["parallel", "parallel"]} ins(%[[S]] : tensor<64x32xf32>)
// CHECK:       %[[II:.+]] = linalg.index 0
// CHECK:       %[[JJ:.+]] = linalg.index 1
// CHECK:       %[[QQ:.+]] = arith.addi %[[I0]], %[[II]]
// CHECK:       %[[KK:.+]] = arith.addi %[[J0]], %[[JJ]]
// CHECK:       %[[QD:.+]] = arith.addi %[[QQ]], %[[DIAG]]
// CHECK:       %[[INB:.+]] = arith.cmpi slt, %[[KK]], %[[N]]
// CHECK:       %[[CAU:.+]] = arith.cmpi sle, %[[KK]], %[[QD]]
// CHECK:       %[[V1:.+]] = arith.andi %[[INB]], %[[CAU]]
// CHECK:       %[[LEFT:.+]] = arith.subi %[[QD]], %{{.+}}
// CHECK:       %[[WL:.+]] = arith.cmpi sge, %[[KK]], %[[LEFT]]
// CHECK:       %[[V2:.+]] = arith.andi %[[V1]], %[[WL]]
// CHECK:       arith.select %[[V2]], %{{.+}}, %{{.+}} : f32

// m'_i = max(m_i, max_j s_ij)
// CHECK:     %[[M1:.+]] = linalg.generic {indexing_maps = [#[[TILE]], #[[ROW]]], iterator_types = ["parallel", "reduction"]} ins(%[[SM]] : tensor<64x32xf32>) outs(%[[M]] : tensor<64xf32>)
// CHECK:       arith.maximumf

// p_ij = m'_i == −inf ? 0 : exp2(0.5 · (s_ij − m'_i))
// CHECK:     %[[P:.+]] = linalg.generic {indexing_maps = [#[[TILE]], #[[ROW]], #[[TILE]]], iterator_types = ["parallel", "parallel"]} ins(%[[SM]], %[[M1]] : {{.+}})
// CHECK:       %[[D:.+]] = arith.subf
// CHECK:       %[[T:.+]] = arith.mulf %[[D]], %{{.+}}
// CHECK:       %[[E:.+]] = math.exp2 %[[T]]
// CHECK:       %[[EMPTY:.+]] = arith.cmpf oeq
// CHECK:       arith.select %[[EMPTY]], %{{.+}}, %[[E]]

// α_i = exp2(0.5 · (m_i − m'_i)), the same formula on row vectors
// CHECK:     %[[A:.+]] = linalg.generic {indexing_maps = [#[[VEC]], #[[VEC]], #[[VEC]]], iterator_types = ["parallel"]} ins(%[[M]], %[[M1]] : {{.+}})
// CHECK:       math.exp2

// l'_i = α_i · l_i + Σ_j p_ij
// CHECK:     %[[LR:.+]] = linalg.generic {indexing_maps = [#[[VEC]], #[[VEC]], #[[VEC]]], iterator_types = ["parallel"]} ins(%[[L]], %[[A]] : {{.+}})
// CHECK:       arith.mulf
// CHECK:     %[[L2:.+]] = linalg.generic {indexing_maps = [#[[TILE]], #[[ROW]]], iterator_types = ["parallel", "reduction"]} ins(%[[P]] : tensor<64x32xf32>) outs(%[[LR]] : tensor<64xf32>)
// CHECK:       arith.addf

// o'_id = α_i · o_id + Σ_j bf16(p_ij) · v_jd
// CHECK:     %[[OR:.+]] = linalg.generic {indexing_maps = [#[[TILE]], #[[ROW]], #[[TILE]]], iterator_types = ["parallel", "parallel"]} ins(%[[O]], %[[A]] : {{.+}})
// CHECK:     %[[O2:.+]] = linalg.generic {indexing_maps = [#[[QA]], #[[VB]], #[[MN]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[P]], %[[V]] : {{.+}}) outs(%[[OR]] : tensor<64x128xf32>)
// CHECK:       %[[PB:.+]] = arith.truncf %{{.+}} : f32 to bf16
// CHECK:       %[[PF:.+]] = arith.extf %[[PB]] : bf16 to f32

// O_i = l_i ≠ 0 ? o_i / l_i : 0;  LSE_i = l_i ≠ 0 ? 0.25 · m_i + ln l_i : −inf (NaN passes)
// CHECK:     %[[F:.+]]:2 = linalg.generic {indexing_maps = [#[[TILE]], #[[ROW]], #[[ROW]], #[[TILE]], #[[ROW]]], iterator_types = ["parallel", "parallel"]} ins(%[[O2]], %[[L2]], %[[M1]] : {{.+}})
// CHECK:       %[[NE:.+]] = arith.cmpf une
// CHECK:       %[[DIV:.+]] = arith.divf
// CHECK:       %[[SEL:.+]] = arith.select %[[NE]], %[[DIV]]
// CHECK:       %[[OUT:.+]] = arith.truncf %[[SEL]] : f32 to bf16
// CHECK:       %[[SM2:.+]] = arith.mulf
// CHECK:       %[[LN:.+]] = math.log
// CHECK:       %[[LSE:.+]] = arith.addf %[[SM2]], %[[LN]]
// CHECK:       %[[LSE2:.+]] = arith.select %[[NE]], %[[LSE]]
// CHECK:       linalg.yield %[[OUT]], %[[LSE2]]
// CHECK:     return %[[F]]#0, %[[F]]#1
// CHECK-NOT: fat.
func.func @step(%q: tensor<64x128xbf16>, %k: tensor<32x128xbf16>, %v: tensor<32x128xbf16>,
                %o: tensor<64x128xf32>, %m: tensor<64xf32>, %l: tensor<64xf32>,
                %i0: index, %j0: index, %n: index, %d: index)
    -> (tensor<64x128xbf16>, tensor<64xf32>) {
  %s = fat.qk %q, %k : tensor<64x128xbf16>, tensor<32x128xbf16> -> tensor<64x32xf32>
  %sm = fat.mask %s at(%i0, %j0) kv_len(%n) diagonal(%d) causal window [8, -1] : tensor<64x32xf32>
  %m1 = fat.row_max %sm, %m : tensor<64x32xf32>, tensor<64xf32>
  %p = fat.exp2 %sm, %m1 scale 0.5 : tensor<64x32xf32>, tensor<64xf32>
  %a = fat.exp2 %m, %m1 scale 0.5 : tensor<64xf32>, tensor<64xf32>
  %l1 = fat.rescale %l, %a : tensor<64xf32>, tensor<64xf32>
  %l2 = fat.row_sum %p, %l1 : tensor<64x32xf32>, tensor<64xf32>
  %o1 = fat.rescale %o, %a : tensor<64x128xf32>, tensor<64xf32>
  %o2 = fat.pv %p, %v, %o1 : tensor<64x32xf32>, tensor<32x128xbf16>, tensor<64x128xf32>
  %out, %lse = fat.finalize %o2, %l2, %m1 scale 0.25 : tensor<64x128xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<64x128xbf16>, tensor<64xf32>
  return %out, %lse : tensor<64x128xbf16>, tensor<64xf32>
}

// fat.finalize with a run-time c and the ones columns (the kernel's form)
// runs on the CPU too: l is acc's column Dv, LSE = ln 2·(c·m + log2 l).
// CHECK-LABEL: func.func @finalize_kernel_form
// CHECK:         %[[L:.+]] = tensor.extract_slice %[[ACC:[a-z0-9]+]][0, 128] [64, 1] [1, 1] : tensor<64x136xf32> to tensor<64xf32>
// CHECK:         %[[O:.+]] = tensor.extract_slice %[[ACC]][0, 0] [64, 128] [1, 1] : tensor<64x136xf32> to tensor<64x128xf32>
// CHECK:         linalg.generic
// CHECK-SAME:      ins(%[[O]], %[[L]], %{{.+}} : tensor<64x128xf32>, tensor<64xf32>, tensor<64xf32>)
// CHECK:           arith.divf
// CHECK:           math.log2
// CHECK:           arith.mulf %{{.+}}, %cst{{.*}} : f32
func.func @finalize_kernel_form(%acc: tensor<64x136xf32>, %m: tensor<64xf32>, %c: f32)
    -> (tensor<64x128xbf16>, tensor<64xf32>) {
  %out, %lse = fat.finalize %acc, ones_columns, %m exp2_scale %c
      : tensor<64x136xf32>, tensor<64xf32> -> tensor<64x128xbf16>, tensor<64xf32>
  return %out, %lse : tensor<64x128xbf16>, tensor<64xf32>
}

// rows_at_origin: every row at the tile's first, min(q_start, q_len − 1);
// the key still per column.
// CHECK-LABEL: func.func @score_mod_rows_at_origin
// CHECK-SAME:    (%{{.+}}: tensor<4x8xf32>, %{{.+}}: index, %{{.+}}: index, %[[Q0:.+]]: index, %[[K0:.+]]: index, %[[SQ:.+]]: index, %[[SKV:.+]]: index)
// CHECK:         linalg.generic
// CHECK-NOT:       linalg.index 0
// CHECK:           %[[J:.+]] = linalg.index 1 : index
// CHECK:           %[[K:.+]] = arith.addi %[[K0]], %[[J]] : index
// CHECK:           %[[LASTROW:.+]] = arith.subi %[[SQ]], %{{.+}} : index
// CHECK:           arith.minsi %[[Q0]], %[[LASTROW]] : index
func.func @score_mod_rows_at_origin(%s: tensor<4x8xf32>, %b: index, %h: index, %q0: index,
                                    %k0: index, %sq: index, %skv: index) -> tensor<4x8xf32> {
  %r = fat.score_mod %s at(%b, %h, %q0, %k0) len(%sq, %skv) scale 1.0 rows_at_origin {
  ^bb0(%x: f32, %bb: index, %hh: index, %i: index, %j: index):
    %d = arith.subi %i, %j : index
    %d64 = arith.index_cast %d : index to i64
    %df = arith.sitofp %d64 : i64 to f32
    %y = arith.subf %x, %df : f32
    fat.yield %y : f32
  } : tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// The mask's geometry in the tiled form (index) expands to the same
// formulas as in the kernel (expandKeyGeometry): end = min(⌈n / 32⌉,
// ⌈max(last + d + 1, 0) / 32⌉), first = 0, j0 = min(n / 32, ⌊(0 + d + 1)
// / 32⌋) (folded where row 0 adds nothing).
// CHECK-LABEL: func.func @key_geometry
// CHECK-SAME:    (%[[LAST:.+]]: index, %[[N:.+]]: index, %[[D:.+]]: index)
// CHECK-NOT:     fat.
// CHECK:         %[[NA:.+]] = arith.addi %[[N]], %c31 : index
// CHECK-NEXT:    %[[NB:.+]] = arith.divui %[[NA]], %c32 : index
// CHECK-NEXT:    %[[LD:.+]] = arith.addi %[[LAST]], %[[D]] : index
// CHECK-NEXT:    %[[LD1:.+]] = arith.addi %[[LD]], %c1 : index
// CHECK-NEXT:    %[[KE:.+]] = arith.maxsi %[[LD1]], %c0 : index
// CHECK-NEXT:    %[[KA:.+]] = arith.addi %[[KE]], %c31 : index
// CHECK-NEXT:    %[[KB:.+]] = arith.divui %[[KA]], %c32 : index
// CHECK-NEXT:    %[[END:.+]] = arith.minsi %[[NB]], %[[KB]] : index
// CHECK-NEXT:    %[[T:.+]] = arith.divui %[[N]], %c32 : index
// CHECK-NEXT:    %[[D1:.+]] = arith.addi %[[D]], %c1 : index
// CHECK-NEXT:    %[[E:.+]] = arith.floordivsi %[[D1]], %c32 : index
// CHECK-NEXT:    %[[J0:.+]] = arith.minsi %[[T]], %[[E]] : index
// CHECK-NEXT:    return %c0, %[[END]], %[[J0]] : index, index, index
func.func @key_geometry(%last: index, %n: index, %d: index) -> (index, index, index) {
  %c0 = arith.constant 0 : index
  %f, %e = fat.visible_key_blocks rows(%c0, %last) kv_len(%n) edge(%d) {block_n = 32, right = 0} : index
  %j0 = fat.first_masked_key_block row(%c0) kv_len(%n) edge(%d) {block_n = 32, right = 0} : index
  return %f, %e, %j0 : index, index, index
}
