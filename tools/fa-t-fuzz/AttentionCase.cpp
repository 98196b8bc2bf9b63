//===- AttentionCase.cpp - fuzz bytes as choices of a fat.attention -------===//
//
// The case is built in logical order (B, H, S, D), permuted to the chosen
// layout, then a few operands are bent (one dim changed, the rank changed,
// the element type changed) so that every verifier rule and every pass
// precondition is reached from inputs that are otherwise well formed.
//
//===----------------------------------------------------------------------===//

#include "AttentionCase.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/raw_ostream.h"

#include <fuzzer/FuzzedDataProvider.h>

#include <limits>

using namespace mlir;
using namespace mlir::fat;

namespace {

/// A dynamic size, printed as `?`.
constexpr int64_t kDyn = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

/// Draws choices from the fuzz bytes. When the bytes run out every draw
/// returns its first, usual, value, so short inputs are plain cases.
class Choices {
public:
  Choices(const uint8_t *data, size_t size) : fdp(data, size) {}

  /// One of `list`, the first when the bytes run out.
  template <typename T> T oneOf(llvm::ArrayRef<T> list) {
    return list[fdp.ConsumeIntegralInRange<size_t>(0, list.size() - 1)];
  }
  template <typename T> T oneOf(std::initializer_list<T> list) {
    return oneOf(llvm::ArrayRef<T>(list));
  }

  /// One of `usual` seven times in eight, else one of `edge`.
  template <typename T>
  T usually(std::initializer_list<T> usual, std::initializer_list<T> edge) {
    if (fdp.ConsumeIntegralInRange<unsigned>(0, 7) != 7)
      return oneOf(usual);
    return oneOf(edge);
  }

  /// True once in sixteen draws.
  bool rarely() { return fdp.ConsumeIntegralInRange<unsigned>(0, 15) == 15; }
  bool flip() { return fdp.ConsumeBool(); }

private:
  FuzzedDataProvider fdp;
};

std::string sizeText(int64_t s) {
  return s == kDyn ? std::string("?") : std::to_string(s);
}

/// `tensor<2x?x64x128xbf16>` or `memref<...[, layout]>`.
std::string shapedType(bool tensor, llvm::ArrayRef<int64_t> shape,
                       llvm::StringRef elt, llvm::StringRef memrefLayout) {
  std::string s = tensor ? "tensor<" : "memref<";
  for (int64_t d : shape)
    s += sizeText(d) + "x";
  s += elt.str();
  if (!tensor && !memrefLayout.empty())
    s += ", " + memrefLayout.str();
  return s + ">";
}

/// One operand: its logical dims, element type and kind.
struct Operand {
  llvm::SmallVector<int64_t> dims;
  std::string elt;
  bool tensor;
};

/// Changes at most one thing about `x` (rarely): a dim, the rank or the
/// element type.
void bend(Choices &c, Operand &x) {
  if (!c.rarely())
    return;
  switch (c.oneOf({0, 1, 2, 3})) {
  case 0:
    x.dims[c.oneOf<size_t>({0, 1, 2, 3}) % x.dims.size()] =
        c.oneOf<int64_t>({kDyn, 0, 1, 3, 64, int64_t(1) << 31});
    break;
  case 1:
    x.dims.pop_back();
    break;
  case 2:
    x.dims.push_back(c.oneOf<int64_t>({1, 64}));
    break;
  default:
    x.elt = c.oneOf<const char *>({"f16", "bf16", "f32", "i8"});
    x.tensor = c.flip();
    break;
  }
}

} // namespace

