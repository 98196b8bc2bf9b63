# Sourced by the shell test suites (scripts/test-integration.sh,
# scripts/test-wheel.sh): named checks of commands, reported as one JUnit
# file that scripts/test.sh totals. Before sourcing, set
#   suite      the testsuite / classname ("integration", "wheel")
#   work       a scratch folder for the logs
#   check_dir  (optional) the folder commands run in
#   show_pass  (optional) lines of a passing check's output to echo
# then call check / skip, and finish with `write_report FILE`.

passed=0
failed=0
skipped=0
cases=""

# Escapes text for an XML attribute or element, dropping control characters.
xml_escape() {
  tr -d '\000-\010\013\014\016-\037' |
    sed -e 's/&/\&amp;/g' -e 's/</\&lt;/g' -e 's/>/\&gt;/g' -e 's/"/\&quot;/g'
}

# check NAME EXPECTED... -- COMMAND...
# Runs COMMAND (in $check_dir, if set); the check passes when it exits 0 and
# its output (stdout and stderr) contains every EXPECTED string.
check() {
  local name=$1 expected=() log start rc why=""
  shift
  while [ "$1" != "--" ]; do expected+=("$1"); shift; done
  shift
  log="$work/$name.log"
  start=$(date +%s%N)
  (cd "${check_dir:-.}" && "$@") >"$log" 2>&1
  rc=$?
  local ms=$((($(date +%s%N) - start) / 1000000)) seconds
  seconds=$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))
  if [ "$rc" -ne 0 ]; then
    why="exit status $rc"
  else
    for text in "${expected[@]}"; do
      grep -qF -- "$text" "$log" || { why="output lacks '$text'"; break; }
    done
  fi
  cases+="  <testcase classname=\"$suite\" name=\"$name\" time=\"$seconds\""
  if [ -z "$why" ]; then
    passed=$((passed + 1))
    echo "PASS: $name (${seconds} s)"
    [ "${show_pass:-0}" -gt 0 ] && tail -n "$show_pass" "$log" | sed 's/^/  | /'
    cases+="/>"$'\n'
  else
    failed=$((failed + 1))
    echo "FAIL: $name ($why)"
    tail -n 40 "$log" | sed 's/^/  | /'
    cases+=">"$'\n'"    <failure message=\"$(printf '%s' "$why" | xml_escape)\">"
    cases+="$(printf '$ %s\n' "$*"; tail -n 60 "$log" | xml_escape)</failure>"$'\n'
    cases+="  </testcase>"$'\n'
  fi
  return 0
}

# skip NAME WHY: a check that cannot run here, reported as skipped.
skip() {
  local name=$1 why=$2
  skipped=$((skipped + 1))
  echo "SKIP: $name ($why)"
  cases+="  <testcase classname=\"$suite\" name=\"$name\" time=\"0\">"
  cases+="<skipped message=\"$(printf '%s' "$why" | xml_escape)\"/></testcase>"$'\n'
}

# write_report FILE: the JUnit file and a one-line summary; fails when a
# check failed.
write_report() {
  local report=$1
  mkdir -p "$(dirname "$report")"
  {
    echo '<?xml version="1.0" encoding="UTF-8"?>'
    echo "<testsuites>"
    echo "<testsuite name=\"$suite\" tests=\"$((passed + failed + skipped))\"" \
         "failures=\"$failed\" skipped=\"$skipped\">"
    printf '%s' "$cases"
    echo "</testsuite>"
    echo "</testsuites>"
  } >"$report"
  echo "$suite: $passed passed, $failed failed, $skipped skipped"
  [ "$failed" -eq 0 ]
}
