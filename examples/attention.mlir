// A realistic attention: Llama-style GQA (16 query heads sharing 4 KV
// heads), 4096 tokens, head dim 128, bf16, causal, with the LSE output.
//
//   fa-t-opt examples/attention.mlir --fat-tile          # the tiled form
//   fa-t-opt examples/attention.mlir --fat-to-cpu        # LLVM for the host
//
// The memref form with a C interface, so the compiled function can be called
// directly (scripts/run_example.py does so on the CPU).
func.func @attention(%q: memref<2x16x4096x128xbf16>, %k: memref<2x4x4096x128xbf16>,
                     %v: memref<2x4x4096x128xbf16>, %o: memref<2x16x4096x128xbf16>,
                     %lse: memref<2x16x4096xf32>) attributes {llvm.emit_c_interface} {
  fat.attention ins(%q, %k, %v : memref<2x16x4096x128xbf16>, memref<2x4x4096x128xbf16>,
                                 memref<2x4x4096x128xbf16>)
                outs(%o : memref<2x16x4096x128xbf16>) lse(%lse : memref<2x16x4096xf32>)
                causal
  return
}
