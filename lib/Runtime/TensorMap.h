//===- TensorMap.h - Tensor-map checks shared by encode and launch -*- C++ -*-===//
//
// The argument checks of fat_tensor_map_encode_tiled that
// fat_tensor_map_replace_address and fat_launch_patched repeat, so that each
// rule has one message.
//
//===----------------------------------------------------------------------===//

#ifndef FAT_LIB_RUNTIME_TENSORMAP_H
#define FAT_LIB_RUNTIME_TENSORMAP_H

#include "Driver.h"

#include <cstdint>
#include <string>

namespace fat::runtime {

/// TMA moves 16-byte units: the alignment of a global address without
/// 32-byte interleave.
constexpr uint64_t kTmaAlign = 16;

/// 0, or -1 with "<where>..." recorded: `tensorMap` is NULL or not
/// FAT_TENSOR_MAP_ALIGN-aligned.
int checkTensorMapPointer(const void *tensorMap, const std::string &where);

/// 0, or -1 with "<where>..." recorded: `address` is 0 or not a multiple of
/// `align`.
int checkGlobalAddress(uint64_t address, uint64_t align,
                       const std::string &where);

/// cuTensorMapReplaceAddress on checked arguments; false with the error set.
bool replaceAddress(const DriverApi &api, void *tensorMap, uint64_t address);

} // namespace fat::runtime

#endif // FAT_LIB_RUNTIME_TENSORMAP_H
