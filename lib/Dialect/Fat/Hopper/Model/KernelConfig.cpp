//===- KernelConfig.cpp - static configuration and manifest of a kernel ---===//
//
// What a fat.attention op asks of the Hopper kernel, the checks that say
// which ops it can serve, and the launch manifest of docs/kernel-abi.md.
//
//===----------------------------------------------------------------------===//

#include "fa-t/Dialect/Fat/Hopper/KernelModel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Matchers.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/xxhash.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;
using namespace mlir::fat;

#ifndef FAT_VERSION_STRING
#error "FAT_VERSION_STRING must be defined by the build"
#endif

bool mlir::fat::isSupportedPTXVersion(int64_t version) {
  return (version >= 80 && version <= 88) || version == 90;
}

bool mlir::fat::isSupportedHeadDim(int64_t d) {
  return d == 64 || d == 128 || d == 256;
}

bool mlir::fat::isSupportedBlockN(int64_t blockN) {
  return blockN >= 64 && blockN <= 192 && blockN % 16 == 0;
}

int64_t mlir::fat::defaultBlockN(const TileProblem &problem,
                                 const KernelSchedule &schedule) {
  int64_t d = problem.maxHeadDim();
  // Above D = 128, 128 keys overflow the registers (S and O together) and
  // two stages of them the shared memory. 80 keys rather than 64: the
  // Q·Kᵀ's operand reads per flop fall by a fifth (64 keys need all of the
  // SM's shared-memory bandwidth, perf log's static model) and the O
  // rescale is paid once per 80 keys; measured +6…12% at S ≥ 1k, equal at
  // 512 (perf log run 15). Two stages still fit: 64 KB of Q + 2 × 80 KB.
  // Tuned for 512 keys (1k under the causal mask, whose tiles see half the
  // keys on average), 64-key blocks divide the keys where 80 leave a
  // ragged seventh block (9% of the work masked away): with O staged
  // +2.4% / +4.9% at 512 (causal +2.2% at 1k; −2.4% without a mask at 1k,
  // −2% at 2k), perf log run 53.
  if (d > 128) {
    bool known = problem.seqLen > 0;
    if (known && (problem.seqLen <= 512 ||
                  (problem.causal && problem.seqLen <= 1024)))
      return 64;
    return 80;
  }
  // Wide blocks halve the per-block overheads (the row-max reduction's
  // shuffles, the rescale of O, the barrier waits) per key, but a sequence
  // ends in a ragged block and there are fewer, longer tiles to spread over
  // the SMs. With persistent CTAs hiding the per-tile start, 176 keys gain
  // +1…6% at D = 128 without a mask over 128 keys with the tensor-core row
  // sums (perf log run 17), whose ones chunks do not fit beside them; at
  // D = 64 the row sums win. Below 4k keys 128-key blocks with two Q
  // buffers (which do not fit beside 176) gained +2…5% instead (run 26);
  // with O staged through Q (which pays with two buffers only, at D = 128)
  // 160-key blocks with two buffers gain +1.4…1.8% over both at 2k…4k
  // keys (runs 49–50).
  // Under the causal mask the diagonal blocks' masking grows with the block
  // and wide blocks lose at short S (run 16), but from 4k keys 160-key
  // blocks gain +5…7% (run 26).
  // Score or mask regions that compute with positions keep 128: their
  // per-element index math beside 80…88 scores per thread spilled 32…780
  // bytes at 160 / 176 keys and none or 48 at 128, which measured +13%
  // (ALiBi), +32…66% (bias table) at D = 128 (perf log run 86); the
  // soft-cap, which reads the score only, is equal.
  if (problem.positional)
    return 128;
  // linear-bias=mma's key columns take the second Q buffer's room beside
  // 160 keys: causal ALiBi at D = 128 measured 128 keys with two buffers
  // +3.0…3.4% over 160 with one at 4k, and 160 +1.1…2.1% at 16k (run 116b).
  bool known = problem.seqLen > 0;
  if (problem.biasColumns && d > 64 && d <= 128 && known &&
      problem.seqLen < 8192)
    return 128;
  bool vectorPersistent = schedule.persistent && !schedule.rowsumMma;
  if (d > 64 && !problem.masked() && vectorPersistent) {
    if (known && problem.seqLen < 2048)
      return 128;
    return known && problem.seqLen < 8192 ? 160 : 176;
  }
  if (d > 64 && problem.causal && !problem.windowed && vectorPersistent &&
      known && problem.seqLen >= 4096)
    return 160;
  return 128;
}

int64_t mlir::fat::defaultBlockM(const TileProblem &problem,
                                 const KernelSchedule &schedule) {
  // 192 query rows, three consumer warpgroups (FlashAttention-3's D = 64
  // tile): a third warp per sub-partition to issue while the others wait on
  // their softmax's dependency chains (ncu's top stall, perf log run 23),
  // and each K/V block read from shared memory for 192 rows instead of 128.
  // Measured without a mask (run 25, tensor-core row sums, persistent):
  // +13…19% from S = 2k, +2% at 1k, equal at 512. Under a causal mask +5…8%
  // from 8k, ±2% at 4k, but −11…35% at S ≤ 2k — the diagonal's masked
  // blocks grow with the tile, and pairs of 192-row blocks are coarse units
  // for 3–11 blocks per head. With the dynamic tile scheduler (single
  // query blocks from a counter, longest first: choosePipeline's rule for
  // causal 192-row tiles) they gain +4.7…4.8% at 2k keys over two
  // warpgroups with turns (runs 139b, 140) and +4…8% from 4k; at 1k they
  // lose 9% (5⅓ blocks per head), so causal kernels take 192 rows when
  // tuned for 2k keys or more; windows keep 128. 160 registers per consumer
  // thread hold S, P and O only at D = 64; forced turns keep 128 rows (the
  // automatic turns are for two warpgroups, choosePipeline). Score or mask
  // regions that compute with positions need more: ALiBi, a bias table and
  // block-sparse masks spilled 8…692 bytes in 160 registers and none in 240,
  // and measured +6% (ALiBi), +32…55% (block-sparse document / prefix masks),
  // +62% (bias table) with 128 rows (perf log run 83); a soft-cap, which reads
  // the score only, keeps 192 without a mask (−1…2% with 128, runs 83 and 113).
  // Under a causal mask a bounded region's kernel (the soft-cap: tanh and
  // ex2 per score, the reference at the bound) takes two warpgroups and
  // turns at every length: +13% at 4k keys (run 113), +10% at 16k (run
  // 117).
  // linear-bias=mma's query columns (a 64 × 16 A fragment per warpgroup)
  // spilled 32 bytes in 160 registers (ptxas, ALiBi at D = 64 causal) and
  // none in 240: two warpgroups (192 rows measured 0.84…0.90×, run 117).
  // ALiBi's vector form has since lost its per-element index math (rows at
  // the origin, runs 97–99) and fits three (linearBiasOnThreeWarpgroups).
  if (problem.maxHeadDim() > 64 || schedule.pingpong || problem.windowed ||
      (problem.positional && !linearBiasOnThreeWarpgroups(problem)) ||
      problem.biasColumns || (problem.causal && problem.boundedScores))
    return 128;
  if (!problem.causal || problem.seqLen >= 2048)
    return 192;
  return 128;
}

