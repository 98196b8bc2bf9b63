// RUN: fa-t-opt %s --fat-tile="block-n=80" --fat-tensorize="linear-bias=mma" --fat-pipeline --verify-diagnostics

// linear-bias=mma's key columns (block-n × 32 bytes) follow the V stages:
// D = 256 with 80-key blocks fits without them (230496 bytes) and not with
// them. fat-pipeline says so, naming the sizes, rather than building a
// kernel that cannot launch (linear-bias=auto keeps the vector form here).
func.func @alibi_d256(%q: tensor<1x4x256x256xbf16>, %k: tensor<1x4x256x256xbf16>,
                      %v: tensor<1x4x256x256xbf16>, %o: tensor<1x4x256x256xbf16>)
    -> tensor<1x4x256x256xbf16> {
  // expected-error @+1 {{needs 233040 bytes of shared memory, more than the 232448 a block may use; lower block-n or stages (linear-bias=mma's key columns, block-n × 32 bytes: 2560 bytes here)}}
  %n = fat.attention ins(%q, %k, %v : tensor<1x4x256x256xbf16>, tensor<1x4x256x256xbf16>, tensor<1x4x256x256xbf16>)
      outs(%o : tensor<1x4x256x256xbf16>) causal
      score {
      ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
        %slope = arith.constant 0.25 : f32
        %d = arith.subi %i, %j : index
        %d64 = arith.index_cast %d : index to i64
        %df = arith.sitofp %d64 : i64 to f32
        %bias = arith.mulf %slope, %df : f32
        %y = arith.subf %x, %bias : f32
        fat.yield %y : f32
      } -> tensor<1x4x256x256xbf16>
  return %n : tensor<1x4x256x256xbf16>
}
