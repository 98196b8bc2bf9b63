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

    python3 bench/tile_balance_model.py [--trials 20]
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
    args = ap.parse_args()
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
