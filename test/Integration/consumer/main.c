/*===- main.c - a C program built on the installed fa-t C API ------------===*\
|*                                                                          *|
|* Parses a file holding fat.attention ops and compiles it to PTX in memory *|
|* with fatCompileModuleToPTX; prints each kernel's name and PTX:           *|
|*                                                                          *|
|*   fat-consumer-c attention.mlir 'sm=sm_90a block-m=128'                  *|
|*                                                                          *|
\*===----------------------------------------------------------------------===*/

#include "fa-t-c/Conversion/FatToPTX.h"
#include "fa-t-c/Dialect/Fat.h"
#include "mlir-c/IR.h"
#include "mlir-c/RegisterEverything.h"

#include <stdio.h>

static void printText(MlirStringRef text, void *userData) {
  fwrite(text.data, 1, text.length, (FILE *)userData);
}

static void printKernel(MlirStringRef name, MlirStringRef ptx,
                        MlirStringRef manifest, void *userData) {
  (void)manifest;
  (void)userData;
  printf("kernel %.*s\n%.*s\n", (int)name.length, name.data, (int)ptx.length,
         ptx.data);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s <input.mlir> <fat-to-ptx options>\n", argv[0]);
    return 2;
  }
  MlirContext context = mlirContextCreate();
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  mlirRegisterAllDialects(registry);
  mlirDialectHandleInsertDialect(mlirGetDialectHandle__fat__(), registry);
  mlirContextAppendDialectRegistry(context, registry);
  mlirDialectRegistryDestroy(registry);

  int status = 1;
  MlirModule module = mlirModuleCreateParseFromFile(
      context, mlirStringRefCreateFromCString(argv[1]));
  if (!mlirModuleIsNull(module)) {
    MlirLogicalResult result = fatCompileModuleToPTX(
        module, mlirStringRefCreateFromCString(argv[2]), printKernel,
        printText, stderr);
    status = mlirLogicalResultIsSuccess(result) ? 0 : 1;
    mlirModuleDestroy(module);
  }
  mlirContextDestroy(context);
  return status;
}