/// Where ALiBi's forms beyond the bias columns were measured (perf log runs
/// 142 and 147): a linear bias as the only positional region, no LSE (its
/// rows would miss a constant), causal without a window, tuned for Skv ≥
/// 4096. Both choices below stay inside it.
static bool inMeasuredLinearBiasRegime(const TileProblem &problem) {
  return problem.linearBias && !problem.positionalMask && !problem.writesLse &&
         problem.causal && !problem.windowed && problem.seqLen >= 4096;
}

bool mlir::fat::linearBiasOnThreeWarpgroups(const TileProblem &problem) {
  // ALiBi's vector form evaluates its region once per key with every row at
  // its origin (one FFMA per score, no per-element index math), so three
  // consumer warpgroups hold it in 160 registers without spills where the
  // bias columns spill 32 bytes. Under a causal mask at D = 64 it then runs
  // the plain kernel's schedule (192 rows, the dynamic tile scheduler, the
  // tile overlap): +1.9…3.8% at 4k keys and +8.3…9.5% at 16k over the bias
  // columns with two warpgroups and turns (perf log run 142; the vector form
  // with two warpgroups 0.94…0.96×). Not measured below 4k keys nor
  // without the mask, which keep the columns. A kernel that writes the LSE
  // (always the vector form) evaluates the region per element; ptxas shows
  // no spills with 192 rows either, but it was neither timed nor run on a
  // GPU so: 128 rows.
  return inMeasuredLinearBiasRegime(problem) && problem.maxHeadDim() <= 64;
}

bool mlir::fat::linearBiasAsWeights(const TileProblem &problem) {
  // The weights on P cost one packed multiply per two scores off the
  // softmax's path, where the vector form pays an FFMA per score on it and
  // the bias columns a 1/16 longer Q·Kᵀ: under a causal mask at 4k and 16k
  // keys 1.03…1.04× the columns at D = 128 and 1.13…1.16× the vector form's
  // 192-row kernel at D = 64, with the float64 error of both (perf log run
  // 147). Their offsets leave the LSE a constant per row short, as the
  // columns'. Not measured without the mask, with a window or below 4k keys.
  int64_t d = problem.maxHeadDim();
  return inMeasuredLinearBiasRegime(problem) && (d == 64 || d == 128);
}

bool mlir::fat::isSupportedBlockM(int64_t blockM) {
  return blockM == 64 || blockM == 128 || blockM == 192;
}

bool mlir::fat::isSupportedStages(int64_t stages) {
  return stages >= 1 && stages <= 4;
}

bool mlir::fat::isSupportedBlocking(int64_t blockM, int64_t blockN,
                                    int64_t stages) {
  return isSupportedBlockM(blockM) &&
         (blockN == 0 || isSupportedBlockN(blockN)) &&
         isSupportedStages(stages);
}

AttentionSignature AttentionSignature::of(AttentionOp op) {
  AttentionSignature sig;
  sig.query = cast<ShapedType>(op.getQuery().getType());
  sig.key = cast<ShapedType>(op.getKey().getType());
  sig.value = cast<ShapedType>(op.getValue().getType());
  sig.output = cast<ShapedType>(op.getOutput().getType());
  sig.layout = op.getLayout();
  sig.causal = op.getCausal();
  sig.windowLeft = op.getWindowLeft();
  sig.windowRight = op.getWindowRight();
  sig.lse = static_cast<bool>(op.getLse());
  sig.modifications = modificationKey(&op.getScore(), &op.getMask());
  llvm::append_range(sig.captureTypes, op.getCaptures().getTypes());
  sig.positionalRegions = readsPositions(&op.getScore(), &op.getMask(),
                                         op.getKvRanges().has_value());
  sig.positionalMask =
      readsPositions(nullptr, &op.getMask(), op.getKvRanges().has_value());
  sig.dataBlocks = keyBlocksFollowData(&op.getMask(), op.getKvRanges());
  sig.linearBias = isLinearBias(op.getScore(), sig.query.getElementType());
  sig.boundedScores =
      boundsScores(op.getScore(), sig.query.getElementType());
  return sig;
}

/// [lo, hi] of an f32 value of a score region (nullopt: unbounded).
using Interval = std::optional<std::pair<double, double>>;

static Interval scale(Interval r, double k) {
  if (!r)
    return std::nullopt;
  double a = r->first * k, b = r->second * k;
  return std::make_pair(std::min(a, b), std::max(a, b));
}

/// The range of `v` whatever the region's arguments are: constants, tanh,
/// and sums, differences, negations and constant multiples and quotients
/// of bounded values.
static Interval rangeOf(Value v) {
  FloatAttr k;
  if (matchPattern(v, m_Constant(&k)))
    return std::make_pair(k.getValueAsDouble(), k.getValueAsDouble());
  Operation *def = v.getDefiningOp();
  if (!def)
    return std::nullopt;
  if (isa<math::TanhOp>(def))
    return std::make_pair(-1.0, 1.0);
  if (auto neg = dyn_cast<arith::NegFOp>(def))
    return scale(rangeOf(neg.getOperand()), -1.0);
  if (isa<arith::AddFOp, arith::SubFOp>(def)) {
    Interval a = rangeOf(def->getOperand(0)), b = rangeOf(def->getOperand(1));
    if (!a || !b)
      return std::nullopt;
    if (isa<arith::SubFOp>(def))
      b = scale(b, -1.0);
    return std::make_pair(a->first + b->first, a->second + b->second);
  }
  if (auto mul = dyn_cast<arith::MulFOp>(def)) {
    for (int i = 0; i < 2; ++i)
      if (matchPattern(mul->getOperand(i), m_Constant(&k)))
        return scale(rangeOf(mul->getOperand(1 - i)), k.getValueAsDouble());
    return std::nullopt;
  }
  if (auto div = dyn_cast<arith::DivFOp>(def);
      div && matchPattern(div.getRhs(), m_Constant(&k)) &&
      k.getValueAsDouble() != 0.0)
    return scale(rangeOf(div.getLhs()), 1.0 / k.getValueAsDouble());
  return std::nullopt;
}

std::optional<std::pair<double, double>>
mlir::fat::scoreRegionRange(Region &score) {
  if (score.empty())
    return std::nullopt;
  return rangeOf(score.front().getTerminator()->getOperand(0));
}

bool mlir::fat::boundsScores(Region &score, Type element) {
  std::optional<std::pair<double, double>> range = scoreRegionRange(score);
  return element.isBF16() && range &&
         M_LOG2E * (range->second - range->first) <= kMaxBoundSpan;
}

/// Whether `v` (a value of a region's body) is computed without `args`.
static bool independentOf(Value v, ValueRange args) {
  SmallVector<Value> work{v};
  llvm::SmallPtrSet<Value, 8> seen;
  while (!work.empty()) {
    Value x = work.pop_back_val();
    if (!seen.insert(x).second)
      continue;
    if (llvm::is_contained(args, x))
      return false;
    if (Operation *def = x.getDefiningOp())
      llvm::append_range(work, def->getOperands());
  }
  return true;
}

