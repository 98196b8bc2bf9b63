//===- FuzzCompiler.h - fa-t compiled in-process for fuzzing ----*- C++ -*-===//
//
// What both libFuzzer harnesses share: MLIR text in, the fa-t pipelines run on
// it as fa-t-opt would, nothing printed, no file left behind. A harness only
// decides which text and which pass options; every way the compiler may fail
// on bad input (parse error, verifier error, pass failure) is a normal return,
// and every way it must not (a crash, a sanitizer report, a pass that succeeds
// but leaves invalid IR, a round trip that does not parse) aborts the process,
// which libFuzzer records as a crash with its input.
//
//===----------------------------------------------------------------------===//
#ifndef FAT_TOOLS_FATFUZZ_FUZZCOMPILER_H
#define FAT_TOOLS_FATFUZZ_FUZZCOMPILER_H

#include "mlir/IR/DialectRegistry.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace mlir {
namespace fat {

/// The option text inside `fat-tile{...}`, `fat-tensorize{...}` (after
/// that tiling, then fat-to-cpu), `fat-to-cpu{...}` and `fat-to-ptx{...}`
/// for one input. `output-dir` of fat-to-ptx is added by
/// the compiler (a private temporary directory).
struct FuzzPipelineOptions {
  std::string tile;
  std::string tensorize;
  std::string cpu;
  std::string ptx;
};

/// Parses, verifies, round-trips and compiles fuzz inputs. One per process:
/// construction registers every pass (as fa-t-opt does) and makes the output
/// directory; destruction removes it.
class FuzzCompiler {
public:
  FuzzCompiler();
  ~FuzzCompiler();

  /// Compiles `source` (a module in MLIR text) in a fresh MLIRContext: parse
  /// with the verifier on; when that succeeds, print and re-parse it, then
  /// give the context fa-t-opt's registry and run fat-tile, fat-tile then
  /// fat-tensorize then fat-to-cpu (the tensorized level on the CPU),
  /// fat-to-cpu, fat-to-ptx, fat-raise-attention, and fat-raise-attention
  /// followed by fat-to-cpu, each on its own copy. A transform script (text
  /// naming a `transform.fat.` op) runs the transform interpreter instead.
  void compile(llvm::StringRef source, const FuzzPipelineOptions &options);

  /// Whether FA_T_FUZZ_VERBOSE is set: print diagnostics and each pipeline
  /// as it runs (for replaying one input by hand).
  bool isVerbose() const { return verbose; }

private:
  /// What an input may be written in: fat, func, arith, tensor, memref.
  DialectRegistry inputRegistry;
  /// What a transform script may be written in: the inputs' dialects, scf,
  /// the transform dialect with linalg's match ops and ours (transform.fat.*).
  DialectRegistry scriptRegistry;
  /// What fa-t-opt registers (every upstream dialect, extension and external
  /// model): the pipelines run with it, as they do in the tool.
  DialectRegistry toolRegistry;
  std::string outputDir;
  bool verbose = false;
};

/// The process's compiler, created on first use.
FuzzCompiler &getFuzzCompiler();

} // namespace fat
} // namespace mlir

#endif // FAT_TOOLS_FATFUZZ_FUZZCOMPILER_H
