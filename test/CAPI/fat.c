/*===- fat.c - the fa-t C API, end to end -----------------------*- C -*-===*/
/* RUN: fat-capi-test | FileCheck %s
 *
 * A C program that uses only the C API (libFatCAPI.so): registers the fat
 * dialect through its handle, parses a fat.attention module, runs fa-t
 * passes through MLIR's pass manager, compiles the module to PTX in memory
 * and reports errors as text. */

#include "fa-t-c/Conversion/FatToPTX.h"
#include "fa-t-c/Dialect/Fat.h"
#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"
#include "mlir-c/RegisterEverything.h"

#include <stdio.h>
#include <string.h>

/* GQA (16 query heads on 4 KV heads), D = 64, bf16, causal, with LSE;
 * dynamic batch and sequence lengths. */
static const char *kAttention =
    "func.func @attention(%q: memref<?x16x?x64xbf16>,\n"
    "    %k: memref<?x4x?x64xbf16>, %v: memref<?x4x?x64xbf16>,\n"
    "    %o: memref<?x16x?x64xbf16>, %l: memref<?x16x?xf32>) {\n"
    "  fat.attention ins(%q, %k, %v : memref<?x16x?x64xbf16>,\n"
    "      memref<?x4x?x64xbf16>, memref<?x4x?x64xbf16>)\n"
    "      outs(%o : memref<?x16x?x64xbf16>) lse(%l : memref<?x16x?xf32>)\n"
    "      causal\n"
    "  return\n"
    "}\n";

/* Head dim 96: the Hopper kernel serves 64, 128 and 256 only. */
static const char *kHeadDim96 =
    "func.func @d96(%q: memref<1x2x64x96xbf16>, %o: memref<1x2x64x96xbf16>) {\n"
    "  fat.attention ins(%q, %q, %q : memref<1x2x64x96xbf16>,\n"
    "      memref<1x2x64x96xbf16>, memref<1x2x64x96xbf16>)\n"
    "      outs(%o : memref<1x2x64x96xbf16>)\n"
    "  return\n"
    "}\n";

static void printString(MlirStringRef text, void *userData) {
  (void)userData;
  fwrite(text.data, 1, text.length, stdout);
}

static void printKernel(MlirStringRef name, MlirStringRef ptx,
                        MlirStringRef manifest, void *userData) {
  (void)userData;
  printf("kernel %.*s\n", (int)name.length, name.data);
  printf("manifest %.*s\n", (int)manifest.length, manifest.data);
  fwrite(ptx.data, 1, ptx.length, stdout);
  printf("\nend of kernel\n");
}

static void printResult(const char *label, MlirLogicalResult result) {
  printf("%s: %s\n", label,
         mlirLogicalResultIsSuccess(result) ? "success" : "failure");
}

static MlirModule parse(MlirContext ctx, const char *text) {
  MlirModule module = mlirModuleCreateParse(ctx, mlirStringRefCreateFromCString(text));
  if (mlirModuleIsNull(module))
    fprintf(stderr, "parse failed\n");
  return module;
}

/* The dialect handle names the dialect and loads it. */
static int testDialectHandle(MlirContext ctx) {
  MlirDialectHandle fat = mlirGetDialectHandle__fat__();
  MlirStringRef ns = mlirDialectHandleGetNamespace(fat);
  printf("dialect %.*s\n", (int)ns.length, ns.data);
  MlirDialect loaded = mlirDialectHandleLoadDialect(fat, ctx);
  return mlirDialectIsNull(loaded);
}
// CHECK-LABEL: dialect fat

/* Parses `text`, runs the textual pass pipeline `pipeline` on it through
 * MLIR's pass manager and prints the result under `label`. */
static int runPipeline(MlirContext ctx, const char *label, const char *text,
                       const char *pipeline) {
  printf("%s\n", label);
  MlirModule module = parse(ctx, text);
  if (mlirModuleIsNull(module))
    return 1;
  MlirPassManager pm = mlirPassManagerCreate(ctx);
  MlirOpPassManager opm = mlirPassManagerGetAsOpPassManager(pm);
  MlirLogicalResult parsed = mlirParsePassPipeline(
      opm, mlirStringRefCreateFromCString(pipeline), printString, NULL);
  int failed = mlirLogicalResultIsFailure(parsed) ||
               mlirLogicalResultIsFailure(mlirPassManagerRunOnOp(
                   pm, mlirModuleGetOperation(module)));
  if (!failed)
    mlirOperationPrint(mlirModuleGetOperation(module), printString, NULL);
  printf("\n");
  mlirPassManagerDestroy(pm);
  mlirModuleDestroy(module);
  return failed;
}

