/* The installed kernel launcher from C: FaT::FatRuntime (libfat_runtime.so).
 * Run without a GPU it proves the library links and loads, reports its ABI
 * version, and turns a missing driver into an error message rather than an
 * abort: the call fails with fat_last_error() naming the library. */
#include "fa-t/Runtime/Runtime.h"

#include <stdio.h>

int main(int argc, char **argv) {
  const char *driver = argc > 1 ? argv[1] : "libcuda-absent.so.1";
  printf("abi %d (header %d)\n", fat_runtime_abi_version(),
         FAT_RUNTIME_ABI_VERSION);
  int status = fat_runtime_init(driver);
  printf("init %s: %s\n", status == 0 ? "ok" : "failed", fat_last_error());
  printf("initialized %d\n", fat_runtime_is_initialized());
  return fat_runtime_abi_version() == FAT_RUNTIME_ABI_VERSION ? 0 : 1;
}
