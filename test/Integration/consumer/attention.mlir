// The input of the consumer programs: GQA (8 query heads on 2 KV heads),
// D = 128, bf16, causal, with dynamic batch and sequence lengths.
func.func @attention(%q: memref<?x8x?x128xbf16>, %k: memref<?x2x?x128xbf16>,
                     %v: memref<?x2x?x128xbf16>, %o: memref<?x8x?x128xbf16>) {
  fat.attention ins(%q, %k, %v : memref<?x8x?x128xbf16>, memref<?x2x?x128xbf16>,
                                 memref<?x2x?x128xbf16>)
                outs(%o : memref<?x8x?x128xbf16>) causal
  return
}
