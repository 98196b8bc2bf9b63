// RUN: fa-t-opt %s -split-input-file -verify-diagnostics

// One case per verifier rule of fat.attention and of the tile ops.

func.func @unranked(%q: tensor<*xbf16>, %k: tensor<1x1x8x64xbf16>, %v: tensor<1x1x8x64xbf16>, %o: tensor<1x1x8x64xbf16>) {
  // expected-error @+1 {{expected query to be a ranked tensor or a memref, got 'tensor<*xbf16>'}}
  %r = fat.attention ins(%q, %k, %v : tensor<*xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>) outs(%o : tensor<1x1x8x64xbf16>) -> tensor<1x1x8x64xbf16>
  return
}

// -----

func.func @mixed_tensor_memref(%q: tensor<1x1x8x64xbf16>, %k: memref<1x1x8x64xbf16>, %v: tensor<1x1x8x64xbf16>, %o: tensor<1x1x8x64xbf16>) {
  // expected-error @+1 {{expected key to be a tensor like query ('tensor<1x1x8x64xbf16>'), got 'memref<1x1x8x64xbf16>'}}
  %r = fat.attention ins(%q, %k, %v : tensor<1x1x8x64xbf16>, memref<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>) outs(%o : tensor<1x1x8x64xbf16>) -> tensor<1x1x8x64xbf16>
  return
}

// -----

// Found by fa-t-fuzz: a permutation affine_map layout verified, and
// one-shot-bufferize then built memref.subview on a non-strided memref.
func.func @non_strided_memref(%q: memref<1x8x64x64xf16, affine_map<(b, h, s, d) -> (b, s, h, d)>>, %k: memref<1x8x64x64xf16>, %o: memref<1x8x64x64xf16>) {
  // expected-error @+1 {{expected query to have a strided layout (identity or strided<...>), got 'memref<1x8x64x64xf16, affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>>'}}
  fat.attention ins(%q, %k, %k : memref<1x8x64x64xf16, affine_map<(b, h, s, d) -> (b, s, h, d)>>, memref<1x8x64x64xf16>, memref<1x8x64x64xf16>) outs(%o : memref<1x8x64x64xf16>)
  return
}

// -----

func.func @rank(%q: tensor<1x8x64xbf16>, %k: tensor<1x1x8x64xbf16>, %v: tensor<1x1x8x64xbf16>, %o: tensor<1x1x8x64xbf16>) {
  // expected-error @+1 {{expected query to have rank 4 ([B, H, S, D] under layout bhsd), got rank 3}}
  %r = fat.attention ins(%q, %k, %v : tensor<1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>) outs(%o : tensor<1x1x8x64xbf16>) -> tensor<1x1x8x64xbf16>
  return
}

// -----

func.func @element_type(%q: tensor<1x1x8x64xi8>, %k: tensor<1x1x8x64xi8>, %v: tensor<1x1x8x64xi8>, %o: tensor<1x1x8x64xi8>) {
  // expected-error @+1 {{expected query element type to be f16, bf16 or f32, got 'i8'}}
  %r = fat.attention ins(%q, %k, %v : tensor<1x1x8x64xi8>, tensor<1x1x8x64xi8>, tensor<1x1x8x64xi8>) outs(%o : tensor<1x1x8x64xi8>) -> tensor<1x1x8x64xi8>
  return
}

// -----

func.func @mixed_element_types(%q: tensor<1x1x8x64xbf16>, %k: tensor<1x1x8x64xf16>, %v: tensor<1x1x8x64xbf16>, %o: tensor<1x1x8x64xbf16>) {
  // expected-error @+1 {{expected key element type ('f16') to match query's ('bf16')}}
  %r = fat.attention ins(%q, %k, %v : tensor<1x1x8x64xbf16>, tensor<1x1x8x64xf16>, tensor<1x1x8x64xbf16>) outs(%o : tensor<1x1x8x64xbf16>) -> tensor<1x1x8x64xbf16>
  return
}

// -----

func.func @dynamic_head_dim(%q: tensor<1x1x8x?xbf16>, %k: tensor<1x1x8x64xbf16>, %v: tensor<1x1x8x64xbf16>, %o: tensor<1x1x8x64xbf16>) {
  // expected-error @+1 {{expected query head dim (dim 3 under layout bhsd) to be static}}
  %r = fat.attention ins(%q, %k, %v : tensor<1x1x8x?xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>) outs(%o : tensor<1x1x8x64xbf16>) -> tensor<1x1x8x64xbf16>
  return
}

// -----

func.func @dynamic_heads_bshd(%q: tensor<1x8x?x64xbf16>, %k: tensor<1x8x1x64xbf16>, %v: tensor<1x8x1x64xbf16>, %o: tensor<1x8x1x64xbf16>) {
  // expected-error @+1 {{expected query head count (dim 2 under layout bshd) to be static}}
  %r = fat.attention ins(%q, %k, %v : tensor<1x8x?x64xbf16>, tensor<1x8x1x64xbf16>, tensor<1x8x1x64xbf16>) outs(%o : tensor<1x8x1x64xbf16>) layout(bshd) -> tensor<1x8x1x64xbf16>
  return
}

// -----

func.func @zero_head_dim(%q: tensor<1x1x8x0xbf16>, %k: tensor<1x1x8x0xbf16>, %v: tensor<1x1x8x64xbf16>, %o: tensor<1x1x8x64xbf16>) {
  // expected-error @+1 {{expected query head dim to be positive}}
  %r = fat.attention ins(%q, %k, %v : tensor<1x1x8x0xbf16>, tensor<1x1x8x0xbf16>, tensor<1x1x8x64xbf16>) outs(%o : tensor<1x1x8x64xbf16>) -> tensor<1x1x8x64xbf16>
  return
}

// -----

func.func @batch(%q: tensor<2x1x8x64xbf16>, %k: tensor<3x1x8x64xbf16>, %v: tensor<3x1x8x64xbf16>, %o: tensor<2x1x8x64xbf16>) {
  // expected-error @+1 {{expected key batch size B (3) to match query's (2)}}
  %r = fat.attention ins(%q, %k, %v : tensor<2x1x8x64xbf16>, tensor<3x1x8x64xbf16>, tensor<3x1x8x64xbf16>) outs(%o : tensor<2x1x8x64xbf16>) -> tensor<2x1x8x64xbf16>
  return
}

// -----

func.func @head_dim_qk(%q: tensor<1x1x8x128xbf16>, %k: tensor<1x1x8x64xbf16>, %v: tensor<1x1x8x64xbf16>, %o: tensor<1x1x8x64xbf16>) {
  // expected-error @+1 {{expected key head dim D (64) to match query's (128)}}
  %r = fat.attention ins(%q, %k, %v : tensor<1x1x8x128xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>) outs(%o : tensor<1x1x8x64xbf16>) -> tensor<1x1x8x64xbf16>
  return
}

// -----

func.func @kv_heads(%q: tensor<1x4x8x64xbf16>, %k: tensor<1x2x8x64xbf16>, %v: tensor<1x1x8x64xbf16>, %o: tensor<1x4x8x64xbf16>) {
  // expected-error @+1 {{expected value head count Hkv (1) to match key's (2)}}
  %r = fat.attention ins(%q, %k, %v : tensor<1x4x8x64xbf16>, tensor<1x2x8x64xbf16>, tensor<1x1x8x64xbf16>) outs(%o : tensor<1x4x8x64xbf16>) -> tensor<1x4x8x64xbf16>
  return
}

// -----

func.func @kv_length(%q: tensor<1x1x8x64xbf16>, %k: tensor<1x1x16x64xbf16>, %v: tensor<1x1x12x64xbf16>, %o: tensor<1x1x8x64xbf16>) {
  // expected-error @+1 {{expected value sequence length Skv (12) to match key's (16)}}
  %r = fat.attention ins(%q, %k, %v : tensor<1x1x8x64xbf16>, tensor<1x1x16x64xbf16>, tensor<1x1x12x64xbf16>) outs(%o : tensor<1x1x8x64xbf16>) -> tensor<1x1x8x64xbf16>
  return
}

// -----

func.func @output_heads(%q: tensor<1x4x8x64xbf16>, %k: tensor<1x2x8x64xbf16>, %v: tensor<1x2x8x64xbf16>, %o: tensor<1x2x8x64xbf16>) {
  // expected-error @+1 {{expected output head count Hq (2) to match query's (4)}}
  %r = fat.attention ins(%q, %k, %v : tensor<1x4x8x64xbf16>, tensor<1x2x8x64xbf16>, tensor<1x2x8x64xbf16>) outs(%o : tensor<1x2x8x64xbf16>) -> tensor<1x2x8x64xbf16>
  return
}

// -----

func.func @output_length(%q: tensor<1x1x8x64xbf16>, %k: tensor<1x1x8x64xbf16>, %v: tensor<1x1x8x64xbf16>, %o: tensor<1x1x9x64xbf16>) {
  // expected-error @+1 {{expected output sequence length Sq (9) to match query's (8)}}
  %r = fat.attention ins(%q, %k, %v : tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>) outs(%o : tensor<1x1x9x64xbf16>) -> tensor<1x1x9x64xbf16>
  return
}

// -----

func.func @output_head_dim(%q: tensor<1x1x8x64xbf16>, %k: tensor<1x1x8x64xbf16>, %v: tensor<1x1x8x32xbf16>, %o: tensor<1x1x8x64xbf16>) {
  // expected-error @+1 {{expected output head dim Dv (64) to match value's (32)}}
  %r = fat.attention ins(%q, %k, %v : tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x32xbf16>) outs(%o : tensor<1x1x8x64xbf16>) -> tensor<1x1x8x64xbf16>
  return
}

// -----

func.func @gqa_group(%q: tensor<1x32x8x64xbf16>, %k: tensor<1x6x8x64xbf16>, %v: tensor<1x6x8x64xbf16>, %o: tensor<1x32x8x64xbf16>) {
  // expected-error @+1 {{expected Hq (32) to be a multiple of Hkv (6) (heads are dim 1 under layout bhsd)}}
  %r = fat.attention ins(%q, %k, %v : tensor<1x32x8x64xbf16>, tensor<1x6x8x64xbf16>, tensor<1x6x8x64xbf16>) outs(%o : tensor<1x32x8x64xbf16>) -> tensor<1x32x8x64xbf16>
  return
}

// -----

