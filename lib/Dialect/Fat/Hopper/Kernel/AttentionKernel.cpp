//===- AttentionKernel.cpp - the Hopper FlashAttention forward kernel -----===//
//
// Builds the kernel of one AttentionKernelConfig as an `llvm.func` inside a
// `gpu.module`, written with arith/scf on i32/f32 plus LLVM and NVVM ops; the
// fat-to-ptx pipeline lowers the rest. Parameters follow docs/kernel-abi.md.
// This file has the entry (parameters, shared memory, barriers, the role
// split); the stages are built in the files AttentionKernelBuilder.h lists.
//
// CTA = 1 producer warpgroup + block-m/64 (1 to 3) consumer warpgroups.
//
//   producer (thread 0)                 consumers (64 query rows each)
//   ------------------                  ------------------------------
//   TMA Q  ---------------------------> wait q
//   for j: wait emptyK[s], TMA K_j ---> S_j = Q·K_jᵀ      then arrive emptyK[s]
//          wait emptyV[s], TMA V_j ---> O += P_j·V_j      then arrive emptyV[s]
//
// with s = (j − j0) mod stages and the parity flipping each time s wraps:
// Q, K and V are rings (!fat.ring, FatKernelOps.td) that fat.ring_acquire /
// ring_wait / ring_release hand between the roles. K and V have rings of
// their own, so K_{j+1} can land while V_j is read.
//
// Both roles follow the tensorized KV loop (cfg.kvLoop): the producer copies
// the blocks its GEMMs read from shared memory, the consumers rewrite its
// ops onto their fragment tiles (the plain loop all of them in the loop's
// order; the overlapped schedules those from S to P).
//
// Persistent kernels (KernelSchedule::persistent) wrap both roles in the
// same loop over work units u ≡ blockIdx.x (mod num-sms), a query block or,
// with a causal mask, a pair of them (fat.tile_loop); the ring index runs
// on across tiles (s = (n + j − j0) mod stages, n = blocks of earlier
// tiles), and Q gets an empty barrier: the consumers release it after the
// tile's last S = Q·Kᵀ, the producer then loads a later tile's Q into it.
// With two Q buffers (qBuffers, where shared memory allows) tile t uses
// buffer t mod 2, so tile t+1's Q lands while tile t still runs. With the
// dynamic tile scheduler the producer thread takes each next unit from a
// counter in global memory and publishes it in a ring of its own, which
// the consumers read before each tile (fat.tile_loop's dynamic order).
//
// Consumer schedules (KernelSchedule):
//   plain     for j: S_j = QK_j; wait; softmax_j; O = α·O; O += P_j·V_j; wait
//   overlap   S_0 = QK_0; wait; softmax_0
//             for j ≥ 1: issue S_j = QK_j, issue O += P_{j−1}·V_{j−1}
//                        wait S_j (wait_group 1); softmax_j (the P·V runs)
//                        wait P·V (wait_group 0); O = α_j·O
//             O += P_last·V_last
//             (the plain loop's step with the P·V in stage 1, expanded by
//             LoopPipeline, SoftwarePipeline.h)
//   pingpong  (with overlap) the consumer warpgroups issue their GEMMs in
//             turns — bar.sync on their own named barrier before issuing,
//             bar.arrive on the next one's after — so the tensor cores work
//             for one warpgroup while the others run their softmax.
//   tile overlap (persistent, with overlap) the loops of a CTA's tiles are
//             chained: tile t+1's first turn issues S_0 = QK_0 together
//             with tile t's last O += P_last·V_last, and tile t's O is
//             stored after softmax_0 of tile t+1 (buildOverlappedTiles).
//
//===----------------------------------------------------------------------===//

#include "AttentionKernelBuilder.h"

#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"

#include <cmath>

using namespace mlir;
using namespace mlir::fat;
using namespace mlir::fat::hopper;

