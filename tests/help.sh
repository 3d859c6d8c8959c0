#!/bin/sh
# help.sh — every program the build made answers --help: exit 0, its usage on stdout.
status=0 n=0
for p in host/fmmcl host/fmmcl-info host/fmmcl-mpi tuner/fmmtune benchmarks/bench-* benchmarks/gauss-model-replay \
         benchmarks/model-refit; do
  case $p in *.sh | *.py | *.txt | *'*'*) continue ;; esac
  [ -f "$p" ] && [ -x "$p" ] || continue
  out=$("./$p" --help 2>/dev/null) && rc=0 || rc=$?
  n=$((n + 1))
  if [ "$rc" -ne 0 ] || ! printf '%s' "$out" | grep -qi -e usage -e '--'; then
    echo "FAIL: $p --help: exit $rc, stdout: $(printf '%s' "$out" | head -c 200)"
    status=1
  fi
done
[ "$n" -gt 0 ] || { echo "FAIL: no programs found under $(pwd)"; exit 1; }
[ $status -ne 0 ] || echo "PASS: $n programs answer --help"
exit $status
