//===- TensorMap.cpp - Validated cuTensorMapEncodeTiled -------------------===//
//
// The driver answers a bad tensor map with a bare CUDA_ERROR_INVALID_VALUE.
// Here every documented requirement of cuTensorMapEncodeTiled is checked
// first, so the user learns which value broke which rule. The checks need no
// driver, which lets the unit test run them on machines without a GPU.
//
//===----------------------------------------------------------------------===//

#include "TensorMap.h"

#include "Driver.h"
#include "Error.h"

#include "fa-t/Runtime/Runtime.h"

#include <string>

using namespace fat::runtime;

namespace {

/// Bytes per element of a CUtensorMapDataType, or 0 for an unknown value.
unsigned elementBytes(int dtype) {
  switch (dtype) {
  case FAT_TMA_UINT8:
    return 1;
  case FAT_TMA_UINT16:
  case FAT_TMA_FLOAT16:
  case FAT_TMA_BFLOAT16:
    return 2;
  case FAT_TMA_UINT32:
  case FAT_TMA_INT32:
  case FAT_TMA_FLOAT32:
  case FAT_TMA_FLOAT32_FTZ:
  case FAT_TMA_TFLOAT32:
  case FAT_TMA_TFLOAT32_FTZ:
    return 4;
  case FAT_TMA_UINT64:
  case FAT_TMA_INT64:
  case FAT_TMA_FLOAT64:
    return 8;
  default:
    return 0;
  }
}

/// True for the floating-point data types, the only ones NaN fill allows.
bool isFloat(int dtype) {
  return dtype == FAT_TMA_FLOAT16 || dtype == FAT_TMA_FLOAT32 ||
         dtype == FAT_TMA_FLOAT64 || dtype == FAT_TMA_BFLOAT16 ||
         dtype == FAT_TMA_FLOAT32_FTZ || dtype == FAT_TMA_TFLOAT32 ||
         dtype == FAT_TMA_TFLOAT32_FTZ;
}

/// The span a swizzle pattern repeats over: the inner box row may not be
/// wider than this many bytes.
unsigned swizzleSpanBytes(int swizzle) {
  return swizzle == FAT_TMA_SWIZZLE_32B   ? 32
         : swizzle == FAT_TMA_SWIZZLE_64B ? 64
                                          : 128;
}

std::string str(uint64_t value) { return std::to_string(value); }

} // namespace

int fat::runtime::checkTensorMapPointer(const void *tensorMap,
                                        const std::string &where) {
  if (!tensorMap)
    return fail(where + "the tensor map pointer is NULL");
  if (reinterpret_cast<uintptr_t>(tensorMap) % FAT_TENSOR_MAP_ALIGN != 0)
    return fail(where + "the tensor map at address " +
                str(reinterpret_cast<uintptr_t>(tensorMap)) +
                " is not 64-byte aligned");
  return 0;
}

int fat::runtime::checkGlobalAddress(uint64_t address, uint64_t align,
                                     const std::string &where) {
  if (address == 0)
    return fail(where + "the global address is 0 (a null tensor)");
  if (address % align != 0)
    return fail(where + "the global address " + str(address) + " is not " +
                str(align) + "-byte aligned");
  return 0;
}

