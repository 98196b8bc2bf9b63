// RUN: fa-t-opt %s --fat-tile --fat-tensorize --fat-pipeline -split-input-file | FileCheck %s
// RUN: fa-t-opt %s --fat-tile --fat-tensorize --fat-pipeline="persistent=on tile-overlap=off" -split-input-file | FileCheck %s --check-prefix=FORCED
// RUN: fa-t-opt %s --fat-tile --fat-tensorize --fat-pipeline="mask-form=rows tail-split=on" -split-input-file | FileCheck %s --check-prefix=HAND

// A fat.schedule written on the op (by hand) is a decision already made,
// which travels with the tiles: fat-tile takes its block_m, block_n and
// stages, fat-tensorize its primitives, fat-pipeline its q_buffers,
// o_store, pv_wait, tail_split and mask_form (which win over the pass's
// options) and its schedule keys, which an option overrides only when it is
// given (on / off).

// The whole schedule by hand: 64 rows, 96 keys, three stages, O stored from
// the registers (g: where the automatic store would stage), one CTA per tile,
// the steady loop whole and masked blocks compared key by key (k: where the
// automatic form, with 255 registers, would use per-row limits).
// CHECK-LABEL: func.func @all_by_hand
// CHECK:         fat.launch @fat_attention_fwd_bf16_d128_h8_8_bhsd_m64n96s3gk::
// CHECK-SAME:      fat.schedule = {block_m = 64 : i64, block_n = 96 : i64, exp2_poly = 0.000000e+00 : f64, forced = false, mask_form = "keys", o_store = "direct", overlap = true, persistent = false, pingpong = false, pv_wait = "early", q_buffers = 1 : i64, rescale = "always", rescale_threshold = 8.000000e+00 : f64, row_max = "online", rowsum = "vector", stages = 3 : i64, tail_split = false, tile_overlap = false, tile_scheduler = "static"}
// The kernel's own decisions written on the op win over the pass's options.
// HAND-LABEL: func.func @all_by_hand
// HAND:         fat.launch @fat_attention_fwd_bf16_d128_h8_8_bhsd_m64n96s3gk::
// HAND-SAME:      mask_form = "keys"
// HAND-SAME:      tail_split = false
// A schedule option given to the pass wins over the entry, and marks it forced.
// FORCED-LABEL: func.func @all_by_hand
// FORCED:         fat.launch @fat_attention_fwd_bf16_d128_h8_8_bhsd_m64n96s3q2gk_ot132::
// FORCED-SAME:    forced = true, mask_form = "keys", o_store = "direct", overlap = true, persistent = true, pingpong = false
func.func @all_by_hand(%q: memref<?x8x?x128xbf16>, %o: memref<?x8x?x128xbf16>) {
  fat.attention ins(%q, %q, %q : memref<?x8x?x128xbf16>, memref<?x8x?x128xbf16>, memref<?x8x?x128xbf16>)
      outs(%o : memref<?x8x?x128xbf16>)
      {fat.schedule = {block_m = 64 : i64, block_n = 96 : i64, stages = 3 : i64, o_store = "direct",
                       pv_wait = "early", overlap = true, persistent = false, pingpong = false,
                       tile_overlap = false, tail_split = false, mask_form = "keys"}}
  return
}

// -----

// Only the tiles by hand: the cost model chooses the schedule for them —
// with 64 rows (one consumer warpgroup) there is no one to take turns with,
// so no ping-pong, and persistent CTAs chain their tiles (tile overlap, c).
// CHECK-LABEL: func.func @tiles_by_hand
// CHECK:         fat.launch @fat_attention_fwd_bf16_d128_h8_8_bhsd_m64n96s3q2_ot132c::
// CHECK-SAME:    overlap = true, persistent = true, pingpong = false
func.func @tiles_by_hand(%q: memref<?x8x?x128xbf16>, %o: memref<?x8x?x128xbf16>) {
  fat.attention ins(%q, %q, %q : memref<?x8x?x128xbf16>, memref<?x8x?x128xbf16>, memref<?x8x?x128xbf16>)
      outs(%o : memref<?x8x?x128xbf16>)
      {fat.schedule = {block_m = 64 : i64, block_n = 96 : i64, stages = 3 : i64}}
  return
}
