#!/usr/bin/env bash
# Makes docs/report.png, the README's picture of report.html, from a real run: the README's first
# command (the quickstart), then Debian's headless chromium screenshots the top of its report
# (the tiles, "What happened", the charts over time and the storm tick by tick).
#
#   bash docs/report-picture.sh
set -euo pipefail
cd "$(dirname "$0")/.."
command -v chromium >/dev/null || { echo "needs chromium (apt-get install chromium)" >&2; exit 1; }
swift build -c release 2>&1 | tail -n 1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "+ .build/release/pushswarm run Scenarios/quickstart.json --out $out"
.build/release/pushswarm run Scenarios/quickstart.json --out "$out" --quiet >/dev/null
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
    --user-data-dir="$out/chromium" --window-size=1100,2230 \
    --screenshot="$PWD/docs/report.png" "file://$out/report.html" >/dev/null 2>&1
echo "wrote docs/report.png ($(wc -c < docs/report.png) bytes)"