// A BSHD-shaped operand under the default BHSD layout: the heads (dim 1) now
// read as 256 KV heads for 16 query heads.
func.func @layout_disagreement(%q: tensor<2x16x256x128xbf16>, %k: tensor<2x256x4x128xbf16>, %v: tensor<2x256x4x128xbf16>, %o: tensor<2x16x256x128xbf16>) {
  // expected-error @+1 {{expected Hq (16) to be a multiple of Hkv (256) (heads are dim 1 under layout bhsd)}}
  %r = fat.attention ins(%q, %k, %v : tensor<2x16x256x128xbf16>, tensor<2x256x4x128xbf16>, tensor<2x256x4x128xbf16>) outs(%o : tensor<2x16x256x128xbf16>) -> tensor<2x16x256x128xbf16>
  return
}

// -----

func.func @lse_element_type(%q: tensor<1x1x8x64xbf16>, %k: tensor<1x1x8x64xbf16>, %v: tensor<1x1x8x64xbf16>, %o: tensor<1x1x8x64xbf16>, %l: tensor<1x1x8xbf16>) {
  // expected-error @+1 {{expected lse element type to be f32, got 'bf16'}}
  %r:2 = fat.attention ins(%q, %k, %v : tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>) outs(%o : tensor<1x1x8x64xbf16>) lse(%l : tensor<1x1x8xbf16>) -> tensor<1x1x8x64xbf16>, tensor<1x1x8xbf16>
  return
}

// -----

func.func @lse_rank(%q: tensor<1x1x8x64xbf16>, %k: tensor<1x1x8x64xbf16>, %v: tensor<1x1x8x64xbf16>, %o: tensor<1x1x8x64xbf16>, %l: tensor<1x8xf32>) {
  // expected-error @+1 {{expected lse to have rank 3 ([B, Hq, Sq]), got rank 2}}
  %r:2 = fat.attention ins(%q, %k, %v : tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>) outs(%o : tensor<1x1x8x64xbf16>) lse(%l : tensor<1x8xf32>) -> tensor<1x1x8x64xbf16>, tensor<1x8xf32>
  return
}

// -----

func.func @lse_shape(%q: tensor<1x1x8x64xbf16>, %k: tensor<1x1x8x64xbf16>, %v: tensor<1x1x8x64xbf16>, %o: tensor<1x1x8x64xbf16>, %l: tensor<1x1x64xf32>) {
  // expected-error @+1 {{expected lse shape [B, Hq, Sq] = [1, 1, 8], got 'tensor<1x1x64xf32>'}}
  %r:2 = fat.attention ins(%q, %k, %v : tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>) outs(%o : tensor<1x1x8x64xbf16>) lse(%l : tensor<1x1x64xf32>) -> tensor<1x1x8x64xbf16>, tensor<1x1x64xf32>
  return
}

// -----

func.func @lse_kind(%q: tensor<1x1x8x64xbf16>, %k: tensor<1x1x8x64xbf16>, %v: tensor<1x1x8x64xbf16>, %o: tensor<1x1x8x64xbf16>, %l: memref<1x1x8xf32>) {
  // expected-error @+1 {{expected lse to be a tensor like query}}
  %r = fat.attention ins(%q, %k, %v : tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>) outs(%o : tensor<1x1x8x64xbf16>) lse(%l : memref<1x1x8xf32>) -> tensor<1x1x8x64xbf16>
  return
}

// -----

func.func @negative_scale(%q: tensor<1x1x8x64xbf16>, %k: tensor<1x1x8x64xbf16>, %v: tensor<1x1x8x64xbf16>, %o: tensor<1x1x8x64xbf16>) {
  // expected-error @+1 {{expected scale to be positive and finite, got -1}}
  %r = fat.attention ins(%q, %k, %v : tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>) outs(%o : tensor<1x1x8x64xbf16>) scale -1.0 -> tensor<1x1x8x64xbf16>
  return
}

// -----

func.func @infinite_scale(%q: tensor<1x1x8x64xbf16>, %k: tensor<1x1x8x64xbf16>, %v: tensor<1x1x8x64xbf16>, %o: tensor<1x1x8x64xbf16>) {
  // expected-error @+1 {{expected scale to be positive and finite, got INF}}
  %r = fat.attention ins(%q, %k, %v : tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>) outs(%o : tensor<1x1x8x64xbf16>) scale 0x7F800000 -> tensor<1x1x8x64xbf16>
  return
}

// -----

func.func @window_arity(%q: tensor<1x1x8x64xbf16>, %k: tensor<1x1x8x64xbf16>, %v: tensor<1x1x8x64xbf16>, %o: tensor<1x1x8x64xbf16>) {
  // expected-error @+1 {{expected window to have 2 entries [left, right], got 3}}
  %r = fat.attention ins(%q, %k, %v : tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>) outs(%o : tensor<1x1x8x64xbf16>) window [1, 2, 3] -> tensor<1x1x8x64xbf16>
  return
}

// -----

func.func @negative_window(%q: tensor<1x1x8x64xbf16>, %k: tensor<1x1x8x64xbf16>, %v: tensor<1x1x8x64xbf16>, %o: tensor<1x1x8x64xbf16>) {
  // expected-error @+1 {{expected window bounds to be >= 0, or -1 for unbounded, got [-2, 0]}}
  %r = fat.attention ins(%q, %k, %v : tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>) outs(%o : tensor<1x1x8x64xbf16>) window [-2, 0] -> tensor<1x1x8x64xbf16>
  return
}

// -----

// Found by fa-t-fuzz: --fat-tile and --convert-fat-to-nvvm computed
// `right + 1` in int64_t, a signed overflow (UBSan) for INT64_MAX.
func.func @huge_window(%q: tensor<1x1x8x64xbf16>, %k: tensor<1x1x8x64xbf16>, %v: tensor<1x1x8x64xbf16>, %o: tensor<1x1x8x64xbf16>) {
  // expected-error @+1 {{expected window bounds to be at most 2147483647 (a window no sequence fills is -1, unbounded), got [0, 9223372036854775807]}}
  %r = fat.attention ins(%q, %k, %v : tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>) outs(%o : tensor<1x1x8x64xbf16>) window [0, 9223372036854775807] -> tensor<1x1x8x64xbf16>
  return
}

// -----

// Found by fa-t-fuzz-attention (a 25-minute campaign): 3 x 2^31 x 2^62 x
// 512 bf16 verified, and fat-to-cpu's strides wrapped in int64, leaving a
// memref.reinterpret_cast with offset -512 that does not verify.
func.func @huge_static_sizes(%q: tensor<3x2147483648x4611686018427387904x512xbf16>, %o: tensor<3x2147483648x4611686018427387904x512xbf16>) {
  // expected-error @+1 {{expected query to span fewer than 2^63 bytes (64-bit offsets), got 'tensor<3x2147483648x4611686018427387904x512xbf16>'}}
  %r = fat.attention ins(%q, %q, %q : tensor<3x2147483648x4611686018427387904x512xbf16>, tensor<3x2147483648x4611686018427387904x512xbf16>, tensor<3x2147483648x4611686018427387904x512xbf16>) outs(%o : tensor<3x2147483648x4611686018427387904x512xbf16>) -> tensor<3x2147483648x4611686018427387904x512xbf16>
  return
}

// -----

// The same bound holds for the LSE, in f32 (dynamic sizes are the caller's).
func.func @huge_lse(%q: memref<?x8x?x64xbf16>, %l: memref<?x8x2305843009213693952xf32>) {
  // expected-error @+1 {{expected lse to span fewer than 2^63 bytes (64-bit offsets), got 'memref<?x8x2305843009213693952xf32>'}}
  fat.attention ins(%q, %q, %q : memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16>) outs(%q : memref<?x8x?x64xbf16>) lse(%l : memref<?x8x2305843009213693952xf32>)
  return
}

// -----

func.func @diagonal_without_mask(%q: tensor<1x1x8x64xbf16>, %k: tensor<1x1x8x64xbf16>, %v: tensor<1x1x8x64xbf16>, %o: tensor<1x1x8x64xbf16>, %d: index) {
  // expected-error @+1 {{has a diagonal operand but no mask}}
  %r = fat.attention ins(%q, %k, %v : tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>) outs(%o : tensor<1x1x8x64xbf16>) diagonal(%d) -> tensor<1x1x8x64xbf16>
  return
}

// -----

func.func @memref_with_results(%q: memref<1x1x8x64xbf16>, %k: memref<1x1x8x64xbf16>, %v: memref<1x1x8x64xbf16>, %o: memref<1x1x8x64xbf16>) {
  // expected-error @+1 {{expected no results in the memref form, got 1}}
  %r = fat.attention ins(%q, %k, %v : memref<1x1x8x64xbf16>, memref<1x1x8x64xbf16>, memref<1x1x8x64xbf16>) outs(%o : memref<1x1x8x64xbf16>) -> tensor<1x1x8x64xbf16>
  return
}

// -----

func.func @tensor_without_results(%q: tensor<1x1x8x64xbf16>, %k: tensor<1x1x8x64xbf16>, %v: tensor<1x1x8x64xbf16>, %o: tensor<1x1x8x64xbf16>) {
  // expected-error @+1 {{expected 1 results (one per outs/lse operand), got 0}}
  fat.attention ins(%q, %k, %v : tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>) outs(%o : tensor<1x1x8x64xbf16>)
  return
}

// -----

func.func @result_type(%q: tensor<1x1x8x64xbf16>, %k: tensor<1x1x8x64xbf16>, %v: tensor<1x1x8x64xbf16>, %o: tensor<1x1x8x64xbf16>) {
  // expected-error @+1 {{expected result #0 type ('tensor<1x1x8x64xf16>') to match its init ('tensor<1x1x8x64xbf16>')}}
  %r = fat.attention ins(%q, %k, %v : tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>) outs(%o : tensor<1x1x8x64xbf16>) -> tensor<1x1x8x64xf16>
  return
}

// -----

func.func @qk_head_dim(%q: tensor<64x128xbf16>, %k: tensor<32x64xbf16>) {
  // expected-error @+1 {{expected dim 1 of key (64) to match dim 1 of query (128)}}
  %s = fat.qk %q, %k : tensor<64x128xbf16>, tensor<32x64xbf16> -> tensor<64x32xf32>
  return
}

// -----

func.func @qk_result_f32(%q: tensor<64x128xbf16>, %k: tensor<32x128xbf16>) {
  // expected-error @+1 {{expected scores to have f32 elements, got 'tensor<64x32xbf16>'}}
  %s = fat.qk %q, %k : tensor<64x128xbf16>, tensor<32x128xbf16> -> tensor<64x32xbf16>
  return
}

// -----

// Found by fa-t-fuzz: --fat-decompose widened these with arith.extf / rounded
// them with arith.truncf, which is invalid on integers (and on f64).
func.func @qk_integer_operands(%q: tensor<64x128xi8>, %k: tensor<32x128xi8>) {
  // expected-error @+1 {{expected query to have f16, bf16 or f32 elements, got 'tensor<64x128xi8>'}}
  %s = fat.qk %q, %k : tensor<64x128xi8>, tensor<32x128xi8> -> tensor<64x32xf32>
  return
}

