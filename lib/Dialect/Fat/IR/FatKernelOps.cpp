//===- FatKernelOps.cpp - ops of the pipelined kernel ---------------------===//
//
// The role split's register budget is the hardware's: setmaxnreg takes 24 to
// 256 registers in steps of 8, and a warpgroup only gives registers away
// (producer) or takes them (consumers).
//
//===----------------------------------------------------------------------===//

#include "TileVerifiers.h"

#include "fa-t/Dialect/Fat/IR/FatOps.h"
#include "mlir/Dialect/LLVMIR/LLVMTypes.h"

using namespace mlir;
using namespace mlir::fat;

LogicalResult LaunchOp::verify() {
  for (auto [name, v] : {std::pair<StringRef, Value>{"query", getQuery()},
                         {"key", getKey()},
                         {"value", getValue()},
                         {"output", getOutput()}})
    if (cast<ShapedType>(v.getType()).getRank() != 4)
      return emitOpError() << name << " must be a 4-D tensor, got "
                           << v.getType();
  if (getLse() && cast<ShapedType>(getLse().getType()).getRank() != 3)
    return emitOpError("lse must be a 3-D tensor [B, Hq, Sq], got ")
           << getLse().getType();
  for (auto [i, capture] : llvm::enumerate(getCaptures())) {
    auto tensor = dyn_cast<RankedTensorType>(capture.getType());
    if (!tensor || !tensor.hasStaticShape())
      return emitOpError("capture #")
             << i << " must be a statically shaped tensor (the kernel reads "
             << "it by address), got " << capture.getType();
  }
  SmallVector<Type> expected = {getOutput().getType()};
  if (getLse())
    expected.push_back(getLse().getType());
  if (TypeRange(getResults().getTypes()) != TypeRange(expected))
    return emitOpError("results must be the types of outs (and lse): ")
           << expected.size() << " result(s) expected";
  return success();
}

LogicalResult
LaunchOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  // The kernel is a gpu.module until gpu-module-to-binary serializes it to
  // a gpu.binary of the same name.
  Operation *module = symbolTable.lookupNearestSymbolFrom(
      *this, getKernel().getRootReference());
  StringRef kind = module ? module->getName().getStringRef() : "";
  if (kind != "gpu.module" && kind != "gpu.binary")
    return emitOpError("kernel '")
           << getKernel() << "' must name a gpu.module (or the gpu.binary "
                             "it is serialized to) of the enclosing module";
  return success();
}

void WarpSpecializeOp::build(
    OpBuilder &builder, OperationState &state, Value warpgroup,
    std::optional<std::pair<int32_t, int32_t>> registers) {
  state.addOperands(warpgroup);
  if (registers) {
    state.addAttribute(getProducerRegistersAttrName(state.name),
                       builder.getI32IntegerAttr(registers->first));
    state.addAttribute(getConsumerRegistersAttrName(state.name),
                       builder.getI32IntegerAttr(registers->second));
  }
  for (int i = 0; i < 2; ++i)
    state.addRegion()->emplaceBlock();
}

/// setmaxnreg's operand range: 24 to 256, a multiple of 8.
static bool isRegisterCount(int32_t n) {
  return n >= 24 && n <= 256 && n % 8 == 0;
}

LogicalResult WarpSpecializeOp::verify() {
  std::optional<uint32_t> producer = getProducerRegisters();
  std::optional<uint32_t> consumer = getConsumerRegisters();
  if (producer.has_value() != consumer.has_value())
    return emitOpError("needs both register counts (producer, consumer) or "
                       "neither");
  if (!producer)
    return success();
  int32_t p = static_cast<int32_t>(*producer);
  int32_t c = static_cast<int32_t>(*consumer);
  if (!isRegisterCount(p) || !isRegisterCount(c))
    return emitOpError("register counts must be 24 to 256 in steps of 8 "
                       "(setmaxnreg), got (")
           << p << ", " << c << ")";
  if (p > c)
    return emitOpError("the producer gives registers to the consumers: its "
                       "count must not exceed theirs, got (")
           << p << ", " << c << ")";
  return success();
}

LogicalResult OperandFenceOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one value to fence");
  return success();
}

