//===- Driver.h - The slice of the CUDA driver API fa-t uses ---*- C++ -*-===//
//
// The runtime must build without CUDA headers or libraries, so the few driver
// types, enum values and function signatures it calls are declared here from
// the public driver API (cuda.h), and the functions are resolved with dlsym
// from libcuda.so.1 at run time. Only ABI-stable facts are used: the values
// below have not changed since CUDA 12.0 introduced tensor maps.
//
//===----------------------------------------------------------------------===//

#ifndef FAT_LIB_RUNTIME_DRIVER_H
#define FAT_LIB_RUNTIME_DRIVER_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace fat::runtime {

// Driver handle and scalar types, as cuda.h declares them.
using CUresult = int;
using CUdevice = int;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;

constexpr CUresult CUDA_SUCCESS = 0;

// CUdevice_attribute values.
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
constexpr int CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97;

// CUfunction_attribute values.
constexpr int CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1;
constexpr int CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;

// CUjit_option values. The *_SIZE_BYTES options are passed by value in the
// option-value pointer and overwritten by the driver with the bytes used.
constexpr int CU_JIT_INFO_LOG_BUFFER = 3;
constexpr int CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4;
constexpr int CU_JIT_ERROR_LOG_BUFFER = 5;
constexpr int CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6;

/// Entry points resolved from the driver library. Names ending in _v2 are the
/// symbols cuda.h maps the plain names to since CUDA 11; the plain symbols
/// keep older, different semantics.
struct DriverApi {
  CUresult (*cuInit)(unsigned flags);
  CUresult (*cuGetErrorName)(CUresult, const char **);
  CUresult (*cuGetErrorString)(CUresult, const char **);
  CUresult (*cuDriverGetVersion)(int *);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGet)(CUdevice *, int ordinal);
  CUresult (*cuDeviceGetAttribute)(int *, int attribute, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuCtxGetCurrent)(CUcontext *);
  CUresult (*cuCtxGetDevice)(CUdevice *);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuModuleLoadDataEx)(CUmodule *, const void *image,
                                 unsigned numOptions, int *options,
                                 void **optionValues);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*cuFuncGetAttribute)(int *, int attribute, CUfunction);
  CUresult (*cuFuncSetAttribute)(CUfunction, int attribute, int value);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned gridX, unsigned gridY,
                             unsigned gridZ, unsigned blockX, unsigned blockY,
                             unsigned blockZ, unsigned sharedMemBytes,
                             CUstream, void **kernelParams, void **extra);
  CUresult (*cuTensorMapEncodeTiled)(
      void *tensorMap, int dataType, uint32_t rank, void *globalAddress,
      const uint64_t *globalDim, const uint64_t *globalStrides,
      const uint32_t *boxDim, const uint32_t *elementStrides, int interleave,
      int swizzle, int l2Promotion, int oobFill);
  CUresult (*cuTensorMapReplaceAddress)(void *tensorMap, void *globalAddress);
};

/// The loaded driver, or nullptr before a successful fat_runtime_init. When
/// null, the current call's error is already set to say so.
const DriverApi *requireDriver();

/// The primary context of device `ordinal`, retained on first use and kept
/// for the process (fat_set_device and fat_device_context share it); false,
/// with the error set, for a bad ordinal or a driver failure.
bool primaryContext(const DriverApi &api, int ordinal, CUcontext &context);

/// Records "<call> failed: <NAME> (<description>)" as the last error when
/// `result` is not CUDA_SUCCESS; returns true on success.
bool checkCuda(CUresult result, const char *call);

/// Records "<call> failed: ..." like checkCuda, followed by `detail` on the
/// next line (the JIT log of a failed module load).
bool checkCuda(CUresult result, const char *call, const std::string &detail);

} // namespace fat::runtime

#endif // FAT_LIB_RUNTIME_DRIVER_H
