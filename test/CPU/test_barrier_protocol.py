"""A model check of the Hopper kernel's synchronization protocol.

The kernel (lib/Dialect/Fat/Hopper/Kernel/AttentionKernel*.cpp) coordinates one TMA
producer thread and one to three consumer warpgroups (block-m = 64, 128,
192) through mbarriers (Q full/empty,
the K and V rings' full/empty) and, with ping-pong turns, named barriers 1 to 3 (one per consumer).
A protocol bug is a hang or a silent race on the GPU, so this test runs the
same sequence of barrier operations as the builder emits — per tile, per KV
block, for each schedule (plain, overlapped, ping-pong, persistent with
several tiles per CTA, empty KV ranges, 1 to 3 stages, tile overlap: a
tile's last P·V issued with the next tile's first S; O staged through the
tile's Q buffer or, with one Q buffer, through its last V stage after a
named barrier of the consumers) — under many random
interleavings, with TMA completions arriving at random later times, and
checks that

- every run terminates (no deadlock),
- TMA never writes a shared-memory slot (a K or V stage, or Q) that a
  consumer warpgroup has acquired and not yet released,
- every consumer reads each slot only after the TMA write it waited for
  completed, and each KV block's K and V exactly once per warpgroup,
- every barrier phase completes exactly: at the end no named barrier holds
  pending arrivals (ping-pong's game is balanced),
- a consumer stages O in a V stage only after every consumer's last P·V
  finished reading it.

Semantics modelled: mbarrier phases complete when the expected arrivals and
the transaction bytes are in; `try_wait.parity(P)` succeeds once the phase
of parity P has completed (on a fresh barrier, parity 1 counts as complete);
`bar.sync id, n` / `bar.arrive id, n` complete a phase when n threads have
arrived (a consumer warpgroup is 128 threads acting together).
"""

import itertools
import random

import pytest


class MBarrier:
    def __init__(self, count):
        self.count = count
        self.pending = count
        self.tx = 0
        self.phase = 0  # index of the phase in progress

    def arrive(self, tx=0):
        self.tx += tx
        self.pending -= 1
        assert self.pending >= 0, "more arrivals than expected"
        self._maybe_complete()

    def complete_tx(self, tx):
        self.tx -= tx
        assert self.tx >= 0
        self._maybe_complete()

    def _maybe_complete(self):
        if self.pending == 0 and self.tx == 0:
            self.phase += 1
            self.pending = self.count

    def ready(self, parity):
        # Phase k has parity k & 1; waiting on P succeeds once the latest
        # phase of parity P has completed, i.e. the phase in progress has
        # the other parity... or a later one of parity P completed.
        return (self.phase & 1) != parity


class NamedBarrier:
    def __init__(self, count):
        self.count = count
        self.arrived = 0
        self.arrivers = set()
        self.generation = 0

    def arrive(self, n, who):
        # A warp must not arrive again at a named barrier whose phase it
        # already arrived in (PTX leaves that undefined; a counter would let
        # one warpgroup complete a phase alone).
        assert who not in self.arrivers, (
            f"warpgroup {who} arrives twice in one phase of a named barrier")
        self.arrivers.add(who)
        self.arrived += n
        if self.arrived == self.count:
            self.arrived = 0
            self.arrivers.clear()
            self.generation += 1