FailureOr<PositionTerm> mlir::fat::matchPositionTerm(Block &body,
                                                     std::string &why) {
  auto fail = [&](StringRef reason) {
    why = reason.str();
    return failure();
  };
  Value score = body.getArgument(0), row = body.getArgument(3),
        key = body.getArgument(4);
  // The row's one use: i − j or j − i, used once, converted to f32.
  if (!row.hasOneUse())
    return fail("the row is read more than once");
  auto diff = dyn_cast<arith::SubIOp>(*row.getUsers().begin());
  if (!diff || !llvm::is_contained(diff->getOperands(), key) ||
      diff.getLhs() == diff.getRhs() || !diff->hasOneUse())
    return fail("the row is not in i − j");
  Operation *conv = *diff->getUsers().begin();
  if (isa<arith::IndexCastOp>(conv) && conv->hasOneUse())
    conv = *conv->getUsers().begin();
  if (!isa<arith::SIToFPOp>(conv) || !conv->hasOneUse() ||
      !conv->getResult(0).getType().isF32())
    return fail("i − j is not converted to f32");
  // B·float(i − j), used once, added to or subtracted from the yield.
  auto mul = dyn_cast<arith::MulFOp>(*conv->getUsers().begin());
  if (!mul || !mul->hasOneUse())
    return fail("float(i − j) is not scaled");
  PositionTerm term;
  Value scaled = mul.getResult();
  term.factor =
      mul.getLhs() == conv->getResult(0) ? mul.getRhs() : mul.getLhs();
  if (!independentOf(term.factor, {score, row, key}))
    return fail("the factor reads a position");
  Operation *sum = *mul->getUsers().begin();
  if (!isa<arith::AddFOp, arith::SubFOp>(sum) ||
      body.getTerminator()->getOperand(0) != sum->getResult(0))
    return fail("the term is not added last");
  bool termSubtracted = isa<arith::SubFOp>(sum) && sum->getOperand(1) == scaled;
  term.rest =
      sum->getOperand(0) == scaled ? sum->getOperand(1) : sum->getOperand(0);
  term.restNegated = isa<arith::SubFOp>(sum) && sum->getOperand(0) == scaled;
  // y = rest ± B·(i − j): the coefficient on (j − i) is +B where exactly
  // one of "i − j" and "subtracted" holds.
  bool rowFirst = diff.getLhs() == row;
  term.negated = rowFirst != termSubtracted;
  return term;
}

bool mlir::fat::isLinearBias(Region &score, Type element) {
  if (score.empty() || !element || !element.isBF16())
    return false;
  Block &body = score.front();
  std::string why;
  FailureOr<PositionTerm> term = matchPositionTerm(body, why);
  return succeeded(term) && term->rest == body.getArgument(0) &&
         !term->restNegated;
}

bool mlir::fat::readsPositions(Region *score, Region *mask, bool kvRanges) {
  // Block arguments (score,) b, h, i, j: i and j follow b and h.
  auto reads = [](Region *region, unsigned first) {
    if (!region || region->empty())
      return false;
    Block &body = region->front();
    return !body.getArgument(first).use_empty() ||
           !body.getArgument(first + 1).use_empty();
  };
  return kvRanges || reads(score, 3) || reads(mask, 2);
}

bool mlir::fat::keyBlocksFollowData(Region *mask,
                                    std::optional<uint64_t> kvRanges) {
  if (!kvRanges || !mask || mask->empty())
    return false;
  // Block arguments b, h, i, j, then the captures.
  auto captures = mask->front().getArguments().drop_front(4);
  return llvm::any_of(llvm::enumerate(captures), [&](auto capture) {
    return capture.index() != *kvRanges && !capture.value().use_empty();
  });
}

std::string mlir::fat::modificationKey(Region *score, Region *mask,
                                       double outputScale) {
  // The bodies' structure: each op's name, attributes and result types,
  // its operands as the positions of the values they are (block arguments
  // first), region by region. Printing would name values by context.
  std::string text;
  llvm::raw_string_ostream os(text);
  bool any = false;
  // linear-bias=weights' region yields the factor G as the bias columns'
  // does: its own tag keeps the two kernels' names apart.
  StringRef scoreTag =
      score && !score->empty() && isa<KeyWeightsOp>(score->getParentOp())
          ? "weights"
          : "score";
  for (auto [tag, region] :
       {std::pair<StringRef, Region *>{scoreTag, score}, {"mask", mask}}) {
    if (!region || region->empty())
      continue;
    any = true;
    llvm::DenseMap<Value, unsigned> position;
    os << tag << "(";
    // Key ranges change the kernel (blocks skipped), not only the body.
    if (auto ranges = region->getParentOp()->getAttrOfType<IntegerAttr>(
            "kv_ranges"))
      os << "kv_ranges=" << ranges.getInt() << ",";
    region->walk([&](Block *block) {
      for (BlockArgument arg : block->getArguments()) {
        position[arg] = position.size();
        os << arg.getType() << ",";
      }
    });
    os << ")";
    region->walk<WalkOrder::PreOrder>([&](Operation *op) {
      os << op->getName() << op->getAttrDictionary() << "(";
      for (Value operand : op->getOperands())
        os << (position.count(operand) ? position.lookup(operand) : ~0u)
           << ",";
      os << ")->";
      for (Value result : op->getResults()) {
        position[result] = position.size();
        os << result.getType() << ",";
      }
      os << ";";
    });
  }
  if (!any)
    return "";
  // A score region's output factor moved into the softmax constant
  // (foldScoreOutputScale) is part of the kernel, not of the body.
  if (outputScale != 1.0)
    os << "output_scale=" << llvm::formatv("{0:e}", outputScale).str();
  return llvm::utohexstr(llvm::xxh3_64bits(text), /*LowerCase=*/true)
      .substr(0, 8);
}

unsigned AttentionSignature::physicalDim(unsigned logical) const {
  return AttentionOp::physicalDim(layout, logical);
}

int64_t AttentionSignature::tunedSeqLen(int64_t option) const {
  if (option > 0)
    return option;
  int64_t skv = key.getDimSize(physicalDim(AttentionOp::kSeqDim));
  return ShapedType::isDynamic(skv) ? 0 : skv;
}

/// An error about the attention at `op` — the fat.attention, or the loop
/// fat-tile made of it, which keeps its location — in the words of the op.
static InFlightDiagnostic attentionError(Operation *op, const Twine &message) {
  return emitError(op->getLoc(), "'fat.attention' op ") << message;
}

