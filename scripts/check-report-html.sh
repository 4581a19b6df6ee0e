#!/usr/bin/env bash
# Render the report.html of `sword eval compare` in headless Chromium and check it: the page loads no external
# resource (no src/href/url()/@import/script/link/img, and a Content-Security-Policy of default-src 'none'),
# Chromium's DOM holds one <svg> per file in figures/ with each figure's title, and a full-page screenshot has
# the expected size, is not blank, and shows the figures' colours (the two language groups of Fig. 2, the
# strategy colours of the gap bars, both ends of the viridis scale of the heat maps). The section "Where the
# languages disagree" must be there: the `split` table with a row per model, an UpSet figure per model, and the
# suspects table with min(50, suspects) rows, the count the manifest gives (the generated answers plant 12 bad
# translations, so there are some).
#
#   scripts/check-report-html.sh [DIR]      # DIR holds report.html; default: a comparison of generated answers
#
# Without DIR it generates 5 models × 150 originals (scripts/gen-compare-samples.py) and compares them with
# SWORD (default target/debug/sword, which `cargo test` builds). Needs Debian's `chromium` and a Python with
# Pillow (the repo's venv, or Debian's python3-pil); .ci/run installs both where missing. The screenshot is
# kept as DIR/report.png for a look.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
SWORD=${SWORD:-$root/target/debug/sword}
CHROMIUM=${CHROMIUM:-chromium}
command -v "$CHROMIUM" >/dev/null || { echo "check-report-html: no $CHROMIUM (apt-get install chromium)" >&2; exit 2; }
py=
for p in "${SWORD_PYTHON:-}" "$root/.venv/bin/python" /usr/bin/python3 python3; do
  [ -n "$p" ] && command -v "$p" >/dev/null && "$p" -c 'import PIL' 2>/dev/null && { py=$p; break; }
done
[ -n "$py" ] || { echo "check-report-html: no Python with Pillow (scripts/setup-venv.sh, or apt-get install python3-pil)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
DIR=${1:-}
if [ -z "$DIR" ]; then
  [ -x "$SWORD" ] || { echo "check-report-html: no binary at $SWORD (cargo build, or set SWORD)" >&2; exit 2; }
  python3 "$root/scripts/gen-compare-samples.py" --out "$work/run" --models 5 --originals 150 --seed 3 --bad-pairs 12
  DIR=$root/data/work/check-report-html
  rm -rf "$DIR"
  "$SWORD" -q eval compare --results "$work/run/eval" --out "$DIR" --bootstrap 200
  generated=generated
fi
html=$DIR/report.html
[ -s "$html" ] || { echo "check-report-html: $html missing" >&2; exit 2; }
# 1. Nothing to load: every byte of the page is in the file.
if grep -Eqi '(src|href)[[:space:]]*=|url\(|@import|<script|<link|<img|<iframe|<object|<embed' "$html"; then
  echo "check-report-html: $html refers to an external resource:" >&2
  grep -Eoi '.{0,40}((src|href)[[:space:]]*=|url\(|@import|<script|<link|<img|<iframe|<object|<embed).{0,40}' "$html" | head -5 >&2
  exit 1
fi
grep -q "Content-Security-Policy\" content=\"default-src 'none'" "$html" \
  || { echo "check-report-html: no Content-Security-Policy forbidding loads" >&2; exit 1; }
flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking
  --disable-component-update --disable-sync --hide-scrollbars --force-device-scale-factor=1)
# 2. Chromium's DOM: one <svg> per figure file.
timeout 120 "$CHROMIUM" "${flags[@]}" --user-data-dir="$work/profile1" --dump-dom "file://$html" > "$work/dom.html" 2> "$work/chromium-dom.log"
# 3. A screenshot of the whole page: tall enough for every figure at the page's width (1,452 px of content).
height=$("$py" - "$DIR" <<'PY'
import re, sys, pathlib
d = pathlib.Path(sys.argv[1])
h = 0
for f in sorted((d / "figures").glob("*.svg")):
    m = re.search(r'width="(\d+)" height="(\d+)"', f.read_text()[:300])
    w, hh = int(m.group(1)), int(m.group(2))
    h += hh * min(1.0, 1452 / w) + 120
# The disagreement section's tables: a split row per group, a suspect row (two wrapped sentences) per suspect.
import json
counts = json.loads((d / "compare.manifest.json").read_text()).get("counts", {})
h += 40 * counts.get("groups", 0) + 70 * min(50, counts.get("suspects", 0)) + 600
print(int(h + 3000))
PY
)
timeout 180 "$CHROMIUM" "${flags[@]}" --user-data-dir="$work/profile2" --window-size=1600,"$height" \
  --screenshot="$DIR/report.png" "file://$html" > "$work/chromium-shot.log" 2>&1