class Kernel:
    """One CTA: the producer and `consumers` consumer warpgroups as
    generators that yield ("wait", predicate) to block or ("step",) after an
    action. Ping-pong turns go round two or three consumers (as the kernel checks)."""

    def __init__(self, tiles, stages, overlap, pingpong, persistent, rng,
                 game_per_tile=None, consumers=2, q_buffers=1, tile_overlap=False,
                 stage_o=None):
        assert consumers > 1 or not pingpong
        # stage_o (AttentionKernelConfig::stageO): None = O from registers;
        # "q" = staged in the warpgroup's Q rows, Q released after the
        # epilogue; "v" (persistent, one Q buffer, overlapped) = staged in
        # the last key block's V stage after the consumers' named barrier,
        # that V released after the epilogue (Q, for a tile without keys).
        assert stage_o in (None, "q", "v") and not (stage_o and tile_overlap)
        assert stage_o != "v" or (persistent and q_buffers == 1 and overlap)
        self.stage_o = stage_o
        self.epilogue_barrier = NamedBarrier(128 * consumers)
        self.finished = {c: set() for c in range(consumers)}
        assert q_buffers == 1 or persistent
        assert not tile_overlap or (persistent and overlap and not game_per_tile)
        self.tile_overlap = tile_overlap
        self.tiles, self.stages = tiles, stages
        self.overlap, self.pingpong, self.persistent = overlap, pingpong, persistent
        # The kernel plays one ping-pong game per CTA when persistent, one
        # per tile otherwise; True forces per-tile games on persistent
        # tiles too (an equally correct alternative the tests also check).
        self.game_per_tile = not persistent if game_per_tile is None else game_per_tile
        # Arrival counts in warpgroups: the kernel's 128·consumers thread
        # arrivals come from warpgroups of 128 threads acting together.
        self.consumers = consumers
        # Q buffers (qBuffers): tile i uses buffer i mod q_buffers, whose
        # barriers have seen ⌊i/q_buffers⌋ phases before it.
        self.q_buffers = q_buffers
        self.q_full = [MBarrier(1) for _ in range(q_buffers)]
        self.q_empty = [MBarrier(consumers) for _ in range(q_buffers)]
        self.full = {(isv, s): MBarrier(1) for isv in (0, 1) for s in range(stages)}
        self.empty = {(isv, s): MBarrier(consumers) for isv in (0, 1) for s in range(stages)}
        # Turns go round the consumers: c waits on 1 + c and hands over on
        # 1 + (c + 1) mod consumers.
        self.named = {1 + c: NamedBarrier(256) for c in range(consumers)}
        # Shared memory: slot -> (tag of the data in it, writes in flight,
        # warpgroups holding it).
        self.slot_data = {}
        self.holders = {}
        self.inflight = []  # TMA copies not yet landed: (slot, tag, barrier, bytes)
        self.rng = rng
        self.reads = {c: [] for c in range(consumers)}
        self.q_of = {}

    # -- helpers -----------------------------------------------------------
    def ring(self, base, j, lo):
        it = base + j - lo
        return it % self.stages, (it // self.stages) & 1

    def tma(self, slot, tag, barrier, nbytes):
        assert not self.holders.get(slot), (
            f"TMA overwrites {slot} while warpgroups {self.holders[slot]} hold it")
        self.slot_data[slot] = None  # being written
        self.inflight.append((slot, tag, barrier, nbytes))

    def land_one(self):
        slot, tag, barrier, nbytes = self.inflight.pop(self.rng.randrange(len(self.inflight)))
        self.slot_data[slot] = tag
        barrier.complete_tx(nbytes)

    def acquire(self, wg, slot, tag):
        assert self.slot_data.get(slot) == tag, (
            f"warpgroup {wg} reads {slot} expecting {tag}, holds {self.slot_data.get(slot)}")
        self.holders.setdefault(slot, set()).add(wg)
        self.reads[wg].append(tag)

    def release(self, wg, slot, barrier):
        self.holders[slot].discard(wg)
        barrier.arrive()

    def wait(self, barrier, parity):
        return ("wait", lambda: barrier.ready(parity))

    # -- the producer (buildProducer / buildProducerTile) --------------------
    def producer(self):
        base = 0
        for i, (t, lo, hi) in enumerate(self.tiles):
            q, uses = i % self.q_buffers, i // self.q_buffers
            if self.persistent:
                yield self.wait(self.q_empty[q], (uses & 1) ^ 1)
            self.q_full[q].arrive(tx=1)
            self.tma(("Q", q), ("Q", t), self.q_full[q], 1)
            yield ("step",)
            for j in range(lo, hi):
                s, parity = self.ring(base, j, lo)
                for isv in (0, 1):
                    yield self.wait(self.empty[(isv, s)], parity ^ 1)
                    self.full[(isv, s)].arrive(tx=1)
                    self.tma(("V" if isv else "K", s), (("V" if isv else "K"), t, j),
                             self.full[(isv, s)], 1)
                    yield ("step",)
            base += hi - lo

    # -- a consumer warpgroup (buildConsumer and the two loops) --------------
    def turn_begin(self, c):
        if not self.pingpong:
            return
        # bar.sync 1 + c, 256: this warpgroup's 128 arrive and wait for the
        # phase to complete.
        barrier = self.named[1 + c]
        generation = barrier.generation
        barrier.arrive(128, c)
        yield ("wait", lambda: barrier.generation > generation)

    def turn_end(self, c, last):
        if not self.pingpong:
            return
        if last and c == self.consumers - 1:
            return
        self.named[1 + (c + 1) % self.consumers].arrive(128, c)

    def open_game(self, c):
        if self.pingpong and c == self.consumers - 1:
            self.named[1].arrive(128, c)

    def close_game(self, c):
        if self.pingpong and c == 0:
            yield from self.turn_begin(0)

    def consumer(self, c):
        if self.tile_overlap:
            yield from self.chained(c)
            return
        base = 0
        if not self.game_per_tile:
            self.open_game(c)
        for i, (t, lo, hi) in enumerate(self.tiles):
            yield from self.take_q(c, i, t)
            loop = self.overlapped if self.overlap else self.plain
            yield from loop(c, t, lo, hi, base)
            yield from self.epilogue(c, t, lo, hi, base)
            base += hi - lo
        if not self.game_per_tile:
            yield from self.close_game(c)

    def epilogue(self, c, t, lo, hi, base):
        # buildEpilogue / buildStoreOStaged / buildReleaseStaging.
        if self.stage_o == "v":
            # bar.sync kEpilogueBarrier, 128·consumers: every consumer thread.
            barrier = self.epilogue_barrier
            generation = barrier.generation
            barrier.arrive(128, c)
            yield ("wait", lambda: barrier.generation > generation)
            if lo < hi:
                last = ("V", t, hi - 1)
                for other in range(self.consumers):
                    assert last in self.finished[other], (
                        f"warpgroup {c} stages O in {last} while warpgroup {other} "
                        f"has not finished its P·V reading it")
                sl, _ = self.ring(base, hi - 1, lo)
                yield from self.stage_in(c, ("V", sl), last)
                self.release(c, ("V", sl), self.empty[(1, sl)])
                return
        if self.stage_o:
            yield from self.stage_in(c, ("Q", self.q_of[c]), ("Q", t))
            self.release_q(c)
        else:
            yield ("step",)  # the epilogue, O from the registers

    def stage_in(self, c, slot, tag):
        # stmatrix into the slot, read back, store: the slot is still this
        # warpgroup's (not released, so no TMA refilled it) throughout.
        assert c in self.holders.get(slot, set()) and self.slot_data.get(slot) == tag, (
            f"warpgroup {c} stages O in {slot} after releasing it")
        yield ("step",)
        assert self.slot_data.get(slot) == tag, (
            f"TMA overwrote {slot} while warpgroup {c} staged O in it")

    def take_q(self, c, i, t):
        # Tile i (of this CTA) reads Q buffer i mod q_buffers, whose full
        # barrier has completed ⌊i/q_buffers⌋ phases before.
        q, uses = i % self.q_buffers, i // self.q_buffers
        yield self.wait(self.q_full[q], uses & 1)
        self.acquire(c, ("Q", q), ("Q", t))
        self.q_of[c] = q

    def release_q(self, c, staged_in_q=False):
        # buildReleaseQ: Q goes back after the tile's last S, unless this
        # path's epilogue stages O in it (then the epilogue releases it).
        if staged_in_q:
            return
        q = self.q_of[c]  # the buffer of this consumer's current tile
        if self.persistent:
            self.release(c, ("Q", q), self.q_empty[q])
        else:
            self.holders[("Q", q)].discard(c)

    def plain(self, c, t, lo, hi, base):
        for j in range(lo, hi):
            s, parity = self.ring(base, j, lo)
            yield self.wait(self.full[(0, s)], parity)
            self.acquire(c, ("K", s), ("K", t, j))
            yield ("step",)  # S = Q·Kᵀ, wait
            self.release(c, ("K", s), self.empty[(0, s)])
            yield self.wait(self.full[(1, s)], parity)
            self.acquire(c, ("V", s), ("V", t, j))
            yield ("step",)  # O += P·V, wait
            self.release(c, ("V", s), self.empty[(1, s)])
        self.release_q(c, staged_in_q=self.stage_o is not None)

    def overlapped(self, c, t, lo, hi, base):
        if lo >= hi:
            # No V stage to stage O in: it goes through Q in either mode.
            self.release_q(c, staged_in_q=self.stage_o is not None)
            return
        if self.game_per_tile:
            self.open_game(c)
        s0, p0 = self.ring(base, lo, lo)
        yield self.wait(self.full[(0, s0)], p0)
        yield from self.turn_begin(c)
        self.acquire(c, ("K", s0), ("K", t, lo))
        self.turn_end(c, last=False)
        yield ("step",)  # wait S_0
        self.release(c, ("K", s0), self.empty[(0, s0)])
        yield from self.steady(c, t, lo, hi, base)
        # With O staged in the last V stage, Q goes back at once.
        self.release_q(c, staged_in_q=self.stage_o == "q")
        sl, pl = self.ring(base, hi - 1, lo)
        yield self.wait(self.full[(1, sl)], pl)
        yield from self.turn_begin(c)
        self.acquire(c, ("V", sl), ("V", t, hi - 1))
        self.turn_end(c, last=self.game_per_tile)
        yield ("step",)
        self.finished[c].add(("V", t, hi - 1))
        if self.stage_o != "v":
            self.release(c, ("V", sl), self.empty[(1, sl)])

    def steady(self, c, t, lo, hi, base):
        for j in range(lo + 1, hi):
            s, parity = self.ring(base, j, lo)
            sp, pp = self.ring(base, j - 1, lo)
            yield self.wait(self.full[(0, s)], parity)
            yield self.wait(self.full[(1, sp)], pp)
            yield from self.turn_begin(c)
            self.acquire(c, ("K", s), ("K", t, j))
            self.acquire(c, ("V", sp), ("V", t, j - 1))
            self.turn_end(c, last=False)
            yield ("step",)  # wait S_j (P·V in flight)
            self.release(c, ("K", s), self.empty[(0, s)])
            yield ("step",)  # softmax, then wait P·V
            self.release(c, ("V", sp), self.empty[(1, sp)])

    def chained(self, c):
        # buildOverlappedTiles: one game per CTA; a tile's first turn also
        # issues the pending tile's last P·V (a P = 0 product, reading no
        # slot it waited for, when nothing is pending), whose O is stored
        # after that turn's softmax; the last tile's P·V after the loop.
        base = 0
        pending = None  # (tile, stage, parity, block) of the P·V to issue
        self.open_game(c)
        for i, (t, lo, hi) in enumerate(self.tiles):
            yield from self.take_q(c, i, t)
            if lo >= hi:
                self.release_q(c)
                yield ("step",)  # O = 0 for this tile; the pending one waits
                continue
            s0, p0 = self.ring(base, lo, lo)
            yield self.wait(self.full[(0, s0)], p0)
            if pending:
                yield self.wait(self.full[(1, pending[1])], pending[2])
            yield from self.turn_begin(c)
            self.acquire(c, ("K", s0), ("K", t, lo))
            if pending:
                self.acquire(c, ("V", pending[1]), ("V", pending[0], pending[3]))
            self.turn_end(c, last=False)
            yield ("step",)  # wait S_0 (the pending P·V in flight)
            self.release(c, ("K", s0), self.empty[(0, s0)])
            yield ("step",)  # softmax_0, wait the P·V
            if pending:
                self.release(c, ("V", pending[1]), self.empty[(1, pending[1])])
                yield ("step",)  # the pending tile's epilogue
            yield from self.steady(c, t, lo, hi, base)
            self.release_q(c)
            pending = (t, *self.ring(base, hi - 1, lo), hi - 1)
            base += hi - lo
        if pending:
            yield self.wait(self.full[(1, pending[1])], pending[2])
        yield from self.turn_begin(c)
        if pending:
            self.acquire(c, ("V", pending[1]), ("V", pending[0], pending[3]))
        self.turn_end(c, last=False)
        yield ("step",)
        if pending:
            self.release(c, ("V", pending[1]), self.empty[(1, pending[1])])
        yield from self.close_game(c)


def run(kernel, rng, max_steps=200000):
    actors = {"producer": kernel.producer(),
              **{c: kernel.consumer(c) for c in range(kernel.consumers)}}
    blocked = {}
    for _ in range(max_steps):
        runnable = [a for a in actors if a not in blocked or blocked[a]()]
        if kernel.inflight and (not runnable or rng.random() < 0.3):
            kernel.land_one()
            continue
        if not runnable:
            if not actors:
                return
            raise AssertionError(f"deadlock: {sorted(map(str, actors))} all wait")
        a = rng.choice(runnable)
        blocked.pop(a, None)
        try:
            op = next(actors[a])
        except StopIteration:
            del actors[a]
            if not actors and not kernel.inflight:
                return
            continue
        if op[0] == "wait":
            blocked[a] = op[1]
    raise AssertionError("did not terminate")


def schedules():
    """(stages, overlap, pingpong, persistent, consumers, q_buffers,
    game_per_tile, tile_overlap, stage_o); per-tile games only differ from
    the default with ping-pong, only persistent CTAs (several tiles) take
    two Q buffers, tile overlap chains the overlapped loops of one game
    (and stores O from registers), and O is staged in the last V stage only
    by overlapped persistent CTAs with one Q buffer."""
    for stages, overlap, pingpong, persistent, consumers, q_buffers in itertools.product(
            (1, 2, 3), (False, True), (False, True), (False, True), (1, 2, 3), (1, 2)):
        if pingpong and (not overlap or consumers == 1):
            continue
        if q_buffers == 2 and not persistent:
            continue
        staging = [None, "q"]
        if persistent and q_buffers == 1 and overlap:
            staging.append("v")
        for game_per_tile in ((None, True) if pingpong else (None,)):
            for stage_o in staging:
                yield (stages, overlap, pingpong, persistent, consumers, q_buffers,
                       game_per_tile, False, stage_o)
        if persistent and overlap:
            yield stages, overlap, pingpong, persistent, consumers, q_buffers, None, True, None


@pytest.mark.parametrize(
    "stages,overlap,pingpong,persistent,consumers,q_buffers,game_per_tile,tile_overlap,stage_o",
    list(schedules()))
def test_protocol(stages, overlap, pingpong, persistent, consumers, q_buffers, game_per_tile,
                  tile_overlap, stage_o):
    rng = random.Random(10000000 * (None, "q", "v").index(stage_o) + 1000000 * tile_overlap
                        + 100000 * q_buffers + 10000 * consumers
                        + 1000 * stages + 100 * overlap + 10 * pingpong + persistent)
    for trial in range(60):
        # A CTA's tiles: one without persistence, else several, some with an
        # empty KV range (a causal tile above the diagonal, rows past Skv).
        count = rng.randint(2, 5) if persistent else 1
        tiles = []
        for t in range(count):
            lo = rng.randint(0, 3)
            hi = lo + (0 if rng.random() < 0.2 else rng.randint(1, 6))
            tiles.append((t, lo, hi))
        kernel = Kernel(tiles, stages, overlap, pingpong, persistent, rng, game_per_tile,
                        consumers, q_buffers, tile_overlap, stage_o)
        run(kernel, rng)
        want = [tag for t, lo, hi in tiles for tag in
                [("Q", t)] + [(x, t, j) for j in range(lo, hi) for x in ("K", "V")]]
        for c in range(consumers):
            assert sorted(kernel.reads[c], key=str) == sorted(want, key=str)
        for b in [*kernel.named.values(), kernel.epilogue_barrier]:
            assert b.arrived == 0, "a named-barrier phase was left incomplete"
