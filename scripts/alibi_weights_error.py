import sys, numpy as np
sys.path.insert(0, '.')
import test_modifications_numerics as t
from fatcpu import Config, run_config
base = dict(t.TBASE, Sq=384, Skv=384)
for name, tz in (("vector", "linear-bias=vector rowsum=mma"), ("mma", "linear-bias=mma rowsum=mma"), ("weights", "linear-bias=weights")):
    for mods, label in ((t.ALIBI, "slopes 2^-2h"), (t.ALIBI_HEAD, "head")):
        errs = []
        for seed in range(3):
            t.RNG = np.random.default_rng(seed)
            c = Config(f"{name}", dtype="bf16", causal=True, mods=mods, lse=False, tensorize=tz, **base)
            res = run_config(c)
            props = []
            t.check_result(c, res, t.TOL, t.LSE_TOL, lambda k, v: props.append((k, v)))
            errs.append(props[0][1])
        print(name, label, ["%.2e" % e for e in errs])