/// The fences return their operands: one result of the same type each.
static LogicalResult sameTypesAsOperands(ValueRange operands,
                                         SmallVectorImpl<Type> &types) {
  llvm::append_range(types, operands.getTypes());
  return success();
}

LogicalResult OperandFenceOp::inferReturnTypes(
    MLIRContext *, std::optional<Location>, ValueRange operands,
    DictionaryAttr, OpaqueProperties, RegionRange,
    SmallVectorImpl<Type> &inferredReturnTypes) {
  return sameTypesAsOperands(operands, inferredReturnTypes);
}

LogicalResult WgmmaWaitOp::inferReturnTypes(
    MLIRContext *, std::optional<Location>, ValueRange operands,
    DictionaryAttr, OpaqueProperties, RegionRange,
    SmallVectorImpl<Type> &inferredReturnTypes) {
  return sameTypesAsOperands(operands, inferredReturnTypes);
}

LogicalResult WgmmaAsyncOp::verify() {
  ArrayRef<int64_t> shape = getShape();
  // m64nNk16: N a multiple of 8 up to 256 (PTX ISA, wgmma shapes for
  // 16-bit operands).
  if (shape.size() != 3 || shape[0] != 64 || shape[2] != 16 ||
      shape[1] < 8 || shape[1] > 256 || shape[1] % 8 != 0)
    return emitOpError("shape must be [64, N, 16] with N a multiple of 8 "
                       "up to 256 (m64nNk16), got [")
           << llvm::make_range(shape.begin(), shape.end()) << "]";
  int64_t k = getK();
  if (k % WgmmaOp::kInstrK != 0)
    return emitOpError("k must be a multiple of 16 (one k16 step each), "
                       "got ")
           << k;
  Type elt = getElt();
  if (!elt.isBF16() && !elt.isF16())
    return emitOpError("operands must be bf16 or f16, got ") << elt;
  RankedTensorType result = getResult().getType();
  if (result.getRank() != 2 || !result.getElementType().isF32() ||
      result.getDimSize(1) != shape[1])
    return emitOpError("result must be the f32 tile of the accumulator, ")
           << "64 x N = 64 x " << shape[1] << ", got " << result;
  if (getAcc() && getAcc().getType() != result)
    return emitOpError("acc must have the result's type ")
           << result << ", got " << getAcc().getType();
  bool fromSmem = static_cast<bool>(getAAddr());
  if (fromSmem == static_cast<bool>(getARegs()))
    return emitOpError("needs A from exactly one place: a_smem (a "
                       "shared-memory address) or a_regs (a 16-bit tile in "
                       "registers)");
  if (fromSmem != getABoxStride().has_value())
    return emitOpError("a_box_stride gives the layout of A in shared "
                       "memory: it goes with a_smem, and only with it");
  if (static_cast<bool>(getBiasA()) != static_cast<bool>(getBiasB()))
    return emitOpError("bias needs both the query columns and the key "
                       "columns' address");
  if (Value x = getBiasA()) {
    auto type = cast<RankedTensorType>(x.getType());
    if (!fromSmem || !getTransposeB() || type.getRank() != 2 ||
        type.getDimSize(0) != 64 ||
        type.getDimSize(1) != BiasKeyColumnsOp::kColumns ||
        type.getElementType() != elt)
      return emitOpError("bias is Q·Kᵀ's extra k16 step (A from shared "
                         "memory, transpose_b): its query columns must be "
                         "the 64 x 16 tile of ")
             << elt << ", got " << type;
  }
  if (Value a = getARegs()) {
    auto type = cast<RankedTensorType>(a.getType());
    if (type.getRank() != 2 || type.getElementType() != elt ||
        type.getDimSize(1) != k)
      return emitOpError("a_regs must be the 2-D tile of ")
             << elt << " (the instruction's A type) with k = " << k
             << " columns, got " << type;
  }
  // The descriptors assume base offset 0: every box starts on a swizzle
  // atom.
  for (std::optional<uint64_t> stride : {getABoxStride(), std::optional<
                                             uint64_t>(getBBoxStride())})
    if (stride && *stride % kSwizzleAtomBytes != 0)
      return emitOpError("box strides must be multiples of ")
             << kSwizzleAtomBytes
             << " bytes (the 128-byte swizzle's atom), got " << *stride;
  // A descriptor addresses 2^18 bytes (14 bits of address >> 4) and so do
  // its strides: every operand's bytes, up to the last step's, lie there
  // (count units of `bytes` each, compared without overflow).
  auto fits = [](int64_t count, int64_t bytes) {
    return count <= kDescriptorWindowBytes / bytes;
  };
  int64_t kBoxes = llvm::divideCeil(k, 64);
  bool inWindow =
      fromSmem ? fits(kBoxes, *getABoxStride()) && fits(kBoxes, getBBoxStride())
               : fits(llvm::divideCeil(shape[1], 64), getBBoxStride()) &&
                     fits(k, 128); // MN-major B: K rows of 128 bytes a box
  if (!inWindow)
    return emitOpError("operands must lie within the ")
           << kDescriptorWindowBytes
           << " bytes a wgmma descriptor addresses, got k = " << k
           << " with B's box stride " << getBBoxStride();
  // The two forms the PTX of this op spells: A from shared memory with a
  // K-major B, A from registers with an MN-major B.
  if (getTransposeB() != fromSmem)
    return emitOpError("transpose_b (B stored N x K: K-major) goes with "
                       "a_smem, B stored K x N (MN-major) with a_regs");
  if (!getAcc() && getScaleD())
    return emitOpError("scale_d chooses between acc and 0: it needs acc");
  return success();
}

