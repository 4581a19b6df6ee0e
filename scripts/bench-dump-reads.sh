#!/usr/bin/env bash
# How many bytes `sword extract` reads from disk when the page cache cannot hold the dump (a full dump is 140 GB):
# each binary runs in a memory cgroup of LIMIT_MB (the process and the page cache it fills are charged to it),
# after the caches are dropped; /proc/vmstat `pgpgin` (KiB read from block devices, the whole machine) is read
# before and after, so run it on an otherwise idle machine. Prints the bytes read as a multiple of the dump's size
# (the binary and its libraries add a few tens of MiB), the wall/CPU/peak RSS and the input hash the manifest
# recorded.
#
#   scripts/bench-dump-reads.sh LIMIT_MB DUMP BINARY [BINARY...]
#
# Needs root (drop_caches) and the cgroup v1 memory controller at /sys/fs/cgroup/memory (CGROUP_MEMORY to name
# another mount). THREADS (default 2) is extract's -j; WORK (default data/work/bench-dump-reads) its output;
# EXTRACT_ARGS more flags for extract (e.g. `--shard 0/4`: a shard's reads; its part has no input hash to print).
set -euo pipefail
cd "$(dirname "$0")/.."
LIMIT=${1:?usage: bench-dump-reads.sh LIMIT_MB DUMP BINARY...}
DUMP=${2:?usage: bench-dump-reads.sh LIMIT_MB DUMP BINARY...}
shift 2
[ $# -gt 0 ] || { echo "bench-dump-reads: name at least one binary" >&2; exit 2; }
CGROOT=${CGROUP_MEMORY:-/sys/fs/cgroup/memory}
[ -w "$CGROOT" ] || { echo "bench-dump-reads: no writable cgroup v1 memory controller at $CGROOT" >&2; exit 2; }
THREADS=${THREADS:-2}
WORK=${WORK:-data/work/bench-dump-reads}
CG=$CGROOT/sword-bench-dump-reads
mkdir -p "$CG" "$WORK"
echo $((LIMIT * 1024 * 1024)) > "$CG/memory.limit_in_bytes"
SIZE=$(stat -c %s "$DUMP")
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores, $(date -u +%FT%TZ); dump $DUMP ($SIZE bytes); cgroup limit $LIMIT MiB; -j $THREADS"
for b in "$@"; do
  out=$WORK/out
  rm -rf "$out"
  sync
  echo 3 > /proc/sys/vm/drop_caches
  before=$(awk '/^pgpgin/ {print $2}' /proc/vmstat)
  t=$({ /usr/bin/time -f "%e %U %S %M" bash -c 'echo $$ > "$1/tasks"; shift; exec "$@"' _ "$CG" \
        "$b" -q -j "$THREADS" extract --dump "$DUMP" --out "$out" ${EXTRACT_ARGS:-}; } 2>&1 | tail -1)
  after=$(awk '/^pgpgin/ {print $2}' /proc/vmstat)
  read -r wall user sys rss <<< "$t"
  kib=$((after - before))
  hash=-
  [ -s "$out/extract.manifest.json" ] &&
    hash=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['inputs'][0]['xxh3'])" "$out/extract.manifest.json")
  printf '%s: read from disk %d MiB = %.2f x the dump; wall %s s, CPU %.2f s, peak RSS %d MiB; input xxh3 %s\n' \
    "$b" $((kib / 1024)) "$(awk -v k="$kib" -v s="$SIZE" 'BEGIN { print k * 1024 / s }')" "$wall" \
    "$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')" $((rss / 1024)) "$hash"
done
rmdir "$CG" 2>/dev/null || true
