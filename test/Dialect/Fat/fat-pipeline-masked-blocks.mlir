// RUN: fa-t-opt %s --fat-tile --fat-tensorize --fat-pipeline -split-input-file | FileCheck %s
// RUN: fa-t-opt %s --fat-tile --fat-tensorize --fat-pipeline="tail-split=off mask-form=keys" -split-input-file | FileCheck %s --check-prefix=OFF
// RUN: not fa-t-opt %s --fat-tile --fat-tensorize --fat-pipeline="overlap=off tail-split=on" -split-input-file 2>&1 | FileCheck %s --check-prefix=PLAIN
// RUN: not fa-t-opt %s --fat-tile --fat-tensorize --fat-pipeline="tail-split=on" -split-input-file 2>&1 | FileCheck %s --check-prefix=LEFT
// RUN: not fa-t-opt %s --fat-tile --fat-tensorize --fat-pipeline="tail-split=half" -split-input-file 2>&1 | FileCheck %s --check-prefix=BADSPLIT
// RUN: not fa-t-opt %s --fat-tile --fat-tensorize --fat-pipeline="mask-form=cols" -split-input-file 2>&1 | FileCheck %s --check-prefix=BADFORM

// fat-pipeline's two decisions about masked key blocks, each an option whose
// `auto` is the kernel's rule, recorded in fat.schedule and spelled out in
// the kernel's name where it differs from `auto`:
// - tail_split: the overlapped steady loop runs the blocks below the first
//   one a mask can touch in a copy without the mask test ("mainloop"), the
//   rest with it ("mainloop-edge"); auto with ping-pong turns and without
//   the lazy rescale (u / w in the name: split / whole against auto);
// - mask_form: a masked block's fat.mask compares each key with limits per
//   row ("rows", `row_limits`) or each key's index with every bound
//   ("keys"); auto "rows" where the consumers hold 240 or more registers
//   (i / k in the name).

// Causal D = 64 with two consumer warpgroups takes turns, rescales every
// block and has 240 registers: auto splits the tail and compares per row.
// CHECK-LABEL: func.func @causal
// CHECK:         fat.launch @[[K:fat_attention_fwd_bf16_d64_h8_8_bhsd_causal_m128n128s2q2_oprt132]]::@[[K]]
// CHECK-SAME:      mask_form = "rows"
// CHECK-SAME:      tail_split = true
// CHECK:         gpu.module @[[K]]
// The first block's mask, then the copy without one and the edge loop:
// CHECK:           fat.mask {{.*}} causal row_limits
// CHECK-NOT:       fat.mask
// CHECK:           fat.stage = "mainloop"}
// CHECK:           fat.mask {{.*}} causal row_limits
// CHECK:           fat.stage = "mainloop-edge"}
// OFF-LABEL: func.func @causal
// OFF:         fat.launch @[[K:fat_attention_fwd_bf16_d64_h8_8_bhsd_causal_m128n128s2q2wk_oprt132]]::@[[K]]
// OFF-SAME:      mask_form = "keys"
// OFF-SAME:      tail_split = false
// OFF:         gpu.module @[[K]]
// OFF-NOT:       row_limits
// OFF-NOT:       "mainloop-edge"
// OFF:           fat.stage = "mainloop"}
// OFF-NOT:       "mainloop-edge"
// OFF-NOT:       row_limits
// OFF:         }
// Without overlap there is no steady loop to split.
// PLAIN: error: 'fat.attention' op tail-split=on needs the overlapped main loop (fat-pipeline overlap) and no left window edge
// LEFT-NOT: error
// BADSPLIT: error: fat-pipeline: tail-split must be 'auto', 'on' or 'off', got 'half'
// BADFORM: error: fat-pipeline: mask-form must be 'auto', 'rows' or 'keys', got 'cols'
func.func @causal(%q: memref<?x8x?x64xbf16>, %o: memref<?x8x?x64xbf16>) {
  fat.attention ins(%q, %q, %q : memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>)
      outs(%o : memref<?x8x?x64xbf16>) causal
  return
}

// -----

// A window with a left edge masks the first blocks too: there is no
// unmasked range to split off, so auto keeps the loop whole and
// tail-split=on is refused by name.
// CHECK-LABEL: func.func @window
// CHECK:         tail_split = false
// OFF-LABEL:   func.func @window
// OFF:           tail_split = false
// LEFT:        error: 'fat.attention' op tail-split=on needs the overlapped main loop (fat-pipeline overlap) and no left window edge: with one the first blocks are masked too
func.func @window(%q: memref<?x8x?x64xbf16>, %o: memref<?x8x?x64xbf16>, %d: index) {
  fat.attention ins(%q, %q, %q : memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>)
      outs(%o : memref<?x8x?x64xbf16>) diagonal(%d) window [256, 0]
  return
}