LogicalResult TmaLoadOp::verify() {
  if (getColumns() % kBoxColumns != 0)
    return emitOpError("columns must be a multiple of ")
           << kBoxColumns << " (whole 128-byte boxes), got " << getColumns();
  if (getBoxStride() % WgmmaAsyncOp::kSwizzleAtomBytes != 0)
    return emitOpError("box_stride must be a multiple of ")
           << WgmmaAsyncOp::kSwizzleAtomBytes
           << " bytes (the 128-byte swizzle's atom), got " << getBoxStride();
  if (llvm::divideCeil(getColumns(), kBoxColumns) >
      WgmmaAsyncOp::kDescriptorWindowBytes / getBoxStride())
    return emitOpError("the tile's boxes must lie within shared memory's ")
           << WgmmaAsyncOp::kDescriptorWindowBytes << " addressable bytes, got "
           << getColumns() / kBoxColumns << " boxes " << getBoxStride()
           << " bytes apart";
  // TMA tensors have up to five dimensions; the op gives the box's column.
  if (getCoords().empty() || getCoords().size() > 4)
    return emitOpError("needs 1 to 4 coordinates after the column (TMA "
                       "maps have up to 5 dimensions), got ")
           << getCoords().size();
  constexpr unsigned kSharedSpace = 3; // NVPTX's shared address space
  for (auto [name, ptr] : {std::pair<StringRef, Value>{"dst", getDst()},
                           {"barrier", getBarrier()}})
    if (cast<LLVM::LLVMPointerType>(ptr.getType()).getAddressSpace() !=
        kSharedSpace)
      return emitOpError() << name << " must point to shared memory "
                           << "(!llvm.ptr<" << kSharedSpace << ">), got "
                           << ptr.getType();
  return success();
}

