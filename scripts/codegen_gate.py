#!/usr/bin/env python3
"""The codegen gate: two kernel roots, before and after a change, compared.

    bash scripts/build-gpu-kernels.sh BEFORE_ROOT   # with the old fa-t-opt
    bash scripts/build-gpu-kernels.sh AFTER_ROOT    # with the new one
    python3 scripts/codegen_gate.py BEFORE_ROOT AFTER_ROOT

Every file of every kernel folder (.kernels*, PTX and manifests) is compared
byte for byte. A PTX that differs is assembled on both sides (ptxas, then
cuobjdump as scripts/sass_diff.py does): where the machine code is
byte-identical, encodings included, the change reordered nothing ptxas
keeps, and there is nothing to time. What remains is listed: those kernels
are A/B-timed on the device (bench/bench.py --variants, or
bench/device-softcap-fold.sh for the modification kernels).

Exit status 0 when every kernel is byte-identical or has byte-identical
machine code and every manifest is byte-identical; 1 when some kernel must
be timed, a manifest changed or a file is on one side only.
"""

import argparse
import filecmp
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sass_diff  # noqa: E402
import sass_profile  # noqa: E402


def kernel_files(root):
    for folder in sorted(os.listdir(root)):
        if not folder.startswith(".kernels"):
            continue
        for dirpath, _dirs, files in os.walk(os.path.join(root, folder)):
            for name in sorted(files):
                if name.endswith((".ptx", ".json")):
                    yield os.path.relpath(os.path.join(dirpath, name), root)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("before")
    parser.add_argument("after")
    args = parser.parse_args()
    after = list(kernel_files(args.after))
    before = set(kernel_files(args.before))
    missing = sorted(before.difference(after))
    new = sorted(set(after).difference(before))
    differ = [f for f in after if f in before and not filecmp.cmp(
        os.path.join(args.before, f), os.path.join(args.after, f), shallow=False)]
    ptx = [f for f in after if f.endswith(".ptx")]
    print(f"{len(ptx)} PTX in {args.after}: "
          f"{len([f for f in ptx if f in before and f not in differ])} byte-identical, "
          f"{len([f for f in differ if f.endswith('.ptx')])} differ, "
          f"{len([f for f in new if f.endswith('.ptx')])} new; "
          f"{len([f for f in differ if f.endswith('.json')])} manifests differ")
    for f in missing:
        print(f"missing after: {f}")
    for f in new:
        print(f"new: {f}")
    manifests = [f for f in differ if f.endswith(".json")]
    for f in manifests:
        print(f"manifest differs (the launch contract: read it): {f}")
    to_time = []
    differing_ptx = [f for f in differ if f.endswith(".ptx")]
    if differing_ptx:
        ptxas = sass_profile.find_tool("ptxas")
        cuobjdump = sass_profile.find_tool("cuobjdump")
        if not ptxas or not cuobjdump:
            print(f"codegen_gate: needs ptxas ({ptxas}) and cuobjdump "
                  f"({cuobjdump}) to compare the machine code", file=sys.stderr)
            return 2
        same = 0
        for f in differing_ptx:
            a = sass_diff.compile_sass(os.path.join(args.before, f), ptxas, cuobjdump)
            b = sass_diff.compile_sass(os.path.join(args.after, f), ptxas, cuobjdump)
            if a[2] == b[2]:
                same += 1
                print(f"machine code byte-identical: {f}")
            else:
                to_time.append(f)
                print(f"machine code differs (spills {a[1]} -> {b[1]} bytes): {f}")
        print(f"{same} of {len(differing_ptx)} differing PTX assemble to "
              f"byte-identical machine code")
    for f in to_time:
        print(f"to A/B-time: {f}")
    look = len(to_time) + len(manifests) + len(missing) + len(new)
    print("codegen gate: " + ("kernels unchanged" if not look else
                              f"{look} files need a look"))
    return 0 if not look else 1


if __name__ == "__main__":
    sys.exit(main())