"$py" - "$DIR" "$work/dom.html" "$height" "${generated:-given}" <<'PY'
import pathlib, sys
from PIL import Image
d, dom, height = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]).read_text(), int(sys.argv[3])
figs = sorted((d / "figures").glob("*.svg"))
fail = []
if dom.count("<svg") != len(figs) or len(figs) == 0:
    fail.append(f"Chromium's DOM has {dom.count('<svg')} <svg> elements for {len(figs)} figure files")
md = [l for l in (d / "report.md").read_text().splitlines() if l.strip()]
# A figure's title: a `### ` heading whose next line is its image.
titles = [t for i, t in enumerate(md) if t.startswith("### ") and i + 1 < len(md) and md[i + 1].startswith("![")]
missing = [t for t in titles if t[4:].replace("&", "&amp;") not in dom]
if len(titles) != len(figs) or missing:
    fail.append(f"{len(titles)} figure titles for {len(figs)} files; not in the page: {missing[:3]}")
# The section "Where the languages disagree".
import json, re as _re
manifest = json.loads((d / "compare.manifest.json").read_text())
sec = dom.find('id="disagree"')
if sec < 0:
    fail.append('no section "Where the languages disagree" in the page')
else:
    part = dom[sec:]
    upsets = sorted((d / "figures").glob("upset_*.svg"))
    groups = manifest["counts"]["groups"]
    if len(upsets) != groups:
        fail.append(f"{len(upsets)} UpSet figures for {groups} model × variant groups")
    if part.count("<h3>Languages wrong together") != groups:
        fail.append(f"{part.count('<h3>Languages wrong together')} UpSet titles in the section for {groups} groups")
    if part.count("split) [95 % interval]") < 1:
        fail.append("no split table in the section")
    suspects = manifest["counts"]["suspects"]
    s = part.find('id="suspects"')
    shown = part[s:].count("</td></tr>") if s >= 0 else -1
    if shown != min(50, suspects):
        fail.append(f"the suspects table has {shown} rows for {suspects} suspects (expected min(50, n))")
    if len(sys.argv) > 4 and sys.argv[4] == "generated" and suspects == 0:
        fail.append("no suspect found among the 12 planted bad translations")
    print(f"check-report-html: disagreement section with {len(upsets)} UpSet figures, {shown} of {suspects} suspects shown")
img = Image.open(d / "report.png").convert("RGB")
if img.size != (1600, height):
    fail.append(f"screenshot is {img.size}, expected (1600, {height})")
small = img.resize((img.width // 2, img.height // 2), Image.NEAREST)
counts = small.getcolors(1 << 24)
white = sum(n for n, c in counts if c == (255, 255, 255))
non_white = 1 - white / (small.width * small.height)
colours = len(counts)
if non_white < 0.05 or colours < 200:
    fail.append(f"screenshot looks blank: {non_white:.1%} non-white, {colours} colours")
# The page must end inside the screenshot: its last 200 rows are white.
tail = img.crop((0, img.height - 200, img.width, img.height)).getcolors(1 << 16)
if not (tail and len(tail) == 1 and tail[0][1] == (255, 255, 255)):
    fail.append("the page runs past the screenshot (its last rows are not blank)")
full = img.getcolors(1 << 24)
have = {c for _, c in full}
def near(c, tol=12):
    return any(abs(a - c[0]) + abs(b - c[1]) + abs(e - c[2]) <= tol for a, b, e in have)
expected = {
    "Western blue (Fig. 2)": (0, 114, 178), "East-Asian vermillion (Fig. 2)": (213, 94, 0),
    "SS orange (gap)": (230, 159, 0), "PSS green (gap)": (0, 158, 115), "POS pink (gap)": (204, 121, 167),
    "viridis dark end": (68, 1, 84), "viridis light end": (253, 231, 37),
}
for name, c in expected.items():
    if not near(c):
        fail.append(f"no {name} {c} in the screenshot")
print(f"check-report-html: {len(figs)} figures in the DOM, screenshot {img.size[0]}x{img.size[1]}, "
      f"{non_white:.0%} non-white, {colours} colours at half size")
if fail:
    print("check-report-html: FAILED\n  " + "\n  ".join(fail), file=sys.stderr)
    sys.exit(1)
print(f"check-report-html: ok ({d / 'report.png'})")
PY