LogicalResult
RingType::verify(function_ref<InFlightDiagnostic()> emitError, int64_t stages,
                 int64_t bufferOffset, int64_t bufferBytes,
                 int64_t barrierOffset, int64_t releases) {
  // Buffers hold TMA boxes in the 128-byte swizzle, whose atom must start
  // on a 1024-byte boundary (as the wgmma descriptors' base offset 0
  // assumes); an mbarrier is 8 bytes, 8-byte aligned.
  int64_t atom = WgmmaAsyncOp::kSwizzleAtomBytes;
  if (stages < 1)
    return emitError() << "a ring needs at least one stage, got " << stages;
  if (bufferOffset < 0 || bufferOffset % atom != 0 || bufferBytes < atom ||
      bufferBytes % atom != 0)
    return emitError() << "ring buffers must start and be sized in whole "
                       << atom << "-byte swizzle atoms, got buffer_offset = "
                       << bufferOffset << ", buffer_bytes = " << bufferBytes;
  if (barrierOffset < 0 || barrierOffset % 8 != 0)
    return emitError() << "barrier_offset must be a non-negative multiple of "
                          "8 (mbarriers are 8 bytes), got "
                       << barrierOffset;
  // mbarrier.init takes an arrival count below 2^20.
  if (releases < 0 || releases >= (int64_t(1) << 20))
    return emitError() << "releases must be in [0, 2^20) (0: buffers never "
                          "given back), got "
                       << releases;
  // The buffers and the barriers must not overlap, and everything must lie
  // within the descriptors' reach of shared memory.
  int64_t buffersEnd = bufferOffset + stages * bufferBytes;
  int64_t barriersEnd =
      barrierOffset + 8 * stages * (releases > 0 ? 2 : 1);
  if (barrierOffset < buffersEnd && bufferOffset < barriersEnd)
    return emitError() << "the ring's barriers [" << barrierOffset << ", "
                       << barriersEnd << ") overlap its buffers ["
                       << bufferOffset << ", " << buffersEnd << ")";
  if (std::max(buffersEnd, barriersEnd) > WgmmaAsyncOp::kDescriptorWindowBytes)
    return emitError() << "the ring must lie within shared memory's "
                       << WgmmaAsyncOp::kDescriptorWindowBytes
                       << " addressable bytes, ends at "
                       << std::max(buffersEnd, barriersEnd);
  return success();
}

void RingAcquireOp::build(OpBuilder &b, OperationState &state, Value ring,
                          Value iteration, int64_t expectTx) {
  Type ptr = LLVM::LLVMPointerType::get(b.getContext(), 3);
  build(b, state, ptr, ptr, ring, iteration, expectTx);
}

LogicalResult RingAcquireOp::verify() {
  // Unsigned, as the attribute is read: a negative count is out of range.
  if (getExpectTx() > uint64_t(getRingType().getBufferBytes()))
    return emitOpError("expect_tx must not exceed the stage's ")
           << getRingType().getBufferBytes() << " bytes, got "
           << getExpectTx();
  return success();
}

/// The `if (%c) else %other[%j]` form: all three operands or none.
static LogicalResult verifyOtherSlot(Operation *op, Value cond, Value ring,
                                     Value iteration) {
  if (bool(cond) != bool(ring) || bool(ring) != bool(iteration))
    return op->emitOpError("needs a condition, another ring and its "
                           "iteration together (if (%c) else %ring[%i])");
  return success();
}

LogicalResult RingWaitOp::verify() {
  return verifyOtherSlot(*this, getCond(), getOtherRing(),
                         getOtherIteration());
}

LogicalResult RingReleaseOp::verify() {
  if (failed(verifyOtherSlot(*this, getCond(), getOtherRing(),
                             getOtherIteration())))
    return failure();
  for (Value ring : {getRing(), getOtherRing()})
    if (ring && cast<RingType>(ring.getType()).getReleases() == 0)
      return emitOpError("the ring's buffers are never given back "
                         "(releases = 0): it has no empty barriers to "
                         "arrive on");
  return success();
}

void RingBufferOp::build(OpBuilder &b, OperationState &state, Value ring,
                         Value iteration) {
  build(b, state, LLVM::LLVMPointerType::get(b.getContext(), 3), ring,
        iteration);
}

/// The kv_ranges table of the kernel's block-sparsity ops: the address of
/// a [B, G, C] i32 array, C = 2, 4 or 6, at least `columns` (4 where the
/// full range is read, 6 where the hole is).
static LogicalResult verifyRangeTable(Operation *op, Value ranges,
                                      ArrayRef<int64_t> table,
                                      int64_t columns) {
  if (!isa<LLVM::LLVMPointerType>(ranges.getType()))
    return op->emitOpError("ranges must be the table's address (!llvm.ptr), got ")
           << ranges.getType();
  if (table.size() != 3 || table[0] < 1 || table[1] < 1 ||
      (table[2] != 2 && table[2] != 4 && table[2] != 6))
    return op->emitOpError("table must be the kv_ranges shape [B, G, 2, 4 or "
                           "6] with B, G >= 1");
  if (table[2] < columns)
    return op->emitOpError()
           << "needs a table of " << columns << " columns (the "
           << (columns == 4 ? "full range is columns 2 and 3"
                            : "hole is columns 4 and 5")
           << ")";
  return success();
}

