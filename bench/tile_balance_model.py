"""How evenly tiles of random cost spread over the SMs: the model behind the
prediction of perf-log run 137 (no GPU needed).

A document mask with ``DOCS`` documents of random length per sequence gives
each query tile of M rows a cost in key blocks (from its first row's
document start to its last row, + ``overhead`` per tile). Three ways to put
the tiles on 132 SMs, one CTA each at a time:

- ``grid``: one CTA per tile in the causal grid's order (heads fastest, the
  last query block first), each SM taking the next CTA when it is free —
  the hardware's scheduler, and the dynamic tile scheduler's order;
- ``static``: persistent CTAs, CTA c taking the head-major units c, c + G,
  c + 2G, … (the static round robin), for G = 132, 264, 528, 1056;
- ``head-major``: the dynamic scheduler in head-major order.

Printed: each order's makespan over the balanced one (total / 132), and the
static orders' time relative to ``grid``.

``--tilings`` prints instead what a variable-length tiling would save (perf
log, run 156): per sequence, the key blocks, the blocks that need the mask
(partial) and the tiles of the causal grid's tiling (query tiles at multiples
of M, key blocks at multiples of N, empty blocks skipped as the block mask
does) against a tiling per document (query tiles and key blocks from each
document's start: only the diagonal block partial), and the useful work
(the documents' causal triangles) over that of equal documents.

    python3 bench/tile_balance_model.py [--trials 20] [--tilings]
"""

import argparse
import bisect
import heapq
import random

SMS, DOCS = 132, 8


def document_starts(s, rng):
    return [0] + sorted(int(rng.random() * s) for _ in range(DOCS - 1))


def tile_costs(s, m, n, starts, overhead):
    costs = []
    for tile in range((s + m - 1) // m):
        first_row, last_row = tile * m, min(s, tile * m + m) - 1
        doc_start = starts[bisect.bisect_right(starts, first_row) - 1]
        costs.append(last_row // n + 1 - doc_start // n + overhead)
    return costs


def grid_tiling(s, m, n, starts):
    """(tiles, visited key blocks, partial blocks) of one sequence in the
    causal grid's tiling. A tile's rows of one document [a, b] with that
    document's start d see the keys [d, b]; a block is full when every row
    of the tile sees all of it."""
    ends = starts[1:] + [s]
    tiles = blocks = partial = 0
    for tile in range((s + m - 1) // m):
        r0, r1 = tile * m, min(s, tile * m + m) - 1
        # Per document with rows in the tile: its start d (the rows' first
        # key), the rows' last b (their last key) and first a.
        seen = []
        for d, e in zip(starts, ends):
            a, b = max(r0, d), min(r1, e - 1)
            if a <= b:
                seen.append((d, b, a))
        tiles += 1
        for blk in range(r1 // n + 1):
            k0, k1 = blk * n, blk * n + n - 1
            if not any(d <= k1 and k0 <= b for d, b, _ in seen):
                continue
            blocks += 1
            full = len(seen) == 1 and seen[0][0] <= k0 and k1 <= seen[0][2]
            partial += not full
    return tiles, blocks, partial


def document_tiling(s, m, n, starts):
    """The same for query tiles and key blocks counted from each document's
    start: tile i of a document sees blocks 0..i of it, the last partial."""
    ends = starts[1:] + [s]
    tiles = blocks = partial = 0
    for d, e in zip(starts, ends):
        for i in range((e - d + m - 1) // m):
            last_row = min(e - d, i * m + m) - 1
            tiles += 1
            blocks += last_row // n + 1
            partial += 1
    return tiles, blocks, partial


def compare_tilings(trials, overhead, mask_cost=0.25):
    """Prints grid against per-document tiling (see the module's text)."""
    rng = random.Random(7)
    for s in (4096, 16384):
        sums = {"grid": [0, 0, 0], "documents": [0, 0, 0]}
        useful = equal = 0.0
        for _ in range(trials):
            starts = document_starts(s, rng)
            for key, f in (("grid", grid_tiling), ("documents", document_tiling)):
                for i, x in enumerate(f(s, 128, 128, starts)):
                    sums[key][i] += x
            lengths = [e - d for d, e in zip(starts, starts[1:] + [s])]
            useful += sum(x * x for x in lengths)
            equal += DOCS * (s / DOCS) ** 2
        cost = {k: (b + mask_cost * p + overhead * t) / trials for k, (t, b, p) in sums.items()}
        print(f"S{s}: " + ", ".join(
            f"{k} {t / trials:.1f} tiles, {b / trials:.1f} blocks, {p / trials:.1f} partial"
            for k, (t, b, p) in sums.items())
              + f"; cost (blocks + {mask_cost}·partial + {overhead}·tiles) grid/documents "
              f"{cost['grid'] / cost['documents']:.3f}; useful work over equal documents' "
              f"{useful / equal:.2f}")


def list_schedule(costs, sms=SMS):
    """Makespan of taking the costs in order, each on the SM free first."""
    free = [0.0] * sms
    for c in costs:
        heapq.heappush(free, heapq.heappop(free) + c)
    return max(free)


def mean(xs):
    return sum(xs) / len(xs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--overhead", type=float, default=0.5,
                    help="per-tile cost in key blocks beside its blocks")
    ap.add_argument("--tilings", action="store_true",
                    help="the grid's tiling against one per document")
    args = ap.parse_args()
    if args.tilings:
        compare_tilings(args.trials, args.overhead)
        return
    rng = random.Random(7)
    for b, h, s, m in [(4, 16, 4096, 128), (1, 16, 16384, 128), (4, 32, 4096, 128),
                       (1, 32, 16384, 128)]:
        out = {}
        for _ in range(args.trials):
            per_batch = [tile_costs(s, m, 128, document_starts(s, rng), args.overhead)
                         for _ in range(b)]
            nm = len(per_batch[0])
            grid = [per_batch[i][nm - 1 - y] for i in range(b) for y in range(nm)
                    for _ in range(h)]
            units = [per_batch[i][t] for i in range(b) for _ in range(h) for t in range(nm)]
            balanced = sum(grid) / SMS
            t_grid = list_schedule(grid)
            out.setdefault("grid", []).append(t_grid / balanced)
            out.setdefault("head-major", []).append(list_schedule(units) / balanced)
            for g in (132, 264, 528, 1056):
                ctas = [sum(units[c::g]) for c in range(g)]
                t = list_schedule(ctas)
                out.setdefault(f"static{g}", []).append(t / balanced)
                out.setdefault(f"static{g}/grid", []).append(t_grid / t)
        print(f"B{b} H{h} S{s} M{m}: " +
              ", ".join(f"{k} {mean(v):.3f}" for k, v in out.items()))


if __name__ == "__main__":
    main()
