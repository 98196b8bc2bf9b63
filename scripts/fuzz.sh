#!/usr/bin/env bash
# Bounded fuzzing of the fa-t compiler, one test suite of scripts/test.sh.
#
#   bash scripts/fuzz.sh REPORT.xml
#
# Builds the two libFuzzer harnesses of tools/fa-t-fuzz into build-fuzz/
# (FAT_ENABLE_FUZZER=ON: our libraries with ASan + UBSan + coverage, linked
# against Debian's uninstrumented libMLIR.so), then runs both at once (one
# core each) for FUZZ_SECONDS seconds (default 80), and writes a JUnit report
# with one testcase per harness: passed when libFuzzer found no crash,
# sanitizer report, timeout (-timeout, a hang), leak or out-of-memory
# (-rss_limit_mb). The text harness starts from the lit tests split at
# `// -----`. Each run starts from those seeds alone, so that it takes the
# same time everywhere (libFuzzer first runs its whole corpus, whatever
# -max_total_time says); FUZZ_CORPUS=DIR keeps the corpora in DIR/<harness>
# between runs instead, for longer campaigns. The mutation sequence is
# seeded (FUZZ_SEED, default 1), so a CI run repeats the same exploration
# and a finding reproduces; FUZZ_SEED=0 draws a fresh seed (campaigns).
# A failing input is saved as build-fuzz/artifacts/<harness>-crash-<sha1>;
# docs/fuzzing.md says how to replay it and turn it into a regression test.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
report=${1:?usage: scripts/fuzz.sh REPORT.xml}
seconds=${FUZZ_SECONDS:-80}
seed=${FUZZ_SEED:-1}
build="$root/build-fuzz"
harnesses=(fa-t-fuzz-mlir fa-t-fuzz-attention)
py="$root/.venv/bin/python"
[ -x "$py" ] || py=python3

# Inputs and libFuzzer's own temporary files live in one scratch folder that
# goes away however this script ends (the harness also cleans up after each
# input, but a crashing process cannot).
work=$(mktemp -d "${TMPDIR:-/tmp}/fa-t-fuzz-run.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/tmp" "$build/artifacts"

# One JUnit testcase per harness from the logs in $work (a missing log: the
# build failed, and that log is the build's).
write_report() {
  "$py" - "$report" "$work" "$seconds" "${harnesses[@]}" <<'PY'
import re, sys, pathlib, xml.etree.ElementTree as ET
report, work, seconds, names = sys.argv[1], pathlib.Path(sys.argv[2]), sys.argv[3], sys.argv[4:]
suite = ET.Element("testsuite", name="fuzz")
failures = 0
for name in names:
    case = ET.SubElement(suite, "testcase", classname="fuzz", name=name)
    log = work / f"{name}.log"
    rc_file = work / f"{name}.rc"
    text = log.read_text(errors="replace") if log.exists() else ""
    rc = int(rc_file.read_text()) if rc_file.exists() else None
    runs = re.findall(r"Done (\d+) runs in (\d+) second", text)
    # Stopped by a finding: the last status line has the count.
    status = re.findall(r"(?m)^#(\d+)\s", text)
    summary = (f"{runs[-1][0]} executions in {runs[-1][1]} s" if runs
               else f"stopped after {status[-1]} executions" if status
               else "no executions")
    case.set("time", runs[-1][1] if runs else "0")
    print(f"{name}: {summary}, exit code {rc}")
    ET.SubElement(case, "system-out").text = summary + "\n" + text[-4000:]
    if rc != 0:
        failures += 1
        kind = next((k for k in ("deadly signal", "timeout", "leak",
                                 "out-of-memory", "fuzz target exited",
                                 "AddressSanitizer", "runtime error")
                     if k in text), "no result")
        failure = ET.SubElement(case, "failure", message=f"{name}: {kind}")
        failure.text = text[-8000:]
        # CI shows only what is printed: the finding itself (the sanitizer
        # report or libFuzzer's message and the saved input), not the
        # status lines before it.
        lines = text.splitlines()
        start = next((i for i, l in enumerate(lines)
                      if l.startswith("==") or "ERROR:" in l
                      or "runtime error" in l or "fa-t-fuzz: case" in l),
                     max(0, len(lines) - 60))
        print(f"--- {name}: {kind}")
        shown = lines[start:start + 120]
        shown += [l for l in lines[start + 120:]
                  if "Base64:" in l or "Test unit written" in l]
        print("\n".join(shown))
suite.set("tests", str(len(names)))
suite.set("failures", str(failures))
ET.ElementTree(suite).write(report, encoding="utf-8", xml_declaration=True)
PY
}

echo "fuzz: building ${harnesses[*]} in build-fuzz"
if ! bash "$root/scripts/sanitized-build.sh" "$build" FAT_ENABLE_FUZZER \
    "${harnesses[@]}" >"$work/build.log" 2>&1; then
  tail -40 "$work/build.log"
  for h in "${harnesses[@]}"; do cp "$work/build.log" "$work/$h.log"; done
  write_report
  exit 1
fi

# Seeds of the text harness: every lit test case.
corpus=${FUZZ_CORPUS:-$work/corpus}
mkdir -p "$corpus/fa-t-fuzz-mlir" "$corpus/fa-t-fuzz-attention"
"$py" - "$root/test" "$corpus/fa-t-fuzz-mlir" <<'PY'
import hashlib, pathlib, re, sys
src, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
for f in sorted(src.rglob("*.mlir")):
    for i, case in enumerate(re.split(r"(?m)^// -----\s*$", f.read_text())):
        name = hashlib.sha1(case.encode()).hexdigest()[:16]
        (out / f"seed-{f.stem}-{i}-{name}").write_text(case)
PY

# UBSan and ASan reports end the process (the build uses
# -fno-sanitize-recover); leaks are checked (libFuzzer's -detect_leaks).
# allow_user_poisoning=0 as in scripts/sanitize.sh (LLVM's allocator
# annotations in our instrumented code against Debian's uninstrumented MLIR).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:allow_user_poisoning=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
echo "fuzz: running each harness for ${seconds}s"
# The text harness grows its inputs from the seeds, with fat's words as a
# dictionary; a structured case needs its ~60 bytes of choices from the start.
declare -A flags=(
  [fa-t-fuzz-mlir]="-dict=$root/tools/fa-t-fuzz/mlir.dict -max_len=8192"
  [fa-t-fuzz-attention]="-len_control=0 -max_len=256")
for h in "${harnesses[@]}"; do
  (
    # shellcheck disable=SC2086
    cd "$work" && TMPDIR="$work/tmp" "$build/bin/$h" ${flags[$h]} \
      -max_total_time="$seconds" -timeout=30 -rss_limit_mb=3072 -seed="$seed" \
      -print_final_stats=1 \
      -artifact_prefix="$build/artifacts/$h-" \
      "$corpus/$h" >"$work/$h.log" 2>&1
    echo $? >"$work/$h.rc"
  ) &
done
wait
write_report
grep -q 'failures="0"' "$report"
