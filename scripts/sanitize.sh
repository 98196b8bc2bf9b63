#!/usr/bin/env bash
# The whole lit suite and the runtime's unit test against an AddressSanitizer
# + UndefinedBehaviorSanitizer build of fa-t, one test suite of scripts/test.sh.
#
#   bash scripts/sanitize.sh [REPORT.xml]
#
# The report is one JUnit file holding both (lit's and ctest's testsuites).
# Builds into build-asan/ with FAT_ENABLE_SANITIZERS=ON: our libraries, fa-t-opt
# and the runtime with -fsanitize=address,undefined, -fno-sanitize-recover
# (any UBSan report fails the test that hit it) and asserts on (no NDEBUG).
# Debian's libMLIR.so / libLLVM.so are not instrumented: ASan still sees every
# heap block they allocate (malloc is intercepted), but not their own
# out-of-bounds accesses, and UBSan nothing of theirs. mlir-runner, FileCheck
# and the other LLVM tools the tests call are Debian's, uninstrumented.
# Leak checking is on; lsan.supp lists the suppressions and why.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
report=${1:-"$root/build-asan/test-results/asan.xml"}
build="$root/build-asan"
py="$root/.venv/bin/python"
[ -x "$py" ] || py=python3

bash "$root/scripts/sanitized-build.sh" "$build" FAT_ENABLE_SANITIZERS || exit 1

# allow_user_poisoning=0: LLVM's BumpPtrAllocator (Allocator.h) poisons its
# slabs when the code inlining it is instrumented — ours, for our dialect's
# attribute storage — while Debian's uninstrumented libMLIR.so allocates
# from the same slabs without unpoisoning: false use-after-poison reports.
# Only LLVM's headers poison memory by hand; ASan's own checks stay.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:detect_stack_use_after_return=1:check_initialization_order=1:allow_user_poisoning=0}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$root/scripts/lsan.supp:print_suppressions=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
mkdir -p "$(dirname "$report")"
work=$(mktemp -d "${TMPDIR:-/tmp}/fa-t-asan.XXXXXX")
trap 'rm -rf "$work"' EXIT
/usr/lib/llvm-22/bin/lit -sv "$build/test" --xunit-xml-output="$work/lit.xml"
lit_rc=$?
ctest --test-dir "$build" --output-on-failure --output-junit "$work/ctest.xml"
ctest_rc=$?
"$py" - "$report" "$work/lit.xml" "$work/ctest.xml" <<'PY'
import sys, pathlib, xml.etree.ElementTree as ET
merged = ET.Element("testsuites", name="asan")
for f in sys.argv[2:]:
    if pathlib.Path(f).exists():
        root = ET.parse(f).getroot()
        merged.extend([root] if root.tag == "testsuite" else list(root))
ET.ElementTree(merged).write(sys.argv[1], encoding="utf-8", xml_declaration=True)
PY
[ "$lit_rc" -eq 0 ] && [ "$ctest_rc" -eq 0 ]