AttentionCase mlir::fat::generateAttentionCase(const uint8_t *data,
                                               size_t size) {
  Choices c(data, size);
  const int64_t big31 = int64_t(1) << 31, big40 = int64_t(1) << 40;

  // Shapes, logical order. Heads and head dims must be static (verifier);
  // zero and huge sizes are edges, dynamic B and S are usual.
  int64_t b = c.usually<int64_t>({1, 2, kDyn, 3}, {0, 65535, 65536, big31, big40});
  int64_t hq = c.usually<int64_t>({1, 2, 4, 8, 16}, {0, 3, 65536, big31, big40, kDyn});
  int64_t group = c.oneOf<int64_t>({1, 2, 4, 8});
  int64_t hkv = c.usually<int64_t>({hq > 0 && hq % group == 0 ? hq / group : hq},
                                   {0, 3, 5, big31});
  int64_t sq = c.usually<int64_t>({64, 1, 7, 65, 128, 200, kDyn},
                                  {0, big31, big40, int64_t(1) << 62});
  int64_t skv = c.flip() ? sq
                         : c.usually<int64_t>({64, 1, 129, 256, kDyn},
                                              {0, big31, big40});
  int64_t d = c.usually<int64_t>({64, 128, 256, 32, 16},
                                 {0, 1, 96, 512, 1 << 20, big40});
  int64_t dv = c.flip() ? d : c.usually<int64_t>({64, 128, 256, 32}, {0, 8, 96});
  const char *elt = c.usually<const char *>(
      {"bf16", "f16", "f32"},
      {"f64", "f8E4M3FN", "i8", "index", "complex<f32>", "tf32"});
  bool tensor = c.flip();
  const char *memrefLayout = c.usually<const char *>(
      {""}, {"strided<[?, ?, ?, 1], offset: ?>", "strided<[?, ?, ?, 2]>",
             "affine_map<(a, b, s, d) -> (a, s, b, d)>"});
  const char *layout = c.oneOf<const char *>({"", "bhsd", "bshd"});
  bool bshd = llvm::StringRef(layout) == "bshd";

  Operand ops[4] = {{{b, hq, sq, d}, elt, tensor},
                    {{b, hkv, skv, d}, elt, tensor},
                    {{b, hkv, skv, dv}, elt, tensor},
                    {{b, hq, sq, dv}, elt, tensor}};
  for (Operand &x : ops) {
    bend(c, x);
    if (bshd && x.dims.size() >= 3)
      std::swap(x.dims[1], x.dims[2]);
  }

  // LSE [B, Hq, Sq] f32: absent, right, or wrong in one way.
  enum { kNoLse, kLse, kBadLse };
  int lseKind = c.usually<int>({kNoLse, kLse}, {kBadLse});
  std::optional<Operand> lse;
  if (lseKind != kNoLse) {
    lse = Operand{{b, hq, sq}, "f32", tensor};
    if (lseKind == kBadLse) {
      lse->elt = c.oneOf<const char *>({"f32", "bf16"});
      lse->dims.back() = c.oneOf<int64_t>({kDyn, 1, 7});
      bend(c, *lse);
    }
  }

  // Mask and scale attributes.
  enum { kNoDiag, kArgDiag, kConstDiag };
  int diagKind = c.usually<int>({kNoDiag, kArgDiag}, {kConstDiag});
  int64_t diagValue = c.oneOf<int64_t>({0, -1, 1, 64, -4096, big40, kMax, kMin});
  const char *scale = c.usually<const char *>(
      {"", "0.125", "1.0", "0.0883883"},
      {"0.0", "-1.0", "1.0e-45", "3.0e38", "0x7FC00000", "0x7F800000",
       "0xFF800000", "0x00000001"});
  bool causal = c.flip();
  const char *window = c.usually<const char *>(
      {"", "[64, 0]", "[128, -1]", "[-1, 64]", "[0, 0]", "[1, 1]", "[-1, -1]"},
      {"[-2, 0]", "[9223372036854775807, 0]", "[0, 9223372036854775807]",
       "[9223372036854775807, 9223372036854775807]",
       "[1099511627776, 1099511627776]", "[-9223372036854775808, 0]", "[1]",
       "[1, 2, 3]"});

  // The func: operands as arguments, the op, and its results returned.
  std::string text;
  llvm::raw_string_ostream os(text);
  const char *names[4] = {"%q", "%k", "%v", "%o"};
  std::string types[4];
  for (int i = 0; i < 4; ++i)
    types[i] = shapedType(ops[i].tensor, ops[i].dims, ops[i].elt, memrefLayout);
  std::string lseType =
      lse ? shapedType(lse->tensor, lse->dims, lse->elt, "") : "";

  // Tensor form: one result per init (rarely not).
  llvm::SmallVector<std::string> results;
  if (ops[0].tensor) {
    results.push_back(types[3]);
    if (lse)
      results.push_back(lseType);
    if (c.rarely())
      results.pop_back();
  }

  os << "func.func @attention(";
  for (int i = 0; i < 4; ++i)
    os << (i ? ", " : "") << names[i] << ": " << types[i];
  if (lse)
    os << ", %lse: " << lseType;
  if (diagKind == kArgDiag)
    os << ", %d: index";
  os << ")";
  if (!results.empty()) {
    os << " -> (";
    llvm::interleaveComma(results, os);
    os << ")";
  }
  os << " {\n";
  if (diagKind == kConstDiag)
    os << "  %d = arith.constant " << diagValue << " : index\n";
  os << "  ";
  if (results.size() == 1)
    os << "%r = ";
  else if (results.size() > 1)
    os << "%r:" << results.size() << " = ";
  os << "fat.attention ins(%q, %k, %v : " << types[0] << ", " << types[1]
     << ", " << types[2] << ") outs(%o : " << types[3] << ")";
  if (lse)
    os << " lse(%lse : " << lseType << ")";
  if (diagKind != kNoDiag)
    os << " diagonal(%d)";
  if (*scale)
    os << " scale " << scale;
  if (causal)
    os << " causal";
  if (*window)
    os << " window " << window;
  if (*layout)
    os << " layout(" << layout << ")";
  // Now and then ALiBi's score region (linear-bias=mma's input), its
  // slope at the edges of f32 too.
  if (c.flip() && c.flip()) {
    std::string slope = c.usually<const char *>({"0.25", "0.0078125", "-0.5"},
                                                {"0.0", "1.0e30", "-1.0e-30"});
    os << " score {\n  ^bb0(%x: f32, %b: index, %h: index, %i: index, "
          "%j: index):\n    %s = arith.constant "
       << slope
       << " : f32\n    %n = arith.subi %i, %j : index\n"
          "    %ni = arith.index_cast %n : index to i64\n"
          "    %nf = arith.sitofp %ni : i64 to f32\n"
          "    %p = arith.mulf %s, %nf : f32\n"
          "    %y = arith.subf %x, %p : f32\n    fat.yield %y : f32\n  }";
  }
  if (!results.empty()) {
    os << " -> ";
    llvm::interleaveComma(results, os);
  }
  os << "\n  return";
  if (results.size() == 1)
    os << " %r : " << results[0];
  else if (results.size() > 1) {
    os << " ";
    for (size_t i = 0; i < results.size(); ++i)
      os << (i ? ", " : "") << "%r#" << i;
    os << " : ";
    llvm::interleaveComma(results, os);
  }
  os << "\n}\n";

  // Pass options: the usual tile sizes and targets, and the edges of each.
  AttentionCase out;
  out.source = std::move(text);
  auto tileSizes = [&] {
    auto size = [&] {
      return std::to_string(c.usually<int64_t>(
          {128, 64, 32, 16}, {0, -1, 1, 3, 1024, 1025, big40}));
    };
    std::string bm = size();
    return "block-m=" + bm + " block-n=" + size();
  };
  out.options.tile = tileSizes();
  out.options.cpu = tileSizes();
  out.options.tensorize =
      std::string("rowsum=") +
      c.usually<const char *>({"auto", "vector", "mma"}, {"''", "tensor"}) +
      " rescale=" +
      c.usually<const char *>({"auto", "always", "lazy"}, {"never"}) +
      " rescale-threshold=" +
      c.usually<const char *>({"8.0", "0", "16"}, {"-1", "17", "nan"}) +
      " exp2-poly=" +
      c.usually<const char *>({"auto", "0", "0.25", "1"},
                              {"2", "nan", "half"}) +
      " row-max=" +
      c.usually<const char *>({"auto", "online", "bound"}, {"''", "top"}) +
      " linear-bias=" +
      c.usually<const char *>({"auto", "vector", "mma"}, {"''", "tensor"});
  std::string sm = c.usually<const char *>(
      {"sm_90a"}, {"sm_90", "sm_80", "sm_100a", "''", "'sm_90a} O=3'",
                   "'sm_90a features=+ptx80'"});
  std::string blockM = std::to_string(
      c.usually<int64_t>({128, 64, 192, 0}, {96, 256, -64, big40}));
  std::string blockN =
      std::to_string(c.usually<int64_t>({0, 64, 128, 80, 176}, {32, 72, 96, 192, 208, -1, big40}));
  std::string stages =
      std::to_string(c.usually<int64_t>({2, 1, 3, 4}, {0, 5, -1, big40}));
  std::string ptx = std::to_string(
      c.usually<int64_t>({80, 83, 85, 88}, {79, 89, 90, 0, -80, big40}));
  std::string opt = std::to_string(
      c.usually<int64_t>({0, 1, 3}, {2, 4, -1, int64_t(1) << 33}));
  std::string schedule =
      std::string(" overlap=") + c.oneOf<const char *>({"1", "0"}) +
      " pingpong=" + c.oneOf<const char *>({"0", "1"}) + " rowsum=" +
      c.usually<const char *>({"vector", "mma"}, {"''", "tensor"}) +
      " rescale=" +
      c.usually<const char *>({"always", "lazy"}, {"''", "never"}) +
      " rescale-threshold=" +
      c.usually<const char *>({"8.0", "0", "16", "4.5"},
                              {"-1", "17", "nan", "inf", "1e300"}) +
      " exp2-poly=" +
      c.usually<const char *>({"auto", "0", "0.25", "1"},
                              {"-0.5", "2", "nan", "''", "half"}) +
      " row-max=" +
      c.usually<const char *>({"auto", "online", "bound"}, {"''", "top"}) +
      " linear-bias=" +
      c.usually<const char *>({"auto", "vector", "mma"}, {"''", "tensor"}) +
      " persistent=" +
      c.usually<const char *>({"auto", "off", "on"}, {"''", "2"}) +
      " tile-overlap=" +
      c.usually<const char *>({"auto", "off", "on"}, {"''", "sometimes"}) +
      " q-buffers=" +
      std::to_string(c.usually<int64_t>({0, 1, 2}, {3, -1, big40})) +
      " seq-len=" +
      std::to_string(c.usually<int64_t>({0, 512, 1024, 8192}, {-1, big40})) +
      " o-store=" +
      c.usually<const char *>({"auto", "staged", "direct"}, {"''", "tma"}) +
      " pv-wait=" +
      c.usually<const char *>({"auto", "late", "early"}, {"''", "soon"}) +
      " tail-split=" +
      c.usually<const char *>({"auto", "on", "off"}, {"''", "half"}) +
      " mask-form=" +
      c.usually<const char *>({"auto", "rows", "keys"}, {"''", "cols"}) +
      " num-sms=" +
      std::to_string(c.usually<int64_t>({132, 114, 1}, {0, -1, 65536, big40}));
  out.options.ptx = "sm=" + sm + " block-m=" + blockM + " block-n=" + blockN +
                    " stages=" + stages + " ptx=" + ptx + " O=" + opt +
                    schedule;
  return out;
}
