// RUN: fa-t-opt %s --fat-tile --fat-tensorize --fat-pipeline="persistent=off pingpong=off tile-overlap=off" --convert-fat-to-nvvm -split-input-file -verify-diagnostics
// RUN: not fa-t-opt %s --split-input-file --fat-tile="block-m=96" --fat-tensorize --fat-pipeline="persistent=off pingpong=off tile-overlap=off" --convert-fat-to-nvvm 2>&1 | FileCheck %s --check-prefix=BLOCKM
// RUN: not fa-t-opt %s --split-input-file --fat-tile="block-m=192" --fat-tensorize --fat-pipeline="persistent=off pingpong=off tile-overlap=off" --convert-fat-to-nvvm 2>&1 | FileCheck %s --check-prefix=BLOCKM192
// RUN: not fa-t-opt %s --split-input-file --fat-tile="seq-len=-4" --fat-tensorize --fat-pipeline="persistent=off pingpong=off tile-overlap=off" --convert-fat-to-nvvm 2>&1 | FileCheck %s --check-prefix=SEQLEN
// RUN: not fa-t-opt %s --split-input-file --fat-tile --fat-tensorize --fat-pipeline="persistent=off pingpong=off tile-overlap=off q-buffers=3" --convert-fat-to-nvvm 2>&1 | FileCheck %s --check-prefix=QBUF
// RUN: not fa-t-opt %s --split-input-file --fat-tile --fat-tensorize --fat-pipeline="persistent=0 pingpong=off tile-overlap=off q-buffers=2" --convert-fat-to-nvvm 2>&1 | FileCheck %s --check-prefix=QBUF2
// RUN: not fa-t-opt %s --split-input-file --fat-tile --fat-tensorize --fat-pipeline="persistent=off pingpong=off tile-overlap=off sm=sm_80" --convert-fat-to-nvvm 2>&1 | FileCheck %s --check-prefix=SM
// RUN: not fa-t-opt %s --split-input-file --fat-tile="block-n=128 stages=4" --fat-tensorize --fat-pipeline="persistent=off pingpong=off tile-overlap=off" --convert-fat-to-nvvm 2>&1 | FileCheck %s --check-prefix=SMEM
// RUN: not fa-t-opt %s --split-input-file --fat-tile="block-n=32" --fat-tensorize --fat-pipeline="persistent=off pingpong=off tile-overlap=off" --convert-fat-to-nvvm 2>&1 | FileCheck %s --check-prefix=BLOCKN
// RUN: not fa-t-opt %s --split-input-file --fat-tile="stages=5" --fat-tensorize --fat-pipeline="persistent=off pingpong=off tile-overlap=off" --convert-fat-to-nvvm 2>&1 | FileCheck %s --check-prefix=STAGES
// RUN: not fa-t-opt %s --split-input-file --fat-tile --fat-tensorize --fat-pipeline="persistent=off pingpong=off tile-overlap=off ptx=89" --convert-fat-to-nvvm 2>&1 | FileCheck %s --check-prefix=PTX
// RUN: not fa-t-opt %s --split-input-file --fat-tile="block-m=64" --fat-tensorize --fat-pipeline="persistent=off pingpong=1 tile-overlap=off" --convert-fat-to-nvvm 2>&1 | FileCheck %s --check-prefix=PINGPONG
// RUN: not fa-t-opt %s --split-input-file --fat-tile --fat-tensorize="rescale=lazy rescale-threshold=40" --fat-pipeline="persistent=off pingpong=off tile-overlap=off" --convert-fat-to-nvvm 2>&1 | FileCheck %s --check-prefix=THRESHOLD
// RUN: not fa-t-opt %s --split-input-file --fat-tile --fat-tensorize="exp2-poly=1.5" --fat-pipeline="persistent=off pingpong=off tile-overlap=off" --convert-fat-to-nvvm 2>&1 | FileCheck %s --check-prefix=POLY
// RUN: not fa-t-opt %s --split-input-file --convert-fat-to-nvvm 2>&1 | FileCheck %s --check-prefix=NOKERNEL

// One case per configuration the Hopper kernel cannot serve; each error
// names what is supported.