// -----

func.func @pv_value_f64(%p: tensor<64x32xf32>, %v: tensor<32x128xf64>, %o: tensor<64x128xf32>) {
  // expected-error @+1 {{expected value to have f16, bf16 or f32 elements, got 'tensor<32x128xf64>'}}
  %r = fat.pv %p, %v, %o : tensor<64x32xf32>, tensor<32x128xf64>, tensor<64x128xf32>
  return
}

// -----

func.func @finalize_output_i8(%o: tensor<64x128xf32>, %l: tensor<64xf32>, %m: tensor<64xf32>) {
  // expected-error @+1 {{expected output to have f16, bf16 or f32 elements, got 'tensor<64x128xi8>'}}
  %r:2 = fat.finalize %o, %l, %m scale 1.0 : tensor<64x128xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<64x128xi8>, tensor<64xf32>
  return
}

// -----

func.func @mask_window(%s: tensor<64x32xf32>, %i: index) {
  // expected-error @+1 {{expected window to be [left, right] with each >= -1}}
  %m = fat.mask %s at(%i, %i) kv_len(%i) diagonal(%i) window [-3, 0] : tensor<64x32xf32>
  return
}

// -----

func.func @row_max_rows(%s: tensor<64x32xf32>, %m: tensor<32xf32>) {
  // expected-error @+1 {{expected dim 0 of init (32) to match dim 0 of scores (64)}}
  %r = fat.row_max %s, %m : tensor<64x32xf32>, tensor<32xf32>
  return
}

// -----

func.func @exp2_rank(%s: tensor<2x64x32xf32>, %m: tensor<2xf32>) {
  // expected-error @+1 {{expected input to be an f32 tile or row vector}}
  %r = fat.exp2 %s, %m scale 1.0 : tensor<2x64x32xf32>, tensor<2xf32>
  return
}

// -----

func.func @rescale_factor(%o: tensor<64x128xf32>, %a: tensor<64x1xf32>) {
  // expected-error @+1 {{expected factor to be a rank-1 tensor, got 'tensor<64x1xf32>'}}
  %r = fat.rescale %o, %a : tensor<64x128xf32>, tensor<64x1xf32>
  return
}

// -----

func.func @pv_shapes(%p: tensor<64x32xf32>, %v: tensor<16x128xbf16>, %o: tensor<64x128xf32>) {
  // expected-error @+1 {{expected dim 0 of value (16) to match dim 1 of probs (32)}}
  %r = fat.pv %p, %v, %o : tensor<64x32xf32>, tensor<16x128xbf16>, tensor<64x128xf32>
  return
}

// -----

func.func @row_sum_f32(%p: tensor<64x32xbf16>, %l: tensor<64xf32>) {
  // expected-error @+1 {{expected input to have f32 elements, got 'tensor<64x32xbf16>'}}
  %r = fat.row_sum %p, %l : tensor<64x32xbf16>, tensor<64xf32>
  return
}

// -----

func.func @finalize_shape(%o: tensor<64x128xf32>, %l: tensor<64xf32>, %m: tensor<64xf32>) {
  // expected-error @+1 {{expected output shape to match acc, got 'tensor<64x64xbf16>' and 'tensor<64x128xf32>'}}
  %r:2 = fat.finalize %o, %l, %m scale 1.0 : tensor<64x128xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<64x64xbf16>, tensor<64xf32>
  return
}

// -----

// The tensorized level: one case per verifier rule (FatTensorOps.cpp).

func.func @wgmma_rows(%a: tensor<32x64xbf16>, %b: tensor<64x64xbf16>) {
  // expected-error @+1 {{expected A's rows (32) to be a positive multiple of 64, one warpgroup each}}
  %r = fat.wgmma %a, %b transpose_b a_from smem shape [64, 64, 16] : tensor<32x64xbf16>, tensor<64x64xbf16> -> tensor<32x64xf32>
  return
}

// -----

func.func @wgmma_k(%a: tensor<64x40xbf16>, %b: tensor<64x40xbf16>) {
  // expected-error @+1 {{expected the contraction size (40) to be a positive multiple of 16}}
  %r = fat.wgmma %a, %b transpose_b a_from smem shape [64, 64, 16] : tensor<64x40xbf16>, tensor<64x40xbf16> -> tensor<64x64xf32>
  return
}

// -----

func.func @wgmma_types(%a: tensor<64x64xf16>, %b: tensor<64x64xbf16>) {
  // expected-error @+1 {{expected A and B to share an f16 or bf16 element type}}
  %r = fat.wgmma %a, %b a_from smem shape [64, 64, 16] : tensor<64x64xf16>, tensor<64x64xbf16> -> tensor<64x64xf32>
  return
}

// -----

func.func @wgmma_b_k(%a: tensor<64x64xbf16>, %b: tensor<32x64xbf16>) {
  // expected-error @+1 {{expected B's contraction size (32) to equal A's (64)}}
  %r = fat.wgmma %a, %b a_from registers shape [64, 64, 16] : tensor<64x64xbf16>, tensor<32x64xbf16> -> tensor<64x64xf32>
  return
}

// -----

func.func @wgmma_n(%a: tensor<64x64xbf16>, %b: tensor<64x264xbf16>) {
  // expected-error @+1 {{expected the instruction N (264) to equal the result's columns (264) and be a multiple of 8 in [8, 256]}}
  %r = fat.wgmma %a, %b a_from registers shape [64, 264, 16] : tensor<64x64xbf16>, tensor<64x264xbf16> -> tensor<64x264xf32>
  return
}

// -----

func.func @wgmma_shape(%a: tensor<64x64xbf16>, %b: tensor<64x64xbf16>) {
  // expected-error @+1 {{expected shape [64, N, 16] (m64nNk16), got [64, 64, 8]}}
  %r = fat.wgmma %a, %b a_from registers shape [64, 64, 8] : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xf32>
  return
}

// -----

func.func @wgmma_acc(%a: tensor<64x64xbf16>, %b: tensor<64x64xbf16>, %c: tensor<64x32xf32>) {
  // expected-error @+1 {{expected the accumulator type 'tensor<64x32xf32>' to equal the result type 'tensor<64x64xf32>'}}
  %r = fat.wgmma %a, %b, %c a_from registers shape [64, 64, 16] : tensor<64x64xbf16>, tensor<64x64xbf16>, tensor<64x32xf32> -> tensor<64x64xf32>
  return
}

// -----

func.func @softmax_max_threshold(%s: tensor<64x64xf32>, %m: tensor<64xf32>) {
  %c = arith.constant 0.125 : f32
  // expected-error @+1 {{expected the lazy threshold in [0, 16] (log2 units; P stays below 2^threshold), got 2.000000e+01}}
  %r:2 = fat.softmax_max %s, %m scale %c lazy threshold 20.0 : tensor<64x64xf32>, tensor<64xf32>
  return
}

// -----

func.func @softmax_max_scale(%s: tensor<64x64xf32>, %m: tensor<64xf32>) {
  %c = arith.constant -1.0 : f32
  // expected-error @+1 {{expected a finite positive scale, got -1.000000e+00}}
  %r:2 = fat.softmax_max %s, %m scale %c : tensor<64x64xf32>, tensor<64xf32>
  return
}

// -----

func.func @softmax_max_rows(%s: tensor<64x64xf32>, %m: tensor<32xf32>) {
  %c = arith.constant 0.125 : f32
  // expected-error @+1 {{expected dim 0 of max (32) to match dim 0 of scores (64)}}
  %r:2 = fat.softmax_max %s, %m scale %c : tensor<64x64xf32>, tensor<32xf32>
  return
}

// -----

func.func @softmax_exp_poly(%s: tensor<64x64xf32>, %m: tensor<64xf32>) {
  %c = arith.constant 0.125 : f32
  // expected-error @+1 {{expected exp2_poly to be a fraction in [0, 1], got 1.500000e+00}}
  %p = fat.softmax_exp %s, %m scale %c exp2_poly 1.5 : (tensor<64x64xf32>, tensor<64xf32>, f32) -> tensor<64x64xf32>
  return
}

// -----

func.func @softmax_exp_rowsum(%s: tensor<64x64xf32>, %m: tensor<64xf32>, %l: tensor<64xf32>) {
  %c = arith.constant 0.125 : f32
  // expected-error @+1 {{expected rowsum(sum[, alpha]) and the new_sum result together, or none of them}}
  %p = fat.softmax_exp %s, %m scale %c rowsum(%l, %l) : (tensor<64x64xf32>, tensor<64xf32>, f32, tensor<64xf32>, tensor<64xf32>) -> tensor<64x64xf32>
  return
}

// -----

func.func @softmax_exp_probs(%s: tensor<64x64xf32>, %m: tensor<64xf32>) {
  %c = arith.constant 0.125 : f32
  // expected-error @+1 {{expected probs to have the type of scores, 'tensor<64x64xf32>'}}
  %p = fat.softmax_exp %s, %m scale %c : (tensor<64x64xf32>, tensor<64xf32>, f32) -> tensor<64x32xf32>
  return
}

// -----

// Score and mask regions (FatOps.cpp, verifyModRegion).

func.func @score_region_args(%q: tensor<1x1x64x64xf16>, %o: tensor<1x1x64x64xf16>) {
  // expected-error @+1 {{expected the score region's arguments to be ('f32', 'index', 'index', 'index', 'index') — the scaled score, b, h, i, j, then the captures — got ('f32', 'index')}}
  %r = fat.attention ins(%q, %q, %q : tensor<1x1x64x64xf16>, tensor<1x1x64x64xf16>, tensor<1x1x64x64xf16>)
                     outs(%o : tensor<1x1x64x64xf16>) score {
                     ^bb0(%s: f32, %b: index):
                       fat.yield %s : f32
                     } -> tensor<1x1x64x64xf16>
  return
}

// -----

func.func @mask_yields_f32(%q: tensor<1x1x64x64xf16>, %o: tensor<1x1x64x64xf16>) {
  // expected-error @+1 {{expected the mask region to end in fat.yield of 'i1'}}
  %r = fat.attention ins(%q, %q, %q : tensor<1x1x64x64xf16>, tensor<1x1x64x64xf16>, tensor<1x1x64x64xf16>)
                     outs(%o : tensor<1x1x64x64xf16>) mask {
                     ^bb0(%b: index, %h: index, %i: index, %j: index):
                       %c = arith.constant 1.0 : f32
                       fat.yield %c : f32
                     } -> tensor<1x1x64x64xf16>
  return
}

// -----

