"""The persistent causal kernel's tile order, executed from the compiler's own IR.

fat-pipeline writes the tile loop of a persistent causal kernel as
`fat.tile_loop pairs`, which convert-fat-to-nvvm expands to integer arithmetic
around an scf.while (KernelOpsToNVVM.cpp, expandTileLoop):
work units are pairs of query blocks (p, nM − 1 − p) of one head, CTA c runs
units c, c + G, … (G = num-sms) and the launch has min(U, G) CTAs. A wrong
successor or decode would leave tiles unrun (O stays poisoned on the GPU) or
run some twice; a wrong pairing would unbalance the CTAs. This test compiles
a causal op with fa-t-opt, interprets the producer's `arith` ops on i32 —
the loop header and the while's body up to the tile's row offset m·M — for
every CTA, and checks, over many (Sq, B, G):

- every (head, query block) is visited exactly once over all CTAs,
- every CTA's key blocks (m + 1 per tile with Sq = Skv, M = N) are within one
  unit (nM + 1 blocks) and one middle block of every other CTA's.

Skipped when build/bin/fa-t-opt is absent.
"""

import pathlib
import re
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
FAT_OPT = ROOT / "build" / "bin" / "fa-t-opt"
M = 128
HEADS = 2

pytestmark = pytest.mark.skipif(not FAT_OPT.exists(), reason="fa-t-opt is not built")

SOURCE = f"""
func.func @c(%q: memref<?x{HEADS}x?x64xbf16>, %o: memref<?x{HEADS}x?x64xbf16>) {{
  fat.attention ins(%q, %q, %q : memref<?x{HEADS}x?x64xbf16>, memref<?x{HEADS}x?x64xbf16>,
                    memref<?x{HEADS}x?x64xbf16>) outs(%o : memref<?x{HEADS}x?x64xbf16>) causal
  return
}}
"""

MASK = (1 << 32) - 1
BINARY = {
    "addi": lambda a, b: (a + b) & MASK, "subi": lambda a, b: (a - b) & MASK,
    "muli": lambda a, b: (a * b) & MASK, "divui": lambda a, b: a // b,
    "remui": lambda a, b: a % b, "shrui": lambda a, b: a >> b,
    "andi": lambda a, b: a & b, "ori": lambda a, b: a | b,
    "maxui": max, "minui": min,
}
COMPARE = {"ult": lambda a, b: a < b, "ule": lambda a, b: a <= b,
           "ugt": lambda a, b: a > b, "uge": lambda a, b: a >= b,
           "eq": lambda a, b: a == b, "ne": lambda a, b: a != b}
OP = re.compile(r"^(\s*)(%[\w#]+) = arith\.(\w+) (.*?) : (i32|i1)$")


def signed(x):
    return x - (1 << 32) if x & (1 << 31) else x


def run_line(line, env):
    """Interprets one `arith` line over i32/i1 when its operands are known."""
    m = OP.match(line)
    if not m:
        return
    _, name, op, rest, _ = m.groups()
    if op == "constant":
        word = rest.split()[0]
        env[name] = {"true": 1, "false": 0}[word] if word in ("true", "false") \
            else int(word) & MASK
        return
    if op == "cmpi":
        pred, args = rest.split(", ", 1)
        a, b = (env.get(x.strip()) for x in args.split(","))
        if a is None or b is None:
            env.pop(name, None)  # a name printed again in another region
        else:
            env[name] = int(COMPARE[pred](a, b))
        return
    args = [env.get(x.strip()) for x in rest.split(",")]
    if any(a is None for a in args):
        env.pop(name, None)
        return
    if op == "select":
        env[name] = args[1] if args[0] else args[2]
    elif op in ("maxsi", "minsi"):
        pick = max if op == "maxsi" else min
        env[name] = pick(signed(args[0]), signed(args[1])) & MASK
    elif op in BINARY:
        env[name] = BINARY[op](*args)