// BLOCKM: fat-tensorize: the query rows of a tile (block-m) (96) must be a multiple of 64 in [64, 192]
// SEQLEN: fat-tile: option seq-len must be a key length to tune the tiles for, or 0 (the op's static key length), got -4
// QBUF: q-buffers = 3 is not supported; supported: 1, 2 (persistent kernels), or 0 to let the compiler choose
// QBUF2: q-buffers = 2 needs persistent CTAs: a CTA with one tile loads its Q once
// BLOCKM192: block-m = 192 needs D, Dv <= 64: three consumer warpgroups have 160 registers per thread, too few for S, P and O at D = 256
// SM: the Hopper kernel targets sm_90a only (got sm='sm_80')
// SMEM: needs {{[0-9]+}} bytes of shared memory, more than the 232448 a block may use
// BLOCKN: block-n = 32 is not supported; supported: 64 to 192 in steps of 16 (the k16 steps of P·V; above 192 keys S, P and O overflow the consumer registers)
// STAGES: fat-tile: option stages must be in [1, 4] (the depth of the kernel's K/V ring), or 0 for the op's entry else 2, got 5
// PTX: ptx = 89 is not supported; supported: 80 to 88, or 90
// PINGPONG: pingpong needs two or three consumer warpgroups to take turns, i.e. block-m = 128 or 192 (got block-m = 64)
// POLY: fat-tensorize: exp2-poly must be auto or a fraction in [0, 1], got '1.5'
// THRESHOLD: fat-tensorize: rescale-threshold must be in [0, 16] (log2 units), got 4.000000e+01
// NOKERNEL: error: 'fat.attention' op has no kernel to lower: run --fat-tile, --fat-tensorize and --fat-pipeline first (they build the pipelined kernel that convert-fat-to-nvvm lowers), or --fat-to-ptx for the whole pipeline

func.func @head_dim_96(%q: memref<1x2x64x96xbf16>, %o: memref<1x2x64x96xbf16>) {
  // expected-error @+1 {{head dims D = 96, Dv = 96 are not supported by the Hopper kernel; supported: 64, 128, 256}}
  fat.attention ins(%q, %q, %q : memref<1x2x64x96xbf16>, memref<1x2x64x96xbf16>,
                                 memref<1x2x64x96xbf16>) outs(%o : memref<1x2x64x96xbf16>)
  return
}

// -----

func.func @f32_inputs(%q: memref<1x2x64x64xf32>, %o: memref<1x2x64x64xf32>) {
  // expected-error @+1 {{fat-tensorize: wgmma takes f16 or bf16 operands, got 'f32'}}
  fat.attention ins(%q, %q, %q : memref<1x2x64x64xf32>, memref<1x2x64x64xf32>,
                                 memref<1x2x64x64xf32>) outs(%o : memref<1x2x64x64xf32>)
  return
}

// -----

func.func @d256_block_n_128(%q: memref<1x2x64x256xbf16>, %o: memref<1x2x64x256xbf16>) {
  // With the default block-n (0) D = 256 picks 64 keys per block and fits.
  fat.attention ins(%q, %q, %q : memref<1x2x64x256xbf16>, memref<1x2x64x256xbf16>,
                                 memref<1x2x64x256xbf16>) outs(%o : memref<1x2x64x256xbf16>)
  return
}

// -----

// A malformed schedule entry is named, with what it must be.
func.func @bad_schedule(%q: memref<?x8x?x64xbf16>, %o: memref<?x8x?x64xbf16>) {
  // expected-error @+1 {{'fat.schedule' entry 'rowsum' must be "vector" or "mma", got "simd"}}
  fat.attention ins(%q, %q, %q : memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>)
      outs(%o : memref<?x8x?x64xbf16>) {fat.schedule = {rowsum = "simd"}}
  return
}

// -----

// A threshold written by hand (fat-tensorize range-checks its option).
func.func @bad_threshold(%q: memref<?x8x?x64xbf16>, %o: memref<?x8x?x64xbf16>) {
  // expected-error @+1 {{rescale-threshold must be in [0, 16] (log2 units: P may reach 2^threshold), got 40}}
  fat.attention ins(%q, %q, %q : memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>)
      outs(%o : memref<?x8x?x64xbf16>) {fat.schedule = {rescale = "lazy", rescale_threshold = 40.0 : f64}}
  return
}

// -----

func.func @bad_exp2_poly(%q: memref<?x8x?x64xbf16>, %o: memref<?x8x?x64xbf16>) {
  // expected-error @+1 {{'fat.schedule' entry 'exp2_poly' must be a float in [0, 1], got -2.500000e-01 : f64}}
  fat.attention ins(%q, %q, %q : memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>)
      outs(%o : memref<?x8x?x64xbf16>) {fat.schedule = {exp2_poly = -0.25 : f64}}
  return
}