void AttentionKernelBuilder::buildSharedMemoryAndBarriers(
    LLVM::GlobalOp dynamicSmem) {
  // Align the dynamic shared memory base to 1024 bytes at run time: the
  // 128B swizzle pattern and the wgmma descriptors (base_offset 0) assume
  // tiles start on 1024-byte boundaries. The manifest requests 1024 bytes of
  // slack for this.
  Value raw = LLVM::AddressOfOp::create(b, dynamicSmem);
  Value rawAddr = LLVM::PtrToIntOp::create(b, b.getI64Type(), raw);
  Value pad = arith::AndIOp::create(
      b, arith::SubIOp::create(b, i64Const(b, 1024),
                               arith::AndIOp::create(b, rawAddr,
                                                     i64Const(b, 1023))),
      i64Const(b, 1023));
  v.smem = buildByteOffset(b, raw, pad);
  v.smemAddr = arith::AddIOp::create(b, rawAddr, pad);

  // The rings of KernelModel.h's layout, their barriers one after the
  // other: Q (a persistent CTA's consumers give each buffer back after the
  // tile's last S = Q·Kᵀ; otherwise it is filled once), K and V (given
  // back by every consumer thread).
  int64_t consumers = 128 * cfg.numConsumerWarpgroups();
  int64_t barriers = cfg.barrierOffset();
  auto makeRing = [&](int64_t stages, int64_t offset, int64_t bytes,
                      int64_t releases) {
    auto type = RingType::get(b.getContext(), stages, offset, bytes,
                              barriers, releases);
    barriers += type.getBarrierBytes();
    return RingCreateOp::create(b, type, v.smem).getResult();
  };
  v.qRing = makeRing(cfg.qBuffers, 0, cfg.qBytes(),
                     cfg.schedule.persistent ? consumers : 0);
  v.kRing = makeRing(cfg.stages, cfg.kOffset(), cfg.kStageBytes(), consumers);
  v.vRing = makeRing(cfg.stages, cfg.vOffset(), cfg.vStageBytes(), consumers);
  if (cfg.scoreBand)
    v.bandRing =
        makeRing(cfg.stages, cfg.bandOffset(), cfg.bandStageBytes(), consumers);
  if (cfg.schedule.dynamicTiles)
    v.unitsRing =
        makeRing(AttentionKernelConfig::kUnitStages, cfg.unitsOffset(),
                 AttentionKernelConfig::kUnitStageBytes, consumers);
  assert(barriers == cfg.barrierOffset() + 8 * cfg.numBarriers() &&
         "the rings' barriers are the layout's");

  // Thread 0 initializes the barriers.
  Value isThread0 = cmp(arith::CmpIPredicate::eq, v.tid, c32(0));
  auto ifOp = scf::IfOp::create(b, isThread0, /*withElseRegion=*/false);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
    for (Value ring : {v.qRing, v.kRing, v.vRing, v.bandRing, v.unitsRing})
      if (ring)
        RingInitOp::create(b, ring);
    // Make the initialization visible to the async proxy (TMA) before use.
    NVVM::FenceMbarrierInitOp::create(b);
  }
  if (cfg.schedule.rowsumMma)
    buildOnesChunks();
  if (cfg.biasQuery)
    buildBiasKeys();
  NVVM::BarrierOp::create(b);
}

void AttentionKernelBuilder::buildBiasKeys() {
  // The key offsets r of linear-bias=mma, the same tile for every block.
  v.biasKeysAddr =
      arith::AddIOp::create(b, v.smemAddr, i64Const(b, cfg.biasKeysOffset()));
  BiasKeysFillOp::create(b, buildByteOffset(b, v.smem, cfg.biasKeysOffset()),
                         v.tid, b.getI64IntegerAttr(cfg.blockN),
                         b.getI64IntegerAttr(cfg.numThreads()),
                         TypeAttr::get(inputType()));
}

void AttentionKernelBuilder::buildOnesChunks() {
  // The ones chunk after V's columns in every V stage, 1.0 pairs of the
  // input type: the swizzle is irrelevant, every byte of it holds 1.0.
  uint32_t one = cfg.isF16 ? 0x3C00u : 0x3F80u;
  RingFillOp::create(b, v.vRing, v.tid, cfg.vLoadBytes(),
                     cfg.onesChunkBytes(), cfg.numThreads(),
                     static_cast<int32_t>(one | (one << 16)));
}

