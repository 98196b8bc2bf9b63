//===- Error.cpp - Thread-local last-error message ------------------------===//

#include "Error.h"

#include "fa-t/Runtime/Runtime.h"

#include <utility>

namespace fat::runtime {

namespace {
/// One message per thread, so concurrent launches from several host threads
/// never report each other's failures.
thread_local std::string tlsLastError;
} // namespace

void clearError() { tlsLastError.clear(); }

int fail(std::string message) {
  tlsLastError = std::move(message);
  return -1;
}

const std::string &lastError() { return tlsLastError; }

} // namespace fat::runtime

extern "C" const char *fat_last_error(void) {
  return fat::runtime::lastError().c_str();
}

extern "C" int fat_runtime_abi_version(void) { return FAT_RUNTIME_ABI_VERSION; }