// -----

func.func @unknown_schedule_entry(%q: memref<?x8x?x64xbf16>, %o: memref<?x8x?x64xbf16>) {
  // expected-error @+1 {{'fat.schedule' has unknown entry 'warps'; known: overlap, pingpong, rowsum, rescale, rescale_threshold, exp2_poly, row_max, linear_bias, relative_bias, tanh_poly, persistent, tile_overlap, tile_scheduler, forced, block_m, block_n, stages, q_buffers, o_store, pv_wait, tail_split, mask_form}}
  fat.attention ins(%q, %q, %q : memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>)
      outs(%o : memref<?x8x?x64xbf16>) {fat.schedule = {warps = 3}}
  return
}

// -----

// The kernel's own entries (what fat-pipeline records after building) are
// checked like its options.
func.func @schedule_block_m(%q: memref<?x8x?x64xbf16>, %o: memref<?x8x?x64xbf16>) {
  // expected-error @+1 {{fat-tensorize: the query rows of a tile (block-m) (96) must be a multiple of 64 in [64, 192]}}
  fat.attention ins(%q, %q, %q : memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>)
      outs(%o : memref<?x8x?x64xbf16>) {fat.schedule = {block_m = 96}}
  return
}

// -----

func.func @schedule_o_store(%q: memref<?x8x?x64xbf16>, %o: memref<?x8x?x64xbf16>) {
  // expected-error @+1 {{'fat.schedule' entry 'o_store' must be "staged" or "direct", got "tma"}}
  fat.attention ins(%q, %q, %q : memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>)
      outs(%o : memref<?x8x?x64xbf16>) {fat.schedule = {o_store = "tma"}}
  return
}

// -----

func.func @schedule_mask_form(%q: memref<?x8x?x64xbf16>, %o: memref<?x8x?x64xbf16>) {
  // expected-error @+1 {{'fat.schedule' entry 'mask_form' must be "rows" or "keys", got "cols"}}
  fat.attention ins(%q, %q, %q : memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>)
      outs(%o : memref<?x8x?x64xbf16>) causal {fat.schedule = {mask_form = "cols"}}
  return
}

// -----

func.func @schedule_tail_split(%q: memref<?x8x?x64xbf16>, %o: memref<?x8x?x64xbf16>) {
  // expected-error @+1 {{'fat.schedule' entry 'tail_split' must be a bool, got "yes"}}
  fat.attention ins(%q, %q, %q : memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>)
      outs(%o : memref<?x8x?x64xbf16>) causal {fat.schedule = {tail_split = "yes"}}
  return
}

// -----

// Written on the op, a split the kernel cannot run is refused like the
// option: a left window edge masks the first blocks too.
func.func @schedule_tail_split_window(%q: memref<?x8x?x64xbf16>, %o: memref<?x8x?x64xbf16>, %d: index) {
  // expected-error @+1 {{tail-split=on needs the overlapped main loop (fat-pipeline overlap) and no left window edge}}
  fat.attention ins(%q, %q, %q : memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>)
      outs(%o : memref<?x8x?x64xbf16>) diagonal(%d) window [128, 0] {fat.schedule = {tail_split = true}}
  return
}

// -----

func.func @schedule_stages_type(%q: memref<?x8x?x64xbf16>, %o: memref<?x8x?x64xbf16>) {
  // expected-error @+1 {{'fat.schedule' entry 'stages' must be an i64, got 3.000000e+00 : f32}}
  fat.attention ins(%q, %q, %q : memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>)
      outs(%o : memref<?x8x?x64xbf16>) {fat.schedule = {stages = 3.0 : f32}}
  return
}

// -----

// The grid limits: heads are a grid dimension (≤ 65535), the batch gridDim.z.
func.func @too_many_heads(%q: memref<1x65536x64x64xbf16>) {
  // expected-error @+1 {{Hq = 65536 is not supported by the Hopper kernel; supported: up to 65535 (the heads are a grid dimension)}}
  fat.attention ins(%q, %q, %q : memref<1x65536x64x64xbf16>, memref<1x65536x64x64xbf16>, memref<1x65536x64x64xbf16>)
      outs(%q : memref<1x65536x64x64xbf16>)
  return
}

// -----

func.func @too_large_batch(%q: memref<65536x2x64x64xbf16>) {
  // expected-error @+1 {{B = 65536 is not supported by the Hopper kernel; supported: up to 65535 (the batch is gridDim.z)}}
  fat.attention ins(%q, %q, %q : memref<65536x2x64x64xbf16>, memref<65536x2x64x64xbf16>, memref<65536x2x64x64xbf16>)
      outs(%q : memref<65536x2x64x64xbf16>)
  return
}

