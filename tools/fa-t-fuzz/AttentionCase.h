//===- AttentionCase.h - fuzz bytes as choices of a fat.attention -*- C++ -*-===//
//
// The structure-aware half of the fuzzing: instead of hoping that mutated
// bytes spell a well-formed fat.attention, each byte string is read as a
// sequence of choices (operand kind, element type, layout, B/H/S/D sizes
// including dynamic, zero and huge ones, LSE, diagonal, scale, causal,
// window, and the pass options of the three pipelines) that always yields a
// parseable func. Most choices pick a value the compiler should accept, a few
// pick an edge or a wrong one, so that libFuzzer spends its time on inputs
// that reach the passes.
//
//===----------------------------------------------------------------------===//
#ifndef FAT_TOOLS_FATFUZZ_ATTENTIONCASE_H
#define FAT_TOOLS_FATFUZZ_ATTENTIONCASE_H

#include "FuzzCompiler.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace mlir {
namespace fat {

/// One generated compiler input.
struct AttentionCase {
  /// A module with one func.func @attention holding one fat.attention.
  std::string source;
  /// The options fat-tile, fat-to-cpu and fat-to-ptx run with.
  FuzzPipelineOptions options;
};

/// Reads `data` as choices. Total: every byte string maps to one case, and
/// the empty string to a small valid bf16 attention with default options.
AttentionCase generateAttentionCase(const uint8_t *data, size_t size);

} // namespace fat
} // namespace mlir

#endif // FAT_TOOLS_FATFUZZ_ATTENTIONCASE_H