/// The tile-level range ops' blocks: block_m whole 64-row groups.
template <typename RangeOp>
static LogicalResult verifyTileRangeOp(RangeOp op, int64_t columns) {
  if (op.getBlockN() < 1 || op.getBlockM() < 64 || op.getBlockM() % 64 != 0)
    return op.emitOpError("block_m must be a positive multiple of 64 (the "
                          "table's group) and block_n positive");
  return verifyRangeTable(op, op.getRanges(), op.getTable(), columns);
}

LogicalResult ConvertLayoutOp::verify() {
  auto in = cast<RankedTensorType>(getInput().getType());
  auto out = cast<RankedTensorType>(getResult().getType());
  if (!WgmmaFragmentAttr::isPartial(in) || WgmmaFragmentAttr::isPartial(out) ||
      WgmmaFragmentAttr::withPartial(in, false) != out)
    return emitOpError() << "converts a #fat.wgmma_fragment<partial> row "
                            "vector to the same row vector in "
                            "#fat.wgmma_fragment, got "
                         << in << " -> " << out;
  return success();
}

LogicalResult KeyBlockRangeOp::verify() { return verifyTileRangeOp(*this, 2); }

LogicalResult KeyBlockHoleOp::verify() { return verifyTileRangeOp(*this, 6); }

/// The full-range ops: a positive block, the edge given whole.
template <typename FullOp>
static LogicalResult verifyFullRangeOp(FullOp op) {
  if (op.getBlockN() < 1)
    return op.emitOpError("block_n must be positive");
  if (static_cast<bool>(op.getDiag()) != op.getRight().has_value())
    return op.emitOpError("edge(diag) and right go together (the key edge "
                          "row + diag + right)");
  return verifyRangeTable(op, op.getRanges(), op.getTable(), 4);
}

LogicalResult FullKeyBlockOp::verify() { return verifyFullRangeOp(*this); }

LogicalResult FullKeyBlocksOp::verify() { return verifyFullRangeOp(*this); }

/// The output tile of an epilogue store: a 64-row 16-bit fragment tile,
/// its address an LLVM pointer and its [b, h, s] element strides.
static LogicalResult verifyOutputTile(Operation *op, Value output, Value ptr,
                                      ValueRange strides) {
  auto type = cast<RankedTensorType>(output.getType());
  if (type.getRank() != 2 || !(type.getElementType().isBF16() ||
                               type.getElementType().isF16()))
    return op->emitOpError("output must be a 16-bit (bf16 or f16) tile, got ")
           << type;
  if (!ptr || !isa<LLVM::LLVMPointerType>(ptr.getType()))
    return op->emitOpError("output needs its address as an !llvm.ptr");
  if (strides.size() != 3)
    return op->emitOpError("output needs 3 strides (batch, head, row), got ")
           << strides.size();
  return success();
}

LogicalResult StoreOutputOp::verify() {
  if (!getOutput() && !getLse())
    return emitOpError("stores nothing: it needs an output tile, an LSE or "
                       "both");
  if (getOutput()) {
    if (failed(verifyOutputTile(*this, getOutput(), getOPtr(),
                                getOStrides())))
      return failure();
  } else if (getOPtr() || !getOStrides().empty()) {
    return emitOpError("an output address and strides need an output tile");
  }
  if (!getLse())
    return success();
  auto lse = cast<RankedTensorType>(getLse().getType());
  if (lse.getRank() != 1 || !lse.getElementType().isF32() ||
      WgmmaFragmentAttr::isPartial(lse))
    return emitOpError("lse must be an f32 row vector in the plain (not "
                       "partial) layout, got ")
           << lse;
  if (!getLsePtr() || !isa<LLVM::LLVMPointerType>(getLsePtr().getType()))
    return emitOpError("lse needs its address as an !llvm.ptr");
  if (getLseStrides().size() != 2)
    return emitOpError("lse needs 2 strides (batch, head), got ")
           << getLseStrides().size();
  return success();
}

