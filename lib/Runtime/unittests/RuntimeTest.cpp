//===- RuntimeTest.cpp - libfat_runtime checks that need no GPU -----------===//
//
// Exercises the C interface on a machine without CUDA: the "no driver" paths
// of fat_runtime_init, the argument checks of every entry point, and each
// cuTensorMapEncodeTiled, cuTensorMapReplaceAddress and patched-launch rule,
// whose validation runs before the driver is needed. Prints "N passed, M failed" and exits non-zero on any failure.
//
//===----------------------------------------------------------------------===//

#include "fa-t/Runtime/Runtime.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>

namespace {

int gPassed = 0;
int gFailed = 0;

/// Expects `rc` to be -1 and fat_last_error() to contain `needle`.
void expectError(const char *what, int rc, const std::string &needle) {
  std::string message = fat_last_error();
  if (rc == -1 && message.find(needle) != std::string::npos) {
    ++gPassed;
    return;
  }
  ++gFailed;
  std::printf("FAIL %s: rc=%d, expected an error containing \"%s\", got \"%s\"\n",
              what, rc, needle.c_str(), message.c_str());
}

/// Expects `condition` to hold.
void expectTrue(const char *what, bool condition) {
  if (condition) {
    ++gPassed;
    return;
  }
  ++gFailed;
  std::printf("FAIL %s\n", what);
}

/// A valid rank-4 bf16 tiling of a [B=2, H=4, S=1000, D=128] BHSD tensor, the
/// shape of a fa-t Q map; each test breaks one field of a copy.
struct MapArgs {
  alignas(64) unsigned char map[FAT_TENSOR_MAP_BYTES];
  int dtype = FAT_TMA_BFLOAT16;
  uint32_t rank = 4;
  uint64_t address = 0x7f0000000000;
  uint64_t dims[5] = {128, 1000, 4, 2, 1};
  uint64_t strides[4] = {256, 256 * 1000, 256 * 1000 * 4, 0};
  uint32_t box[5] = {64, 128, 1, 1, 1};
  uint32_t elementStrides[5] = {1, 1, 1, 1, 1};
  int interleave = FAT_TMA_INTERLEAVE_NONE;
  int swizzle = FAT_TMA_SWIZZLE_128B;
  int l2 = FAT_TMA_L2_256B;
  int oob = FAT_TMA_OOB_ZERO;

