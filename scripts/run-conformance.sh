#!/usr/bin/env bash
# Runs the ONNX node conformance suite (tests/conformance, every case of
# /usr/share/libonnx-testdata on reference and cpu) in ONE process of the given test binary
# (with an emulator in front for arm64), prints its pass/skip count, and fails when a case fails
# (the failing cases and their messages are printed). The CI scripts use it instead of one ctest
# process per case.
#   scripts/run-conformance.sh build/tests/lockstep_tests
#   scripts/run-conformance.sh qemu-aarch64-static -cpu neoverse-n1 build-arm64/tests/lockstep_tests
set -uo pipefail
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
"$@" --gtest_filter='Node/OnnxNodeTest.*' --gtest_brief=1 >"$log" 2>&1
status=$?
grep "ONNX node conformance" "$log" || true
if ((status != 0)); then
  cat "$log"
  echo "run-conformance: FAILED (exit $status): $*" >&2
  exit 1
fi
grep -E "^\[  PASSED  \]" "$log" || true