FailureOr<AttentionKernelConfig>
mlir::fat::getAttentionKernelConfig(Operation *op,
                                    const AttentionSignature &sig,
                                    Attribute schedule,
                                    const HopperKernelOptions &passOptions) {
  // A fat.schedule written on the IR (by hand, or by an earlier run) wins
  // over the pass options.
  HopperKernelOptions options = passOptions;
  AttentionKernelConfig config;
  if (failed(applyScheduleAttr(op, schedule, options, &config.scheduleForced)))
    return failure();
  ShapedType qType = sig.query, kType = sig.key, vType = sig.value,
             oType = sig.output;

  // Score and mask regions reach the kernel as the tensorized loop's
  // fat.score_mod / fat.mask_mod on each block's scores; the tensors they
  // read are kernel parameters (their addresses), read row-major with each
  // index clamped into the shape, so the shape must be static and its
  // offsets 32-bit (the kernel's index width).
  for (auto [i, type] : llvm::enumerate(sig.captureTypes)) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    Type elt = tensor ? tensor.getElementType() : Type();
    bool element = elt && (elt.isF32() || elt.isF16() || elt.isBF16() ||
                           elt.isInteger(1) || elt.isInteger(8) ||
                           elt.isInteger(16) || elt.isInteger(32) ||
                           elt.isInteger(64));
    if (!tensor || !tensor.hasStaticShape() || !element ||
        tensor.getNumElements() >= (int64_t(1) << 31))
      return attentionError(op, "capture #")
             << i << " has type " << type
             << ": the Hopper kernel reads captured tensors of static shape "
                "with fewer than 2^31 elements of f32, f16, bf16, i1, i8, "
                "i16, i32 or i64 (scalars and dynamic shapes run on the CPU, "
                "--fat-to-cpu)";
    config.captureTypes.push_back(tensor);
  }
  config.modifications = sig.modifications;
  if (options.sm != "sm_90a")
    return attentionError(op, "the Hopper kernel targets sm_90a only (got sm='")
           << options.sm << "'): it needs wgmma and setmaxnreg";
  if (!isSupportedPTXVersion(options.ptxVersion))
    return attentionError(op, "ptx = ")
           << options.ptxVersion << " is not supported; supported: "
           << kSupportedPTXVersions << " (PTX ISA 8.0 and newer, as far as "
           << "LLVM's NVPTX backend knows them)";

  Type elt = qType.getElementType();
  if (!elt.isBF16() && !elt.isF16())
    return attentionError(op, "the GPU path supports bf16 and f16 inputs, got ")
           << elt << " (f32 is served by the reference path, --fat-to-cpu)";
  for (ShapedType t : {kType, vType, oType})
    if (t.getElementType() != elt)
      return attentionError(op, "the GPU path needs Q, K, V and O of one element "
                            "type, got ")
             << elt << " and " << t.getElementType();
  config.isF16 = elt.isF16();

  unsigned headPos = sig.physicalDim(AttentionOp::kHeadDim);
  unsigned featPos = sig.physicalDim(AttentionOp::kFeatureDim);
  config.numHeadsQ = qType.getDimSize(headPos);
  config.numHeadsKV = kType.getDimSize(headPos);
  config.headDim = qType.getDimSize(featPos);
  config.headDimV = vType.getDimSize(featPos);
  if (ShapedType::isDynamic(config.numHeadsQ) ||
      ShapedType::isDynamic(config.numHeadsKV))
    return attentionError(op, "the GPU kernel needs static head counts Hq and Hkv "
                          "(they fix the grid and the GQA group size)");
  if (!isSupportedHeadDim(config.headDim) ||
      !isSupportedHeadDim(config.headDimV))
    return attentionError(op, "head dims D = ")
           << config.headDim << ", Dv = " << config.headDimV
           << " are not supported by the Hopper kernel; supported: 64, 128, "
              "256 (whole 128-byte swizzle rows of 16-bit elements)";

  config.layout = sig.layout;
  config.causal = sig.causal;
  config.windowLeft = sig.windowLeft;
  config.windowRight = sig.windowRight;
  config.lse = sig.lse;

  // Launch limits the grid puts on static sizes: heads go to gridDim.y
  // (non-causal) or .x, the batch to gridDim.z, both at most 65535 in y/z.
  int64_t batch = qType.getDimSize(sig.physicalDim(AttentionOp::kBatchDim));
  if (config.numHeadsQ > 65535)
    return attentionError(op, "Hq = ")
           << config.numHeadsQ
           << " is not supported by the Hopper kernel; supported: up to 65535 "
              "(the heads are a grid dimension)";
  if (!ShapedType::isDynamic(batch) && batch > 65535)
    return attentionError(op, "B = ")
           << batch
           << " is not supported by the Hopper kernel; supported: up to 65535 "
              "(the batch is gridDim.z)";
  // Key positions (row + diag ± window) are 32-bit in the kernel: bounds up
  // to 2^30 keep every such sum inside int32 for sequences below 2^30.
  constexpr int64_t kMaxWindow = int64_t(1) << 30;
  if (config.windowLeft > kMaxWindow || config.windowRight > kMaxWindow)
    return attentionError(op, "window [")
           << config.windowLeft << ", " << config.windowRight
           << "] is not supported by the Hopper kernel; supported: bounds up "
              "to 2^30 or -1 (unbounded), since it computes key positions in "
              "32 bits";

  if (options.seqLen < 0)
    return attentionError(op, "seq-len = ")
           << options.seqLen
           << " is not supported; supported: a key-sequence length to tune "
              "the tiles for, or 0 (unknown)";
  config.seqLen = sig.tunedSeqLen(options.seqLen);
  TileProblem problem = TileProblem::of(sig, options.seqLen);
  if (options.schedule.linearBiasMma)
    problem = problem.withBiasOnTensorCores();
  int64_t blockM = options.blockM;
  if (blockM == 0)
    blockM = defaultBlockM(problem, options.schedule);
  // The automatic 192 rows are fitted to 128-key blocks: with wider ones
  // asked for, S (N/2 registers), P (N/4) and O no longer fit the 160
  // registers of three consumer warpgroups (block-n = 192: 584 bytes of
  // spills per thread), so two warpgroups take them.
  if (options.blockM == 0 && blockM == 192 && options.blockN > 128)
    blockM = 128;
  if (!isSupportedBlockM(blockM))
    return attentionError(op, "block-m = ")
           << blockM
           << " is not supported; supported: 64, 128 or 192 (64 rows per "
              "consumer warpgroup, one to three of them)";
  // Three consumer warpgroups leave 160 registers per consumer thread
  // (setmaxnreg: 128·24 + 384·160 ≤ 65536): S (N/2), O (Dv/2) and the
  // packed P (N/4) fit only at D = 64 (FlashAttention-3's D64 tile).
  if (blockM == 192 && problem.maxHeadDim() > 64)
    return attentionError(op, "block-m = 192 needs D, Dv <= 64: three consumer "
                          "warpgroups have 160 registers per thread, too few "
                          "for S, P and O at D = ")
           << problem.maxHeadDim();
  int64_t blockN = options.blockN;
  if (blockN == 0)
    blockN = defaultBlockN(problem, options.schedule);
  if (!isSupportedBlockN(blockN))
    return attentionError(op, "block-n = ")
           << blockN
           << " is not supported; supported: 64 to 192 in steps of 16 (the "
              "k16 steps of P·V; above 192 keys S, P and O overflow the "
              "consumer registers)";
  if (!isSupportedStages(options.stages))
    return attentionError(op, "stages = ")
           << options.stages << " is not supported; supported: 1 to 4";
  if (options.qBuffers < 0 || options.qBuffers > 2)
    return attentionError(op, "q-buffers = ")
           << options.qBuffers
           << " is not supported; supported: 1, 2 (persistent kernels), or "
              "0 to let the compiler choose";
  if (options.qBuffers == 2 && !options.schedule.persistent)
    return attentionError(op, "q-buffers = 2 needs persistent CTAs: a CTA with "
                          "one tile loads its Q once");
  if (options.schedule.pingpong && !options.schedule.overlap)
    return attentionError(op, "pingpong needs overlap: the turns are the GEMM "
                          "issue phases of the overlapped schedule");
  if (options.schedule.dynamicTiles && !options.schedule.persistent)
    return attentionError(op, "tile-scheduler=dynamic needs persistent CTAs: "
                              "it hands a persistent CTA its next tile");
  if (options.schedule.tileOverlap &&
      !(options.schedule.persistent && options.schedule.overlap))
    return attentionError(op, "tile-overlap needs persistent CTAs with overlap: "
                          "it chains the overlapped loops of a CTA's tiles");
  if (options.schedule.pingpong && blockM == 64)
    return attentionError(op, "pingpong needs two or three consumer warpgroups "
                          "to take turns, i.e. block-m = 128 or 192 (got "
                          "block-m = ")
           << blockM << ")";
  if (options.schedule.rowsumMma && config.headDimV + 8 > 256)
    return attentionError(op, "rowsum=mma needs Dv + 8 <= 256 (the ones columns "
                          "ride in the P·V wgmma, whose N is at most 256); "
                          "got Dv = ")
           << config.headDimV << ": use rowsum=vector";
  if (options.schedule.lazyRescale &&
      !(options.schedule.rescaleThreshold >= 0.0 &&
        options.schedule.rescaleThreshold <= 16.0))
    return attentionError(op, "rescale-threshold must be in [0, 16] (log2 units: "
                          "P may reach 2^threshold), got ")
           << llvm::formatv("{0}", options.schedule.rescaleThreshold).str();
  if (!(options.schedule.exp2Poly >= 0.0 && options.schedule.exp2Poly <= 1.0))
    return attentionError(op, "exp2-poly must be a fraction in [0, 1] (of the "
                          "exponentials computed on the FMA pipe), got ")
           << llvm::formatv("{0}", options.schedule.exp2Poly).str();
  if (options.numSMs < 1 || options.numSMs > 65535)
    return attentionError(op, "num-sms = ")
           << options.numSMs
           << " is not supported; supported: 1 to 65535 (the SMs of the "
              "target, 132 on H100 SXM and H200)";
  config.blockM = blockM;
  config.blockN = blockN;
  config.stages = options.stages;
  config.schedule = options.schedule;
  config.sm = options.sm;
  config.ptxVersion = options.ptxVersion;
  config.numSMs = options.numSMs;

  config.qBuffers = options.qBuffers ? options.qBuffers : 1;
  // The wide default (176 keys) is a preference, not a requirement: with
  // more stages it may not fit where 128 keys do.
  if (options.blockN == 0 && config.blockN > 128 &&
      config.dynamicSmemBytes() > kMaxSharedMemoryPerBlock)
    config.blockN = 128;
  // A second Q buffer where it fits beside the ring (a preference too):
  // the producer of a persistent CTA then loads tile t+1's Q while tile t
  // runs, instead of after its last S = Q·Kᵀ. Without it every tile starts
  // by waiting for a Q fresh from HBM (ncu, perf log run 23: the long-
  // scoreboard stalls double at S = 512; ~3 µs per tile beyond the blocks'
  // own time at D = 128).
  if (options.qBuffers == 0 && config.schedule.persistent) {
    config.qBuffers = 2;
    if (config.dynamicSmemBytes() > kMaxSharedMemoryPerBlock)
      config.qBuffers = 1;
  }
  // Tile overlap issues a tile's last P·V with the next tile's first
  // Q·Kᵀ, so it needs that tile's Q loaded while this one runs: with one
  // Q buffer the load only starts after this tile's last Q·Kᵀ, and the
  // P·V would wait for it (−2…10% at D = 256, perf log run 34). With one
  // buffer (asked for, or all that fits) the kernel is built without tile
  // overlap; its manifest's schedule says so.
  auto dropTileOverlap = [&](const Twine &why) {
    if (config.schedule.tileOverlap)
      config.tileOverlapDropped = why.str();
    config.schedule.tileOverlap = false;
  };
  if (config.qBuffers == 1)
    dropTileOverlap("it needs a second Q buffer (the next tile's Q loaded "
                    "while this tile runs), and this kernel has one");
  // It also keeps the pending tile's P (N/4 registers) and O beside the
  // next tile's scores (N/2): where that passes a consumer thread's
  // registers less ~28 for addresses and indices, ptxas spills (1.4 KB per
  // thread at D = 64 with 192 rows and 192 keys), so such kernels go
  // without. A masked kernel that also writes the LSE keeps ~8 more live
  // (the mask's row limits beside the LSE's row addresses and unscaled
  // maxima): the causal 192-row kernel with the LSE spilled 20 bytes.
  int64_t reserved = config.masked() && config.lse ? 36 : 28;
  if (config.pvColumns() / 2 + 3 * config.blockN / 4 >
      config.consumerRegisters() - reserved)
    dropTileOverlap("the pending tile's O and P beside the next tile's "
                    "scores need more than the " +
                    Twine(config.consumerRegisters()) +
                    " registers of a consumer thread (ptxas would spill)");
  config.stageO =
      options.stageO.value_or(config.canStageO() && config.stagingPays());
  if (config.stageO && !config.canStageO())
    return attentionError(op, "o-store=staged needs Dv <= D (each warpgroup "
                          "stages its O in its own rows of the Q buffer; got "
                          "D = ")
           << config.headDim << ", Dv = " << config.headDimV
           << "), no tile overlap (which stores a tile's O during the next "
              "tile), 240 consumer registers (block-m <= 128) and, with one "
              "Q buffer and persistent CTAs, overlap and 64 columns of O per "
              "warp in a V stage (O is staged there): use o-store=direct or "
              "auto";
  config.latePVWait = options.latePVWait.value_or(config.autoLatePVWait());
  // fat-tensorize's cost-model lazy rescale (an unforced fat.schedule)
  // assumes the late wait it predicts (chooseTensorization): under
  // pv-wait=early its branch would serialize the wgmmas (C7513), so such a
  // kernel rescales every block. A lazy rescale asked for (forced, or this
  // pass's own `rescale` option) stays.
  bool costModelSchedule =
      schedule && !config.scheduleForced;
  if (costModelSchedule && config.schedule.lazyRescale &&
      config.schedule.overlap && !config.latePVWait)
    config.schedule.lazyRescale = false;
  if (config.latePVWait && !config.canWaitLate())
    return attentionError(op, "pv-wait=late needs the overlapped main loop "
                          "(fat-pipeline overlap): only there does a "
                          "softmax run while a P·V is in flight; use "
                          "pv-wait=early or auto");
  config.splitMaskedTail =
      options.splitMaskedTail.value_or(config.tailSplitPays());
  if (config.splitMaskedTail && !config.canSplitMaskedTail())
    return attentionError(op, "tail-split=on needs the overlapped main loop "
                              "(fat-pipeline overlap) and no left window edge: "
                              "with one the first blocks are masked too; use "
                              "tail-split=off or auto");
  config.maskByRowLimits =
      options.maskByRowLimits.value_or(config.rowLimitsFit());
  if (config.dynamicSmemBytes() > kMaxSharedMemoryPerBlock) {
    InFlightDiagnostic diag =
        attentionError(op, "the kernel for D = ")
        << config.headDim << ", Dv = " << config.headDimV
        << ", block-m = " << config.blockM << ", block-n = " << config.blockN
        << ", stages = " << config.stages << " needs "
        << config.dynamicSmemBytes()
        << " bytes of shared memory, more than the " << kMaxSharedMemoryPerBlock
        << " a block may use; lower block-n or stages";
    // fat-tile's automatic blocks assume the row sums it predicts: a
    // rowsum=mma forced later may not fit them.
    if (config.schedule.rowsumMma)
      diag << " (rowsum=mma adds a chunk of ones, block-n × 128 bytes, to "
              "each V stage: "
           << config.onesChunkBytes() * config.stages << " bytes here)";
    if (config.biasKeysBytes())
      diag << " (linear-bias=mma's key columns, block-n × 32 bytes: "
           << config.biasKeysBytes() << " bytes here)";
    return diag;
  }
  return config;
}