namespace {

/// Checks every argument against the documented requirements; returns -1
/// with the error set at the first violation.
int validate(const void *tensorMap, int dtype, uint32_t rank, uint64_t address,
             const uint64_t *dims, const uint64_t *strides, const uint32_t *box,
             const uint32_t *elementStrides, int interleave, int swizzle,
             int l2Promotion, int oobFill) {
  const std::string where = "cuTensorMapEncodeTiled: ";
  if (checkTensorMapPointer(tensorMap, where) != 0)
    return -1;
  unsigned bytes = elementBytes(dtype);
  if (bytes == 0)
    return fail(where + "unknown data type " + std::to_string(dtype) +
                " (expected a CUtensorMapDataType value, 0..12)");
  if (interleave < FAT_TMA_INTERLEAVE_NONE ||
      interleave > FAT_TMA_INTERLEAVE_32B)
    return fail(where + "unknown interleave " + std::to_string(interleave) +
                " (expected 0 = none, 1 = 16B, 2 = 32B)");
  if (swizzle < FAT_TMA_SWIZZLE_NONE || swizzle > FAT_TMA_SWIZZLE_128B)
    return fail(where + "unknown swizzle " + std::to_string(swizzle) +
                " (expected 0 = none, 1 = 32B, 2 = 64B, 3 = 128B)");
  if (l2Promotion < FAT_TMA_L2_NONE || l2Promotion > FAT_TMA_L2_256B)
    return fail(where + "unknown L2 promotion " + std::to_string(l2Promotion) +
                " (expected 0 = none, 1 = 64B, 2 = 128B, 3 = 256B)");
  if (oobFill != FAT_TMA_OOB_ZERO && oobFill != FAT_TMA_OOB_NAN)
    return fail(where + "unknown out-of-bounds fill " +
                std::to_string(oobFill) + " (expected 0 = zero, 1 = NaN)");
  if (oobFill == FAT_TMA_OOB_NAN && !isFloat(dtype))
    return fail(where + "NaN out-of-bounds fill needs a floating-point data "
                        "type, got data type " +
                std::to_string(dtype));

  if (rank < 1 || rank > 5)
    return fail(where + "rank " + str(rank) + " is out of range 1..5");
  if (interleave != FAT_TMA_INTERLEAVE_NONE && rank < 3)
    return fail(where + "rank " + str(rank) +
                " is below 3, the minimum with interleave");
  if (!dims || !box || (rank > 1 && !strides))
    return fail(where + "the dims, strides or box array is NULL");

  // 32-byte interleave moves 32-byte chunks, so it needs 32-byte alignment;
  // everything else needs 16 bytes, the TMA transfer granule.
  const uint64_t align = interleave == FAT_TMA_INTERLEAVE_32B ? 32 : kTmaAlign;
  if (checkGlobalAddress(address, align, where) != 0)
    return -1;

  for (uint32_t i = 0; i < rank; ++i) {
    if (dims[i] == 0 || dims[i] > (uint64_t(1) << 32))
      return fail(where + "dims[" + str(i) + "] = " + str(dims[i]) +
                  " is out of range 1..2^32");
  }
  for (uint32_t i = 0; i + 1 < rank; ++i) {
    // strides[i] is the byte stride of dimension i+1.
    if (strides[i] % align != 0)
      return fail(where + "strides[" + str(i) + "] = " + str(strides[i]) +
                  " bytes (dimension " + str(i + 1) + ") is not a multiple of " +
                  str(align));
    if (strides[i] >= (uint64_t(1) << 40))
      return fail(where + "strides[" + str(i) + "] = " + str(strides[i]) +
                  " bytes (dimension " + str(i + 1) + ") is not below 2^40");
  }
  for (uint32_t i = 0; i < rank; ++i) {
    if (box[i] == 0 || box[i] > 256)
      return fail(where + "box[" + str(i) + "] = " + str(box[i]) +
                  " is out of range 1..256");
    if (elementStrides && (elementStrides[i] == 0 || elementStrides[i] > 8))
      return fail(where + "element_strides[" + str(i) + "] = " +
                  str(elementStrides[i]) + " is out of range 1..8");
  }

  const uint64_t innerBoxBytes = uint64_t(box[0]) * bytes;
  if (interleave == FAT_TMA_INTERLEAVE_NONE) {
    // The box's inner row is moved in 16-byte units.
    if (innerBoxBytes % 16 != 0)
      return fail(where + "the inner box dimension is " + str(innerBoxBytes) +
                  " bytes (box[0] = " + str(box[0]) + " elements of " +
                  str(bytes) + " bytes), not a multiple of 16");
    if (swizzle != FAT_TMA_SWIZZLE_NONE &&
        innerBoxBytes > swizzleSpanBytes(swizzle))
      return fail(where + "the inner box dimension is " + str(innerBoxBytes) +
                  " bytes (box[0] = " + str(box[0]) + " elements of " +
                  str(bytes) + " bytes), wider than the " +
                  str(swizzleSpanBytes(swizzle)) + "-byte swizzle span");
  }
  return 0;
}

} // namespace

extern "C" int fat_tensor_map_encode_tiled(
    void *tensorMap, int dtype, uint32_t rank, uint64_t address,
    const uint64_t *dims, const uint64_t *strides, const uint32_t *box,
    const uint32_t *elementStrides, int interleave, int swizzle,
    int l2Promotion, int oobFill) {
  clearError();
  if (validate(tensorMap, dtype, rank, address, dims, strides, box,
               elementStrides, interleave, swizzle, l2Promotion, oobFill) != 0)
    return -1;
  const DriverApi *api = requireDriver();
  if (!api)
    return -1;
  const uint32_t ones[5] = {1, 1, 1, 1, 1};
  return checkCuda(api->cuTensorMapEncodeTiled(
                       tensorMap, dtype, rank,
                       reinterpret_cast<void *>(address), dims, strides, box,
                       elementStrides ? elementStrides : ones, interleave,
                       swizzle, l2Promotion, oobFill),
                   "cuTensorMapEncodeTiled")
             ? 0
             : -1;
}

bool fat::runtime::replaceAddress(const DriverApi &api, void *tensorMap,
                                  uint64_t address) {
  return checkCuda(api.cuTensorMapReplaceAddress(
                       tensorMap, reinterpret_cast<void *>(address)),
                   "cuTensorMapReplaceAddress");
}

extern "C" int fat_tensor_map_replace_address(void *tensorMap,
                                              uint64_t address) {
  clearError();
  const std::string where = "cuTensorMapReplaceAddress: ";
  if (checkTensorMapPointer(tensorMap, where) != 0 ||
      checkGlobalAddress(address, kTmaAlign, where) != 0)
    return -1;
  const DriverApi *api = requireDriver();
  if (!api)
    return -1;
  return replaceAddress(*api, tensorMap, address) ? 0 : -1;
}
