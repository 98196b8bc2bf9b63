// RUN: rm -rf %t && mkdir -p %t
// RUN: not fa-t-opt %s --fat-to-ptx="rowsum=mma output-dir=%t" 2>&1 | FileCheck %s
// RUN: fa-t-opt %s --fat-to-ptx="rowsum=mma block-n=128 output-dir=%t" -o /dev/null
// RUN: ls %t | FileCheck %s --check-prefix=BUILT

// D = 128 without a mask: fat-tile's automatic blocks (176 keys, two
// stages) assume the vector row sums the cost model predicts there. A
// rowsum=mma forced later adds a ones chunk to each V stage, which then no
// longer fits; the error says how much the chunks take, and with 128 keys
// the kernel builds.
// CHECK: error: 'fat.attention' op the kernel for D = 128, Dv = 128, block-m = 128, block-n = 176, stages = 2 needs 259152 bytes of shared memory, more than the 232448 a block may use; lower block-n or stages (rowsum=mma adds a chunk of ones, block-n × 128 bytes, to each V stage: 45056 bytes here)
// BUILT: fat_attention_fwd_bf16_d128_h8_8_bhsd_m128n128s2q2_oprt132.ptx
func.func @f(%q: memref<?x8x?x128xbf16>, %o: memref<?x8x?x128xbf16>) {
  fat.attention ins(%q, %q, %q : memref<?x8x?x128xbf16>, memref<?x8x?x128xbf16>, memref<?x8x?x128xbf16>)
      outs(%o : memref<?x8x?x128xbf16>)
  return
}