/* fat-tile through MLIR's pass manager, by name: fatRegisterAllPasses made
 * it known. The op becomes the scf.forall grid of the online softmax. */
static int testRegisteredPasses(MlirContext ctx) {
  return runPipeline(ctx, "fat-tile", kAttention,
                     "builtin.module(fat-tile{block-m=64 block-n=64})");
}
// CHECK-LABEL: fat-tile
// CHECK:       func.func @attention
// CHECK:         scf.forall
// CHECK:           fat.qk
// CHECK:           fat.row_max
// CHECK:           fat.pv
// CHECK:           fat.finalize
// CHECK-NOT:   fat.attention

/* The CPU pipeline through the C API: fat-to-cpu tiles, decomposes,
 * bufferizes (with the external models mlirRegisterAllDialects registers)
 * and lowers to the LLVM dialect. */
static int testCPUPipeline(MlirContext ctx) {
  return runPipeline(ctx, "fat-to-cpu", kAttention, "builtin.module(fat-to-cpu)");
}
// CHECK-LABEL: fat-to-cpu
// CHECK:       llvm.func @attention(
// CHECK-NOT:   fat.
// CHECK:       llvm.return

/* The whole fat-to-ptx pipeline in memory: one kernel, its PTX and its
 * manifest; the module it was given still holds the fat.attention. */
static int testCompileToPTX(MlirContext ctx) {
  printf("fat-to-ptx\n");
  MlirModule module = parse(ctx, kAttention);
  if (mlirModuleIsNull(module))
    return 1;
  MlirLogicalResult result = fatCompileModuleToPTX(
      module, mlirStringRefCreateFromCString("sm=sm_90a block-m=128 stages=2"),
      printKernel, printString, NULL);
  printResult("compiled", result);
  mlirOperationPrint(mlirModuleGetOperation(module), printString, NULL);
  printf("\n");
  mlirModuleDestroy(module);
  return mlirLogicalResultIsFailure(result);
}
// CHECK-LABEL: fat-to-ptx
// CHECK:       kernel [[NAME:fat_attention_fwd_bf16_d64_h16_4_bhsd_causal_lse_m128n128s2q2_opt132]]
// CHECK:       manifest {
// CHECK:         "entry": "[[NAME]]"
// CHECK:       .version 8.0
// CHECK:       .target sm_90a
// CHECK:       .entry [[NAME]](
// CHECK-DAG:   cp.async.bulk.tensor.4d
// CHECK-DAG:   wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// CHECK-DAG:   setmaxnreg.inc.sync.aligned.u32
// CHECK:       end of kernel
// CHECK-NEXT:  compiled: success
// CHECK:       fat.attention ins(
// CHECK-NOT:   gpu.binary

/* Errors come back as text with their location, and as a failure. */
static int testErrors(MlirContext ctx) {
  printf("errors\n");
  MlirModule module = parse(ctx, kHeadDim96);
  if (mlirModuleIsNull(module))
    return 1;
  MlirLogicalResult unsupported = fatCompileModuleToPTX(
      module, mlirStringRefCreateFromCString(""), printKernel, printString, NULL);
  printResult("unsupported", unsupported);
  MlirLogicalResult badOption = fatCompileModuleToPTX(
      module, mlirStringRefCreateFromCString("block-q=64"), printKernel, printString, NULL);
  printResult("bad option", badOption);
  mlirModuleDestroy(module);
  return mlirLogicalResultIsSuccess(unsupported) || mlirLogicalResultIsSuccess(badOption);
}
// CHECK-LABEL: errors
// CHECK:       -:2:3: error: 'fat.attention' op head dims D = 96, Dv = 96 are not supported by the Hopper kernel; supported: 64, 128, 256
// CHECK-NOT:   kernel
// CHECK:       unsupported: failure
// CHECK:       error: invalid fat-to-ptx options 'block-q=64': failed to add `fat-to-ptx` with options `block-q=64`
// CHECK:       bad option: failure

int main(void) {
  MlirContext ctx = mlirContextCreate();
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  mlirRegisterAllDialects(registry);
  mlirDialectHandleInsertDialect(mlirGetDialectHandle__fat__(), registry);
  mlirContextAppendDialectRegistry(ctx, registry);
  mlirDialectRegistryDestroy(registry);
  fatRegisterAllPasses();

  int failures = testDialectHandle(ctx) + testRegisteredPasses(ctx) +
                 testCPUPipeline(ctx) + testCompileToPTX(ctx) + testErrors(ctx);
  mlirContextDestroy(ctx);
  printf("%d failures\n", failures);
  return failures != 0;
}
// CHECK: 0 failures