// pv-wait=auto's rule: late where a block's P·V is at least 160 keys ×
// 128 columns (D = 128 with 160- or 176-key blocks, D = 256 with 80) —
// the longer the P·V, the more of the softmax fits under it — or where
// the lazy rescale pays, which needs it (lazyRescalePays). Measured
// (perf log run 54, against ptxas's placement in the same run): D = 128
// +1.3…1.9% from 4k keys without a mask; D = 256 with 80-key blocks
// +1.6…2.7% without a mask, +0.7…1.6% causal. Alone, smaller blocks
// lose: D = 128 with 128 keys −3.4 / −0.9% at 512 / 1k; D = 64 −1…2.5%
// with two consumer warpgroups and −6…16% with three (run 57; with the
// lazy rescale −1…5%) — there the three warpgroups' softmaxes already
// fill the tensor cores' gaps, and the 160-register kernel loses ILP.
bool AttentionKernelConfig::lateWaitPays() const {
  return headDimV >= 128 &&
         (blockN * headDimV >= 160 * 128 || lazyRescalePays());
}

// Where fat-tensorize's rescale=auto takes the lazy rescale, given the
// late wait (without it the lazy branch serializes the wgmmas, C7513):
// where O's rescale is a large share of the vector work, Dv = 256 or
// under the causal mask. Measured (runs 55, 58, against the defaults):
// D = 256 +4.2…4.7% from 1k keys with 80-key blocks, +2.7…5.0% with 64
// (S ≤ 1k); D = 128 causal +1.7…2.2% from 4k (160 keys), −0.3 / +0.9 /
// +2.7% at 512 / 1k / 2k (128 keys); D = 128 without a mask ±1%, so off.
bool AttentionKernelConfig::lazyRescalePays() const {
  return headDimV >= 256 || causal;
}