LogicalResult StageOutputOp::verify() {
  if (failed(verifyOutputTile(*this, getOutput(), getOPtr(), getOStrides())))
    return failure();
  // A warp's region (16 rows of 2R bytes = 32R) must tile an 8 KB box, and
  // a round covers whole stmatrix pairs of chunks: R a power of two in
  // [16, 256] dividing the tile's columns.
  int64_t cols = cast<RankedTensorType>(getOutput().getType()).getDimSize(1);
  int64_t r = getColumns();
  if (r < 16 || r > 256 || !llvm::isPowerOf2_64(r) || cols % r != 0)
    return emitOpError("columns must be a power of two in [16, 256] that "
                       "divides the tile's ")
           << cols << ", got " << r;
  // The four warps' regions in Q: whole boxes of 8192 bytes at the box
  // stride, inside the buffer.
  uint64_t qBytes = cast<RingType>(getQRing().getType()).getBufferBytes();
  uint64_t boxes = llvm::divideCeil(4 * 32 * r, 8192);
  if (getQBoxStride() < 8192 || getQBoxStride() > qBytes ||
      (boxes - 1) * getQBoxStride() + 8192 > qBytes)
    return emitOpError("q_box_stride must be at least 8192 bytes and the ")
           << boxes << " boxes of the warps' regions must lie in the Q "
           << "buffer of " << qBytes << " bytes, got q_box_stride = "
           << getQBoxStride();
  std::optional<ArrayRef<int64_t>> barrier = getBarrier();
  if (static_cast<bool>(getVRing()) != barrier.has_value() ||
      (barrier && barrier->size() != 2))
    return emitOpError("staging in V (or %v[%j] if (%c)) goes with barrier "
                       "= [id, threads], and only with it");
  return success();
}

/// The turn ops' games: 2 or 3 consumers on named barriers 1 … n.
template <typename OpTy> static LogicalResult verifyTurn(OpTy op) {
  int64_t n = op.getConsumers();
  if (n < 2 || n > 3)
    return op.emitOpError("takes turns among 2 or 3 consumer warpgroups "
                          "(named barriers 1 to 3), got ")
           << n;
  return success();
}
LogicalResult TurnsOpenOp::verify() { return verifyTurn(*this); }
LogicalResult TurnBeginOp::verify() { return verifyTurn(*this); }
LogicalResult TurnEndOp::verify() { return verifyTurn(*this); }
LogicalResult TurnsCloseOp::verify() { return verifyTurn(*this); }

/// The mask-geometry ops: a positive block, non-negative edges, and the
/// diagonal exactly when there is an edge.
template <typename OpTy>
static LogicalResult verifyKeyGeometry(OpTy op, std::optional<uint64_t> left,
                                       std::optional<uint64_t> right) {
  if (op.getBlockN() < 1)
    return op.emitOpError("block_n must be positive");
  for (std::optional<uint64_t> edge : {left, right})
    if (edge && static_cast<int64_t>(*edge) < 0)
      return op.emitOpError("window edges must be non-negative");
  if (static_cast<bool>(op.getDiag()) != (left || right))
    return op.emitOpError("edge(diag) goes with a left or right edge, and "
                          "only with one (the keys row + diag − left .. row "
                          "+ diag + right)");
  return success();
}
LogicalResult VisibleKeyBlocksOp::verify() {
  return verifyKeyGeometry(*this, getLeft(), getRight());
}
LogicalResult FirstMaskedKeyBlockOp::verify() {
  return verifyKeyGeometry(*this, std::nullopt, getRight());
}
LogicalResult KeyBlockNeedsMaskOp::verify() {
  return verifyKeyGeometry(*this, getLeft(), getRight());
}

