# CI step records (docs/ci.md), sourced by scripts/test.sh, ci-sanitizers.sh and test-arm64.sh.
# Each step appends a line to $LOCKSTEP_STEP_LOG (TSV: name, seconds, tests, ccache hits, misses,
# status); .ci/run prints them as a table at the end of every run, failed or not. Without
# LOCKSTEP_STEP_LOG (a by-hand run) the steps are only announced.

# ccache's hit and miss counters now, as "hits misses" ("- -" without ccache).
ccache_counts() {
  if command -v ccache >/dev/null; then
    ccache --print-stats 2>/dev/null | awk -F'\t' '
      $1 == "direct_cache_hit" || $1 == "preprocessed_cache_hit" { h += $2 }
      $1 == "cache_miss" { m += $2 } END { print h + 0, m + 0 }'
  else
    echo "- -"
  fi
}

# step_begin NAME: announces the step and marks it running (a run that dies here shows it).
step_begin() {
  _step_name="$1"; _step_t0=$SECONDS; _step_cc0="$(ccache_counts)"
  echo; echo "=== step: $1 ($(date +%T))"
  [ -n "${LOCKSTEP_STEP_LOG:-}" ] && printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$1" 0 - - - running >>"$LOCKSTEP_STEP_LOG"
  return 0
}

# step_end TESTS: records the step begun last with its tests count ("-" when it runs none).
step_end() {
  local cc1 h0 m0 h1 m1 dh="-" dm="-"
  cc1="$(ccache_counts)"; read -r h0 m0 <<<"$_step_cc0"; read -r h1 m1 <<<"$cc1"
  if [ "$h0" != - ] && [ "$h1" != - ]; then dh=$((h1 - h0)); dm=$((m1 - m0)); fi
  [ -n "${LOCKSTEP_STEP_LOG:-}" ] && printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$_step_name" \
    $((SECONDS - _step_t0)) "${1:--}" "$dh" "$dm" ok >>"$LOCKSTEP_STEP_LOG"
  return 0
}

# step_skip NAME WHAT: records a step left out, loudly, with what it would have run.
step_skip() {
  echo; echo "!!! ================================================================"
  echo "!!! SKIPPED: $1"; echo "!!! it would have run: $2"
  echo "!!! ================================================================"
  [ -n "${LOCKSTEP_STEP_LOG:-}" ] && printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$1" 0 - - - SKIPPED >>"$LOCKSTEP_STEP_LOG"
  return 0
}

# Tests counted in a runner's output (a file): ctest's "out of N", pytest's passed + skipped,
# the conformance run's gtest "[  PASSED  ] N tests".
count_ctest() { grep -oE 'tests failed out of [0-9]+' "$1" | tail -1 | grep -oE '[0-9]+$' || echo 0; }
count_pytest() {
  tail -5 "$1" | grep -oE '[0-9]+ (passed|skipped|failed|error)' | awk '{ n += $1 } END { print n + 0 }'
}
count_gtest() { grep -oE '^\[  PASSED  \] [0-9]+ test' "$1" | tail -1 | grep -oE '[0-9]+' || echo 0; }

# ctest starts the longest tests first when it knows their costs; a fresh build tree knows none and
# runs them in declaration order, so a -j2 run can end on one long test with a core idle. A tree
# without cost data gets the committed ones (tests/ctest-costs.txt, from a CI run's release tree).
seed_ctest_costs() {
  local dir="$1/Testing/Temporary"
  [ -f "$dir/CTestCostData.txt" ] && return 0
  mkdir -p "$dir" && cp tests/ctest-costs.txt "$dir/CTestCostData.txt"
}
