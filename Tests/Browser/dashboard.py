#!/usr/bin/env python3
"""Opens PushSwarm's live dashboard (`pushswarm run ... --dashboard A`) in headless chromium, over
the DevTools protocol, and prints what the page showed, as one JSON line:

    {"first": {"value": N, "charts": 4, "drawn": 4, "status": "..."}, "later": {...}}

"first" is read once the page's script has drawn its charts and counts requests; "later" once the
same page, left open, has shown a higher count (its own refresh each second, no reload). Each
wait ends on what the page does (a MutationObserver in the page), or fails after its time limit.

Usage: dashboard.py URL [SECONDS]   (SECONDS: the limit of each wait, default 20)
Needs chromium (Debian's) and Python's websockets. Exits 1 with a message on failure.
"""
import itertools, json, os, re, shutil, subprocess, sys, tempfile, threading

from websockets.sync.client import connect

WAIT = """
new Promise((resolve, reject) => {
  const read = () => {
    const tile = document.getElementById("requests");
    const charts = [...document.querySelectorAll("svg.chart")];
    return {
      value: tile ? Number(tile.dataset.value) : 0,
      charts: charts.length,
      drawn: charts.filter(chart => chart.querySelector("polyline, polygon")).length,
      status: (document.getElementById("status") || {}).textContent || "",
    };
  };
  const limit = setTimeout(() => { observer.disconnect(); reject(new Error("not within the limit; the page showed " + JSON.stringify(read()))); }, %(limit)d);
  const check = () => {
    const seen = read();
    if (%(condition)s) { clearTimeout(limit); observer.disconnect(); resolve(seen); }
  };
  const observer = new MutationObserver(check);
  observer.observe(document.body, {subtree: true, childList: true, attributes: true, characterData: true});
  check();
})
"""


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    sys.exit("dashboard.py: chromium is not installed (apt-get install chromium)")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    url, limit = sys.argv[1], int(float(sys.argv[2]) * 1000) if len(sys.argv) > 2 else 20_000
    profile = tempfile.mkdtemp(prefix="pushswarm-chromium-")
    browser = subprocess.Popen(
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--remote-debugging-address=127.0.0.1",
         "--remote-debugging-port=0", "--user-data-dir=" + profile, "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    # Whatever happens, the browser goes: a hung page cannot hold the test.
    killer = threading.Timer(3 * limit / 1000 + 30, browser.kill)
    killer.start()
    try:
        endpoint = None
        for line in browser.stderr:
            found = re.search(r"DevTools listening on (ws://\S+)", line)
            if found:
                endpoint = found.group(1)
                break
        if endpoint is None:
            sys.exit("dashboard.py: chromium did not open its DevTools endpoint")
        with connect(endpoint, max_size=None, open_timeout=30) as socket:
            numbers = itertools.count(1)

            def call(method, params=None, session=None):
                number = next(numbers)
                message = {"id": number, "method": method, "params": params or {}}
                if session:
                    message["sessionId"] = session
                socket.send(json.dumps(message))
                while True:
                    reply = json.loads(socket.recv(timeout=limit / 1000 + 30))
                    if reply.get("id") == number:
                        if "error" in reply:
                            sys.exit(f"dashboard.py: {method}: {reply['error']}")
                        return reply["result"]

            def wait_for_event(name):
                while True:
                    event = json.loads(socket.recv(timeout=limit / 1000 + 30))
                    if event.get("method") == name:
                        return event

            target = call("Target.createTarget", {"url": "about:blank"})["targetId"]
            session = call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            call("Page.enable", session=session)
            call("Page.navigate", {"url": url}, session)
            wait_for_event("Page.loadEventFired")

            def wait(condition):
                result = call("Runtime.evaluate", {"expression": WAIT % {"limit": limit, "condition": condition},
                                                   "awaitPromise": True, "returnByValue": True}, session)
                if "exceptionDetails" in result:
                    sys.exit("dashboard.py: " + result["exceptionDetails"].get("exception", {}).get("description", str(result["exceptionDetails"])))
                return result["result"]["value"]

            first = wait("seen.value > 0 && seen.drawn >= 4")
            later = wait("seen.value > %d" % first["value"])
            print(json.dumps({"first": first, "later": later}))
    finally:
        killer.cancel()
        browser.kill()
        browser.wait()
        shutil.rmtree(profile, ignore_errors=True)


main()
