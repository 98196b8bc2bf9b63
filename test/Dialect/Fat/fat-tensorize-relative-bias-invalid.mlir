// RUN: fa-t-opt %s --split-input-file --fat-tile="seq-len=2048" --fat-tensorize="linear-bias=vector relative-bias=accumulator" --verify-diagnostics

// relative-bias=accumulator, forced, on regions it cannot take: an error on
// the attention naming the form it needs, never a silent failure (a
// rewrite that changed the IR and then failed once made the pass exit 1
// without a word).

// T − s is not s ± T (the score's sign flips): forced, an error naming the
// form.
func.func @negated_score(%q: tensor<1x4x?x64xbf16>, %k: tensor<1x4x?x64xbf16>,
                         %v: tensor<1x4x?x64xbf16>, %o: tensor<1x4x?x64xbf16>)
    -> tensor<1x4x?x64xbf16> {
  // expected-error @+1 {{relative-bias=accumulator needs the score region to be s ± T with T reading neither the score nor the row and key other than as their difference j − i}}
  %n = fat.attention ins(%q, %k, %v : tensor<1x4x?x64xbf16>, tensor<1x4x?x64xbf16>, tensor<1x4x?x64xbf16>)
      outs(%o : tensor<1x4x?x64xbf16>)
      score {
      ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
        %d = arith.subi %j, %i : index
        %d64 = arith.index_cast %d : index to i64
        %df = arith.sitofp %d64 : i64 to f32
        %y = arith.subf %df, %x : f32
        fat.yield %y : f32
      } -> tensor<1x4x?x64xbf16>
  return %n : tensor<1x4x?x64xbf16>
}

// -----

// A term reading the row other than through j − i (i·j) has no band.
func.func @product(%q: tensor<1x4x?x64xbf16>, %k: tensor<1x4x?x64xbf16>,
                   %v: tensor<1x4x?x64xbf16>, %o: tensor<1x4x?x64xbf16>)
    -> tensor<1x4x?x64xbf16> {
  // expected-error @+1 {{relative-bias=accumulator needs the score region to be s ± T}}
  %n = fat.attention ins(%q, %k, %v : tensor<1x4x?x64xbf16>, tensor<1x4x?x64xbf16>, tensor<1x4x?x64xbf16>)
      outs(%o : tensor<1x4x?x64xbf16>)
      score {
      ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
        %p = arith.muli %i, %j : index
        %p64 = arith.index_cast %p : index to i64
        %pf = arith.sitofp %p64 : i64 to f32
        %y = arith.addf %x, %pf : f32
        fat.yield %y : f32
      } -> tensor<1x4x?x64xbf16>
  return %n : tensor<1x4x?x64xbf16>
}

// -----

// No score region at all.
func.func @plain(%q: tensor<1x4x?x64xbf16>, %k: tensor<1x4x?x64xbf16>,
                 %v: tensor<1x4x?x64xbf16>, %o: tensor<1x4x?x64xbf16>)
    -> tensor<1x4x?x64xbf16> {
  // expected-error @+1 {{relative-bias=accumulator needs a score region s ± T(b, h, j − i); this attention has none}}
  %n = fat.attention ins(%q, %k, %v : tensor<1x4x?x64xbf16>, tensor<1x4x?x64xbf16>, tensor<1x4x?x64xbf16>)
      outs(%o : tensor<1x4x?x64xbf16>) -> tensor<1x4x?x64xbf16>
  return %n : tensor<1x4x?x64xbf16>
}
