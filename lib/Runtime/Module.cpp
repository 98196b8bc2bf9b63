//===- Module.cpp - Loading modules and launching kernels -----------------===//
//
// cuModuleLoadDataEx with the JIT logs captured, function lookup, the dynamic
// shared-memory opt-in, and cuLaunchKernel (as given, or with some parameters
// re-pointed at new tensors).
//
//===----------------------------------------------------------------------===//

#include "Driver.h"
#include "Error.h"
#include "TensorMap.h"

#include "fa-t/Runtime/Runtime.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

using namespace fat::runtime;

namespace {

/// Size of each JIT log buffer. ptxas diagnostics for one kernel fit easily;
/// a longer log is truncated by the driver, never overflowed.
constexpr size_t kJitLogBytes = 16384;

/// The current context, or an error saying how to get one: without it the
/// driver reports only CUDA_ERROR_INVALID_CONTEXT.
bool requireContext(const DriverApi &api, const char *what) {
  CUcontext context = nullptr;
  if (!checkCuda(api.cuCtxGetCurrent(&context), "cuCtxGetCurrent"))
    return false;
  if (context)
    return true;
  fail(std::string(what) +
       ": no CUDA context is current on this thread; call fat_set_device() "
       "first");
  return false;
}

/// Loads `image` (NUL-terminated PTX, or a cubin/fatbin) into the current
/// context. On failure the message carries the JIT error log, and the info
/// log when the error log is empty.
int loadImage(const void *image, fat_module *module) {
  const DriverApi *api = requireDriver();
  if (!api || !requireContext(*api, "cuModuleLoadDataEx"))
    return -1;
  std::vector<char> errorLog(kJitLogBytes, '\0');
  std::vector<char> infoLog(kJitLogBytes, '\0');
  int options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                   CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
  // Sizes travel by value in the pointer slots (a cuda.h convention).
  void *values[] = {errorLog.data(), reinterpret_cast<void *>(kJitLogBytes - 1),
                    infoLog.data(), reinterpret_cast<void *>(kJitLogBytes - 1)};
  CUmodule handle = nullptr;
  CUresult result = api->cuModuleLoadDataEx(&handle, image, 4, options, values);
  if (result != CUDA_SUCCESS) {
    std::string log = errorLog.data();
    if (log.empty())
      log = infoLog.data();
    checkCuda(result, "cuModuleLoadDataEx",
              log.empty() ? std::string() : "JIT log:\n" + log);
    return -1;
  }
  *module = reinterpret_cast<fat_module>(handle);
  return 0;
}

} // namespace

extern "C" int fat_module_load_ptx(const char *ptx, fat_module *module) {
  clearError();
  if (!ptx || !module)
    return fail("fat_module_load_ptx: `ptx` or `module` is NULL");
  if (!*ptx)
    return fail("fat_module_load_ptx: the PTX text is empty");
  return loadImage(ptx, module);
}

extern "C" int fat_module_load_file(const char *path, fat_module *module) {
  clearError();
  if (!path || !module)
    return fail("fat_module_load_file: `path` or `module` is NULL");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return fail(std::string("cannot open module file '") + path +
                "': " + std::strerror(errno));
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  if (bytes.empty())
    return fail(std::string("module file '") + path + "' is empty");
  // PTX is read as a C string; a trailing NUL is harmless for cubin/fatbin,
  // whose headers carry their own sizes.
  bytes.push_back('\0');
  return loadImage(bytes.data(), module);
}

extern "C" int fat_module_unload(fat_module module) {
  clearError();
  if (!module)
    return fail("fat_module_unload: `module` is NULL");
  const DriverApi *api = requireDriver();
  if (!api)
    return -1;
  return checkCuda(api->cuModuleUnload(reinterpret_cast<CUmodule>(module)),
                   "cuModuleUnload")
             ? 0
             : -1;
}