LogicalResult RingFillOp::verify() {
  int64_t offset = getOffset(), bytes = getBytes();
  int64_t bufferBytes = getRingType().getBufferBytes();
  if (bytes <= 0 || bytes % 16 != 0 || offset < 0 || offset % 16 != 0 ||
      offset + bytes > bufferBytes)
    return emitOpError("fills whole 16-byte pieces inside a stage buffer of ")
           << bufferBytes << " bytes: offset and bytes must be multiples of "
           << "16, bytes positive, offset + bytes <= " << bufferBytes
           << ", got offset = " << offset << ", bytes = " << bytes;
  if (getThreads() <= 0)
    return emitOpError("needs a positive thread count, got ") << getThreads();
  return success();
}

/// The geometry ops' edges from an attention's mask: key ≤ row + δ + right
/// (causal: right = 0, which no right window widens), key ≥ row + δ −
/// left; δ only where there is an edge.
namespace {
struct MaskEdges {
  IntegerAttr left, right;
  MaskEdges(Builder &b, bool causal, int64_t windowLeft, int64_t windowRight) {
    if (std::optional<int64_t> edge = maskRightEdge(causal, windowRight))
      right = b.getI64IntegerAttr(*edge);
    if (windowLeft >= 0)
      left = b.getI64IntegerAttr(windowLeft);
  }
};
} // namespace

void VisibleKeyBlocksOp::build(OpBuilder &b, OperationState &state,
                               Value rowFirst, Value rowLast, Value kvLen,
                               Value diag, int64_t blockN, bool causal,
                               int64_t windowLeft, int64_t windowRight) {
  MaskEdges e(b, causal, windowLeft, windowRight);
  build(b, state, kvLen.getType(), kvLen.getType(), rowFirst, rowLast, kvLen,
        e.left || e.right ? diag : Value(), b.getI64IntegerAttr(blockN),
        e.left, e.right);
}

void FirstMaskedKeyBlockOp::build(OpBuilder &b, OperationState &state,
                                  Value rowFirst, Value kvLen, Value diag,
                                  int64_t blockN, bool causal,
                                  int64_t windowRight) {
  MaskEdges e(b, causal, /*windowLeft=*/-1, windowRight);
  build(b, state, kvLen.getType(), rowFirst, kvLen, e.right ? diag : Value(),
        b.getI64IntegerAttr(blockN), e.right);
}

void KeyBlockNeedsMaskOp::build(OpBuilder &b, OperationState &state,
                                Value block, Value rowFirst, Value rowLast,
                                Value kvLen, Value diag, int64_t blockN,
                                bool causal, int64_t windowLeft,
                                int64_t windowRight) {
  MaskEdges e(b, causal, windowLeft, windowRight);
  build(b, state, b.getI1Type(), block, rowFirst, rowLast, kvLen,
        e.left || e.right ? diag : Value(), b.getI64IntegerAttr(blockN),
        e.left, e.right);
}

void TileLoopOp::build(OpBuilder &b, OperationState &state, Value queryBlocks,
                       Value batch, ValueRange inits, int64_t heads,
                       int64_t ctas, bool pairs, bool longestFirst, Value units,
                       Value counter) {
  state.addOperands({queryBlocks, batch});
  if (units)
    state.addOperands(units);
  if (counter)
    state.addOperands(counter);
  state.addOperands(inits);
  Properties &props = state.getOrAddProperties<Properties>();
  props.heads = b.getI64IntegerAttr(heads);
  props.ctas = b.getI64IntegerAttr(ctas);
  if (pairs)
    props.pairs = b.getUnitAttr();
  if (longestFirst)
    props.longest_first = b.getUnitAttr();
  props.operandSegmentSizes = {1, 1, units ? 1 : 0, counter ? 1 : 0,
                               static_cast<int32_t>(inits.size())};
  Type i32 = b.getI32Type();
  state.addTypes({i32, i32});
  state.addTypes(inits.getTypes());
  SmallVector<Type> args(kTileArgs, i32);
  llvm::append_range(args, inits.getTypes());
  Region *body = state.addRegion();
  Block *block = new Block();
  body->push_back(block);
  block->addArguments(args,
                      SmallVector<Location>(args.size(), state.location));
}

