//===- Runtime.h - fa-t kernel runtime, C ABI -------------------*- C -*-===//
//
// A small launcher for the PTX kernels fa-t emits (docs/kernel-abi.md). It
// dlopens the CUDA driver (libcuda.so.1) at run time, so it builds and loads
// on machines without CUDA; only the calls that reach the driver need a GPU.
//
// Conventions:
//  - Every function returns 0 on success and -1 on failure. On failure the
//    reason is in fat_last_error(), a message for users such as
//    "cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE (invalid argument)".
//  - The last error is thread-local and reset at the start of every call
//    that can fail, so after a successful call it is "".
//  - Nothing here aborts on bad input; every argument is checked first.
//  - Handles are the driver's own (CUmodule, CUfunction, CUstream), passed
//    as opaque pointers.
//
//===----------------------------------------------------------------------===//

#ifndef FAT_RUNTIME_RUNTIME_H
#define FAT_RUNTIME_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define FAT_RUNTIME_API __declspec(dllexport)
#else
#define FAT_RUNTIME_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/// Version of this C interface; bumped on any incompatible change so that
/// bindings (python/fa_t/runtime.py) can refuse a mismatched library.
/// 2 added fat_device_context, fat_tensor_map_replace_address and
/// fat_launch_patched, which the bindings of version 2 need.
#define FAT_RUNTIME_ABI_VERSION 2

/// A CUtensorMap is 128 opaque bytes that must sit at a 64-byte-aligned
/// address (the kernel receives it by value as `.param .align 64 .b8 [128]`).
#define FAT_TENSOR_MAP_BYTES 128
#define FAT_TENSOR_MAP_ALIGN 64

typedef struct fat_module_opaque *fat_module;     ///< a CUmodule
typedef struct fat_function_opaque *fat_function; ///< a CUfunction

/// CUtensorMapDataType: the driver's own enum values.
enum fat_tma_dtype {
  FAT_TMA_UINT8 = 0,
  FAT_TMA_UINT16 = 1,
  FAT_TMA_UINT32 = 2,
  FAT_TMA_INT32 = 3,
  FAT_TMA_UINT64 = 4,
  FAT_TMA_INT64 = 5,
  FAT_TMA_FLOAT16 = 6,
  FAT_TMA_FLOAT32 = 7,
  FAT_TMA_FLOAT64 = 8,
  FAT_TMA_BFLOAT16 = 9,
  FAT_TMA_FLOAT32_FTZ = 10,
  FAT_TMA_TFLOAT32 = 11,
  FAT_TMA_TFLOAT32_FTZ = 12
};

/// CUtensorMapInterleave.
enum fat_tma_interleave {
  FAT_TMA_INTERLEAVE_NONE = 0,
  FAT_TMA_INTERLEAVE_16B = 1,
  FAT_TMA_INTERLEAVE_32B = 2
};

/// CUtensorMapSwizzle.
enum fat_tma_swizzle {
  FAT_TMA_SWIZZLE_NONE = 0,
  FAT_TMA_SWIZZLE_32B = 1,
  FAT_TMA_SWIZZLE_64B = 2,
  FAT_TMA_SWIZZLE_128B = 3
};

/// CUtensorMapL2promotion.
enum fat_tma_l2_promotion {
  FAT_TMA_L2_NONE = 0,
  FAT_TMA_L2_64B = 1,
  FAT_TMA_L2_128B = 2,
  FAT_TMA_L2_256B = 3
};

/// CUtensorMapFloatOOBfill: NONE fills out-of-bounds elements with zeros,
/// NAN_REQUEST_ZERO_FMA with NaN (floating-point types only).
enum fat_tma_oob_fill {
  FAT_TMA_OOB_ZERO = 0,
  FAT_TMA_OOB_NAN = 1
};

/// Returns FAT_RUNTIME_ABI_VERSION of the library actually loaded.
FAT_RUNTIME_API int fat_runtime_abi_version(void);

/// The message of the last failed call on this thread ("" if the last call
/// succeeded). Valid until the next call into this library on this thread.
FAT_RUNTIME_API const char *fat_last_error(void);

/// Loads the CUDA driver and calls cuInit(0). `driver_path` names the
/// library to dlopen; NULL means "libcuda.so.1". Calling it again after a
/// success is a no-op unless a different path is named, which is an error.
/// A failed call leaves the runtime uninitialized, so it may be retried.
FAT_RUNTIME_API int fat_runtime_init(const char *driver_path);

/// 1 once fat_runtime_init succeeded, else 0.
FAT_RUNTIME_API int fat_runtime_is_initialized(void);

/// The driver's CUDA version, e.g. 13000 for 13.0 (cuDriverGetVersion).
FAT_RUNTIME_API int fat_driver_version(int *version);

/// Number of CUDA devices (cuDeviceGetCount).
FAT_RUNTIME_API int fat_device_count(int *count);

/// Compute capability of device `ordinal` (9, 0 on Hopper).
FAT_RUNTIME_API int fat_device_compute_capability(int ordinal, int *major,
                                                  int *minor);

/// Makes the primary context of device `ordinal` current on the calling
/// thread, retaining it on first use. The primary context is the one the
/// CUDA runtime (and so PyTorch) uses, so device pointers from either side
/// are valid in modules loaded here. Modules belong to the context that was
/// current when they were loaded.
FAT_RUNTIME_API int fat_set_device(int ordinal);

/// The primary context of device `ordinal` (retained on first use, like
/// fat_set_device), without making it current: a handle for
/// fat_launch_patched, which makes it current only where it is not.
FAT_RUNTIME_API int fat_device_context(int ordinal, void **context);

