"""The problem a kernel implements: the ``config`` object of a manifest.

A :class:`KernelConfig` holds the fields that decide *what* a kernel computes
(dtype, head dims, head counts, output layout, mask, LSE). Tuning choices
(``block_m``, ``block_n``, ``stages``, ``q_buffers``, ``o_store``, ``pv_wait``) decide only *how*; they are kept in the
manifest beside it and do not take part in kernel lookup.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Dict, Tuple

#: Element types of Q, K, V and O.
DTYPES = ("bf16", "f16")
#: Memory layouts of the output O (Q, K and V are read through tensor maps,
#: which take any strides, so their layout is not part of the config).
LAYOUTS = ("bhsd", "bshd")
#: Head dimensions the kernels are built for.
HEAD_DIMS = (64, 128, 256)
#: Keys of a manifest's config that are tuning choices, not part of the problem.
TUNING_KEYS = ("block_m", "block_n", "stages", "q_buffers", "o_store", "pv_wait", "seq_len")
#: How a kernel's epilogue writes O (the manifest's ``o_store``): through
#: shared memory as whole row segments, or straight from the registers.
O_STORES = ("staged", "direct")
#: Where the main loop waits for P·V (the manifest's ``pv_wait``): after the
#: softmax, fenced, or where ptxas puts it.
PV_WAITS = ("late", "early")
#: The tuning keys whose values are names, and the names each allows.
NAMED_TUNING = {"o_store": O_STORES, "pv_wait": PV_WAITS}


@dataclasses.dataclass(frozen=True)
class KernelConfig:
    """What one kernel computes; see docs/kernel-abi.md, "Manifest".

    ``window`` is ``(left, right)``, each ``>= 0`` or ``-1`` for unbounded.
    """

    dtype: str
    head_dim: int
    head_dim_v: int
    num_heads_q: int
    num_heads_kv: int
    layout: str = "bhsd"
    causal: bool = False
    window: Tuple[int, int] = (-1, -1)
    lse: bool = False
    #: The compiler's key of the score / mask modifications the kernel applies
    #: (its name carries it too); "" for none.
    modifications: str = ""

    @property
    def masked(self) -> bool:
        """True when a causal or window mask is applied (the kernel needs ``diag``)."""
        return self.causal or self.window != (-1, -1)

    def to_dict(self) -> Dict[str, Any]:
        """The manifest's JSON form (``window`` as a list)."""
        d = dataclasses.asdict(self)
        d["window"] = list(self.window)
        if not self.modifications:
            del d["modifications"]  # as in a plain kernel's manifest
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "config") -> "KernelConfig":
        """Parses and validates a manifest's ``config``; tuning keys are ignored.

        Raises ValueError naming the field (``where.field``) and the bad value.
        """
        if not isinstance(d, Mapping):
            raise ValueError(f"{where}: expected an object, got {type(d).__name__}")
        known = {f.name for f in dataclasses.fields(cls)} | set(TUNING_KEYS)
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"{where}: unknown key(s) {', '.join(unknown)}")

        def get(key, kind, default=dataclasses.MISSING):
            if key not in d:
                if default is dataclasses.MISSING:
                    raise ValueError(f"{where}.{key}: missing")
                return default
            value = d[key]
            # bool is an int in Python; keep the two apart.
            ok = isinstance(value, kind) and (kind is bool or not isinstance(value, bool))
            if not ok:
                raise ValueError(
                    f"{where}.{key}: expected {kind.__name__}, got {value!r}")
            return value

        dtype = get("dtype", str)
        if dtype not in DTYPES:
            raise ValueError(f"{where}.dtype: expected one of {', '.join(DTYPES)}, got {dtype!r}")
        dims = {}
        for key in ("head_dim", "head_dim_v", "num_heads_q", "num_heads_kv"):
            dims[key] = get(key, int)
            if dims[key] <= 0:
                raise ValueError(f"{where}.{key}: expected a positive integer, got {dims[key]}")
        if dims["num_heads_q"] % dims["num_heads_kv"]:
            raise ValueError(
                f"{where}: expected num_heads_q ({dims['num_heads_q']}) to be a multiple "
                f"of num_heads_kv ({dims['num_heads_kv']})")
        layout = get("layout", str, "bhsd")
        if layout not in LAYOUTS:
            raise ValueError(f"{where}.layout: expected one of {', '.join(LAYOUTS)}, got {layout!r}")
        window = get("window", list, [-1, -1])
        if (len(window) != 2 or
                not all(isinstance(w, int) and not isinstance(w, bool) and w >= -1 for w in window)):
            raise ValueError(
                f"{where}.window: expected [left, right] with each >= 0 or -1, got {window!r}")
        for key in TUNING_KEYS:
            if key in NAMED_TUNING:
                allowed = NAMED_TUNING[key]
                if key in d and d[key] not in allowed:
                    raise ValueError(f"{where}.{key}: expected one of {', '.join(allowed)}, "
                                     f"got {d[key]!r}")
                continue
            if key in d:
                value = get(key, int)
                # seq_len 0: tuned for no key length in particular.
                if value < (0 if key == "seq_len" else 1):
                    raise ValueError(f"{where}.{key}: expected a "
                                     f"{'non-negative' if key == 'seq_len' else 'positive'} "
                                     f"integer, got {value}")
        return cls(dtype=dtype, layout=layout, causal=get("causal", bool, False),
                   window=(window[0], window[1]), lse=get("lse", bool, False),
                   modifications=get("modifications", str, ""), **dims)