void AttentionKernelBuilder::build(LLVM::LLVMFuncOp func,
                                   LLVM::GlobalOp dynamicSmem) {
  Block &entry = func.getBody().front();
  auto args = entry.getArguments();
  unsigned a = 0;
  v.qMap = args[a++];
  v.kMap = args[a++];
  v.vMap = args[a++];
  v.oPtr = args[a++];
  v.oStrideB = args[a++];
  v.oStrideH = args[a++];
  v.oStrideS = args[a++];
  if (cfg.lse) {
    v.lsePtr = args[a++];
    v.lseStrideB = args[a++];
    v.lseStrideH = args[a++];
  }
  v.seqQ = args[a++];
  v.seqKV = args[a++];
  v.diag = args[a++];
  v.scaleLog2e = args[a++];
  v.softmaxScale = v.scaleLog2e;
  if (cfg.scoreMod)
    v.softmaxScale = f32Const(b, cfg.modSoftmaxScale);
  // A score region reads scale·s; linear-bias=mma's columns and
  // relative-bias=accumulator's terms divide by the scale (their scores
  // stay unscaled).
  if (cfg.scoreMod || cfg.biasQuery || cfg.scoreBand || cfg.keyWeights)
    v.scoreScale = arith::MulFOp::create(b, v.scaleLog2e, f32Const(b, M_LN2));
  if (cfg.schedule.persistent)
    v.batchCount = args[a++];
  if (cfg.schedule.dynamicTiles)
    v.tileCounter = args[a++];
  v.captures.assign(args.begin() + a, args.end());

  v.tid = NVVM::ThreadIdXOp::create(b, b.getI32Type());
  // The warpgroup index, broadcast from lane 0 so that the role branch is
  // warp-uniform for ptxas.
  v.warpgroup =
      buildWarpBroadcast(b, arith::DivUIOp::create(b, v.tid, c32(128)));

  buildSharedMemoryAndBarriers(dynamicSmem);
  if (!cfg.schedule.persistent)
    buildBlockCoordinates();

  // Register split (setmaxnreg): with two consumer warpgroups the 384
  // threads start with 168 registers each, with three the 512 start with
  // 128; the producer drops to cfg.producerRegisters() so the consumers
  // can rise to cfg.consumerRegisters(). With one consumer warpgroup every
  // thread already has up to 255.
  std::optional<std::pair<int32_t, int32_t>> registers;
  if (cfg.numConsumerWarpgroups() > 1)
    registers = {static_cast<int32_t>(cfg.producerRegisters()),
                 static_cast<int32_t>(cfg.consumerRegisters())};
  auto roles = WarpSpecializeOp::create(b, v.warpgroup, registers);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToEnd(&roles.getProducerBlock());
    buildProducer();
    b.setInsertionPointToEnd(&roles.getConsumerBlock());
    buildConsumer();
  }
  LLVM::ReturnOp::create(b, ValueRange{});
}

gpu::GPUModuleOp
mlir::fat::buildAttentionKernelModule(OpBuilder &builder, Location loc,
                                      ModuleOp parent,
                                      const AttentionKernelConfig &cfg) {
  OpBuilder::InsertionGuard guard(builder);
  MLIRContext *ctx = builder.getContext();
  builder.setInsertionPointToEnd(parent.getBody());
  std::string name = cfg.kernelName();
  auto module = gpu::GPUModuleOp::create(builder, loc, name);
  builder.setInsertionPointToStart(module.getBody());

  // Dynamic shared memory: an external zero-sized array in address space 3.
  auto dynamicSmem = LLVM::GlobalOp::create(
      builder, loc, LLVM::LLVMArrayType::get(builder.getI8Type(), 0),
      /*isConstant=*/false, LLVM::Linkage::External, "__fat_dynamic_smem",
      Attribute(), /*alignment=*/1024, kSharedSpace);

  // Parameters, in the order of the manifest (KernelConfig.cpp).
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  auto globalPtr = LLVM::LLVMPointerType::get(ctx, kGlobalSpace);
  Type i32 = builder.getI32Type(), i64 = builder.getI64Type();
  SmallVector<Type> params{ptr, ptr, ptr, globalPtr, i64, i64, i64};
  if (cfg.lse)
    params.append({globalPtr, i64, i64});
  params.append({i32, i32, i32, builder.getF32Type()});
  if (cfg.schedule.persistent)
    params.push_back(i32); // B
  if (cfg.schedule.dynamicTiles)
    params.push_back(globalPtr);                     // tile_counter
  params.append(cfg.captureTypes.size(), globalPtr); // capture<i>

  auto funcType =
      LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), params);
  auto func = LLVM::LLVMFuncOp::create(builder, loc, name, funcType);
  func->setAttr(NVVM::NVVMDialect::getKernelFuncAttrName(),
                builder.getUnitAttr());
  func->setAttr(NVVM::NVVMDialect::getMaxntidAttrName(),
                builder.getDenseI32ArrayAttr(
                    {static_cast<int32_t>(cfg.numThreads()), 1, 1}));
  // minctasm = 1 (with maxntid) lets ptxas honour setmaxnreg.
  func->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                builder.getI32IntegerAttr(1));
  // Tensor maps: 128-byte CUtensorMaps passed by value as grid constants
  // (`.param .align 64 .b8 [128]`), which cp.async.bulk.tensor reads in place.
  for (unsigned i = 0; i < 3; ++i) {
    func.setArgAttr(i, LLVM::LLVMDialect::getByValAttrName(),
                    TypeAttr::get(LLVM::LLVMArrayType::get(i64, 16)));
    func.setArgAttr(i, LLVM::LLVMDialect::getAlignAttrName(),
                    builder.getI64IntegerAttr(64));
    func.setArgAttr(i, NVVM::NVVMDialect::getGridConstantAttrName(),
                    builder.getUnitAttr());
  }
  Block *entry = func.addEntryBlock(builder);
  ImplicitLocOpBuilder b(loc, builder);
  b.setInsertionPointToStart(entry);
  AttentionKernelBuilder(b, cfg).build(func, dynamicSmem);
  return module;
}

void mlir::fat::registerKernelTranslations(DialectRegistry &registry) {
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registerBuiltinDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
}
