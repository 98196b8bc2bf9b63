#!/usr/bin/env bash
# Where in the kernel the warps wait: Nsight Compute's per-instruction stall
# sampling (SourceCounters) for fa-t's kernel and cuDNN's at each point,
# summarized by bench/ncu_source.py (stall samples per SASS region and the
# hottest instructions with their neighbours). A modification's point
# (NAME:D:S, bench/bench_mods.py's names and shapes) profiles its kernel
# ("mod") and fa-t's plain kernel of the same shape ("plain") instead.
#   bash bench/ncu_source.sh OUTDIR [--points D:causal:S|NAME:D:S,...] [--kernels DIR]
#     [--mods-kernels DIR]
# Needs build/lib/libfat_runtime.so and the kernel folder (default
# .kernels-bench) beside the tree, as bench/ncu_profile.sh does.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: ncu_source.sh OUTDIR [--points D:causal:S|NAME:D:S,...] [--kernels DIR] [--mods-kernels DIR]}
shift
points=128:0:512
kernels=.kernels-bench
mods=.kernels-mods
while [ $# -gt 0 ]; do
  case $1 in
    --points) points=$2; shift 2 ;;
    --kernels) kernels=$2; shift 2 ;;
    --mods-kernels) mods=$2; shift 2 ;;
    *) echo "ncu_source.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
cd "$root"
export PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}"
export FA_T_RUNTIME_LIB="$root/build/lib/libfat_runtime.so"
tmp=$(mktemp -d)
for point in ${points//,/ }; do
  tag=${point//:/_}
  # ncu_profile.py launches fa-t's kernel, then the peer: for a modification
  # the peer is fa-t's plain kernel, the second fa-t launch.
  case $point in
    [a-z]*) whos="mod plain" ;;
    *) whos="fat cudnn" ;;
  esac
  for who in $whos; do
    case $who in
      fat|mod) select=(--kernel-name 'regex:^fat_' --launch-count 1) ;;
      plain) select=(--kernel-name 'regex:^fat_' --launch-skip 1 --launch-count 1) ;;
      cudnn) select=(--kernel-name 'regex:cudnn') ;;
    esac
    ncu --clock-control none --profile-from-start off --import-source no \
      --section SourceCounters --section WarpStateStats "${select[@]}" \
      -f -o "$tmp/$tag-$who" \
      python3 bench/ncu_profile.py --points "$point" --kernels "$kernels" \
        --mods-kernels "$mods" \
      > "$tmp/$tag-$who.log" 2>&1 || { tail -5 "$tmp/$tag-$who.log"; continue; }
    ncu -i "$tmp/$tag-$who.ncu-rep" --page source --csv --print-source sass \
      > "$tmp/$tag-$who.csv" 2> "$tmp/$tag-$who.err" || { tail -5 "$tmp/$tag-$who.err"; continue; }
    python3 bench/ncu_source.py "$tmp/$tag-$who.csv" --label "$point $who" \
      | tee -a "$out/ncu-source.txt"
    gzip -c "$tmp/$tag-$who.csv" > "$out/$tag-$who.csv.gz"
  done
done