/// Loads a module from NUL-terminated PTX text (cuModuleLoadDataEx). A JIT
/// failure's message includes the driver's JIT error log.
FAT_RUNTIME_API int fat_module_load_ptx(const char *ptx, fat_module *module);

/// Loads a module from a file: a cubin, fatbin or PTX file (the driver tells
/// them apart by content).
FAT_RUNTIME_API int fat_module_load_file(const char *path, fat_module *module);

/// Unloads a module; its functions become invalid.
FAT_RUNTIME_API int fat_module_unload(fat_module module);

/// Looks up the `.entry` named `name` in `module`.
FAT_RUNTIME_API int fat_module_get_function(fat_module module, const char *name,
                                            fat_function *function);

/// Allows `function` to be launched with up to `bytes` of dynamic shared
/// memory (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES). Fails, naming
/// both numbers, when `bytes` plus the function's static shared memory
/// exceeds the current device's opt-in limit per block.
FAT_RUNTIME_API int fat_function_set_max_dynamic_smem(fat_function function,
                                                      size_t bytes);

/// Encodes a tiled tensor map (cuTensorMapEncodeTiled) into `tensor_map`
/// (FAT_TENSOR_MAP_BYTES bytes at a FAT_TENSOR_MAP_ALIGN-aligned address).
/// All arrays are innermost dimension first:
///  - `dims[rank]`: extents in elements, each 1..2^32;
///  - `strides[rank-1]`: byte strides of dimensions 1..rank-1 (dimension 0 is
///    contiguous), each a multiple of 16 and below 2^40;
///  - `box[rank]`: the tile in elements, each 1..256;
///  - `element_strides[rank]`: each 1..8, or NULL for all ones.
/// The arguments are validated here before the driver is needed, so the
/// checks work (and are tested) without a GPU.
FAT_RUNTIME_API int fat_tensor_map_encode_tiled(
    void *tensor_map, int dtype, uint32_t rank, uint64_t address,
    const uint64_t *dims, const uint64_t *strides, const uint32_t *box,
    const uint32_t *element_strides, int interleave, int swizzle,
    int l2_promotion, int oob_fill);

/// Points an encoded tensor map at another global address, keeping every
/// other field (cuTensorMapReplaceAddress): a map encoded once serves every
/// tensor of the same shape and strides. `address` must be non-zero and
/// 16-byte aligned (the driver also refuses a 32-byte-interleaved map's
/// address that is not 32-byte aligned); `tensor_map` as in
/// fat_tensor_map_encode_tiled. Checked here before the driver is needed.
FAT_RUNTIME_API int fat_tensor_map_replace_address(void *tensor_map,
                                                   uint64_t address);

/// Launches `function` on `stream` (NULL: the context's default stream) with
/// grid[3] blocks of block[3] threads and `dynamic_smem` bytes of dynamic
/// shared memory. `params` holds one pointer per kernel parameter, pointing
/// at the parameter's value (cuLaunchKernel's kernelParams); the values are
/// copied before this returns.
FAT_RUNTIME_API int fat_launch(fat_function function, const uint32_t grid[3],
                               const uint32_t block[3], uint32_t dynamic_smem,
                               void *stream, void **params);

/// The most parameters and patches one fat_launch_plan holds.
#define FAT_MAX_LAUNCH_PARAMS 64
#define FAT_MAX_PARAM_PATCHES 16

/// What a patch of fat_launch_patched replaces.
enum fat_patch_kind {
  FAT_PATCH_TENSOR_MAP = 0, ///< a tensor map parameter's global address
  FAT_PATCH_POINTER = 1     ///< a u64 device-pointer parameter's value
};

/// One parameter that fat_launch_patched re-points at new memory.
typedef struct fat_param_patch {
  uint32_t param;   ///< its index in the plan's `params`
  int32_t kind;     ///< enum fat_patch_kind
  uint32_t address; ///< which of the call's `addresses` it gets
} fat_param_patch;

/// A launch resolved once: fat_launch's arguments with the parameters packed
/// for some tensors, the parameters that hold those tensors' addresses, and
/// the context to launch in (NULL: the current one, as fat_launch).
typedef struct fat_launch_plan {
  fat_function function;
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t dynamic_smem;
  void **params;        ///< cuLaunchKernel's kernelParams, `param_count` of them
  uint32_t param_count; ///< at most FAT_MAX_LAUNCH_PARAMS
  const fat_param_patch *patches;
  uint32_t patch_count; ///< at most FAT_MAX_PARAM_PATCHES
  void *context;        ///< from fat_device_context, or NULL
} fat_launch_plan;

/// Launches `plan` on `stream` with its patched parameters re-pointed at
/// this call's tensors: parameter patches[i].param gets
/// addresses[patches[i].address], as a tensor map's global address
/// (fat_tensor_map_replace_address) or as a pointer's value. The patched
/// values are copies on this call's stack, so the plan is never written and
/// serves concurrent launches from several threads (and every launch a CUDA
/// graph captures keeps its own values). A plan's `context` is made current
/// on the calling thread first unless it already is (a thread that never
/// used CUDA has none current). One call with the plan built once keeps the
/// per-launch cost of a binding low. Every argument is checked before the
/// driver is needed.
FAT_RUNTIME_API int fat_launch_patched(const fat_launch_plan *plan, void *stream,
                                       const uint64_t *addresses,
                                       uint32_t address_count);

/// Blocks until all work in the current context has finished
/// (cuCtxSynchronize); asynchronous kernel faults surface here.
FAT_RUNTIME_API int fat_synchronize(void);

#ifdef __cplusplus
}
#endif

#endif // FAT_RUNTIME_RUNTIME_H
