#!/bin/sh
# tests/python.sh — runs the Python package's pytest suite (python/tests) against the build tree's libfmmcl.
# Skips (exit 77) without python3, NumPy or pytest, unless FMMCL_REQUIRE_PYTHON=1 (CI) makes that a failure.
python=${PYTHON:-python3}
srcdir=${srcdir:-.}
missing=""
if ! command -v "$python" >/dev/null 2>&1; then
  missing="$python"
else
  "$python" -c 'import numpy' >/dev/null 2>&1 || missing="NumPy"
  "$python" -c 'import pytest' >/dev/null 2>&1 || missing="$missing${missing:+ and }pytest"
fi
if [ -n "$missing" ]; then
  echo "SKIP: the Python tests need $missing (Debian: apt-get install python3-numpy python3-pytest)"
  [ "${FMMCL_REQUIRE_PYTHON:-0}" = 1 ] && exit 1
  exit 77
fi
lib=$(pwd)/lib/.libs/libfmmcl.so
if [ ! -f "$lib" ]; then
  echo "FAIL: no $lib (build the library first)"
  exit 1
fi
# the build tree's library and the source tree's package; no bytecode or
# pytest cache written into the (possibly read-only) source tree
FMMCL_LIBRARY=$lib PYTHONPATH="$srcdir/python${PYTHONPATH:+:$PYTHONPATH}" PYTHONDONTWRITEBYTECODE=1 \
  "$python" -m pytest -p no:cacheprovider -q -rs "$srcdir/python/tests"
status=$?
if [ "$status" -eq 5 ]; then
  echo "FAIL: pytest collected no tests in $srcdir/python/tests"
  exit 1
fi
exit "$status"
