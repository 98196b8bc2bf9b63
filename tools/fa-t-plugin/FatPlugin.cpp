//===- FatPlugin.cpp - fa-t as a plugin of stock mlir-opt -----------------===//
//
// One shared library with both plugin entry points, so that an unmodified
// mlir-opt parses the fat dialect and runs the fa-t passes and pipelines:
//
//   mlir-opt --load-dialect-plugin=FatPlugin.so --load-pass-plugin=FatPlugin.so
//            --pass-pipeline='builtin.module(fat-tile{block-m=64})' in.mlir
//
// The plugin links libMLIR.so, the very copy mlir-opt runs on: MLIR's
// registries (dialects, passes, TypeIDs, command-line options) exist once in
// the process. Linking static MLIR archives instead would give the plugin a
// second, private set of them and mlir-opt would not see what it registers.
//
//===----------------------------------------------------------------------===//

#include "fa-t/InitAll.h"

#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/Compiler.h"

using namespace mlir;

/// `--load-dialect-plugin`: adds the fat dialect to mlir-opt's registry.
extern "C" LLVM_ATTRIBUTE_WEAK LLVM_ATTRIBUTE_VISIBILITY_DEFAULT
    DialectPluginLibraryInfo
    mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "fa-t", LLVM_VERSION_STRING,
          [](DialectRegistry *registry) {
            fat::registerAllFatDialects(*registry);
          }};
}

/// `--load-pass-plugin`: registers the fa-t passes and pipelines. mlir-opt
/// calls it once per `--load-pass-plugin` flag.
extern "C" LLVM_ATTRIBUTE_WEAK LLVM_ATTRIBUTE_VISIBILITY_DEFAULT
    PassPluginLibraryInfo
    mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "fa-t", LLVM_VERSION_STRING,
          fat::registerAllFatPasses};
}