func.func @capture_kind(%q: tensor<1x1x64x64xf16>, %o: tensor<1x1x64x64xf16>, %m: memref<4xf32>) {
  // expected-error @+1 {{expected capture #0 to be a scalar or a ranked tensor (the op's form), got 'memref<4xf32>'}}
  %r = fat.attention ins(%q, %q, %q : tensor<1x1x64x64xf16>, tensor<1x1x64x64xf16>, tensor<1x1x64x64xf16>)
                     outs(%o : tensor<1x1x64x64xf16>) captures(%m : memref<4xf32>) score {
                     ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %t: memref<4xf32>):
                       fat.yield %s : f32
                     } -> tensor<1x1x64x64xf16>
  return
}

// -----

func.func @captures_unread(%q: tensor<1x1x64x64xf16>, %o: tensor<1x1x64x64xf16>, %x: f32) {
  // expected-error @+1 {{expected a score or mask region to read the captures}}
  %r = fat.attention ins(%q, %q, %q : tensor<1x1x64x64xf16>, tensor<1x1x64x64xf16>, tensor<1x1x64x64xf16>)
                     outs(%o : tensor<1x1x64x64xf16>) captures(%x : f32) -> tensor<1x1x64x64xf16>
  return
}

// -----

func.func @offsets_count(%q: tensor<1x1x64x64xf16>, %o: tensor<1x1x64x64xf16>, %i: index) {
  // expected-error @+1 {{expected offsets (b0, h0, i0), got 2 values}}
  %r = fat.attention ins(%q, %q, %q : tensor<1x1x64x64xf16>, tensor<1x1x64x64xf16>, tensor<1x1x64x64xf16>)
                     outs(%o : tensor<1x1x64x64xf16>) offsets(%i, %i) -> tensor<1x1x64x64xf16>
  return
}

// -----

func.func @score_mod_without_region(%s: tensor<64x32xf32>, %c: index) {
  // expected-error @+1 {{expected the score region's arguments to be ('f32', 'index', 'index', 'index', 'index')}}
  %r = fat.score_mod %s at(%c, %c, %c, %c) len(%c, %c) scale 1.0 {
  ^bb0(%x: f32):
    fat.yield %x : f32
  } : tensor<64x32xf32>
  return
}

// -----

func.func @tanh_poly_of_a_position(%s: tensor<64x32xf32>, %c: index) {
  // expected-error @+1 {{tanh_poly expects every f32 tanh of the body to take a constant multiple of the score, k·s (multiplies and divides by constants, negations)}}
  %r = fat.score_mod %s at(%c, %c, %c, %c) len(%c, %c) scale 1.0 tanh_poly {
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %d = arith.index_cast %j : index to i64
    %f = arith.sitofp %d : i64 to f32
    %t = math.tanh %f : f32
    %y = arith.addf %x, %t : f32
    fat.yield %y : f32
  } : tensor<64x32xf32>
  return
}

// -----

func.func @tanh_poly_without_tanh(%s: tensor<64x32xf32>, %c: index) {
  // expected-error @+1 {{tanh_poly expects every f32 tanh}}
  %r = fat.score_mod %s at(%c, %c, %c, %c) len(%c, %c) scale 1.0 tanh_poly {
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    fat.yield %x : f32
  } : tensor<64x32xf32>
  return
}

// -----

func.func @warp_specialize_one_count(%wg: i32) {
  // expected-error @+1 {{needs both register counts (producer, consumer) or neither}}
  "fat.warp_specialize"(%wg) ({}, {}) {producer_registers = 24 : i32} : (i32) -> ()
  return
}

// -----

func.func @warp_specialize_bad_count(%wg: i32) {
  // expected-error @+1 {{register counts must be 24 to 256 in steps of 8 (setmaxnreg), got (24, 244)}}
  fat.warp_specialize %wg registers(24, 244) producer {
  } consumer {
  }
  return
}

// -----

func.func @warp_specialize_producer_richer(%wg: i32) {
  // expected-error @+1 {{the producer gives registers to the consumers: its count must not exceed theirs, got (240, 24)}}
  fat.warp_specialize %wg registers(240, 24) producer {
  } consumer {
  }
  return
}

// -----

func.func @operand_fence_f16(%x: f16) {
  // expected-error @+1 {{operand #0 must be variadic of 32-bit float or 32-bit signless integer or a #fat.wgmma_fragment tile or row vector, but got 'f16'}}
  %y = fat.operand_fence %x : f16
  return
}

// -----

func.func @wgmma_wait_negative(%x: f32) {
  // expected-error @+1 {{attribute 'pending' failed to satisfy constraint: 32-bit signless integer attribute whose value is non-negative}}
  %y = fat.wgmma_wait pending(-1) (%x) : f32
  return
}

// -----

func.func @wgmma_wait_plain_tensor(%x: tensor<64x8xf32>) {
  // expected-error @+1 {{operand #0 must be variadic of 32-bit float or 32-bit signless integer or a #fat.wgmma_fragment tile or row vector, but got 'tensor<64x8xf32>'}}
  %y = fat.wgmma_wait pending(0) (%x) : tensor<64x8xf32>
  return
}

// -----

func.func @operand_fence_empty() {
  // expected-error @+1 {{needs at least one value to fence}}
  "fat.operand_fence"() : () -> ()
  return
}

// -----

func.func @wgmma_async_shape(%d: i64) {
  // expected-error @+1 {{shape must be [64, N, 16] with N a multiple of 8 up to 256 (m64nNk16), got [64, 12, 16]}}
  %s = fat.wgmma_async a_smem(%d box_stride 1024) b(%d box_stride 1024) transpose_b k 16 shape [64, 12, 16] bf16 -> tensor<64x16xf32, #fat.wgmma_fragment>
  return
}

// -----

func.func @wgmma_async_k(%d: i64) {
  // expected-error @+1 {{k must be a multiple of 16 (one k16 step each), got 24}}
  %s = fat.wgmma_async a_smem(%d box_stride 1024) b(%d box_stride 1024) transpose_b k 24 shape [64, 8, 16] bf16 -> tensor<64x8xf32, #fat.wgmma_fragment>
  return
}

// -----

func.func @wgmma_async_f32(%d: i64) {
  // expected-error @+1 {{operands must be bf16 or f16, got 'f32'}}
  %s = fat.wgmma_async a_smem(%d box_stride 1024) b(%d box_stride 1024) transpose_b k 16 shape [64, 8, 16] f32 -> tensor<64x8xf32, #fat.wgmma_fragment>
  return
}

// -----

func.func @wgmma_async_result(%d: i64) {
  // expected-error @+1 {{result must be the f32 tile of the accumulator, 64 x N = 64 x 16, got 'tensor<64x8xf32, #fat.wgmma_fragment>'}}
  %s = fat.wgmma_async a_smem(%d box_stride 1024) b(%d box_stride 1024) transpose_b k 16 shape [64, 16, 16] bf16 -> tensor<64x8xf32, #fat.wgmma_fragment>
  return
}

// -----

func.func @wgmma_async_not_fragment(%d: i64) {
  // expected-error @+1 {{result #0 must be a #fat.wgmma_fragment tile or row vector, but got 'tensor<64x8xf32>'}}
  %s = fat.wgmma_async a_smem(%d box_stride 1024) b(%d box_stride 1024) transpose_b k 16 shape [64, 8, 16] bf16 -> tensor<64x8xf32>
  return
}

// -----

func.func @wgmma_async_no_a(%d: i64) {
  // expected-error @+1 {{needs A from exactly one place: a_smem (a shared-memory address) or a_regs (a 16-bit tile in registers)}}
  %s = fat.wgmma_async b(%d box_stride 1024) transpose_b k 16 shape [64, 8, 16] bf16 -> tensor<64x8xf32, #fat.wgmma_fragment>
  return
}

// -----

