#!/usr/bin/env bash
# Runs every fa-t test suite and ends with one line: "N passed, N failed".
#
# Suites: lit (IR, passes, CPU execution via mlir-runner, PTX; GPU tests are
# UNSUPPORTED without a GPU), the runtime's C++ unit test (ctest), the CPU
# numerics suite against float64 (pytest test/CPU), and the Python package
# tests (pytest test/Python; torch/GPU tests skip without them), the wheel
# (scripts/test-wheel.sh: `pip install .` into a fresh venv, then import fa_t,
# JIT-compile and run the README example with no FA_T_* variable), the
# embedding tests, bounded fuzzing (scripts/fuzz.sh, ASan + UBSan; one
# testcase per harness), and lit + the runtime unit test again on an ASan +
# UBSan build (scripts/sanitize.sh). Installs and builds first, so it works on
# a clean clone.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/install-deps.sh || { echo "0 passed, 1 failed"; exit 1; }
bash scripts/build.sh || { echo "0 passed, 1 failed"; exit 1; }

py="$root/.venv/bin/python"
results="$root/build/test-results"
rm -rf "$results" && mkdir -p "$results"
export FA_T_OPT="$root/build/bin/fa-t-opt"
export FA_T_RUNTIME_LIB="$root/build/lib/libfat_runtime.so"

echo "== lit"
/usr/lib/llvm-22/bin/lit -sv "$root/build/test" --xunit-xml-output="$results/lit.xml"
echo "== runtime unit test (ctest)"
ctest --test-dir "$root/build" --output-on-failure --output-junit "$results/ctest.xml"
echo "== CPU numerics against float64 (pytest test/CPU)"
"$py" -m pytest -q -s -o junit_family=legacy "$root/test/CPU" --junitxml="$results/cpu.xml"
echo "== Python package (pytest test/Python)"
"$py" -m pytest -q "$root/test/Python" --junitxml="$results/python.xml"
echo "== the wheel: pip install . into a fresh venv, fa_t with no environment variables"
bash "$root/scripts/test-wheel.sh" "$results/wheel.xml"
echo "== embedding: installed package, consumer project, mlir-opt plugin"
bash "$root/scripts/test-integration.sh" "$results/integration.xml"
echo "== fuzzing: libFuzzer harnesses, bounded run (scripts/fuzz.sh)"
bash "$root/scripts/fuzz.sh" "$results/fuzz.xml"
echo "== lit and runtime unit test on an ASan + UBSan build (scripts/sanitize.sh)"
bash "$root/scripts/sanitize.sh" "$results/asan.xml"

# One total over all suites, from their JUnit reports.
"$py" - "$results" <<'PY'
import sys, pathlib, xml.etree.ElementTree as ET
passed = failed = 0
for f in sorted(pathlib.Path(sys.argv[1]).glob("*.xml")):
    root = ET.parse(f).getroot()
    for case in root.iter("testcase"):
        tags = {c.tag for c in case}
        if tags & {"failure", "error"}:
            failed += 1
        elif "skipped" not in tags:
            passed += 1
expected = {"lit.xml", "ctest.xml", "cpu.xml", "python.xml", "wheel.xml",
            "integration.xml", "fuzz.xml", "asan.xml"}
missing = expected - {f.name for f in pathlib.Path(sys.argv[1]).glob("*.xml")}
failed += len(missing)  # a suite that produced no report did not pass
for m in sorted(missing):
    print(f"suite report missing: {m}")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
PY
