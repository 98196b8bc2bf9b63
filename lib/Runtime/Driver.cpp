//===- Driver.cpp - Loading the CUDA driver at run time -------------------===//
//
// dlopen/dlsym of libcuda.so.1, cuInit, the device and context queries, and
// the translation of CUresult codes into messages.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"
#include "Error.h"

#include "fa-t/Runtime/Runtime.h"

#include <dlfcn.h>

#include <atomic>
#include <map>
#include <mutex>

namespace fat::runtime {

namespace {

/// Library name used when fat_runtime_init gets no path: the versioned
/// soname, which the driver package always installs (the unversioned
/// libcuda.so comes only with development packages).
constexpr const char *kDefaultDriver = "libcuda.so.1";

std::mutex gInitMutex;
DriverApi gApi;
std::string gLoadedPath; // the driver stays loaded for the process' life
/// Published after gApi is complete, so readers need no lock.
std::atomic<const DriverApi *> gDriver{nullptr};

/// Primary contexts retained by fat_set_device, by device ordinal. They are
/// kept for the life of the process, like the CUDA runtime keeps them.
std::mutex gContextMutex;
std::map<int, CUcontext> gContexts;

/// Resolves `name` from `handle` into `slot`; on failure records which entry
/// point is missing (a driver older than CUDA 12 lacks the tensor-map API).
template <typename Fn>
bool resolve(void *handle, const char *name, Fn &slot, const std::string &path,
             int driverVersion) {
  slot = reinterpret_cast<Fn>(dlsym(handle, name));
  if (slot)
    return true;
  std::string message = "the CUDA driver '" + path + "' has no entry point " +
                        name;
  if (driverVersion > 0)
    message += " (driver supports CUDA " + std::to_string(driverVersion / 1000) +
               "." + std::to_string(driverVersion % 1000 / 10) +
               "; fa-t needs CUDA 12.0 or newer)";
  fail(message);
  return false;
}

/// Resolves every DriverApi entry point; false (error set) if one is missing.
bool resolveAll(void *handle, DriverApi &api, const std::string &path) {
  // The version query first, so a missing later symbol can say how old the
  // driver is.
  int version = 0;
  if (!resolve(handle, "cuDriverGetVersion", api.cuDriverGetVersion, path, 0))
    return false;
  api.cuDriverGetVersion(&version);
#define FAT_RESOLVE(field, symbol)                                            \
  if (!resolve(handle, symbol, api.field, path, version))                    \
    return false;
  FAT_RESOLVE(cuInit, "cuInit")
  FAT_RESOLVE(cuGetErrorName, "cuGetErrorName")
  FAT_RESOLVE(cuGetErrorString, "cuGetErrorString")
  FAT_RESOLVE(cuDeviceGetCount, "cuDeviceGetCount")
  FAT_RESOLVE(cuDeviceGet, "cuDeviceGet")
  FAT_RESOLVE(cuDeviceGetAttribute, "cuDeviceGetAttribute")
  FAT_RESOLVE(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain")
  FAT_RESOLVE(cuCtxSetCurrent, "cuCtxSetCurrent")
  FAT_RESOLVE(cuCtxGetCurrent, "cuCtxGetCurrent")
  FAT_RESOLVE(cuCtxGetDevice, "cuCtxGetDevice")
  FAT_RESOLVE(cuCtxSynchronize, "cuCtxSynchronize")
  FAT_RESOLVE(cuModuleLoadDataEx, "cuModuleLoadDataEx")
  FAT_RESOLVE(cuModuleUnload, "cuModuleUnload")
  FAT_RESOLVE(cuModuleGetFunction, "cuModuleGetFunction")
  FAT_RESOLVE(cuFuncGetAttribute, "cuFuncGetAttribute")
  FAT_RESOLVE(cuFuncSetAttribute, "cuFuncSetAttribute")
  FAT_RESOLVE(cuLaunchKernel, "cuLaunchKernel")
  FAT_RESOLVE(cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled")
  FAT_RESOLVE(cuTensorMapReplaceAddress, "cuTensorMapReplaceAddress")
#undef FAT_RESOLVE
  return true;
}

/// Formats a CUresult as "NAME (description)", falling back to the number
/// when the driver does not know the code.
std::string describe(const DriverApi &api, CUresult result) {
  const char *name = nullptr;
  const char *text = nullptr;
  if (api.cuGetErrorName(result, &name) != CUDA_SUCCESS || !name)
    return "CUDA error " + std::to_string(result);
  std::string out = name;
  if (api.cuGetErrorString(result, &text) == CUDA_SUCCESS && text)
    out += std::string(" (") + text + ")";
  return out;
}

} // namespace

const DriverApi *requireDriver() {
  const DriverApi *api = gDriver.load(std::memory_order_acquire);
  if (!api)
    fail("the CUDA driver is not loaded: call fat_runtime_init() first");
  return api;
}

bool checkCuda(CUresult result, const char *call) {
  return checkCuda(result, call, std::string());
}

bool checkCuda(CUresult result, const char *call, const std::string &detail) {
  if (result == CUDA_SUCCESS)
    return true;
  const DriverApi *api = gDriver.load(std::memory_order_acquire);
  std::string message = std::string(call) + " failed: " +
                        (api ? describe(*api, result)
                             : "CUDA error " + std::to_string(result));
  if (!detail.empty())
    message += "\n" + detail;
  fail(message);
  return false;
}

} // namespace fat::runtime

using namespace fat::runtime;

extern "C" int fat_runtime_init(const char *driverPath) {
  clearError();
  std::string path = driverPath && *driverPath ? driverPath : kDefaultDriver;
  std::lock_guard<std::mutex> lock(gInitMutex);
  if (gDriver.load(std::memory_order_acquire)) {
    if (driverPath && *driverPath && path != gLoadedPath)
      return fail("the CUDA driver is already loaded from '" + gLoadedPath +
                  "'; cannot switch to '" + path + "'");
    return 0;
  }
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    return fail("could not load the CUDA driver '" + path + "': " +
                (why ? why : "unknown dlopen error") +
                " (is an NVIDIA driver installed on this machine?)");
  }
  DriverApi api{};
  if (!resolveAll(handle, api, path)) {
    dlclose(handle);
    return -1;
  }
  CUresult result = api.cuInit(0);
  if (result != CUDA_SUCCESS) {
    std::string message = "cuInit failed: " + describe(api, result);
    dlclose(handle);
    return fail(message);
  }
  gApi = api;
  gLoadedPath = path;
  gDriver.store(&gApi, std::memory_order_release);
  return 0;
}

extern "C" int fat_runtime_is_initialized(void) {
  return gDriver.load(std::memory_order_acquire) ? 1 : 0;
}

extern "C" int fat_driver_version(int *version) {
  clearError();
  if (!version)
    return fail("fat_driver_version: `version` is NULL");
  const DriverApi *api = requireDriver();
  if (!api)
    return -1;
  return checkCuda(api->cuDriverGetVersion(version), "cuDriverGetVersion")
             ? 0
             : -1;
}

extern "C" int fat_device_count(int *count) {
  clearError();
  if (!count)
    return fail("fat_device_count: `count` is NULL");
  const DriverApi *api = requireDriver();
  if (!api)
    return -1;
  return checkCuda(api->cuDeviceGetCount(count), "cuDeviceGetCount") ? 0 : -1;
}

namespace {
/// Resolves a device ordinal, with a message naming the valid range.
bool getDevice(const DriverApi &api, int ordinal, CUdevice &device) {
  int count = 0;
  if (!checkCuda(api.cuDeviceGetCount(&count), "cuDeviceGetCount"))
    return false;
  if (ordinal < 0 || ordinal >= count) {
    fail("device ordinal " + std::to_string(ordinal) +
         " is out of range: this machine has " + std::to_string(count) +
         " CUDA device(s)");
    return false;
  }
  return checkCuda(api.cuDeviceGet(&device, ordinal), "cuDeviceGet");
}
} // namespace

extern "C" int fat_device_compute_capability(int ordinal, int *major,
                                             int *minor) {
  clearError();
  if (!major || !minor)
    return fail("fat_device_compute_capability: `major` or `minor` is NULL");
  const DriverApi *api = requireDriver();
  CUdevice device;
  if (!api || !getDevice(*api, ordinal, device))
    return -1;
  if (!checkCuda(api->cuDeviceGetAttribute(
                     major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                     device),
                 "cuDeviceGetAttribute"))
    return -1;
  return checkCuda(api->cuDeviceGetAttribute(
                       minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                       device),
                   "cuDeviceGetAttribute")
             ? 0
             : -1;
}

bool fat::runtime::primaryContext(const DriverApi &api, int ordinal,
                                  CUcontext &context) {
  CUdevice device;
  if (!getDevice(api, ordinal, device))
    return false;
  std::lock_guard<std::mutex> lock(gContextMutex);
  auto it = gContexts.find(ordinal);
  if (it != gContexts.end()) {
    context = it->second;
    return true;
  }
  if (!checkCuda(api.cuDevicePrimaryCtxRetain(&context, device),
                 "cuDevicePrimaryCtxRetain"))
    return false;
  gContexts.emplace(ordinal, context);
  return true;
}

extern "C" int fat_set_device(int ordinal) {
  clearError();
  const DriverApi *api = requireDriver();
  CUcontext context = nullptr;
  if (!api || !primaryContext(*api, ordinal, context))
    return -1;
  return checkCuda(api->cuCtxSetCurrent(context), "cuCtxSetCurrent") ? 0 : -1;
}

extern "C" int fat_device_context(int ordinal, void **context) {
  clearError();
  if (!context)
    return fail("fat_device_context: `context` is NULL");
  const DriverApi *api = requireDriver();
  CUcontext handle = nullptr;
  if (!api || !primaryContext(*api, ordinal, handle))
    return -1;
  *context = handle;
  return 0;
}

extern "C" int fat_synchronize(void) {
  clearError();
  const DriverApi *api = requireDriver();
  if (!api)
    return -1;
  return checkCuda(api->cuCtxSynchronize(), "cuCtxSynchronize") ? 0 : -1;
}
