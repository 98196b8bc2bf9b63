//===- InputChecks.h - inputs that crash upstream parsers -------*- C++ -*-===//
//
// MLIR 22's custom parsers of linalg.transpose, linalg.broadcast and
// linalg.reduce read `permutation = [...]` / `dimensions = [...]` as a dense
// i64 array and, when that array is malformed (`[1, 0>`), report the error
// and then add a null attribute to the op: a segfault (stock mlir-opt-22
// crashes the same way; found by fa-t-fuzz-mlir). fa-t-opt and the fuzz
// harness check the text for such arrays first, so a malformed input gets a
// diagnostic and never reaches the crash.
//
//===----------------------------------------------------------------------===//
#ifndef FAT_TOOLS_INPUTCHECKS_H
#define FAT_TOOLS_INPUTCHECKS_H

#include "llvm/ADT/StringRef.h"

#include <cctype>
#include <optional>
#include <string>

namespace mlir {
namespace fat {

/// A place in the input text and what is wrong there.
struct InputHazard {
  size_t offset;       ///< byte offset of the malformed array's '['
  unsigned line, col;  ///< 1-based
  std::string message;
};

/// Whether `text` from `k` on is `]` or `int (',' int)* ']'` (an int: an
/// optional '-' and digits; white space between tokens). Anything else —
/// a leading, doubled or trailing comma, a lone '-', integers without a
/// comma — crashes MLIR 22's dense-array parsing in the linalg ops.
inline bool isIntegerList(llvm::StringRef text, size_t k) {
  auto skipSpace = [&] {
    while (k < text.size() && std::isspace(static_cast<unsigned char>(text[k])))
      ++k;
  };
  skipSpace();
  if (k < text.size() && text[k] == ']')
    return true;
  while (true) {
    if (k < text.size() && text[k] == '-')
      ++k;
    size_t digits = k;
    while (k < text.size() && std::isdigit(static_cast<unsigned char>(text[k])))
      ++k;
    if (k == digits)
      return false;
    skipSpace();
    if (k < text.size() && text[k] == ']')
      return true;
    if (k >= text.size() || text[k] != ',')
      return false;
    ++k;
    skipSpace();
  }
}

/// The first `permutation =` or `dimensions =` (outside `//` comments) not
/// followed by `[`, integers separated by commas and `]` (isIntegerList),
/// nor by the generic attribute syntax `array<`.
inline std::optional<InputHazard> findLinalgArrayHazard(llvm::StringRef text) {
  unsigned line = 1;
  size_t lineStart = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\n') {
      ++line;
      lineStart = i + 1;
      continue;
    }
    if (c == '/' && text.substr(i).starts_with("//")) {
      size_t end = text.find('\n', i);
      i = (end == llvm::StringRef::npos ? text.size() : end) - 1;
      continue;
    }
    for (llvm::StringRef key : {"permutation", "dimensions"}) {
      if (!text.substr(i).starts_with(key))
        continue;
      if (i > 0 && (std::isalnum(static_cast<unsigned char>(text[i - 1])) ||
                    text[i - 1] == '_'))
        continue;
      size_t j = i + key.size();
      while (j < text.size() && std::isspace(static_cast<unsigned char>(text[j])))
        ++j;
      if (j >= text.size() || text[j] != '=')
        continue;
      ++j;
      while (j < text.size() && std::isspace(static_cast<unsigned char>(text[j])))
        ++j;
      // `key = array<...>` is the generic attribute syntax (robust); after
      // `key =` anything but it or an integer list in brackets crashes the
      // linalg parsers too (`dimensions = :`: no '[' at all).
      if (text.substr(j).starts_with("array<"))
        continue;
      size_t open = j;
      if (j < text.size() && text[j] == '[' && isIntegerList(text, j + 1))
        continue;
      unsigned col = static_cast<unsigned>(open - lineStart) + 1;
      // (The line of the '[': count the newlines between i and open.)
      unsigned openLine = line;
      for (size_t n = i; n < open; ++n)
        if (text[n] == '\n') {
          ++openLine;
          col = static_cast<unsigned>(open - n);
        }
      return InputHazard{open, openLine, col,
                         "malformed `" + key.str() +
                             " = [...]`: expected integers separated by ',' "
                             "and a closing ']' (MLIR 22's linalg parsers "
                             "crash on it, so fa-t stops here)"};
    }
  }
  return std::nullopt;
}

} // namespace fat
} // namespace mlir

#endif // FAT_TOOLS_INPUTCHECKS_H
