//===- Error.h - Thread-local last-error message ---------------*- C++ -*-===//
//
// The C interface reports failures as -1 plus a message fetched with
// fat_last_error(). These helpers own that per-thread message.
//
//===----------------------------------------------------------------------===//

#ifndef FAT_LIB_RUNTIME_ERROR_H
#define FAT_LIB_RUNTIME_ERROR_H

#include <string>

namespace fat::runtime {

/// Clears the calling thread's last error; every public entry point does this
/// first so a success leaves "" behind.
void clearError();

/// Sets the calling thread's last error to `message`; returns -1, the C
/// interface's failure code, so callers can `return fail(...)`.
int fail(std::string message);

/// The calling thread's last error.
const std::string &lastError();

} // namespace fat::runtime

#endif // FAT_LIB_RUNTIME_ERROR_H