// Columns of O staged per round: all Dv in Q; in a V stage as many as
// 16 rows per consumer warp fit (a power of two, 64 at least: the
// swizzle permutes 8 chunks of 16 bytes), e.g. 128 of D = 256's
// columns in an 80-key stage, in two rounds.
int64_t AttentionKernelConfig::oStagingColumns() const {
  if (!oStagingAreaIsV())
    return headDimV;
  int64_t fit = vLoadBytes() / (4 * numConsumerWarpgroups() * 16 * 2);
  int64_t cols = 64;
  while (cols * 2 <= std::min(fit, headDimV))
    cols *= 2;
  return cols <= fit ? cols : 0;
}

// Whether O can be staged: it fits the warpgroup's Q rows (Dv ≤ D) or,
// with one Q buffer, 64 columns of it fit the last V stage and the loop
// is the overlapped one (whose drain the V release moves out of); the
// epilogue stores the current tile (tile overlap stores the pending one
// during the next tile); and the consumers have 240 or more registers:
// of the 160-register (three-warpgroup) kernels, the windowed one with
// the LSE spilled 16 bytes staged.
bool AttentionKernelConfig::canStageO() const {
  return headDimV <= headDim && !schedule.tileOverlap &&
         consumerRegisters() >= 240 &&
         (!oStagingAreaIsV() ||
          (schedule.overlap && oStagingColumns() >= 64));
}

// Whether staging pays, o-store=auto's rule. The direct epilogue costs
// 16·Dv L1 wavefronts per CTA (8 per warp store of 8 rows × 16 bytes):
// 1024 (~0.5 µs) at Dv = 64 are less than staging's own stmatrix,
// barrier and read-back cost (−1% at causal D = 64, S ≤ 2k). With two Q
// buffers (or a CTA of one tile) holding Q until the epilogue is over
// costs nothing more: the producer refills that buffer only with tile
// t+2's Q, after tile t+1's K and V. With one, O goes through the last
// V stage (stageOInV), whose named barrier makes each warpgroup wait
// for the others' last P·V: that pays at Dv = 256 (4096 wavefronts,
// ~2.2 µs, no ping-pong) where tiles are short — not without a mask
// when tuned for 8k keys or more (100+ blocks per tile: −1% there);
// the one-buffer kernels at Dv = 128 take turns (ping-pong), and the
// barrier stalls the turns (−0.5…1.5% from 8k). Measured (perf log
// runs 48–51): staged +1…15% at Dv = 128 with two Q buffers; at
// Dv = 256 (one buffer, in the V stage) +14…18% at 512, +9…12% at 1k,
// +2…5% at 4k.
bool AttentionKernelConfig::stagingPays() const {
  return stagingPaysForShape() &&
         (!schedule.persistent || qBuffers == 2 || masked() || seqLen == 0 ||
          seqLen < 8192);
}

// stagingPays without the tuned length: the name of a kernel spells
// out o-store where it differs from this (seq-len is not in the name).
bool AttentionKernelConfig::stagingPaysForShape() const {
  if (headDimV < 128)
    return false;
  return !schedule.persistent || qBuffers == 2 || headDimV >= 256;
}

// Registers of a consumer thread: with two or three consumer warpgroups
// the producer gives its registers away (setmaxnreg 24) and the
// consumers rise to 240 (128·24 + 256·240 ≤ 65536) or 160 (128·24 +
// 384·160 ≤ 65536); with one, every thread already has up to 255.
// setmaxnreg.inc takes registers only from those the CTA's own warps
// released, out of its launch allocation (⌊65536 / threads⌋ rounded
// down to 8: 168 for 384 threads, 128 for 512); asking for more waits
// forever. So the rise is at most launch + (launch − 24)·128 / (128·c):
// 168 + 72 = 240, 128 + 34 → 160; a fourth warpgroup (640 threads, 96
// each) could reach only 112, and its kernels measured slower (perf log
// run 61).
int64_t AttentionKernelConfig::consumerRegisters() const {
  int64_t consumers = numConsumerWarpgroups();
  return consumers == 1 ? 255 : consumers == 2 ? 240 : 160;
}

