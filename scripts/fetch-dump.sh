#!/usr/bin/env bash
# Download a Wikidata JSON dump with resume, and verify it against Wikimedia's published checksums.
#
#   scripts/fetch-dump.sh [--date YYYYMMDD] [--format gz|bz2] [--dest DIR] [--base URL]
#   scripts/fetch-dump.sh --verify FILE SUMS_FILE        # offline: check FILE against a *sha1sums.txt / *md5sums.txt
#
# Without --date, the newest dated directory under BASE that lists our file in its checksum file is used.
# The download goes to DEST/<name>.part (resumed with HTTP ranges when rerun) and is renamed to DEST/<name> only
# after the checksum matches, so the nightly batch never sees a half-downloaded or corrupt dump.
# Exit codes: 0 ok, 2 usage, 3 checksum mismatch, 4 download failure.
set -euo pipefail

BASE="https://dumps.wikimedia.org/wikidatawiki/entities"
DATE=""
FORMAT="gz"
DEST="data/dumps"
VERIFY_FILE=""
VERIFY_SUMS=""

usage() { sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }

while [ $# -gt 0 ]; do
  case "$1" in
    --date) DATE="$2"; shift 2 ;;
    --format) FORMAT="$2"; shift 2 ;;
    --dest) DEST="$2"; shift 2 ;;
    --base) BASE="${2%/}"; shift 2 ;;
    --verify) VERIFY_FILE="$2"; VERIFY_SUMS="$3"; shift 3 ;;
    -h|--help) usage ;;
    *) echo "fetch-dump: unknown argument $1" >&2; usage ;;
  esac
done

# verify FILE SUMS [NAME]: find NAME (default: FILE's base name) in SUMS ("<hex>  <name>" lines, sha1 = 40 hex
# digits, md5 = 32) and compare with the file's digest. Prints what it checked.
verify() {
  local file="$1" sums="$2" name="${3:-$(basename "$1")}"
  local line expected tool actual
  line=$(awk -v n="$name" '{ f=$2; sub(/^\*/, "", f); if (f == n) { print $1; exit } }' "$sums")
  if [ -z "$line" ]; then
    echo "fetch-dump: $name is not listed in $sums" >&2
    return 3
  fi
  expected=$(tr 'A-F' 'a-f' <<<"$line")
  case ${#expected} in
    40) tool=sha1sum ;;
    32) tool=md5sum ;;
    64) tool=sha256sum ;;
    *) echo "fetch-dump: unrecognised checksum '$expected' for $name in $sums" >&2; return 3 ;;
  esac
  actual=$($tool "$file" | awk '{print $1}')
  if [ "$actual" != "$expected" ]; then
    echo "fetch-dump: CHECKSUM MISMATCH for $file: $tool $actual, published $expected ($sums)" >&2
    return 3
  fi
  echo "fetch-dump: $file OK ($tool $actual)"
}

if [ -n "$VERIFY_FILE" ]; then
  [ -f "$VERIFY_FILE" ] || { echo "fetch-dump: no such file $VERIFY_FILE" >&2; exit 2; }
  [ -f "$VERIFY_SUMS" ] || { echo "fetch-dump: no such file $VERIFY_SUMS" >&2; exit 2; }
  verify "$VERIFY_FILE" "$VERIFY_SUMS"
  exit $?
fi

case "$FORMAT" in gz|bz2) ;; *) echo "fetch-dump: --format gz or bz2" >&2; exit 2 ;; esac
mkdir -p "$DEST"

fetch() { # fetch URL OUT, resuming OUT if it exists; retries with backoff
  local url="$1" out="$2" try
  for try in 1 2 3 4 5; do
    if curl -fL --silent --show-error --retry 3 -C - -o "$out" "$url"; then return 0; fi
    echo "fetch-dump: attempt $try for $url failed; retrying in $((try * 10)) s" >&2
    sleep $((try * 10))
  done
  return 4
}

if [ -z "$DATE" ]; then
  listing=$(mktemp); trap 'rm -f "$listing"' EXIT
  fetch "$BASE/" "$listing" || { echo "fetch-dump: cannot list $BASE" >&2; exit 4; }
  for d in $(grep -oE '[0-9]{8}/' "$listing" | tr -d / | sort -ru); do
    sums_try=$(mktemp)
    if curl -fsL -o "$sums_try" "$BASE/$d/wikidata-$d-sha1sums.txt" 2>/dev/null \
       && grep -q "wikidata-$d-all.json.$FORMAT" "$sums_try"; then
      DATE=$d; rm -f "$sums_try"; break
    fi
    rm -f "$sums_try"
  done
  [ -n "$DATE" ] || { echo "fetch-dump: no complete dump found under $BASE" >&2; exit 4; }
fi

NAME="wikidata-$DATE-all.json.$FORMAT"
SUMS="$DEST/wikidata-$DATE-sha1sums.txt"
if [ -f "$DEST/$NAME" ]; then
  echo "fetch-dump: $DEST/$NAME already present"
  [ -f "$SUMS" ] && verify "$DEST/$NAME" "$SUMS" "$NAME"
  exit $?
fi
echo "fetch-dump: $BASE/$DATE/$NAME -> $DEST/$NAME"
fetch "$BASE/$DATE/wikidata-$DATE-sha1sums.txt" "$SUMS.part" && mv "$SUMS.part" "$SUMS" \
  || { echo "fetch-dump: cannot fetch checksums" >&2; exit 4; }
fetch "$BASE/$DATE/$NAME" "$DEST/$NAME.part" || { echo "fetch-dump: download failed (rerun to resume)" >&2; exit 4; }
if verify "$DEST/$NAME.part" "$SUMS" "$NAME"; then
  mv "$DEST/$NAME.part" "$DEST/$NAME"
  echo "fetch-dump: done: $DEST/$NAME"
else
  echo "fetch-dump: keeping $DEST/$NAME.part for inspection; delete it to download again" >&2
  exit 3
fi