func.func @wgmma_async_box_without_smem(%d: i64, %a: tensor<64x16xbf16, #fat.wgmma_fragment>) {
  // expected-error @+1 {{a_box_stride gives the layout of A in shared memory: it goes with a_smem, and only with it}}
  %s = "fat.wgmma_async"(%a, %d) <{a_box_stride = 1024 : i64, b_box_stride = 1024 : i64, k = 16 : i64, elt = bf16, shape = array<i64: 64, 8, 16>, operandSegmentSizes = array<i32: 0, 1, 1, 0, 0, 0, 0>}> : (tensor<64x16xbf16, #fat.wgmma_fragment>, i64) -> tensor<64x8xf32, #fat.wgmma_fragment>
  return
}

// -----

func.func @wgmma_async_smem_without_box(%d: i64) {
  // expected-error @+1 {{a_box_stride gives the layout of A in shared memory: it goes with a_smem, and only with it}}
  %s = "fat.wgmma_async"(%d, %d) <{b_box_stride = 1024 : i64, k = 16 : i64, elt = bf16, shape = array<i64: 64, 8, 16>, operandSegmentSizes = array<i32: 1, 0, 1, 0, 0, 0, 0>}> : (i64, i64) -> tensor<64x8xf32, #fat.wgmma_fragment>
  return
}

// -----

func.func @wgmma_async_box_stride(%d: i64) {
  // expected-error @+1 {{box strides must be multiples of 1024 bytes (the 128-byte swizzle's atom), got 1536}}
  %s = fat.wgmma_async a_smem(%d box_stride 1024) b(%d box_stride 1536) transpose_b k 16 shape [64, 8, 16] bf16 -> tensor<64x8xf32, #fat.wgmma_fragment>
  return
}

// -----

func.func @wgmma_async_box_stride_zero(%d: i64) {
  // expected-error @+1 {{attribute 'b_box_stride' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %s = fat.wgmma_async a_smem(%d box_stride 1024) b(%d box_stride 0) transpose_b k 16 shape [64, 8, 16] bf16 -> tensor<64x8xf32, #fat.wgmma_fragment>
  return
}

// -----

func.func @wgmma_async_a_type(%d: i64, %a: tensor<64x32xf16, #fat.wgmma_fragment>) {
  // expected-error @+1 {{a_regs must be the 2-D tile of 'bf16' (the instruction's A type) with k = 32 columns, got 'tensor<64x32xf16, #fat.wgmma_fragment>'}}
  %s = fat.wgmma_async a_regs(%a : tensor<64x32xf16, #fat.wgmma_fragment>) b(%d box_stride 1024) k 32 shape [64, 8, 16] bf16 -> tensor<64x8xf32, #fat.wgmma_fragment>
  return
}

// -----

func.func @wgmma_async_a_columns(%d: i64, %a: tensor<64x32xbf16, #fat.wgmma_fragment>) {
  // expected-error @+1 {{a_regs must be the 2-D tile of 'bf16' (the instruction's A type) with k = 16 columns, got 'tensor<64x32xbf16, #fat.wgmma_fragment>'}}
  %s = fat.wgmma_async a_regs(%a : tensor<64x32xbf16, #fat.wgmma_fragment>) b(%d box_stride 1024) k 16 shape [64, 8, 16] bf16 -> tensor<64x8xf32, #fat.wgmma_fragment>
  return
}

// -----

func.func @wgmma_async_transpose(%d: i64) {
  // expected-error @+1 {{transpose_b (B stored N x K: K-major) goes with a_smem, B stored K x N (MN-major) with a_regs}}
  %s = fat.wgmma_async a_smem(%d box_stride 1024) b(%d box_stride 1024) k 16 shape [64, 8, 16] bf16 -> tensor<64x8xf32, #fat.wgmma_fragment>
  return
}

// -----

func.func @wgmma_async_acc(%d: i64, %x: tensor<64x16xf32, #fat.wgmma_fragment>) {
  // expected-error @+1 {{acc must have the result's type 'tensor<64x8xf32, #fat.wgmma_fragment>', got 'tensor<64x16xf32, #fat.wgmma_fragment>'}}
  %s = fat.wgmma_async a_smem(%d box_stride 1024) b(%d box_stride 1024) acc(%x : tensor<64x16xf32, #fat.wgmma_fragment>) transpose_b k 16 shape [64, 8, 16] bf16 -> tensor<64x8xf32, #fat.wgmma_fragment>
  return
}

// -----

func.func @wgmma_async_scale_d(%d: i64, %r: i32, %a: tensor<64x32xbf16, #fat.wgmma_fragment>) {
  // expected-error @+1 {{scale_d chooses between acc and 0: it needs acc}}
  %s = fat.wgmma_async a_regs(%a : tensor<64x32xbf16, #fat.wgmma_fragment>) b(%d box_stride 1024) scale_d(%r) k 32 shape [64, 8, 16] bf16 -> tensor<64x8xf32, #fat.wgmma_fragment>
  return
}

// -----

func.func @launch_no_kernel(%q: tensor<1x1x64x64xbf16>, %o: tensor<1x1x64x64xbf16>) -> tensor<1x1x64x64xbf16> {
  // expected-error @+1 {{kernel '@nowhere::@k' must name a gpu.module (or the gpu.binary it is serialized to) of the enclosing module}}
  %r = fat.launch @nowhere::@k ins(%q, %q, %q : tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>)
         outs(%o : tensor<1x1x64x64xbf16>) scale 0.125 -> tensor<1x1x64x64xbf16>
  return %r : tensor<1x1x64x64xbf16>
}

// -----

gpu.module @k {
}
func.func @launch_result_types(%q: tensor<1x1x64x64xbf16>, %o: tensor<1x1x64x64xbf16>) -> tensor<1x1x64x64xf32> {
  // expected-error @+1 {{results must be the types of outs (and lse): 1 result(s) expected}}
  %r = fat.launch @k::@k ins(%q, %q, %q : tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>)
         outs(%o : tensor<1x1x64x64xbf16>) scale 0.125 -> tensor<1x1x64x64xf32>
  return %r : tensor<1x1x64x64xf32>
}

// -----

gpu.module @k {
}
func.func @launch_rank(%q: tensor<64x64xbf16>, %o: tensor<1x1x64x64xbf16>) -> tensor<1x1x64x64xbf16> {
  // expected-error @+1 {{query must be a 4-D tensor, got 'tensor<64x64xbf16>'}}
  %r = fat.launch @k::@k ins(%q, %q, %q : tensor<64x64xbf16>, tensor<64x64xbf16>, tensor<64x64xbf16>)
         outs(%o : tensor<1x1x64x64xbf16>) scale 0.125 -> tensor<1x1x64x64xbf16>
  return %r : tensor<1x1x64x64xbf16>
}

// -----

// expected-error @+1 {{#fat.wgmma_fragment expects a 64-row tile or row vector (one warpgroup), got shape [32, 128]}}
func.func @fragment_rows(%s: tensor<32x128xf32, #fat.wgmma_fragment>) {
  return
}

// -----

// expected-error @+1 {{#fat.wgmma_fragment expects f32 row vectors, got 'bf16'}}
func.func @fragment_row_type(%s: tensor<64xbf16, #fat.wgmma_fragment>) {
  return
}

// -----

// expected-error @+1 {{#fat.wgmma_fragment expects the columns to be a positive multiple of 16, got 24}}
func.func @fragment_pairs(%s: tensor<64x24xbf16, #fat.wgmma_fragment>) {
  return
}

// -----

func.func @fragment_rows_plain(%s: tensor<64x8xf32, #fat.wgmma_fragment>, %m: tensor<64xf32>, %c: f32) {
  // expected-error @+1 {{expected scores and max to share their layout encoding, got 'tensor<64x8xf32, #fat.wgmma_fragment>' and 'tensor<64xf32>'}}
  %r:2 = fat.softmax_max %s, %m scale %c : tensor<64x8xf32, #fat.wgmma_fragment>, tensor<64xf32>
  return
}

// -----

func.func @fragment_rescale_plain(%o: tensor<64x8xf32, #fat.wgmma_fragment>, %a: tensor<64xf32>) {
  // expected-error @+1 {{expected input and factor to share their layout encoding}}
  %r = fat.rescale %o, %a warp_vote : tensor<64x8xf32, #fat.wgmma_fragment>, tensor<64xf32>
  return
}

// -----

// kv_ranges names a capture of key ranges per 64 query rows.
func.func @kv_ranges_index(%q: tensor<1x1x64x64xf16>, %o: tensor<1x1x64x64xf16>,
                           %r: tensor<1x1x2xi32>) -> tensor<1x1x64x64xf16> {
  // expected-error @+1 {{expected kv_ranges (1) to name one of the 1 captures}}
  %0 = fat.attention ins(%q, %q, %q : tensor<1x1x64x64xf16>, tensor<1x1x64x64xf16>, tensor<1x1x64x64xf16>)
                     outs(%o : tensor<1x1x64x64xf16>) captures(%r : tensor<1x1x2xi32>) mask {
                     ^bb0(%b: index, %h: index, %i: index, %j: index, %t: tensor<1x1x2xi32>):
                       %true = arith.constant true
                       fat.yield %true : i1
                     } {kv_ranges = 1 : i64} -> tensor<1x1x64x64xf16>
  return %0 : tensor<1x1x64x64xf16>
}

// -----

func.func @kv_ranges_type(%q: tensor<1x1x64x64xf16>, %o: tensor<1x1x64x64xf16>,
                          %r: tensor<1x1x3xi32>) -> tensor<1x1x64x64xf16> {
  // expected-error @+1 {{expected the kv_ranges capture to be a tensor<B x G x C x i32> with C = 2, 4 or 6 (per batch and 64 query rows: [first key, end key), then [first, end) of keys the mask is promised to keep, then [first, end) of keys promised hidden from every row), got 'tensor<1x1x3xi32>'}}
  %0 = fat.attention ins(%q, %q, %q : tensor<1x1x64x64xf16>, tensor<1x1x64x64xf16>, tensor<1x1x64x64xf16>)
                     outs(%o : tensor<1x1x64x64xf16>) captures(%r : tensor<1x1x3xi32>) mask {
                     ^bb0(%b: index, %h: index, %i: index, %j: index, %t: tensor<1x1x3xi32>):
                       %true = arith.constant true
                       fat.yield %true : i1
                     } {kv_ranges = 0 : i64} -> tensor<1x1x64x64xf16>
  return %0 : tensor<1x1x64x64xf16>
}

// -----

// Each 64-row group of each batch entry reads its own row of the table.
func.func @kv_ranges_groups(%q: tensor<2x1x130x64xf16>, %o: tensor<2x1x130x64xf16>,
                            %r: tensor<2x2x4xi32>) -> tensor<2x1x130x64xf16> {
  // expected-error @+1 {{expected the kv_ranges capture's dimension 1 to be the 3 groups of 64 query rows, got 'tensor<2x2x4xi32>'}}
  %0 = fat.attention ins(%q, %q, %q : tensor<2x1x130x64xf16>, tensor<2x1x130x64xf16>, tensor<2x1x130x64xf16>)
                     outs(%o : tensor<2x1x130x64xf16>) captures(%r : tensor<2x2x4xi32>) mask {
                     ^bb0(%b: index, %h: index, %i: index, %j: index, %t: tensor<2x2x4xi32>):
                       %true = arith.constant true
                       fat.yield %true : i1
                     } {kv_ranges = 0 : i64} -> tensor<2x1x130x64xf16>
  return %0 : tensor<2x1x130x64xf16>
}

// -----

func.func @kv_ranges_batch(%q: tensor<2x1x64x64xf16>, %o: tensor<2x1x64x64xf16>,
                           %r: tensor<1x1x2xi32>) -> tensor<2x1x64x64xf16> {
  // expected-error @+1 {{expected the kv_ranges capture's dimension 0 to be the 2 batch entries, got 'tensor<1x1x2xi32>'}}
  %0 = fat.attention ins(%q, %q, %q : tensor<2x1x64x64xf16>, tensor<2x1x64x64xf16>, tensor<2x1x64x64xf16>)
                     outs(%o : tensor<2x1x64x64xf16>) captures(%r : tensor<1x1x2xi32>) mask {
                     ^bb0(%b: index, %h: index, %i: index, %j: index, %t: tensor<1x1x2xi32>):
                       %true = arith.constant true
                       fat.yield %true : i1
                     } {kv_ranges = 0 : i64} -> tensor<2x1x64x64xf16>
  return %0 : tensor<2x1x64x64xf16>
}

// -----

func.func @kv_ranges_no_mask(%q: tensor<1x1x64x64xf16>, %o: tensor<1x1x64x64xf16>,
                             %r: tensor<1x1x2xi32>) -> tensor<1x1x64x64xf16> {
  // expected-error @+1 {{expected a mask region with kv_ranges (the key ranges are conjoined with it)}}
  %0 = fat.attention ins(%q, %q, %q : tensor<1x1x64x64xf16>, tensor<1x1x64x64xf16>, tensor<1x1x64x64xf16>)
                     outs(%o : tensor<1x1x64x64xf16>) captures(%r : tensor<1x1x2xi32>) score {
                     ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %t: tensor<1x1x2xi32>):
                       fat.yield %s : f32
                     } {kv_ranges = 0 : i64} -> tensor<1x1x64x64xf16>
  return %0 : tensor<1x1x64x64xf16>
}

// -----

// fat.mask_mod's kv_ranges is checked too (fat-pipeline reads the ranges
// capture it names off the tiled form).
func.func @mask_mod_kv_ranges(%s: tensor<64x64xf32>, %i: index, %r: tensor<1x1x2xi32>)
    -> tensor<64x64xf32> {
  // expected-error @+1 {{expected kv_ranges (3) to name one of the 1 captures}}
  %m = fat.mask_mod %s at(%i, %i, %i, %i) len(%i, %i) captures(%r : tensor<1x1x2xi32>) {
  ^bb0(%b: index, %h: index, %q: index, %k: index, %t: tensor<1x1x2xi32>):
    %true = arith.constant true
    fat.yield %true : i1
  } {kv_ranges = 3 : i64} : tensor<64x64xf32>
  return %m : tensor<64x64xf32>
}

// -----

func.func @key_block_range_table(%x: i32, %t: !llvm.ptr<1>) {
  // expected-error @+1 {{table must be the kv_ranges shape [B, G, 2, 4 or 6] with B, G >= 1}}
  %l, %h = fat.key_block_range %x, %x rows(%x, %x) batch(%x) ranges(%t : !llvm.ptr<1>) {block_m = 128, block_n = 128, table = array<i64: 2, 3, 3>}
  return
}

// -----

func.func @key_block_range_block_m(%x: i32, %t: !llvm.ptr<1>) {
  // expected-error @+1 {{block_m must be a positive multiple of 64 (the table's group) and block_n positive}}
  %l, %h = fat.key_block_range %x, %x rows(%x, %x) batch(%x) ranges(%t : !llvm.ptr<1>) {block_m = 96, block_n = 128, table = array<i64: 2, 3, 2>}
  return
}

// -----

func.func @key_block_range_address(%x: i32, %t: tensor<2x3x2xi32>) {
  // expected-error @+1 {{ranges must be the table's address (!llvm.ptr), got 'tensor<2x3x2xi32>'}}
  %l, %h = fat.key_block_range %x, %x rows(%x, %x) batch(%x) ranges(%t : tensor<2x3x2xi32>) {block_m = 128, block_n = 128, table = array<i64: 2, 3, 2>}
  return
}

// -----

func.func @full_key_block_columns(%x: i32, %t: !llvm.ptr<1>) {
  // expected-error @+1 {{needs a table of 4 columns (the full range is columns 2 and 3)}}
  %f = fat.full_key_block %x row(%x) batch(%x) ranges(%t : !llvm.ptr<1>) {block_n = 128, table = array<i64: 2, 3, 2>}
  return
}

// -----

func.func @full_key_blocks_columns(%x: i32, %t: !llvm.ptr<1>) {
  // expected-error @+1 {{needs a table of 4 columns (the full range is columns 2 and 3)}}
  %a, %b = fat.full_key_blocks row(%x) batch(%x) ranges(%t : !llvm.ptr<1>) {block_n = 128, table = array<i64: 2, 3, 2>}
  return
}

// -----

func.func @full_key_blocks_edge(%x: i32, %t: !llvm.ptr<1>) {
  // expected-error @+1 {{edge(diag) and right go together (the key edge row + diag + right)}}
  %a, %b = fat.full_key_blocks row(%x) batch(%x) ranges(%t : !llvm.ptr<1>) {block_n = 128, right = 0, table = array<i64: 2, 3, 4>}
  return
}

// -----

func.func @key_block_hole_columns(%x: i32, %t: !llvm.ptr<1>) {
  // expected-error @+1 {{needs a table of 6 columns (the hole is columns 4 and 5)}}
  %a, %b = fat.key_block_hole %x, %x rows(%x, %x) batch(%x) ranges(%t : !llvm.ptr<1>) {block_m = 128, block_n = 128, table = array<i64: 2, 3, 4>}
  return
}

// -----

func.func @key_block_hole_block_m(%x: i32, %t: !llvm.ptr<1>) {
  // expected-error @+1 {{block_m must be a positive multiple of 64 (the table's group) and block_n positive}}
  %a, %b = fat.key_block_hole %x, %x rows(%x, %x) batch(%x) ranges(%t : !llvm.ptr<1>) {block_m = 128, block_n = 0, table = array<i64: 2, 3, 6>}
  return
}

// -----

func.func @full_key_block_edge(%x: i32, %t: !llvm.ptr<1>) {
  // expected-error @+1 {{edge(diag) and right go together (the key edge row + diag + right)}}
  %f = fat.full_key_block %x row(%x) batch(%x) ranges(%t : !llvm.ptr<1>) edge(%x) {block_n = 128, table = array<i64: 2, 3, 4>}
  return
}

// -----

func.func @finalize_two_scales(%o: tensor<64x128xf32>, %l: tensor<64xf32>, %m: tensor<64xf32>, %c: f32) {
  // expected-error @+1 {{expected either a constant scale or a run-time exp2_scale}}
  %r:2 = fat.finalize %o, %l, %m scale 1.0 exp2_scale %c : tensor<64x128xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<64x128xbf16>, tensor<64xf32>
  return
}

// -----

func.func @finalize_ones_columns_shape(%o: tensor<64x128xf32>, %m: tensor<64xf32>) {
  // expected-error @+1 {{expected output shape to match acc but for acc's ones columns, got 'tensor<64x128xbf16>' and 'tensor<64x128xf32>'}}
  %r:2 = fat.finalize %o, ones_columns, %m scale 1.0 : tensor<64x128xf32>, tensor<64xf32> -> tensor<64x128xbf16>, tensor<64xf32>
  return
}

// -----

func.func @convert_layout_plain(%l: tensor<64xf32, #fat.wgmma_fragment>) {
  // expected-error @+1 {{converts a #fat.wgmma_fragment<partial> row vector to the same row vector in #fat.wgmma_fragment}}
  %r = fat.convert_layout %l : tensor<64xf32, #fat.wgmma_fragment> -> tensor<64xf32, #fat.wgmma_fragment>
  return
}

// -----

// expected-error @+1 {{#fat.wgmma_fragment<partial> expects a row vector}}
func.func @partial_tile(%t: tensor<64x16xf32, #fat.wgmma_fragment<partial>>) {
  return
}

// -----

// expected-error @+1 {{#fat.wgmma_fragment expects no parameter or <partial>}}
func.func @fragment_parameter(%t: tensor<64xf32, #fat.wgmma_fragment<whole>>) {
  return
}

// -----

func.func @store_output_nothing(%x: i32) {
  // expected-error @+1 {{stores nothing: it needs an output tile, an LSE or both}}
  fat.store_output rows(%x, %x) batch(%x) head(%x)
  return
}

// -----

func.func @store_output_f32(%o: tensor<64x64xf32, #fat.wgmma_fragment>, %p: !llvm.ptr<1>, %s: i64, %x: i32) {
  // expected-error @+1 {{output must be a 16-bit (bf16 or f16) tile, got 'tensor<64x64xf32, #fat.wgmma_fragment>'}}
  fat.store_output o %o : tensor<64x64xf32, #fat.wgmma_fragment> to %p : !llvm.ptr<1> strides(%s, %s, %s) rows(%x, %x) batch(%x) head(%x)
  return
}

// -----

func.func @store_output_strides(%o: tensor<64x64xbf16, #fat.wgmma_fragment>, %p: !llvm.ptr<1>, %s: i64, %x: i32) {
  // expected-error @+1 {{output needs 3 strides (batch, head, row), got 2}}
  fat.store_output o %o : tensor<64x64xbf16, #fat.wgmma_fragment> to %p : !llvm.ptr<1> strides(%s, %s) rows(%x, %x) batch(%x) head(%x)
  return
}

// -----

func.func @store_output_partial_lse(%l: tensor<64xf32, #fat.wgmma_fragment<partial>>, %p: !llvm.ptr<1>, %s: i64, %x: i32) {
  // expected-error @+1 {{lse must be an f32 row vector in the plain (not partial) layout}}
  fat.store_output lse %l : tensor<64xf32, #fat.wgmma_fragment<partial>> to %p : !llvm.ptr<1> strides(%s, %s) rows(%x, %x) batch(%x) head(%x)
  return
}

// -----

func.func @store_output_address(%o: tensor<64x64xbf16, #fat.wgmma_fragment>, %s: i64, %x: i32) {
  // expected-error @+1 {{output needs its address as an !llvm.ptr}}
  fat.store_output o %o : tensor<64x64xbf16, #fat.wgmma_fragment> to %s : i64 strides(%s, %s, %s) rows(%x, %x) batch(%x) head(%x)
  return
}

// -----

func.func @stage_output_columns(%o: tensor<64x64xbf16, #fat.wgmma_fragment>, %p: !llvm.ptr<1>, %q: !fat.ring<stages = 1, buffer_offset = 0, buffer_bytes = 16384, barrier_offset = 65536, releases = 0>, %s: i64, %x: i32) {
  // expected-error @+1 {{columns must be a power of two in [16, 256] that divides the tile's 64, got 128}}
  fat.stage_output %o : tensor<64x64xbf16, #fat.wgmma_fragment> to %p : !llvm.ptr<1> strides(%s, %s, %s) through %q[%x] : !fat.ring<stages = 1, buffer_offset = 0, buffer_bytes = 16384, barrier_offset = 65536, releases = 0> rows(%x, %x) batch(%x) head(%x) {columns = 128, q_box_stride = 8192}
  return
}

// -----

func.func @stage_output_not_a_ring(%o: tensor<64x64xbf16, #fat.wgmma_fragment>, %p: !llvm.ptr<1>, %m: !llvm.ptr<3>, %s: i64, %x: i32) {
  // expected-error @+1 {{invalid kind of type specified: expected fat.ring, but found '!llvm.ptr<3>'}}
  fat.stage_output %o : tensor<64x64xbf16, #fat.wgmma_fragment> to %p : !llvm.ptr<1> strides(%s, %s, %s) through %m[%x] : !llvm.ptr<3> rows(%x, %x) batch(%x) head(%x) {columns = 64, q_box_stride = 8192}
  return
}

// -----

func.func @stage_output_q_boxes(%o: tensor<64x256xbf16, #fat.wgmma_fragment>, %p: !llvm.ptr<1>, %q: !fat.ring<stages = 1, buffer_offset = 0, buffer_bytes = 16384, barrier_offset = 65536, releases = 0>, %s: i64, %x: i32) {
  // expected-error @+1 {{q_box_stride must be at least 8192 bytes and the 2 boxes of the warps' regions must lie in the Q buffer of 16384 bytes, got q_box_stride = 16384}}
  fat.stage_output %o : tensor<64x256xbf16, #fat.wgmma_fragment> to %p : !llvm.ptr<1> strides(%s, %s, %s) through %q[%x] : !fat.ring<stages = 1, buffer_offset = 0, buffer_bytes = 16384, barrier_offset = 65536, releases = 0> rows(%x, %x) batch(%x) head(%x) {columns = 128, q_box_stride = 16384}
  return
}

// -----

func.func @stage_output_barrier(%o: tensor<64x64xbf16, #fat.wgmma_fragment>, %p: !llvm.ptr<1>, %q: !fat.ring<stages = 1, buffer_offset = 0, buffer_bytes = 16384, barrier_offset = 65536, releases = 0>, %s: i64, %x: i32, %c: i1) {
  // expected-error @+1 {{staging in V (or %v[%j] if (%c)) goes with barrier = [id, threads], and only with it}}
  fat.stage_output %o : tensor<64x64xbf16, #fat.wgmma_fragment> to %p : !llvm.ptr<1> strides(%s, %s, %s) through %q[%x] : !fat.ring<stages = 1, buffer_offset = 0, buffer_bytes = 16384, barrier_offset = 65536, releases = 0> or %q[%x] : !fat.ring<stages = 1, buffer_offset = 0, buffer_bytes = 16384, barrier_offset = 65536, releases = 0> if (%c) rows(%x, %x) batch(%x) head(%x) {columns = 64, q_box_stride = 8192}
  return
}

// -----

func.func @tma_load_columns(%m: !llvm.ptr, %s: !llvm.ptr<3>, %r: i32) {
  // expected-error @+1 {{columns must be a multiple of 64 (whole 128-byte boxes), got 96}}
  fat.tma_load %m[%r] to(%s box_stride 1024) columns 96 barrier(%s) : !llvm.ptr, !llvm.ptr<3>, !llvm.ptr<3>
  return
}

// -----

func.func @tma_load_box_stride(%m: !llvm.ptr, %s: !llvm.ptr<3>, %r: i32) {
  // expected-error @+1 {{box_stride must be a multiple of 1024 bytes (the 128-byte swizzle's atom), got 1000}}
  fat.tma_load %m[%r] to(%s box_stride 1000) columns 64 barrier(%s) : !llvm.ptr, !llvm.ptr<3>, !llvm.ptr<3>
  return
}

// -----

func.func @tma_load_coords(%m: !llvm.ptr, %s: !llvm.ptr<3>, %r: i32) {
  // expected-error @+1 {{needs 1 to 4 coordinates after the column (TMA maps have up to 5 dimensions), got 5}}
  fat.tma_load %m[%r, %r, %r, %r, %r] to(%s box_stride 1024) columns 64 barrier(%s) : !llvm.ptr, !llvm.ptr<3>, !llvm.ptr<3>
  return
}

// -----

func.func @tma_load_global_dst(%m: !llvm.ptr, %g: !llvm.ptr<1>, %s: !llvm.ptr<3>, %r: i32) {
  // expected-error @+1 {{dst must point to shared memory (!llvm.ptr<3>), got '!llvm.ptr<1>'}}
  fat.tma_load %m[%r] to(%g box_stride 1024) columns 64 barrier(%s) : !llvm.ptr, !llvm.ptr<1>, !llvm.ptr<3>
  return
}

// -----

func.func @tma_load_generic_barrier(%m: !llvm.ptr, %s: !llvm.ptr<3>, %r: i32) {
  // expected-error @+1 {{barrier must point to shared memory (!llvm.ptr<3>), got '!llvm.ptr'}}
  fat.tma_load %m[%r] to(%s box_stride 1024) columns 64 barrier(%m) : !llvm.ptr, !llvm.ptr<3>, !llvm.ptr
  return
}

// -----

func.func @tma_load_map_type(%m: i64, %s: !llvm.ptr<3>, %r: i32) {
  // expected-error @+1 {{operand #0 must be an LLVM pointer, but got 'i64'}}
  fat.tma_load %m[%r] to(%s box_stride 1024) columns 64 barrier(%s) : i64, !llvm.ptr<3>, !llvm.ptr<3>
  return
}

// -----

// expected-error @+1 {{a ring needs at least one stage, got 0}}
func.func @ring_stages(%r: !fat.ring<stages = 0, buffer_offset = 0, buffer_bytes = 1024, barrier_offset = 1024, releases = 1>) {
  return
}

// -----

// expected-error @+1 {{ring buffers must start and be sized in whole 1024-byte swizzle atoms, got buffer_offset = 512, buffer_bytes = 1024}}
func.func @ring_buffer_alignment(%r: !fat.ring<stages = 1, buffer_offset = 512, buffer_bytes = 1024, barrier_offset = 4096, releases = 1>) {
  return
}

// -----

// expected-error @+1 {{barrier_offset must be a non-negative multiple of 8 (mbarriers are 8 bytes), got 4100}}
func.func @ring_barrier_alignment(%r: !fat.ring<stages = 1, buffer_offset = 0, buffer_bytes = 1024, barrier_offset = 4100, releases = 1>) {
  return
}

// -----

// expected-error @+1 {{releases must be in [0, 2^20) (0: buffers never given back), got 1048576}}
func.func @ring_releases(%r: !fat.ring<stages = 1, buffer_offset = 0, buffer_bytes = 1024, barrier_offset = 4096, releases = 1048576>) {
  return
}

// -----

// expected-error @+1 {{the ring's barriers [2048, 2080) overlap its buffers [0, 4096)}}
func.func @ring_overlap(%r: !fat.ring<stages = 2, buffer_offset = 0, buffer_bytes = 2048, barrier_offset = 2048, releases = 1>) {
  return
}

// -----

// expected-error @+1 {{the ring must lie within shared memory's 262144 addressable bytes, ends at 262176}}
func.func @ring_window(%r: !fat.ring<stages = 2, buffer_offset = 0, buffer_bytes = 131072, barrier_offset = 262144, releases = 256>) {
  return
}

// -----

func.func @ring_expect_tx(%r: !fat.ring<stages = 2, buffer_offset = 0, buffer_bytes = 1024, barrier_offset = 2048, releases = 1>, %i: i32) {
  // expected-error @+1 {{expect_tx must not exceed the stage's 1024 bytes, got 2048}}
  %b, %f = fat.ring_acquire %r[%i] expect_tx 2048 : !fat.ring<stages = 2, buffer_offset = 0, buffer_bytes = 1024, barrier_offset = 2048, releases = 1>
  return
}

// -----

func.func @ring_release_once(%r: !fat.ring<stages = 1, buffer_offset = 0, buffer_bytes = 1024, barrier_offset = 1024, releases = 0>, %i: i32) {
  // expected-error @+1 {{the ring's buffers are never given back (releases = 0): it has no empty barriers to arrive on}}
  fat.ring_release %r[%i] : !fat.ring<stages = 1, buffer_offset = 0, buffer_bytes = 1024, barrier_offset = 1024, releases = 0>
  return
}

// -----

// expected-note @+1 {{prior use here}}
func.func @ring_global_base(%g: !llvm.ptr<1>) {
  // The base is a shared-memory pointer by the op's form.
  // expected-error @+1 {{use of value '%g' expects different type than prior uses: '!llvm.ptr<3>' vs '!llvm.ptr<1>'}}
  %r = fat.ring %g : !fat.ring<stages = 1, buffer_offset = 0, buffer_bytes = 1024, barrier_offset = 1024, releases = 0>
  return
}

// -----

func.func @ring_wait_half_select(%r: !fat.ring<stages = 1, buffer_offset = 0, buffer_bytes = 1024, barrier_offset = 1024, releases = 1>, %i: i32, %c: i1) {
  // expected-error @+1 {{needs a condition, another ring and its iteration together (if (%c) else %ring[%i])}}
  "fat.ring_wait"(%r, %i, %c) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> : (!fat.ring<stages = 1, buffer_offset = 0, buffer_bytes = 1024, barrier_offset = 1024, releases = 1>, i32, i1) -> ()
  return
}

// -----

func.func @ring_release_other_once(%r: !fat.ring<stages = 1, buffer_offset = 0, buffer_bytes = 1024, barrier_offset = 1024, releases = 1>, %q: !fat.ring<stages = 1, buffer_offset = 2048, buffer_bytes = 1024, barrier_offset = 4096, releases = 0>, %i: i32, %c: i1) {
  // expected-error @+1 {{the ring's buffers are never given back (releases = 0): it has no empty barriers to arrive on}}
  fat.ring_release %r[%i] if(%c) else %q[%i] : !fat.ring<stages = 1, buffer_offset = 0, buffer_bytes = 1024, barrier_offset = 1024, releases = 1>, !fat.ring<stages = 1, buffer_offset = 2048, buffer_bytes = 1024, barrier_offset = 4096, releases = 0>
  return
}

// -----

func.func @turns_four(%c: i32) {
  // expected-error @+1 {{takes turns among 2 or 3 consumer warpgroups (named barriers 1 to 3), got 4}}
  fat.turn_begin %c of 4
  return
}

// -----

func.func @turns_alone(%c: i32) {
  // expected-error @+1 {{takes turns among 2 or 3 consumer warpgroups (named barriers 1 to 3), got 1}}
  fat.turns_open %c of 1
  return
}

// -----

func.func @visible_key_blocks_no_edge(%r: i32, %d: i32) {
  // expected-error @+1 {{edge(diag) goes with a left or right edge, and only with one (the keys row + diag − left .. row + diag + right)}}
  %f, %e = fat.visible_key_blocks rows(%r, %r) kv_len(%r) edge(%d) {block_n = 128} : i32
  return
}

// -----

func.func @first_masked_key_block_no_diag(%r: i32) {
  // expected-error @+1 {{edge(diag) goes with a left or right edge, and only with one}}
  %j = fat.first_masked_key_block row(%r) kv_len(%r) {block_n = 128, right = 0} : i32
  return
}

// -----

func.func @key_block_needs_mask_block(%r: i32, %d: i32) {
  // expected-error @+1 {{block_n must be positive}}
  %m = fat.key_block_needs_mask %r rows(%r, %r) kv_len(%r) edge(%d) {block_n = 0, right = 0} : i32
  return
}

// -----

func.func @key_block_needs_mask_left(%r: i32, %d: i32) {
  // expected-error @+1 {{window edges must be non-negative}}
  %m = fat.key_block_needs_mask %r rows(%r, %r) kv_len(%r) edge(%d) {block_n = 64, left = -1} : i32
  return
}

// -----

func.func @ring_fill_outside(%v: !fat.ring<stages = 2, buffer_offset = 0, buffer_bytes = 16384, barrier_offset = 65536, releases = 256>, %t: i32) {
  // expected-error @+1 {{fills whole 16-byte pieces inside a stage buffer of 16384 bytes: offset and bytes must be multiples of 16, bytes positive, offset + bytes <= 16384, got offset = 16384, bytes = 16}}
  fat.ring_fill %v thread(%t) {bytes = 16, offset = 16384, threads = 128, value = 0 : i32} : !fat.ring<stages = 2, buffer_offset = 0, buffer_bytes = 16384, barrier_offset = 65536, releases = 256>
  return
}

// -----

func.func @ring_fill_pieces(%v: !fat.ring<stages = 2, buffer_offset = 0, buffer_bytes = 16384, barrier_offset = 65536, releases = 256>, %t: i32) {
  // expected-error @+1 {{offset and bytes must be multiples of 16}}
  fat.ring_fill %v thread(%t) {bytes = 24, offset = 0, threads = 128, value = 0 : i32} : !fat.ring<stages = 2, buffer_offset = 0, buffer_bytes = 16384, barrier_offset = 65536, releases = 256>
  return
}

// -----

func.func @stage_output_q_box_stride_huge(%o: tensor<64x64xbf16, #fat.wgmma_fragment>, %p: !llvm.ptr<1>, %q: !fat.ring<stages = 1, buffer_offset = 0, buffer_bytes = 16384, barrier_offset = 65536, releases = 0>, %s: i64, %x: i32) {
  // expected-error @+1 {{q_box_stride must be at least 8192 bytes and the 1 boxes of the warps' regions must lie in the Q buffer of 16384 bytes, got q_box_stride = 4611686018427387904}}
  fat.stage_output %o : tensor<64x64xbf16, #fat.wgmma_fragment> to %p : !llvm.ptr<1> strides(%s, %s, %s) through %q[%x] : !fat.ring<stages = 1, buffer_offset = 0, buffer_bytes = 16384, barrier_offset = 65536, releases = 0> rows(%x, %x) batch(%x) head(%x) {columns = 64, q_box_stride = 4611686018427387904}
  return
}

// -----

func.func @visible_key_blocks_types(%r: i32, %n: index) {
  // expected-error @+1 {{failed to verify that all of {row_first, row_last, kv_len, first_block, end_block} have same type}}
  %f:2 = "fat.visible_key_blocks"(%r, %r, %n) <{block_n = 128 : i64}> : (i32, i32, index) -> (i32, i32)
  return
}

// -----

func.func @tile_loop_args(%nm: i32, %b: i32, %x: f32) {
  // expected-error @+1 {{body must take the tile's (m, h, b, ring position, tile index) as i32, then the iter_args' types}}
  %pos, %n, %r = fat.tile_loop query_blocks(%nm) heads 16 batch(%b) ctas 132 iter_args(%x : f32) {
  ^bb0(%m: i32, %h: i32, %bt: i32, %ring: i32, %y: f32):
    fat.tile_yield blocks(%m) %y : f32
  } -> f32
  return
}

// -----

func.func @tile_loop_yield(%nm: i32, %b: i32, %x: f32) {
  %pos, %n, %r = fat.tile_loop query_blocks(%nm) heads 16 batch(%b) ctas 132 iter_args(%x : f32) {
  ^bb0(%m: i32, %h: i32, %bt: i32, %ring: i32, %t: i32, %y: f32):
    // expected-error @+1 {{must yield the iter_args' types}}
    fat.tile_yield blocks(%m)
  } -> f32
  return
}

// -----

func.func @tile_loop_heads(%nm: i32, %b: i32) {
  // expected-error @+1 {{needs 1 <= heads < 2^31 and 1 <= ctas < 2^30, got heads 0, ctas 132}}
  %pos, %n = fat.tile_loop query_blocks(%nm) heads 0 batch(%b) ctas 132 {
  ^bb0(%m: i32, %h: i32, %bt: i32, %ring: i32, %t: i32):
    fat.tile_yield blocks(%m)
  }
  return
}

// -----

func.func @tile_loop_ctas(%nm: i32, %b: i32) {
  // expected-error @+1 {{needs 1 <= heads < 2^31 and 1 <= ctas < 2^30, got heads 16, ctas 1099511627776}}
  %pos, %n = fat.tile_loop query_blocks(%nm) heads 16 batch(%b) ctas 1099511627776 {
  ^bb0(%m: i32, %h: i32, %bt: i32, %ring: i32, %t: i32):
    fat.tile_yield blocks(%m)
  }
  return
}

// -----

func.func @bias_key_columns_rows() -> tensor<512x16xbf16> {
  // expected-error @+1 {{expected a static N x 16 tile of f16 or bf16 with 1 <= N <= 256, got 'tensor<512x16xbf16>'}}
  %r = fat.bias_key_columns : tensor<512x16xbf16>
  return %r : tensor<512x16xbf16>
}

// -----

func.func @bias_query_columns_width(%i: index) -> tensor<128x8xbf16> {
  %c = arith.constant 0.125 : f32
  // expected-error @+1 {{expected a static M x 16 tile of f16 or bf16, got 'tensor<128x8xbf16>'}}
  %x = fat.bias_query_columns at(%i, %i, %i, %i) scale %c {
  ^bb0(%b: index, %h: index):
    %g = arith.constant 0.5 : f32
    fat.yield %g : f32
  } : tensor<128x8xbf16>
  return %x : tensor<128x8xbf16>
}

// -----

func.func @bias_query_columns_args(%i: index) -> tensor<128x16xbf16> {
  %c = arith.constant 0.125 : f32
  // expected-error @+1 {{expected the region's arguments to be ('index', 'index') — b, h, then the captures}}
  %x = fat.bias_query_columns at(%i, %i, %i, %i) scale %c {
  ^bb0(%b: index, %h: index, %q: index):
    %g = arith.constant 0.5 : f32
    fat.yield %g : f32
  } : tensor<128x16xbf16>
  return %x : tensor<128x16xbf16>
}

// -----

func.func @bias_query_columns_scale(%i: index) -> tensor<128x16xbf16> {
  %c = arith.constant 0.0 : f32
  // expected-error @+1 {{expected a finite positive scale, got 0}}
  %x = fat.bias_query_columns at(%i, %i, %i, %i) scale %c {
  ^bb0(%b: index, %h: index):
    %g = arith.constant 0.5 : f32
    fat.yield %g : f32
  } : tensor<128x16xbf16>
  return %x : tensor<128x16xbf16>
}

// -----

func.func @score_band_key_alone(%i: index, %t: tensor<4x255xf32>) -> tensor<128x128xf32> {
  %c = arith.constant 0.125 : f32
  // expected-error @+1 {{expected the region to read the row and key only through arith.subi of one from the other (a term of j − i)}}
  %x = fat.score_band at(%i, %i, %i, %i) len(%i, %i) scale %c captures(%t : tensor<4x255xf32>) {
  ^bb0(%b: index, %h: index, %q: index, %k: index, %tab: tensor<4x255xf32>):
    %e = tensor.extract %tab[%h, %k] : tensor<4x255xf32>
    fat.yield %e : f32
  } : tensor<128x128xf32>
  return %x : tensor<128x128xf32>
}

// -----

func.func @score_band_args(%i: index) -> tensor<128x128xf32> {
  %c = arith.constant 0.125 : f32
  // expected-error @+1 {{expected the region's arguments to be ('index', 'index', 'index', 'index') — b, h, i, j, then the captures}}
  %x = fat.score_band at(%i, %i, %i, %i) len(%i, %i) scale %c {
  ^bb0(%b: index, %h: index):
    %g = arith.constant 0.5 : f32
    fat.yield %g : f32
  } : tensor<128x128xf32>
  return %x : tensor<128x128xf32>
}

// -----

func.func @score_band_type(%i: index) -> tensor<128x128xbf16> {
  %c = arith.constant 0.125 : f32
  // expected-error @+1 {{expected a static 2-D f32 tile, got 'tensor<128x128xbf16>'}}
  %x = fat.score_band at(%i, %i, %i, %i) len(%i, %i) scale %c {
  ^bb0(%b: index, %h: index, %q: index, %k: index):
    %g = arith.constant 0.5 : f32
    fat.yield %g : f32
  } : tensor<128x128xbf16>
  return %x : tensor<128x128xbf16>
}

// -----

func.func @score_band_scale(%i: index) -> tensor<128x128xf32> {
  %c = arith.constant -1.0 : f32
  // expected-error @+1 {{expected a finite positive scale, got -1}}
  %x = fat.score_band at(%i, %i, %i, %i) len(%i, %i) scale %c {
  ^bb0(%b: index, %h: index, %q: index, %k: index):
    %g = arith.constant 0.5 : f32
    fat.yield %g : f32
  } : tensor<128x128xf32>
  return %x : tensor<128x128xf32>
}

// -----

!units = !fat.ring<stages = 2, buffer_offset = 0, buffer_bytes = 1024, barrier_offset = 2048, releases = 256>
func.func @tile_loop_fetch_without_units(%nm: i32, %b: i32, %c: !llvm.ptr<1>) {
  // expected-error @+1 {{fetches units only to publish them: fetch needs a units ring}}
  %pos, %n = fat.tile_loop query_blocks(%nm) heads 16 batch(%b) ctas 132 fetch(%c : !llvm.ptr<1>) {
  ^bb0(%m: i32, %h: i32, %bt: i32, %ring: i32, %t: i32):
    fat.tile_yield blocks(%m)
  }
  return
}

// -----

!units = !fat.ring<stages = 2, buffer_offset = 0, buffer_bytes = 1024, barrier_offset = 2048, releases = 256>
func.func @tile_loop_dynamic_pairs(%nm: i32, %b: i32, %u: !units) {
  // expected-error @+1 {{has no dynamic order of pairs: take longest_first}}
  %pos, %n = fat.tile_loop pairs query_blocks(%nm) heads 16 batch(%b) ctas 132 units(%u : !units) {
  ^bb0(%m: i32, %h: i32, %bt: i32, %ring: i32, %t: i32):
    fat.tile_yield blocks(%m)
  }
  return
}

// -----

func.func @tile_loop_pairs_longest_first(%nm: i32, %b: i32) {
  // expected-error @+1 {{takes pairs or longest_first, not both}}
  %pos, %n = fat.tile_loop pairs longest_first query_blocks(%nm) heads 16 batch(%b) ctas 132 {
  ^bb0(%m: i32, %h: i32, %bt: i32, %ring: i32, %t: i32):
    fat.tile_yield blocks(%m)
  }
  return
}

// -----

!units = !fat.ring<stages = 2, buffer_offset = 0, buffer_bytes = 1024, barrier_offset = 2048, releases = 256>
func.func @tile_loop_counter_space(%nm: i32, %b: i32, %u: !units, %c: !llvm.ptr<3>) {
  // expected-error @+1 {{fetches from a counter in global memory (!llvm.ptr<1>), got '!llvm.ptr<3>'}}
  %pos, %n = fat.tile_loop query_blocks(%nm) heads 16 batch(%b) ctas 132 units(%u : !units) fetch(%c : !llvm.ptr<3>) {
  ^bb0(%m: i32, %h: i32, %bt: i32, %ring: i32, %t: i32):
    fat.tile_yield blocks(%m)
  }
  return
}