extern "C" int fat_module_get_function(fat_module module, const char *name,
                                       fat_function *function) {
  clearError();
  if (!module || !name || !function)
    return fail("fat_module_get_function: `module`, `name` or `function` is "
                "NULL");
  const DriverApi *api = requireDriver();
  if (!api)
    return -1;
  CUfunction handle = nullptr;
  if (!checkCuda(api->cuModuleGetFunction(
                     &handle, reinterpret_cast<CUmodule>(module), name),
                 "cuModuleGetFunction",
                 std::string("(looking up the entry '") + name + "')"))
    return -1;
  *function = reinterpret_cast<fat_function>(handle);
  return 0;
}

extern "C" int fat_function_set_max_dynamic_smem(fat_function function,
                                                  size_t bytes) {
  clearError();
  if (!function)
    return fail("fat_function_set_max_dynamic_smem: `function` is NULL");
  const DriverApi *api = requireDriver();
  if (!api || !requireContext(*api, "cuFuncSetAttribute"))
    return -1;
  CUfunction handle = reinterpret_cast<CUfunction>(function);
  CUdevice device;
  int optin = 0, staticBytes = 0;
  if (!checkCuda(api->cuCtxGetDevice(&device), "cuCtxGetDevice") ||
      !checkCuda(api->cuDeviceGetAttribute(
                     &optin,
                     CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                     device),
                 "cuDeviceGetAttribute") ||
      !checkCuda(api->cuFuncGetAttribute(
                     &staticBytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, handle),
                 "cuFuncGetAttribute"))
    return -1;
  // The opt-in limit bounds static plus dynamic shared memory of one block.
  size_t available = optin > staticBytes ? size_t(optin - staticBytes) : 0;
  if (bytes > available)
    return fail("dynamic shared memory of " + std::to_string(bytes) +
                " bytes exceeds what the device allows: an opt-in limit of " +
                std::to_string(optin) + " bytes per block, of which the "
                "kernel's static shared memory takes " +
                std::to_string(staticBytes));
  return checkCuda(api->cuFuncSetAttribute(
                       handle, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                       static_cast<int>(bytes)),
                   "cuFuncSetAttribute")
             ? 0
             : -1;
}

namespace {

/// The checks fat_launch and fat_launch_patched share: `caller` names the
/// entry point in the message.
int checkLaunchShape(const char *caller, fat_function function,
                     const uint32_t grid[3], const uint32_t block[3]) {
  if (!function || !grid || !block)
    return fail(std::string(caller) + ": `function`, `grid` or `block` is NULL");
  static const char *const axes[] = {"x", "y", "z"};
  for (int i = 0; i < 3; ++i) {
    if (grid[i] == 0)
      return fail(std::string(caller) + ": grid." + axes[i] +
                  " is 0; every grid dimension must be at least 1");
    if (block[i] == 0)
      return fail(std::string(caller) + ": block." + axes[i] +
                  " is 0; every block dimension must be at least 1");
  }
  return 0;
}

bool launchKernel(const DriverApi &api, fat_function function,
                  const uint32_t grid[3], const uint32_t block[3],
                  uint32_t dynamicSmem, void *stream, void **params) {
  return checkCuda(api.cuLaunchKernel(reinterpret_cast<CUfunction>(function),
                                      grid[0], grid[1], grid[2], block[0],
                                      block[1], block[2], dynamicSmem,
                                      static_cast<CUstream>(stream), params,
                                      nullptr),
                   "cuLaunchKernel");
}

/// A tensor map's 128 bytes at the alignment the driver needs.
struct alignas(FAT_TENSOR_MAP_ALIGN) TensorMapCopy {
  unsigned char bytes[FAT_TENSOR_MAP_BYTES];
};

} // namespace

extern "C" int fat_launch(fat_function function, const uint32_t grid[3],
                          const uint32_t block[3], uint32_t dynamicSmem,
                          void *stream, void **params) {
  clearError();
  if (checkLaunchShape("fat_launch", function, grid, block) != 0)
    return -1;
  const DriverApi *api = requireDriver();
  if (!api || !requireContext(*api, "cuLaunchKernel"))
    return -1;
  return launchKernel(*api, function, grid, block, dynamicSmem, stream, params)
             ? 0
             : -1;
}