LogicalResult TileLoopOp::verify() {
  // The expansion computes in i32: 2·ctas (a pair position's stride) and
  // the heads must fit.
  if (getHeads() < 1 || getHeads() > INT32_MAX || getCtas() < 1 ||
      getCtas() > INT32_MAX / 2)
    return emitOpError("needs 1 <= heads < 2^31 and 1 <= ctas < 2^30, got "
                       "heads ")
           << getHeads() << ", ctas " << getCtas();
  if (getPairs() && getLongestFirst())
    return emitOpError("takes pairs or longest_first, not both");
  if (getCounter() && !getUnits())
    return emitOpError("fetches units only to publish them: fetch needs a "
                       "units ring");
  if (getUnits() && getPairs())
    return emitOpError("has no dynamic order of pairs: take longest_first");
  if (getCounter() &&
      cast<LLVM::LLVMPointerType>(getCounter().getType()).getAddressSpace() !=
          1)
    return emitOpError("fetches from a counter in global memory "
                       "(!llvm.ptr<1>), got ")
           << getCounter().getType();
  Block &body = getBodyBlock();
  TypeRange inits = getInits().getTypes();
  if (body.getNumArguments() != kTileArgs + inits.size() ||
      !llvm::all_of(TypeRange(body.getArgumentTypes()).take_front(kTileArgs),
                    [](Type t) { return t.isInteger(32); }) ||
      TypeRange(getCarried().getTypes()) != inits)
    return emitOpError("body must take the tile's (m, h, b, ring position, "
                       "tile index) as i32, then the iter_args' types");
  if (TypeRange(getResults().getTypes()) != inits)
    return emitOpError("results after the ring position and tile count must "
                       "have the iter_args' types");
  auto yield =
      body.empty() ? TileYieldOp() : dyn_cast<TileYieldOp>(body.back());
  if (!yield)
    return emitOpError("body must end in fat.tile_yield");
  if (TypeRange(yield.getCarried().getTypes()) != inits)
    return yield.emitOpError("must yield the iter_args' types");
  return success();
}

void TileLoopOp::getAsmBlockArgumentNames(Region &region,
                                          OpAsmSetValueNameFn setNameFn) {
  static constexpr StringLiteral names[kTileArgs] = {
      "m_block", "head", "batch", "ring_base", "tile_index"};
  for (auto [arg, name] : llvm::zip(region.getArguments(), names))
    setNameFn(arg, name);
}

void TileLoopOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  setNameFn(getRingPosition(), "ring_position");
  setNameFn(getTiles(), "tiles");
  // The carried values as one group (a name starts a group).
  if (!getResults().empty())
    setNameFn(getResults().front(), "carried");
}

LogicalResult BiasKeysFillOp::verify() {
  Type elt = getElt();
  if (!elt.isBF16() && !elt.isF16())
    return emitOpError("elt must be bf16 or f16, got ") << elt;
  if (getKeys() % 8 != 0 || getKeys() > 256)
    return emitOpError("keys must be a multiple of 8 (8-row core matrices) "
                       "up to 256 (offsets exact in 16 bits), got ")
           << getKeys();
  return success();
}

LogicalResult BandStageOp::verify() {
  Block &body = getBody().front();
  if (failed(detail::verifyTermRegion(*this, body, 4, getCaptures(),
                                      "b, h, i, j", "the term T")))
    return failure();
  if (!ScoreBandOp::readsPositionsAsDifference(body))
    return emitOpError() << "expected the region to read the row and key "
                            "only through arith.subi of one from the other "
                            "(a term of j − i)";
  return success();
}

LogicalResult BandFragmentOp::verify() {
  auto t = dyn_cast<RankedTensorType>(getType());
  if (!t || !WgmmaFragmentAttr::isFragment(t) || t.getRank() != 2 ||
      t.getDimSize(0) != 64 ||
      t.getDimSize(1) != static_cast<int64_t>(getKeys()) ||
      !t.getElementType().isF32())
    return emitOpError() << "expected the f32 wgmma fragment of 64 rows and "
                         << getKeys() << " keys, got " << getType();
  if (getRows() % 64 != 0 || getKeys() % 16 != 0)
    return emitOpError() << "expected rows a multiple of 64 and keys of 16, "
                            "got "
                         << getRows() << " and " << getKeys();
  return success();
}