// -----

// Key positions are 32-bit in the kernel.
func.func @huge_window(%q: memref<1x2x64x64xbf16>) {
  // expected-error @+1 {{window [2000000000, 0] is not supported by the Hopper kernel; supported: bounds up to 2^30 or -1 (unbounded)}}
  fat.attention ins(%q, %q, %q : memref<1x2x64x64xbf16>, memref<1x2x64x64xbf16>, memref<1x2x64x64xbf16>)
      outs(%q : memref<1x2x64x64xbf16>) window [2000000000, 0]
  return
}

// -----

// Kernels are module-level symbols named after their config: another symbol
// of that name would be what the host calls. (A gpu.module of that name that
// fat.kernels lists, from an earlier op or run, is the kernel and is reused.)
// expected-note @+1 {{the symbol is here}}
func.func private @fat_attention_fwd_bf16_d64_h2_2_bhsd_m192n128s2_or()

func.func @kernel_name_taken(%q: memref<1x2x64x64xbf16>) {
  // expected-error @+1 {{needs the kernel name 'fat_attention_fwd_bf16_d64_h2_2_bhsd_m192n128s2_or', which a 'func.func' of the module already has: rename that symbol}}
  fat.attention ins(%q, %q, %q : memref<1x2x64x64xbf16>, memref<1x2x64x64xbf16>, memref<1x2x64x64xbf16>)
      outs(%q : memref<1x2x64x64xbf16>)
  return
}

// -----

// Every fat.attention becomes a kernel launched from the host: one inside
// device code would be a call from a kernel, which nothing lowers.
module attributes {gpu.container_module} {
  gpu.module @device {
    func.func @in_device_code(%q: memref<1x2x64x64xbf16>) {
      // expected-error @+1 {{inside gpu.module 'device' is device code: the Hopper kernel is launched from host code, call it there}}
      fat.attention ins(%q, %q, %q : memref<1x2x64x64xbf16>, memref<1x2x64x64xbf16>, memref<1x2x64x64xbf16>)
          outs(%q : memref<1x2x64x64xbf16>)
      return
    }
  }
}

// -----

// Score and mask regions reach the kernel as fat.score_mod / fat.mask_mod,
// and the tensors they capture as kernel parameters (their addresses): a
// scalar capture (or a dynamic shape) has no address to pass.
func.func @captured_scalar(%q: tensor<1x8x128x64xbf16>, %o: tensor<1x8x128x64xbf16>,
                           %bias: f32) -> tensor<1x8x128x64xbf16> {
  // expected-error @+1 {{capture #0 has type 'f32': the Hopper kernel reads captured tensors of static shape with fewer than 2^31 elements of f32, f16, bf16, i1, i8, i16, i32 or i64 (scalars and dynamic shapes run on the CPU, --fat-to-cpu)}}
  %r = fat.attention ins(%q, %q, %q : tensor<1x8x128x64xbf16>, tensor<1x8x128x64xbf16>, tensor<1x8x128x64xbf16>)
                outs(%o : tensor<1x8x128x64xbf16>) captures(%bias : f32) score {
                ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %t: f32):
                  %y = arith.addf %s, %t : f32
                  fat.yield %y : f32
                } -> tensor<1x8x128x64xbf16>
  return %r : tensor<1x8x128x64xbf16>
}

// -----

func.func @captured_dynamic(%q: tensor<1x8x128x64xbf16>, %o: tensor<1x8x128x64xbf16>,
                            %bias: tensor<?xf32>) -> tensor<1x8x128x64xbf16> {
  // expected-error @+1 {{capture #0 has type 'tensor<?xf32>': the Hopper kernel reads captured tensors of static shape}}
  %r = fat.attention ins(%q, %q, %q : tensor<1x8x128x64xbf16>, tensor<1x8x128x64xbf16>, tensor<1x8x128x64xbf16>)
                outs(%o : tensor<1x8x128x64xbf16>) captures(%bias : tensor<?xf32>) score {
                ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %t: tensor<?xf32>):
                  %e = tensor.extract %t[%h] : tensor<?xf32>
                  %y = arith.addf %s, %e : f32
                  fat.yield %y : f32
                } -> tensor<1x8x128x64xbf16>
  return %r : tensor<1x8x128x64xbf16>
}
