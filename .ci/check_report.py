#!/usr/bin/env python3
"""Renders a PushSwarm report.html in headless chromium and checks that its charts are drawn.

Usage: check_report.py REPORT_DIR [--screenshot FILE]

Two checks, both on what the browser made of the file (no JavaScript involved):
  1. the DOM chromium parsed holds the four charts (svg.chart by id), each with drawn series, and,
     when the run had 429s (summary.json beside it), the storm chart and "What happened";
  2. the screenshot holds each series colour on more pixels than its legend swatch has (40), so
     lines and areas were painted, not just declared.
"""
import json, os, re, struct, subprocess, sys, tempfile, zlib

CHARTS = ["chart-throughput", "chart-latency", "chart-status", "chart-retries"]
# Colours from Sources/PushSwarmMetrics/HTMLReport.swift (HTMLReport.Colour): series always drawn,
# even when their values are all zero (a line along the axis).
COLOURS = {
    "sent": (0x1f, 0x77, 0xb4), "ok": (0x2c, 0xa0, 0x2c), "p50": (0x17, 0xbe, 0xcf),
    "p90": (0xff, 0x7f, 0x0e), "p99": (0xd6, 0x27, 0x28), "429": (0x94, 0x67, 0xbd),
    "retries": (0xbc, 0xbd, 0x22),
}
SWATCH_PIXELS = 40


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        for directory in os.environ.get("PATH", "").split(":") + ["/usr/bin"]:
            path = os.path.join(directory, name)
            if os.access(path, os.X_OK):
                return path
    sys.exit("check_report: chromium is not installed (apt-get install chromium)")


def browser(*arguments):
    base = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            "--no-first-run", "--user-data-dir=" + tempfile.mkdtemp(prefix="pushswarm-chromium-")]
    return subprocess.run(base + list(arguments), capture_output=True, timeout=120)


def png_pixels(path):
    """(width, height, rows of RGB tuples) of an 8-bit RGB or RGBA, non-interlaced PNG."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    position, idat, header = 8, b"", None
    while position < len(data):
        length, kind = struct.unpack(">I4s", data[position:position + 8])
        body = data[position + 8:position + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        position += 12 + length
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, f"unexpected PNG format {header}"
    channels = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * channels
    previous = bytearray(stride)
    rows = []
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if kind == 1: line[i] = (line[i] + left) & 255
            elif kind == 2: line[i] = (line[i] + up) & 255
            elif kind == 3: line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        rows.append(line)
        previous = line
    return width, height, channels, rows


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    report = os.path.join(os.path.abspath(sys.argv[1]), "report.html")
    shot = sys.argv[sys.argv.index("--screenshot") + 1] if "--screenshot" in sys.argv else tempfile.mktemp(suffix=".png")
    url = "file://" + report

    dom = browser("--dump-dom", url).stdout.decode("utf-8", "replace")
    problems = []
    charts = list(CHARTS)
    summary = os.path.join(os.path.dirname(report), "summary.json")
    if os.path.exists(summary) and json.load(open(summary))["requests"]["byStatus"].get("429", 0) > 0:
        charts.append("chart-storm")
        if "What happened" not in dom:
            problems.append("the run had 429s but the report does not say what happened")
    for chart in charts:
        match = re.search(r'<svg[^>]*id="%s"[^>]*>(.*?)</svg>' % chart, dom, re.S)
        if not match:
            problems.append(f"{chart}: not in the page chromium parsed")
            continue
        shapes = re.findall(r'<(polyline|polygon)[^>]*points="([^"]*)"', match.group(1))
        if not shapes or all(len(points.split()) < 2 for _, points in shapes):
            problems.append(f"{chart}: no series drawn")
    if "<script" in dom:
        problems.append("the report has a script; it must read without JavaScript")

    result = browser("--window-size=1100,2600", "--screenshot=" + shot, url)
    if not os.path.exists(shot):
        sys.exit("check_report: chromium wrote no screenshot: " + result.stderr.decode()[-500:])
    width, height, channels, rows = png_pixels(shot)
    counts = {name: 0 for name in COLOURS}
    for line in rows:
        for x in range(0, width * channels, channels):
            r, g, b = line[x], line[x + 1], line[x + 2]
            if r == g == b:
                continue
            for name, (cr, cg, cb) in COLOURS.items():
                if abs(r - cr) <= 24 and abs(g - cg) <= 24 and abs(b - cb) <= 24:
                    counts[name] += 1
    for name, count in counts.items():
        if count <= SWATCH_PIXELS * 3:
            problems.append(f"series {name}: {count} pixels of its colour on screen; its line or area was not painted")
    print(f"report {report}: {len(charts)} charts in the DOM; pixels per series colour: "
          + ", ".join(f"{name} {count}" for name, count in counts.items()) + f"; screenshot {shot}")
    if problems:
        print("\n".join("FAIL " + problem for problem in problems))
        sys.exit(1)
    print("report ok: every chart is drawn")


main()
