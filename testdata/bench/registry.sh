#!/usr/bin/env bash
# Registry snapshot speed and memory against b3sum, over the same files:
#   (a) 2,000 skills x 20 resources of 10 KiB (about 400 MB)
#   (b) 20,000 skills with one small resource each
# Page cache warm; best of 5 wall times; peak RSS from /usr/bin/time.
# Usage: bash testdata/bench/registry.sh   (from the repository root)
set -euo pipefail
work=${BENCH_DIR:-/tmp/harness-bench-registry}
mkdir -p "$work"
command -v b3sum >/dev/null || { echo "registry.sh: b3sum missing (apt-get install b3sum)" >&2; exit 1; }
[ -x /usr/bin/time ] || apt-get install -y -q time >/dev/null
# Measure a copy of the binary, as an installed one would be: on this
# machine a process started from the file the Go linker has just written
# shows about 18 MB more peak RSS (harness --version: 44 MB against 26 MB)
# than one started from a copy of it.
go build -o "$work/harness.linked" ./cmd/harness
cp "$work/harness.linked" "$work/harness"
rm "$work/harness.linked"
go build -o "$work/gentree" ./testdata/bench/gentree

gen() { # name skills files bytes
  [ -d "$work/$1" ] || "$work/gentree" "$work/$1" "$2" "$3" "$4"
}
gen a 2000 20 10240
gen b 20000 1 512

best() { # prints "seconds maxrss_kb" of the fastest of 5 runs
  # The wall time comes from the clock around /usr/bin/time, to the
  # microsecond: its own %e has 10 ms steps, a tenth of a warm snapshot.
  local best="" line s e
  for _ in 1 2 3 4 5; do
    s=$(date +%s%N)
    /usr/bin/time -o "$work/time.out" -f '%M' "$@" >/dev/null 2>&1
    e=$(date +%s%N)
    line="$(awk -v ns=$((e - s)) 'BEGIN{printf "%.4f", ns/1e9}') $(tail -n1 "$work/time.out")"
    if [ -z "$best" ] || awk -v a="${line% *}" -v b="${best% *}" 'BEGIN{exit !(a<b)}'; then best=$line; fi
  done
  echo "$best"
}

printf '%-4s %8s %8s %10s %14s %10s %7s %10s %14s %12s\n' tree files MB harness_s harness_rss_MB b3sum_s ratio cached_s cached_rss_MB cached/first
for t in a b; do
  root="$work/$t"
  find "$root" -type f -print0 >"$work/$t.files"
  files=$(tr -cd '\0' <"$work/$t.files" | wc -c)
  mb=$(du -sm --apparent-size "$root" | cut -f1)
  xargs -0 cat <"$work/$t.files" >/dev/null # warm the page cache
  h=$(best "$work/harness" skills snapshot --skills-root "$root" --workspace "$root" --out "$work/$t.json")
  b=$(best sh -c "xargs -0 b3sum <'$work/$t.files'")
  # The same snapshot again with the persistent snapshot cache: one run
  # fills it, the best of five later ones is the "second run" figure.
  rm -rf "$work/$t.cache"
  "$work/harness" skills snapshot --skills-root "$root" --workspace "$root" --out "$work/$t.c.json" --snapshot-cache "$work/$t.cache" >/dev/null 2>&1
  c=$(best "$work/harness" skills snapshot --skills-root "$root" --workspace "$root" --out "$work/$t.c.json" --snapshot-cache "$work/$t.cache")
  cmp -s <(grep -v generatedAt "$work/$t.json") <(grep -v generatedAt "$work/$t.c.json") ||
    { echo "registry.sh: the cached snapshot of $t differs from the uncached one" >&2; exit 1; }
  printf '%-4s %8d %8d %10s %14d %10s %7.2f %10s %14d %12.2f\n' "$t" "$files" "$mb" "${h% *}" $((${h#* } / 1024)) "${b% *}" \
    "$(awk -v a="${h% *}" -v b="${b% *}" 'BEGIN{print (b>0)?a/b:0}')" "${c% *}" $((${c#* } / 1024)) \
    "$(awk -v a="${c% *}" -v b="${h% *}" 'BEGIN{print (b>0)?a/b:0}')"
done
