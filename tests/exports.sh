#!/bin/sh
# exports.sh — libfmmcl.so exports exactly the functions fmmcl.h and fmmcl_cl.h declare.
top=$(cd "$(dirname "$0")/.." && pwd)
so=lib/.libs/libfmmcl.so
[ -f "$so" ] || { echo "SKIP: $so not built (static-only build)"; exit 77; }
command -v nm >/dev/null 2>&1 || { echo "SKIP: nm not found"; exit 77; }
hdr="$top/lib/fmmcl.h $top/lib/fmmcl_cl.h"
want=$(sed -n 's/^FMMCL_EXPORT [^(]*[ *]\(fmmcl_[a-z0-9_]*\)(.*/\1/p' $hdr | sort -u)
have=$(nm -D --defined-only "$so" | awk '$2 ~ /^[TtWiD]$/ {print $3}' | sed 's/@.*//' | sort -u)
n_want=$(echo "$want" | grep -c .)
[ "$n_want" -gt 0 ] || { echo "FAIL: no FMMCL_EXPORT declarations found in $hdr"; exit 1; }
extra=$(comm -13 "/dev/fd/3" "/dev/fd/4" 3<<E1 4<<E2
$want
E1
$have
E2
)
missing=$(comm -23 "/dev/fd/3" "/dev/fd/4" 3<<E1 4<<E2
$want
E1
$have
E2
)
status=0
[ -z "$extra" ] || { echo "FAIL: libfmmcl.so exports symbols the headers do not declare:"; echo "$extra"; status=1; }
[ -z "$missing" ] || { echo "FAIL: header functions libfmmcl.so does not export:"; echo "$missing"; status=1; }
[ $status -ne 0 ] || echo "PASS: libfmmcl.so exports exactly the $n_want functions of fmmcl.h and fmmcl_cl.h"
exit $status
