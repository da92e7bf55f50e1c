#!/usr/bin/env bash
# Re-runs the yardstick (nvFuser's own pointwise Python frontend tests) against a widefuse
# build and prints the totals and the failure table.
#   run.sh BUILD_DIR [OUT_DIR]     BUILD_DIR/python holds the widefuse package
# Environment: PYTHON (default the repository's .venv: torch, pytest, numpy),
#   YARDSTICK_BACKEND (reference | host, default reference), YARDSTICK_SIMULATE (see
#   shim/nvfuser/__init__.py), YARDSTICK_STRICT=1 (no emulation of nvFuser internals),
#   ONLY=legacy|opinfo (one suite), PYTEST_K (a -k expression), PYTEST_ARGS (more args).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=$(cd "${1:?usage: run.sh BUILD_DIR [OUT_DIR]}" && pwd)
OUT=${2:-$HERE/out/$(date -u +%Y%m%dT%H%M%S)}
PYTHON=${PYTHON:-$HERE/../../.venv/bin/python}
mkdir -p "$OUT"
RUN="$OUT/tests"
"$PYTHON" "$HERE/prepare.py" "$RUN" >/dev/null
export PYTHONPATH="$HERE/shim:$BUILD/python:${YARDSTICK_DEPS:-$HERE/deps}"
export PYTHONDONTWRITEBYTECODE=1 WIDEFUSE_CACHE_DIR="$OUT/cache" TMPDIR="$OUT"
echo "widefuse: $("$PYTHON" -c 'import widefuse,sys; print(widefuse.__file__)')"
for suite in legacy opinfo; do
  [ -n "${ONLY:-}" ] && [ "$ONLY" != "$suite" ] && continue
  rm -f "$OUT/$suite.jsonl"
  file=$([ $suite = legacy ] && echo test_python_frontend.py || echo test_legacy_ops.py)
  (cd "$RUN/$suite" && YARDSTICK_RESULTS="$OUT/$suite.jsonl" nice -n ${YARDSTICK_NICE:-10} "$PYTHON" -m pytest \
     -q -p no:cacheprovider -rN --tb=long -W ignore ${PYTEST_K:+-k "$PYTEST_K"} ${PYTEST_ARGS:-} "$file" \
     > "$OUT/$suite.log" 2>&1)
  echo "$suite: $(tail -1 "$OUT/$suite.log")"
done
"$PYTHON" "$HERE/analyze.py" "$OUT"/*.jsonl | tee "$OUT/summary.txt"
echo "results in $OUT"