  int encode() {
    return fat_tensor_map_encode_tiled(map, dtype, rank, address, dims,
                                       strides, box, elementStrides,
                                       interleave, swizzle, l2, oob);
  }
};

void testNoDriver() {
  expectTrue("abi version", fat_runtime_abi_version() == FAT_RUNTIME_ABI_VERSION);
  expectTrue("not initialized at start", fat_runtime_is_initialized() == 0);

  int count = 0;
  expectError("device count before init", fat_device_count(&count),
              "the CUDA driver is not loaded: call fat_runtime_init() first");

  expectError("init with a missing library",
              fat_runtime_init("/nonexistent/libcuda-fa-t-test.so.1"),
              "could not load the CUDA driver "
              "'/nonexistent/libcuda-fa-t-test.so.1'");
  expectTrue("still uninitialized after a failed init",
             fat_runtime_is_initialized() == 0);

  // A real library that is not a CUDA driver: loading works, the lookup of
  // the first entry point does not.
  expectError("init with a library that is not the driver",
              fat_runtime_init("libc.so.6"),
              "the CUDA driver 'libc.so.6' has no entry point "
              "cuDriverGetVersion");
  expectTrue("uninitialized after a non-driver library",
             fat_runtime_is_initialized() == 0);

  fat_module module = nullptr;
  expectError("load ptx before init", fat_module_load_ptx(".version 8.0", &module),
              "not loaded");
  expectError("synchronize before init", fat_synchronize(), "not loaded");
  expectError("set device before init", fat_set_device(0), "not loaded");
  void *context = nullptr;
  expectError("device context before init", fat_device_context(0, &context),
              "not loaded");
  expectError("null device context", fat_device_context(0, nullptr),
              "fat_device_context: `context` is NULL");
}

void testArgumentChecks() {
  fat_module module = nullptr;
  fat_function function = nullptr;
  expectError("null ptx", fat_module_load_ptx(nullptr, &module),
              "`ptx` or `module` is NULL");
  expectError("empty ptx", fat_module_load_ptx("", &module),
              "the PTX text is empty");
  expectError("missing module file",
              fat_module_load_file("/nonexistent/kernel.cubin", &module),
              "cannot open module file '/nonexistent/kernel.cubin'");
  expectError("null module lookup",
              fat_module_get_function(nullptr, "fat_attention_fwd", &function),
              "`module`, `name` or `function` is NULL");
  expectError("null function smem", fat_function_set_max_dynamic_smem(nullptr, 1),
              "`function` is NULL");

  uint32_t grid[3] = {1, 1, 1}, block[3] = {384, 1, 1};
  expectError("null launch", fat_launch(nullptr, grid, block, 0, nullptr, nullptr),
              "`function`, `grid` or `block` is NULL");
  auto fake = reinterpret_cast<fat_function>(uintptr_t(0x1000));
  uint32_t emptyGrid[3] = {8, 0, 1};
  expectError("zero grid", fat_launch(fake, emptyGrid, block, 0, nullptr, nullptr),
              "grid.y is 0");
  uint32_t emptyBlock[3] = {384, 1, 0};
  expectError("zero block", fat_launch(fake, grid, emptyBlock, 0, nullptr, nullptr),
              "block.z is 0");
  expectError("valid launch without driver",
              fat_launch(fake, grid, block, 0, nullptr, nullptr), "not loaded");
}

void testTensorMapValidation() {
  const std::string w = "cuTensorMapEncodeTiled: ";
  {
    MapArgs a;
    expectError("valid map reaches the driver", a.encode(), "not loaded");
  }
  {
    MapArgs a;
    expectError("null output",
                fat_tensor_map_encode_tiled(nullptr, a.dtype, a.rank, a.address,
                                            a.dims, a.strides, a.box, nullptr,
                                            0, 3, 3, 0),
                w + "the tensor map pointer is NULL");
    expectError("misaligned output",
                fat_tensor_map_encode_tiled(a.map + 8, a.dtype, a.rank,
                                            a.address, a.dims, a.strides, a.box,
                                            nullptr, 0, 3, 3, 0),
                "is not 64-byte aligned");
  }
  {
    MapArgs a;
    a.dtype = 13;
    expectError("unknown dtype", a.encode(), w + "unknown data type 13");
  }
  {
    MapArgs a;
    a.rank = 0;
    expectError("rank 0", a.encode(), w + "rank 0 is out of range 1..5");
    a.rank = 6;
    expectError("rank 6", a.encode(), w + "rank 6 is out of range 1..5");
  }
  {
    MapArgs a;
    a.rank = 2;
    a.interleave = FAT_TMA_INTERLEAVE_16B;
    a.swizzle = FAT_TMA_SWIZZLE_NONE;
    expectError("interleave rank", a.encode(),
                w + "rank 2 is below 3, the minimum with interleave");
  }
  {
    MapArgs a;
    a.address += 8;
    expectError("misaligned base", a.encode(),
                w + "the global address " + std::to_string(a.address) +
                    " is not 16-byte aligned");
    a.address = 0;
    expectError("null base", a.encode(), w + "the global address is 0");
  }
  {
    MapArgs a;
    a.strides[1] = 256 * 1000 + 8;
    expectError("stride not multiple of 16", a.encode(),
                w + "strides[1] = 256008 bytes (dimension 2) is not a multiple "
                    "of 16");
    a.strides[1] = uint64_t(1) << 40;
    expectError("stride too large", a.encode(),
                "(dimension 2) is not below 2^40");
  }
  {
    MapArgs a;
    a.dims[2] = 0;
    expectError("zero dim", a.encode(), w + "dims[2] = 0 is out of range 1..2^32");
  }
  {
    MapArgs a;
    a.box[1] = 257;
    expectError("box too large", a.encode(),
                w + "box[1] = 257 is out of range 1..256");
    a.box[1] = 0;
    expectError("box zero", a.encode(), w + "box[1] = 0 is out of range 1..256");
  }
  {
    MapArgs a;
    a.elementStrides[3] = 9;
    expectError("element stride", a.encode(),
                w + "element_strides[3] = 9 is out of range 1..8");
  }
  {
    MapArgs a;
    a.box[0] = 128; // 256 bytes of bf16
    expectError("inner box wider than swizzle", a.encode(),
                w + "the inner box dimension is 256 bytes (box[0] = 128 "
                    "elements of 2 bytes), wider than the 128-byte swizzle span");
    a.box[0] = 32;
    a.swizzle = FAT_TMA_SWIZZLE_32B;
    expectError("inner box vs 32B swizzle", a.encode(),
                "64 bytes (box[0] = 32 elements of 2 bytes), wider than the "
                "32-byte swizzle span");
  }
  {
    MapArgs a;
    a.box[0] = 4; // 8 bytes
    a.swizzle = FAT_TMA_SWIZZLE_NONE;
    expectError("inner box not a multiple of 16 bytes", a.encode(),
                w + "the inner box dimension is 8 bytes (box[0] = 4 elements of "
                    "2 bytes), not a multiple of 16");
  }
  {
    MapArgs a;
    a.swizzle = 4;
    expectError("unknown swizzle", a.encode(), w + "unknown swizzle 4");
    a.swizzle = FAT_TMA_SWIZZLE_128B;
    a.l2 = 7;
    expectError("unknown l2", a.encode(), w + "unknown L2 promotion 7");
    a.l2 = FAT_TMA_L2_NONE;
    a.interleave = 3;
    expectError("unknown interleave", a.encode(), w + "unknown interleave 3");
    a.interleave = FAT_TMA_INTERLEAVE_NONE;
    a.oob = 2;
    expectError("unknown oob fill", a.encode(),
                w + "unknown out-of-bounds fill 2");
  }
  {
    MapArgs a;
    a.dtype = FAT_TMA_INT32;
    a.box[0] = 32;
    a.oob = FAT_TMA_OOB_NAN;
    expectError("nan fill on integers", a.encode(),
                w + "NaN out-of-bounds fill needs a floating-point data type");
  }
}

void testReplaceAddress() {
  const std::string w = "cuTensorMapReplaceAddress: ";
  alignas(64) unsigned char map[FAT_TENSOR_MAP_BYTES + 8] = {};
  expectError("replace: valid arguments reach the driver",
              fat_tensor_map_replace_address(map, 0x7f0000000000), "not loaded");
  expectError("replace: null map", fat_tensor_map_replace_address(nullptr, 0x7f0000000000),
              w + "the tensor map pointer is NULL");
  expectError("replace: misaligned map",
              fat_tensor_map_replace_address(map + 8, 0x7f0000000000),
              "is not 64-byte aligned");
  expectError("replace: null address", fat_tensor_map_replace_address(map, 0),
              w + "the global address is 0 (a null tensor)");
  expectError("replace: misaligned address",
              fat_tensor_map_replace_address(map, 0x7f0000000008),
              w + "the global address 139637976727560 is not 16-byte aligned");
}

/// fat_launch_patched's checks: each names the patch and parameter, and all
/// run before the driver is needed.
void testLaunchPatched() {
  alignas(64) unsigned char map[FAT_TENSOR_MAP_BYTES] = {};
  uint64_t pointer = 0x7f0000001000;
  void *params[3] = {map, &pointer, &pointer};
  // The call's addresses: a tensor's (index 0) and an output's (index 1).
  fat_param_patch patches[2] = {{0, FAT_PATCH_TENSOR_MAP, 0},
                                {1, FAT_PATCH_POINTER, 1}};
  uint64_t addresses[2] = {0x7f0000002000, 0x7f0000003000};
  auto fake = reinterpret_cast<fat_function>(uintptr_t(0x1000));
  fat_launch_plan good = {fake, {132, 1, 1}, {384, 1, 1}, 0, params, 3,
                          patches, 2, nullptr};
  const std::string w = "fat_launch_patched: ";
  expectError("patched: valid arguments reach the driver",
              fat_launch_patched(&good, nullptr, addresses, 2), "not loaded");
  expectTrue("patched: the packed block is left as it was",
             params[0] == map && params[1] == &pointer && pointer == 0x7f0000001000);
  expectError("patched: null plan", fat_launch_patched(nullptr, nullptr, addresses, 2),
              w + "`plan` is NULL");
  {
    fat_launch_plan p = good;
    p.grid[1] = 0;
    expectError("patched: zero grid", fat_launch_patched(&p, nullptr, addresses, 2),
                w + "grid.y is 0");
  }
  {
    fat_launch_plan p = good;
    p.param_count = FAT_MAX_LAUNCH_PARAMS + 1;
    expectError("patched: too many parameters",
                fat_launch_patched(&p, nullptr, addresses, 2),
                w + "65 parameters, more than 64");
    p = good;
    p.patch_count = 17;
    expectError("patched: too many patches", fat_launch_patched(&p, nullptr, addresses, 2),
                w + "17 patches, more than 16");
    p = good;
    p.patches = nullptr;
    expectError("patched: null patches", fat_launch_patched(&p, nullptr, addresses, 2),
                w + "`params`, `patches` or `addresses` is NULL");
  }
  expectError("patched: null addresses", fat_launch_patched(&good, nullptr, nullptr, 2),
              w + "`params`, `patches` or `addresses` is NULL");
  expectError("patched: too few addresses", fat_launch_patched(&good, nullptr, addresses, 1),
              w + "patch 1 (parameter 1): address 1 of a call that gives 1");
  {
    fat_param_patch outside[1] = {{3, FAT_PATCH_POINTER, 0}};
    fat_launch_plan p = good;
    p.patches = outside;
    p.patch_count = 1;
    expectError("patched: parameter out of range",
                fat_launch_patched(&p, nullptr, addresses, 2),
                w + "patch 0 (parameter 3): no such parameter; the plan has 3");
  }
  {
    fat_param_patch unknown[2] = {{0, FAT_PATCH_TENSOR_MAP, 0}, {2, 7, 1}};
    fat_launch_plan p = good;
    p.patches = unknown;
    expectError("patched: unknown kind", fat_launch_patched(&p, nullptr, addresses, 2),
                w + "patch 1 (parameter 2): unknown kind 7");
  }
  uint64_t misaligned[2] = {0x7f0000002008, 0x7f0000003000};
  expectError("patched: misaligned tensor address",
              fat_launch_patched(&good, nullptr, misaligned, 2),
              w + "patch 0 (parameter 0): the global address 139637976735752 is not "
                  "16-byte aligned");
  uint64_t null[2] = {0, 0x7f0000003000};
  expectError("patched: null tensor address", fat_launch_patched(&good, nullptr, null, 2),
              w + "patch 0 (parameter 0): the global address is 0");
  // A pointer parameter takes any value (the kernel's own rules apply).
  uint64_t oddPointer[2] = {0x7f0000002000, 0x7f0000003004};
  expectError("patched: a pointer is not a tensor map",
              fat_launch_patched(&good, nullptr, oddPointer, 2), "not loaded");
  {
    alignas(64) unsigned char wide[FAT_TENSOR_MAP_BYTES + 8] = {};
    void *misalignedMap[2] = {wide + 8, &pointer};
    fat_launch_plan p = good;
    p.params = misalignedMap;
    p.param_count = 2;
    p.patch_count = 1;
    expectError("patched: a packed map that is not 64-byte aligned",
                fat_launch_patched(&p, nullptr, addresses, 2),
                w + "patch 0 (parameter 0): the tensor map at address");
  }
  {
    fat_launch_plan p = good; // as packed: no patches, no addresses
    p.patches = nullptr;
    p.patch_count = 0;
    expectError("patched: a plan launched as packed", fat_launch_patched(&p, nullptr, nullptr, 0),
                "not loaded");
  }
}

/// The last error belongs to the thread that made the call.
void testThreadLocalError() {
  int count = 0;
  fat_device_count(&count);
  std::string other = "unset";
  std::thread t([&] { other = fat_last_error(); });
  t.join();
  expectTrue("another thread sees no error", other.empty());
  expectTrue("this thread keeps its error",
             std::string(fat_last_error()).find("not loaded") !=
                 std::string::npos);
}

} // namespace

int main() {
  testNoDriver();
  testArgumentChecks();
  testTensorMapValidation();
  testReplaceAddress();
  testLaunchPatched();
  testThreadLocalError();
  std::printf("%d passed, %d failed\n", gPassed, gFailed);
  return gFailed == 0 ? 0 : 1;
}