extern "C" int fat_launch_patched(const fat_launch_plan *plan, void *stream,
                                  const uint64_t *addresses,
                                  uint32_t addressCount) {
  clearError();
  // This is the per-call path of every fa_t call: messages are built only
  // on failure.
  const char *caller = "fat_launch_patched";
  auto where = [caller] { return std::string(caller) + ": "; };
  if (!plan)
    return fail(where() + "`plan` is NULL");
  if (checkLaunchShape(caller, plan->function, plan->grid, plan->block) != 0)
    return -1;
  const uint32_t paramCount = plan->param_count;
  const uint32_t patchCount = plan->patch_count;
  if (paramCount > FAT_MAX_LAUNCH_PARAMS)
    return fail(where() + std::to_string(paramCount) +
                " parameters, more than " + std::to_string(FAT_MAX_LAUNCH_PARAMS));
  if (patchCount > FAT_MAX_PARAM_PATCHES)
    return fail(where() + std::to_string(patchCount) + " patches, more than " +
                std::to_string(FAT_MAX_PARAM_PATCHES));
  if ((paramCount && !plan->params) || (patchCount && !plan->patches) ||
      (addressCount && !addresses))
    return fail(where() + "`params`, `patches` or `addresses` is NULL");
  void *local[FAT_MAX_LAUNCH_PARAMS];
  TensorMapCopy maps[FAT_MAX_PARAM_PATCHES];
  uint64_t pointers[FAT_MAX_PARAM_PATCHES];
  for (uint32_t i = 0; i < paramCount; ++i)
    local[i] = plan->params[i];
  for (uint32_t i = 0; i < patchCount; ++i) {
    const fat_param_patch &patch = plan->patches[i];
    auto what = [&] {
      return where() + "patch " + std::to_string(i) + " (parameter " +
             std::to_string(patch.param) + "): ";
    };
    if (patch.param >= paramCount)
      return fail(what() + "no such parameter; the plan has " +
                  std::to_string(paramCount));
    if (patch.address >= addressCount)
      return fail(what() + "address " + std::to_string(patch.address) +
                  " of a call that gives " + std::to_string(addressCount));
    void *packed = plan->params[patch.param];
    if (!packed)
      return fail(what() + "the packed value's pointer is NULL");
    const uint64_t address = addresses[patch.address];
    if (patch.kind == FAT_PATCH_TENSOR_MAP) {
      if ((reinterpret_cast<uintptr_t>(packed) % FAT_TENSOR_MAP_ALIGN != 0 ||
           address == 0 || address % kTmaAlign != 0) &&
          (checkTensorMapPointer(packed, what()) != 0 ||
           checkGlobalAddress(address, kTmaAlign, what()) != 0))
        return -1;
      std::memcpy(maps[i].bytes, packed, FAT_TENSOR_MAP_BYTES);
      local[patch.param] = maps[i].bytes;
    } else if (patch.kind == FAT_PATCH_POINTER) {
      pointers[i] = address;
      local[patch.param] = &pointers[i];
    } else {
      return fail(what() + "unknown kind " + std::to_string(patch.kind) +
                  " (expected 0 = tensor map, 1 = pointer)");
    }
  }
  const DriverApi *api = requireDriver();
  if (!api)
    return -1;
  if (auto context = static_cast<CUcontext>(plan->context)) {
    CUcontext current = nullptr;
    if (!checkCuda(api->cuCtxGetCurrent(&current), "cuCtxGetCurrent"))
      return -1;
    if (current != context &&
        !checkCuda(api->cuCtxSetCurrent(context), "cuCtxSetCurrent"))
      return -1;
  } else if (!requireContext(*api, "cuLaunchKernel")) {
    return -1;
  }
  for (uint32_t i = 0; i < patchCount; ++i)
    if (plan->patches[i].kind == FAT_PATCH_TENSOR_MAP &&
        !replaceAddress(*api, maps[i].bytes, addresses[plan->patches[i].address]))
      return -1;
  return launchKernel(*api, plan->function, plan->grid, plan->block,
                      plan->dynamic_smem, stream, local)
             ? 0
             : -1;
}
