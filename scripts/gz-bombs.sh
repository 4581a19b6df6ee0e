#!/usr/bin/env bash
# Decompression bombs against the dump readers: small compressed files whose content would cost
# gigabytes if a reader held it. Each must exit 2 (bad input) with a peak RSS inside the documented bound,
# under an address-space limit (`ulimit -v`) that a real dump never needs.
#
# Usage: scripts/gz-bombs.sh                (BIN, WORK, THREADS, MAX_LINE_MIB, VLIMIT_KB, SIZE_MB overridable)
#   BIN           sword binary (default: builds `--profile quick` into $CARGO_TARGET_DIR or target/)
#   WORK          scratch directory (default data/work/gz-bombs; ignored by git)
#   THREADS       -j for sword (default 2)
#   MAX_LINE_MIB  --max-line-mib (default 16)
#   VLIMIT_KB     ulimit -v for each run, in KiB (default 4000000, as in the issue)
#   SIZE_MB       decompressed size of the big members (default 3072)
#   SHAPES        which shapes to run (default: all; see below)
#
# Shapes (every file starts with a `[\n` member, as a Wikimedia dump does):
#   long-line     one member of SIZE_MB of spaces: a line that never ends
#   junk-lines    one member of 100 MB of `x\n`: 50 M malformed lines
#   many-members  20 000 members of 64 KiB of `x\n` each (1.3 GB of junk lines spread over many members)
#   huge-member   one member of SIZE_MB of blank lines after a good entity (no error until the end: the dump
#                 holds no labelled entity...), then one of spaces: memory stays flat while it streams
#   long-lines-members  2 000 members of 1 MiB of spaces each (a line carried across members)
# and, for every format the reader has, the long-line shape as single-member gzip, bzip2 (level 9: every block
# a run-length bomb of ≈ 46 MB, decoded in parallel; bz2-stdin: the same file on stdin, one decoding thread) and
# zstd, and stdin (plain JSON).
#
# Prints one Markdown row per run: shape, compressed size, exit code, wall s, peak RSS MB, the first words of
# the message. Exits 1 if any run does not exit 2 or goes over the RSS bound printed at the top.
set -euo pipefail
cd "$(dirname "$0")/.."
WORK=${WORK:-data/work/gz-bombs}
THREADS=${THREADS:-2}
MAX_LINE_MIB=${MAX_LINE_MIB:-16}
VLIMIT_KB=${VLIMIT_KB:-4000000}
SIZE_MB=${SIZE_MB:-3072}
TARGET=${CARGO_TARGET_DIR:-target}
if [ -z "${BIN:-}" ]; then
  cargo build --profile quick --bin sword >&2
  BIN=$TARGET/quick/sword
fi
SHAPES=${SHAPES:-long-line junk-lines many-members huge-member long-lines-members single-gz bz2 bz2-stdin zst stdin}
mkdir -p "$WORK"
export SWORD_QUIET=1

open_member() { printf '[\n' | gzip -c; }
spaces() { head -c "$(($1 * 1024 * 1024))" /dev/zero | tr '\0' ' '; }
junk() { yes x | head -c "$(($1 * 1024 * 1024))" || true; }
# repeat FILE N: FILE's bytes N times (by doubling, without N processes)
repeat() {
  local t=$WORK/repeat.tmp size n=1
  size=$(stat -c %s "$1")
  cp "$1" "$t"
  while [ "$n" -lt "$2" ]; do cat "$t" "$t" > "$t.2"; mv "$t.2" "$t"; n=$((n * 2)); done
  head -c "$((size * $2))" "$t"
  rm -f "$t"
}

make() { # make SHAPE → prints the file name
  local f=$WORK/$1.json.gz
  case $1 in
    single-gz) f=$WORK/$1.json.gz ;;
    bz2 | bz2-stdin) f=$WORK/bz2.json.bz2 ;;
    zst) f=$WORK/$1.json.zst ;;
    stdin) f=$WORK/long-line.json.gz ;;
  esac
  if [ ! -s "$f" ]; then
    case $1 in
      long-line | stdin) { open_member; spaces "$SIZE_MB" | gzip -1 -c; } > "$f" ;;
      junk-lines) { open_member; junk 100 | gzip -1 -c; } > "$f" ;;
      many-members)
        { yes x || true; } | head -c 65536 | gzip -1 -c > "$WORK/member-$1.gz"
        { open_member; repeat "$WORK/member-$1.gz" 20000; } > "$f" ;;
      huge-member)
        { open_member
          { printf '{"type":"item","id":"Q1","labels":{}},\n'; head -c "$((SIZE_MB * 1024 * 1024))" /dev/zero | tr '\0' '\n'; } | gzip -1 -c
          spaces 64 | gzip -1 -c; } > "$f" ;;
      long-lines-members)
        spaces 1 | gzip -1 -c > "$WORK/member-$1.gz"
        { open_member; repeat "$WORK/member-$1.gz" 2000; } > "$f" ;;
      single-gz) { printf '[\n'; spaces "$SIZE_MB"; } | gzip -1 -c > "$f" ;;
      bz2 | bz2-stdin) { printf '[\n'; spaces "$SIZE_MB"; } | bzip2 -9 -c > "$f" ;;
      zst) { printf '[\n'; spaces "$SIZE_MB"; } | zstd -q -1 -c > "$f" ;;
    esac
  fi
  echo "$f"
}

bound_mb=200
echo "sword $("$BIN" --version), -j $THREADS, --max-line-mib $MAX_LINE_MIB, ulimit -v $VLIMIT_KB KiB, $(nproc) cores, $(date -u +%F), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "bound: peak RSS ≤ $bound_mb MB"
echo
echo "| shape | compressed bytes | exit | wall s | peak RSS MB | message |"
echo "|---|---:|---:|---:|---:|---|"
fail=0
for shape in $SHAPES; do
  f=$(make "$shape")
  out=$WORK/out-$shape
  rm -rf "$out"
  if [ "$shape" = stdin ]; then
    cmd="gzip -dc '$f' | '$BIN' -j $THREADS extract --dump - --out '$out' --max-line-mib $MAX_LINE_MIB"
  elif [ "$shape" = bz2-stdin ]; then
    cmd="'$BIN' -j $THREADS extract --dump - --out '$out' --max-line-mib $MAX_LINE_MIB < '$f'"
  else
    cmd="'$BIN' -j $THREADS extract --dump '$f' --out '$out' --max-line-mib $MAX_LINE_MIB"
  fi
  set +e
  /usr/bin/time -f '%e %M' -o "$WORK/time.txt" bash -c "ulimit -v $VLIMIT_KB; $cmd" 2> "$WORK/err.txt" > /dev/null
  code=$?
  set -e
  read -r wall rss < <(tail -n 1 "$WORK/time.txt") || true
  msg=$(grep -m1 -o 'error: .*' "$WORK/err.txt" | cut -c1-110 | tr '|' '/')
  rss_mb=$((rss / 1024))
  printf '| %s | %s | %s | %s | %s | %s |\n' "$shape" "$(stat -c %s "$f")" "$code" "$wall" "$rss_mb" "$msg"
  if [ "$code" != 2 ] || [ "$rss_mb" -gt "$bound_mb" ]; then fail=1; fi
  rm -rf "$out"
done
exit $fail
