#!/usr/bin/env bash
# The project's checks, in CI's order: formatting, lint, import layers, then the tests.
#   bash scripts/check.sh                  everything (what CI runs)
#   bash scripts/check.sh -m "not slow"    the fast tier, about 3 min on 2 cores
# Arguments go to pytest. Then tests/test_golden.py runs again under other numerical
# kernels (scripts/other-kernels.sh), unless the arguments named test files. The three static checks all run (so one pass reports every
# problem); the tests run only when they pass. Any failure, including pytest's exit
# code 5 (no tests collected), fails the script.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin
[ -x "$BIN/python" ] || { echo "run scripts/setup.sh first (.venv is missing)" >&2; exit 1; }

failed=()
run() {
  echo "== $*"
  "$@" || failed+=("$*")
}
run "$BIN/ruff" format --check .
run "$BIN/ruff" check .
run "$BIN/lint-imports" --no-cache --no-logo
if [ ${#failed[@]} -gt 0 ]; then
  printf 'check failed: %s\n' "${failed[@]}" >&2
  exit 1
fi

# bytecode is cached between runs: with PYTHONDONTWRITEBYTECODE set (some shells and
# images set it) every worker and every CLI subprocess compiles the project anew, about
# 13 s of the fast tier on 2 cores
unset PYTHONDONTWRITEBYTECODE
echo "== pytest -n 2 $*"
"$BIN/python" -m pytest -q -n 2 "$@"
status=$?
if [ "$status" -eq 5 ]; then
  echo "check failed: pytest collected no tests" >&2
  exit 5
fi

# The golden runs again under other numerical kernels (docs/architecture.md, "Results that
# travel"): the cross-CPU contract checked on this CPU. Skipped when the arguments chose
# test files; a -m expression is passed on.
marker=()
chose_files=0
prev=""
for arg in "$@"; do
  case "$prev" in
    -m) marker=(-m "$arg") ;;
    -k | -p | -n | --*=*) ;;
    *) case "$arg" in -*) ;; *) chose_files=1 ;; esac ;;
  esac
  prev="$arg"
done
if [ "$chose_files" -eq 0 ]; then
  echo "== golden runs under other kernels"
  bash scripts/other-kernels.sh "$BIN/python" -m pytest -q -n 2 -p no:cacheprovider \
    tests/test_golden.py "${marker[@]}" || status=$((status == 0 ? 1 : status))
fi
exit "$status"