class TileLoop:
    """The producer's tile loop as fa-t-opt printed it."""

    def __init__(self, lines, sms):
        self.sms = sms
        start = next(i for i, l in enumerate(lines) if "llvm.func @fat_attention" in l)
        header = next(i for i in range(start, len(lines)) if "scf.while" in lines[i])
        indent = len(lines[header]) - len(lines[header].lstrip())
        self.signature = lines[start]
        self.prologue = lines[start:header]
        # scf.while (%w = %init, …): the position's initial value.
        self.init = re.search(r"scf\.while \(%\w+ = (%[\w#]+)", lines[header]).group(1)
        # The `before` region: w <u end.
        self.end = re.search(r"arith\.cmpi ult, %\w+, (%[\w#]+)", lines[header + 1]).group(1)
        do = next(i for i in range(header, len(lines)) if lines[i].strip() == "} do {")
        self.position = re.search(r"\^bb0\((%\w+): i32", lines[do + 1]).group(1)
        stop = next(i for i in range(do, len(lines))
                    if lines[i].startswith(" " * (indent + 2) + "scf.yield"))
        # Only the body's own ops (the tile's nested loops are deeper).
        self.body = [l for l in lines[do + 2:stop]
                     if len(l) - len(l.lstrip()) == indent + 2]
        self.next = lines[stop].split()[1].rstrip(",")

    def tiles(self, cta, seq_q, batch):
        """(unit, query block) of every tile CTA `cta` runs, in order."""
        i32_args = re.findall(r"(%arg\d+): i32", self.signature)
        env = {i32_args[0]: seq_q, i32_args[-1]: batch}  # Sq first, B last
        for line in self.prologue:
            if "nvvm.read.ptx.sreg.ctaid.x" in line:
                env[line.split("=")[0].strip()] = cta
            run_line(line, env)
        w, tiles = env[self.init], []
        while w < env[self.end]:
            local = dict(env, **{self.position: w})
            unit = block = None
            for line in self.body:
                run_line(line, local)
                m = OP.match(line)
                if m and m.group(3) == "shrui" and unit is None:
                    unit = local[m.group(2)]        # u = w >> 1
                if m and m.group(3) == "muli" and block is None and f"%c{M}_i32" in m.group(4):
                    block = local[m.group(4).split(",")[0].strip()]  # row offset m·M
            tiles.append((unit, block))
            w = local[self.next]
            assert len(tiles) < 10000, "the tile loop does not terminate"
        return tiles


@pytest.fixture(scope="module", params=[5, 7])
def loop(request, tmp_path_factory):
    src = tmp_path_factory.mktemp("order") / "c.mlir"
    src.write_text(SOURCE)
    out = subprocess.run(
        [str(FAT_OPT), str(src), "--fat-tile", "--fat-tensorize",
         f"--fat-pipeline=persistent=on pingpong=off num-sms={request.param}",
         "--convert-fat-to-nvvm"],
        check=True, capture_output=True, text=True).stdout.splitlines()
    return TileLoop(out, request.param)


@pytest.mark.parametrize("seq_q,batch", [(1, 1), (127, 1), (129, 2), (1000, 3), (2049, 1),
                                         (4097, 2), (640, 5)])
def test_every_tile_once_and_balanced(loop, seq_q, batch):
    n_m = -(-seq_q // M)
    per_head = (n_m + 1) // 2
    units = per_head * HEADS * batch
    seen, work = [], []
    for cta in range(min(units, loop.sms)):    # the manifest's grid
        tiles = loop.tiles(cta, seq_q, batch)
        seen += [(u // per_head, m) for u, m in tiles]
        work.append(sum(m + 1 for _, m in tiles))
    assert sorted(seen) == [(x, m) for x in range(HEADS * batch) for m in range(n_m)]
    # CTAs differ by at most one unit, plus one middle block (a unit of one
    # block, (nM + 1)/2 keys, when nM is odd): the static round robin's bound.
    assert max(work) - min(work) <= (n_m + 1) + (n_m + 2) // 2