int64_t AttentionKernelConfig::producerRegisters() const {
  // setmaxnreg.inc draws only on the registers the CTA launched with (the
  // register file over its threads, in steps of 8: 168 with two consumer
  // warpgroups, 128 with three), so the consumers' rise must come from
  // the producer warpgroup's drop; asking more leaves them waiting forever
  // (perf log run 136). The most the producer may keep is then 24 (two) or
  // 32 (three); kernels keep 24 but relative-bias=accumulator's, whose
  // writer warp spills less with more.
  int64_t launched = (65536 / numThreads()) / 8 * 8;
  int64_t most =
      launched - numConsumerWarpgroups() * (consumerRegisters() - launched);
  return scoreBand ? most : std::min<int64_t>(24, most);
}

// tail-split=auto: whether the overlapped steady loop is built twice: over the
// blocks below the first one a mask can touch (ragged tail, causal diagonal,
// right window edge), whose body has no mask test and so no branch in
// the softmax, then over the rest ("mainloop-edge"). Measured (perf
// log runs 62–63, against the single loop in the same run): the
// ping-pong kernels without the lazy rescale gain — causal D = 64 below
// 4k keys +0.8 / +2.6 / +2.7% and +1.5 / +2.3 / +2.7% at S = 512 / 1k /
// 2k, D = 128 without a mask −0.6…+1.4% — while the others lose up to
// 3% (the 192-row kernels, the lazy rescale's kernels). The first
// block split the same way lost 3…5% (run 64): it stays one copy.
bool AttentionKernelConfig::tailSplitPays() const {
  return canSplitMaskedTail() && schedule.pingpong && !schedule.lazyRescale;
}

bool AttentionKernelConfig::canSplitMaskedTail() const {
  return schedule.overlap && windowLeft < 0;
}

// mask-form=auto: whether a masked block compares each element's key with
// per-row limits (one limit per row and bound, computed once per block) rather
// than building each key's index and comparing it with every bound.
// The limits cost ~120 SASS instructions less per 128-key block but
// keep their loop-invariant parts live: 240 and 255 registers hold
// them; of the 160-register (three-warpgroup) kernels, ptxas keeps
// them without spilling only in the masked ones with tile overlap,
// whose per-key form instead spills 56…64 bytes (the first block's
// mask beside the pending tile), while the others spill 40…52 bytes
// with the limits and none per key. lit test/PTX/grid-kernels-no-spill
// pins the default kernels.
bool AttentionKernelConfig::rowLimitsFit() const {
  return consumerRegisters() >= 240 || (masked() && schedule.tileOverlap);
}

// A block inside the warpgroup's full key range skips the mask region on
// a uniform branch whenever the table has the full ranges: the region's
// per-element cost bounds these kernels (perf log runs 78-80: the branch
// beats the four-column test on every visited block by 1.4-2.2x for a
// document mask, and a two-column table by 1.3-1.7x for prefix-LM).
bool AttentionKernelConfig::skipsFullKeyBlocks() const {
  return isa_and_nonnull<MaskModOp>(maskMod) && kvRanges &&
         captureTypes[*kvRanges].getDimSize(2) >= 4;
}

bool AttentionKernelConfig::skipsKeyHoles() const {
  return kvRanges && captureTypes[*kvRanges].getDimSize(2) == 6;
}

std::string AttentionKernelConfig::kernelName() const {
  std::string name;
  llvm::raw_string_ostream os(name);
  os << "fat_attention_fwd_" << (isF16 ? "f16" : "bf16") << "_d" << headDim;
  if (headDimV != headDim)
    os << "_dv" << headDimV;
  os << "_h" << numHeadsQ << "_" << numHeadsKV << "_"
     << stringifyLayout(layout);
  if (causal)
    os << "_causal";
  if (windowed())
    os << "_w" << (windowLeft < 0 ? std::string("inf") : std::to_string(windowLeft))
       << "_" << (windowRight < 0 ? std::string("inf") : std::to_string(windowRight));
  if (lse)
    os << "_lse";
  if (!modifications.empty())
    os << "_mod" << modifications;
  os << "_m" << blockM << "n" << blockN << "s" << stages;
  if (qBuffers != 1)
    os << "q" << qBuffers;
  // The epilogue's O store where it differs from o-store=auto's for any
  // length: g(lobal stores from the registers) where that stages (also
  // D = 256 tuned for 8k keys and more), x (staged) where it stores
  // directly.
  bool autoStaged = canStageO() && stagingPaysForShape();
  if (stageO != autoStaged)
    os << (stageO ? "x" : "g");
  // The P·V wait where it differs from pv-wait=auto's: y (late) where
  // auto leaves it to ptxas, z (early) where auto fences it late.
  if (latePVWait != autoLatePVWait())
    os << (latePVWait ? "y" : "z");
  // The steady loop's masked-tail split where it differs from
  // tail-split=auto's: u (an unmasked copy first) or w (whole); the mask's
  // form where it differs from mask-form=auto's: i (per-row limits) or k
  // (per-key bounds).
  if (splitMaskedTail != tailSplitPays())
    os << (splitMaskedTail ? "u" : "w");
  if (maskByRowLimits != rowLimitsFit())
    os << (maskByRowLimits ? "i" : "k");
  // A schedule other than the default is spelled out, one letter per
  // choice: o(verlap) or n(o overlap), then p(ing-pong), r(owsum=mma),
  // l(azy rescale)<τ>, b(ound reference: row-max=bound), e(xp2-poly)<%>, t(ile
  // loop: persistent)<SMs>, c(hained tiles: tile overlap), d(ynamic tile
  // scheduler), h (the score region's tanh on the FMA pipe: tanh-poly).
  if (!(schedule == KernelSchedule()) || tanhPoly()) {
    os << "_" << (schedule.overlap ? "o" : "n")
       << (schedule.pingpong ? "p" : "") << (schedule.rowsumMma ? "r" : "");
    if (schedule.lazyRescale)
      os << "l" << static_cast<int64_t>(schedule.rescaleThreshold);
    if (schedule.boundMax)
      os << "b";
    // e<percent> of the exponentials on the FMA pipe.
    if (schedule.exp2Poly > 0.0)
      os << "e" << static_cast<int64_t>(std::lround(schedule.exp2Poly * 100));
    if (schedule.persistent)
      os << "t" << numSMs;
    if (schedule.tileOverlap)
      os << "c";
    if (schedule.dynamicTiles)
      os << "d";
    if (tanhPoly())
      os << "h";
  }
  return name;
}

