// RUN: fa-t-opt %s --fat-tile --fat-tensorize --fat-pipeline | FileCheck %s --check-prefix=PIPE
// RUN: fa-t-opt %s --fat-tile --fat-tensorize --fat-pipeline="tile-scheduler=static" | FileCheck %s --check-prefix=STATIC
// RUN: fa-t-opt %s --fat-tile --fat-tensorize --fat-pipeline="persistent=off" | FileCheck %s --check-prefix=GRID
// RUN: fa-t-opt %s --fat-tile --fat-tensorize --fat-pipeline="tile-scheduler=dynamic pingpong=on" | FileCheck %s --check-prefix=TURNS
// RUN: rm -rf %t && mkdir -p %t && fa-t-opt %s --fat-to-ptx="output-dir=%t" -o %t/out.mlir
// RUN: cat %t/*.json | FileCheck %s --check-prefix=JSON
// RUN: cat %t/*.ptx | FileCheck %s --check-prefix=PTX
// RUN: not fa-t-opt %s --fat-tile --fat-tensorize --fat-pipeline="tile-scheduler=dynamic persistent=off" 2>&1 | FileCheck %s --check-prefix=OFF
// RUN: not fa-t-opt %s --fat-tile --fat-tensorize --fat-pipeline="tile-scheduler=sometimes" 2>&1 | FileCheck %s --check-prefix=WORD

// tile-scheduler=dynamic: persistent CTAs take their tiles from a counter in
// global memory (fat.tile_loop's dynamic order), the cost model's choice for
// tiles whose cost follows data — a document mask's key ranges — which a
// static round robin leaves unbalanced; chained by the tile overlap, without
// turns (choosePipeline, autoPingpong; perf log runs 137–137b).
// PIPE: ![[UNITS_RING:ring[0-9]*]] = !fat.ring<stages = 2, buffer_offset = 196608, buffer_bytes = 1024, barrier_offset = {{[0-9]+}}, releases = 256>
// PIPE-LABEL: func.func @documents
// PIPE:         fat.launch @[[K:fat_attention_fwd_bf16_d128_h16_16_bhsd_causal_mod[0-9a-f]+_m128n128s2q2_ol8t132cd]]::
// PIPE-SAME:      persistent = true, pingpong = false
// PIPE-SAME:      tile_overlap = true, tile_scheduler = "dynamic"

// Forced static, the persistent CTAs keep the round robin (the cost model's
// pairs under the causal mask); persistent=off, one CTA per tile and no
// counter; turns asked for with the dynamic order, both.
// STATIC:       fat.launch @{{.+}}_m128n128s2q2_ol8t132c::
// STATIC-SAME:    persistent = true{{.+}}tile_scheduler = "static"
// STATIC:       fat.tile_loop pairs query_blocks
// GRID:         fat.launch @{{.+}}_m128n128s2_ol8::
// GRID-SAME:      persistent = false{{.+}}tile_scheduler = "static"
// GRID-NOT:     fat.tile_loop
// TURNS:        fat.launch @{{.+}}_m128n128s2q2_opl8t132d::
// TURNS-SAME:     pingpong = true{{.+}}tile_scheduler = "dynamic"

// The kernel takes B, then the counter, then the captures. The units ring
// (two 1024-byte stages, released by the 256 consumer threads) sits after
// the K/V rings; the producer thread's loop fetches (the counter) and
// publishes, the consumers' follows; both in the causal grid's order
// (longest_first: heads fastest, the last query block first), not pairs.
// PIPE:         llvm.func @[[K]]({{.+}}, %[[B:[a-z0-9]+]]: i32, %[[CNT:[a-z0-9]+]]: !llvm.ptr<1>, %{{[a-z0-9]+}}: !llvm.ptr<1>, %{{[a-z0-9]+}}: !llvm.ptr<1>)
// PIPE:         %[[UNITS:[0-9]+]] = fat.ring %{{[0-9]+}} : ![[UNITS_RING]]
// PIPE:         fat.ring_init %[[UNITS]] : ![[UNITS_RING]]
// PIPE:         fat.tile_loop longest_first query_blocks(%{{[0-9]+}}) heads 16 batch(%[[B]]) ctas 132 units(%[[UNITS]] : ![[UNITS_RING]]) fetch(%[[CNT]] : !llvm.ptr<1>) {
// PIPE:         fat.tile_loop longest_first query_blocks(%{{[0-9]+}}) heads 16 batch(%[[B]]) ctas 132 units(%[[UNITS]] : ![[UNITS_RING]]) iter_args(

// The manifest: one CTA per unit up to the SMs, the units single query
// blocks (ceildiv 128, not a causal kernel's pairs' 256), the counter after
// B, and the schedule's record.
// JSON:      "grid": [
// JSON-NEXT:   {
// JSON-NEXT:     "ceildiv": 128,
// JSON-NEXT:     "max": 132,
// JSON-NEXT:     "symbol": "Sq",
// JSON-NEXT:     "times": [
// JSON-NEXT:       "Hq",
// JSON-NEXT:       "B"
// JSON:        "symbol": "B"
// JSON-NEXT: },
// JSON-NEXT: {
// JSON-NEXT:   "kind": "ptr",
// JSON-NEXT:   "tensor": "tile_counter"
// JSON-NEXT: },
// JSON-NEXT: {
// JSON-NEXT:   "kind": "ptr",
// JSON-NEXT:   "tensor": "capture0"
// JSON:      "schedule": {
// JSON:        "tile_scheduler": "dynamic"

// The fetch and the reset by the launch's last fetch, once each.
// PTX-COUNT-1: atom.global.add.u32
// PTX-COUNT-1: atom.global.exch.b32

// OFF: error: 'fat.attention' op tile-scheduler=dynamic needs persistent CTAs: it hands a persistent CTA its next tile
// WORD: error: fat-pipeline: tile-scheduler must be 'auto', 'dynamic' or 'static', got 'sometimes'

func.func @documents(%q: tensor<2x16x1000x128xbf16>, %k: tensor<2x16x1000x128xbf16>,
                     %v: tensor<2x16x1000x128xbf16>, %o: tensor<2x16x1000x128xbf16>,
                     %doc: tensor<2x1000xi32>, %r: tensor<2x16x2xi32>)
    -> tensor<2x16x1000x128xbf16> {
  %res = fat.attention ins(%q, %k, %v : tensor<2x16x1000x128xbf16>, tensor<2x16x1000x128xbf16>, tensor<2x16x1000x128xbf16>)
      outs(%o : tensor<2x16x1000x128xbf16>)
      captures(%doc, %r : tensor<2x1000xi32>, tensor<2x16x2xi32>) causal
      mask {
      ^bb0(%b: index, %h: index, %i: index, %j: index, %d: tensor<2x1000xi32>, %rr: tensor<2x16x2xi32>):
        %di = tensor.extract %d[%b, %i] : tensor<2x1000xi32>
        %dj = tensor.extract %d[%b, %j] : tensor<2x1000xi32>
        %same = arith.cmpi eq, %di, %dj : i32
        fat.yield %same : i1
      } {kv_ranges = 1 : i64} -> tensor<2x16x1000x128xbf16>
  return %res : tensor<2x16x1000x128xbf16>
}