/// One tensor-map entry of the manifest: dims innermost first, by symbol,
/// and the TMA box (64 elements = one 128-byte swizzle row, `rows` rows).
static llvm::json::Object tensorMapSpec(StringRef tensor,
                                        ArrayRef<StringRef> dims,
                                        int64_t rows) {
  llvm::json::Array dimsJson;
  for (StringRef d : dims)
    dimsJson.push_back(d.str());
  return llvm::json::Object{
      {"tensor", tensor.str()},
      {"dims", std::move(dimsJson)},
      {"box", llvm::json::Array{64, rows, 1, 1}},
      {"swizzle", "128B"},
      {"l2_promotion", "256B"},
      {"oob_fill", "zero"},
      {"interleave", "none"}};
}

std::string AttentionKernelConfig::manifestJson() const {
  using llvm::json::Array;
  using llvm::json::Object;
  std::string name = kernelName();

  Array params{Object{{"kind", "tensor_map"}, {"tensor", "q"}},
               Object{{"kind", "tensor_map"}, {"tensor", "k"}},
               Object{{"kind", "tensor_map"}, {"tensor", "v"}},
               Object{{"kind", "ptr"}, {"tensor", "o"}}};
  for (int dim = 0; dim < 3; ++dim)
    params.push_back(Object{{"kind", "stride"}, {"tensor", "o"}, {"dim", dim}});
  if (lse) {
    params.push_back(Object{{"kind", "ptr"}, {"tensor", "lse"}});
    for (int dim = 0; dim < 2; ++dim)
      params.push_back(
          Object{{"kind", "stride"}, {"tensor", "lse"}, {"dim", dim}});
  }
  for (StringRef sym : {"Sq", "Skv", "diag"})
    params.push_back(Object{{"kind", "i32"}, {"symbol", sym.str()}});
  params.push_back(Object{{"kind", "f32"}, {"symbol", "scale_log2e"}});

  // Causal kernels put the head in x and the (reversed) query block in y:
  // see AttentionKernelTiles.cpp, buildBlockCoordinates. Persistent kernels take
  // B as a parameter and launch one CTA per work unit, at most SMs, along
  // x: ⌈Sq/M⌉·Hq·B query blocks, or for causal masks ⌈⌈Sq/M⌉/2⌉·Hq·B =
  // ⌈Sq/2M⌉·Hq·B pairs of them (fat.tile_loop).
  if (schedule.persistent)
    params.push_back(Object{{"kind", "i32"}, {"symbol", "B"}});
  // The dynamic tile scheduler's counter (fat.tile_loop): 4 bytes of
  // global memory, zero at the launch, left zero by the kernel.
  if (schedule.dynamicTiles)
    params.push_back(Object{{"kind", "ptr"}, {"tensor", "tile_counter"}});
  for (size_t i = 0; i < captureTypes.size(); ++i)
    params.push_back(
        Object{{"kind", "ptr"}, {"tensor", "capture" + std::to_string(i)}});
  Object qBlocks{{"symbol", "Sq"}, {"ceildiv", blockM}};
  Object heads{{"symbol", "Hq"}};
  Array grid;
  if (schedule.persistent)
    grid = Array{Object{{"symbol", "Sq"},
                        {"ceildiv", usesPairs() ? 2 * blockM : blockM},
                        {"times", Array{"Hq", "B"}},
                        {"max", numSMs}}};
  else if (causal)
    grid = Array{std::move(heads), std::move(qBlocks), Object{{"symbol", "B"}}};
  else
    grid = Array{std::move(qBlocks), std::move(heads), Object{{"symbol", "B"}}};

  Object manifest{
      {"format", "fa-t-kernel"},
      {"version", 1},
      {"entry", name},
      {"ptx", name + ".ptx"},
      {"sm", sm},
      {"ptx_version", ptxVersion},
      {"compiler", FAT_VERSION_STRING},
      {"config",
       Object{{"dtype", isF16 ? "f16" : "bf16"},
              {"head_dim", headDim},
              {"head_dim_v", headDimV},
              {"num_heads_q", numHeadsQ},
              {"num_heads_kv", numHeadsKV},
              {"layout", stringifyLayout(layout).str()},
              {"causal", causal},
              {"window", Array{windowLeft, windowRight}},
              {"lse", lse},
              {"block_m", blockM},
              {"block_n", blockN},
              {"stages", stages},
              {"q_buffers", qBuffers},
              {"o_store", stageO ? "staged" : "direct"},
              {"pv_wait", latePVWait ? "late" : "early"},
              {"seq_len", seqLen}}},
      {"schedule",
       Object{{"overlap", schedule.overlap},
              {"pingpong", schedule.pingpong},
              {"rowsum", rowsumName(schedule.rowsumMma).str()},
              {"rescale", rescaleName(schedule.lazyRescale).str()},
              {"rescale_threshold", schedule.rescaleThreshold},
              {"exp2_poly", schedule.exp2Poly},
              {"persistent", schedule.persistent},
              {"tile_overlap", schedule.tileOverlap},
              {"forced", scheduleForced}}},
      {"block", Array{numThreads(), 1, 1}},
      {"grid", std::move(grid)},
      {"dynamic_smem_bytes", dynamicSmemBytes()},
      {"tensor_maps",
       Array{tensorMapSpec("q", {"D", "Sq", "Hq", "B"}, blockM),
             tensorMapSpec("k", {"D", "Skv", "Hkv", "B"}, blockN),
             tensorMapSpec("v", {"Dv", "Skv", "Hkv", "B"}, blockN)}},
      {"params", std::move(params)}};
  // The key of the score / mask modifications the kernel applies (only
  // where there are some: the manifests of plain kernels stay as they are).
  if (!modifications.empty())
    manifest.getObject("config")->try_emplace("modifications", modifications);
  // The softmax reference where it is not the running maximum (absent:
  // "online", as in every manifest before row-max=bound).
  if (schedule.boundMax)
    manifest.getObject("schedule")
        ->try_emplace("row_max", rowMaxName(true).str());
  // A linear position bias on the tensor cores, or as weights on P
  // (absent: the score region's own arithmetic on the vector units, or no
  // such bias).
  if (biasOnTensorCores())
    manifest.getObject("schedule")->try_emplace("linear_bias", "mma");
  if (keyWeights) {
    llvm::json::Object *entry = manifest.getObject("schedule");
    entry->try_emplace("linear_bias", "weights");
    // Past it the kernel's rows come out as an empty row's zeros: a captured
    // factor must be checked against it before the launch.
    entry->try_emplace("linear_bias_max_factor",
                       cast<KeyWeightsOp>(keyWeights).getMaxFactor());
  }
  // The score region's tanh on the FMA pipe where a warp's arguments allow
  // (absent: MUFU's).
  if (tanhPoly())
    manifest.getObject("schedule")->try_emplace("tanh_poly", true);
  // A term of j − i as Q·Kᵀ's accumulator (absent: the vector form).
  if (scoreBand)
    manifest.getObject("schedule")->try_emplace("relative_bias", "accumulator");
  // Units from the tile counter (absent: "static", CTA c's fixed units).
  if (schedule.dynamicTiles)
    manifest.getObject("schedule")
        ->try_emplace("tile_scheduler", tileSchedulerName(true).str());

  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(manifest)));
  return text;
}

bool AttentionKernelConfig::tanhPoly() const {
  auto mod = dyn_cast_if_present<ScoreModOp>(scoreMod);
  return mod && mod.getTanhPoly();
}
