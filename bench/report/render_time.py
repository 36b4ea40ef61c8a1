"""Time for headless Chromium to load a report and draw its charts, in real
time (no virtual time): Chromium is driven over the DevTools protocol on a
pipe (--remote-debugging-pipe, no port opened), navigates to the page and
waits for the page's markers (times are performance.now(), since navigation
start: parsing, scripts, data, drawing):
  first screen  a 1400x1000 window; #tune-report[data-state=ready], set once
                the charts in (or near) view are drawn: data-render-ms
  every chart   the same window and page.html?all, which draws every chart
                at once; data-drawn == data-charts: data-all-ms

  painted       for either, when the next frame after that marker has been
                produced (data-painted-ms, data-all-painted-ms: set by a
                script this adds to the page, AFTER_PAINT below)

usage: render_time.py PAGE.html [PAGE.html ...] REPEAT
Prints one JSON line: first_ms, all_ms (each run, in-page),
first_painted_ms, all_painted_ms, wall_s (each run, navigate -> every chart
drawn and painted, seen from here), charts, renderer,
load_average (the 1-minute load average before each run); with several
pages, an object of those by page, the pages' runs alternated (A, B, A,
B, ...) so that they see the same load.
"""
import json
import os
import subprocess
import sys
import tempfile
import time


class Chromium:
    def __init__(self, profile, height):
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()

        def fds():  # Chromium reads commands on fd 3 and answers on fd 4
            os.dup2(to_chrome_r, 3)
            os.dup2(from_chrome_w, 4)

        self.proc = subprocess.Popen(
            ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--remote-debugging-pipe", "--user-data-dir=" + profile, f"--window-size=1400,{height}", "about:blank"],
            preexec_fn=fds, pass_fds=(3, 4), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.buffer, self.next_id, self.session = b"", 0, None

    def call(self, method, params=None):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if self.session:
            message["sessionId"] = self.session
        os.write(self.to_chrome, json.dumps(message).encode() + b"\0")
        while True:
            while b"\0" not in self.buffer:
                chunk = os.read(self.from_chrome, 1 << 16)
                if not chunk:
                    raise RuntimeError("chromium closed the pipe")
                self.buffer += chunk
            raw, self.buffer = self.buffer.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]

    def evaluate(self, expression):
        return self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})["result"].get("value")

    def close(self):
        self.session = None
        try:
            self.call("Browser.close")
            self.proc.wait(timeout=10)
        except (RuntimeError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()


# Set up in the page before its own scripts: once the page marks the first
# screen drawn (data-state="ready") and every chart drawn (data-all-ms), the
# time the next frame has been produced (requestAnimationFrame, then a task
# after it) as data-painted-ms and data-all-painted-ms: the page's own marks
# are set when ECharts has drawn into its canvases, which the screen shows
# with the next frame, which the browser may hold back while it parses the
# rest of the page. The same for any version of the page.
AFTER_PAINT = r"""
new MutationObserver(function (changes) {
  changes.forEach(function (change) {
    var root = change.target, name = change.attributeName === 'data-state' ? 'data-painted-ms' : 'data-all-painted-ms';
    if (root.id !== 'tune-report' || root.hasAttribute(name)) return;
    if (change.attributeName === 'data-state' && root.getAttribute('data-state') !== 'ready') return;
    root.setAttribute(name, 'pending');
    requestAnimationFrame(function () {
      setTimeout(function () { root.setAttribute(name, String(Math.round(performance.now()))); }, 0);
    });
  });
}).observe(document, { subtree: true, attributes: true, attributeFilter: ['data-state', 'data-all-ms'] });
"""


def painted(info, key):
    return info.get(key) not in (None, "pending")


def measure(page, query, done):
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:
        chrome = Chromium(profile, 1000)
        try:
            target = next(t for t in chrome.call("Target.getTargets")["targetInfos"] if t["type"] == "page")
            chrome.session = chrome.call("Target.attachToTarget", {"targetId": target["targetId"], "flatten": True})["sessionId"]
            chrome.call("Page.enable")
            chrome.call("Page.addScriptToEvaluateOnNewDocument", {"source": AFTER_PAINT})
            start = time.perf_counter()
            chrome.call("Page.navigate", {"url": "file://" + os.path.abspath(page) + query})
            marks = "JSON.stringify(Object.assign({}, (document.getElementById('tune-report') || {dataset: {}}).dataset," \
                    " {errors: (document.getElementById('tune-errors') || {}).textContent || ''}))"
            while True:
                info = json.loads(chrome.evaluate(marks) or "{}")
                if info.get("errors") or done(info):
                    return time.perf_counter() - start, info
                if time.perf_counter() - start > 120:
                    raise RuntimeError("the page did not finish drawing in 120 s")
                time.sleep(0.01)
        finally:
            chrome.close()


def first_screen(info):
    return info.get("state") == "ready" and painted(info, "paintedMs")


def every_chart(info):
    return info.get("state") == "ready" and info.get("drawn") == info.get("charts") and painted(info, "allPaintedMs")


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    pages, repeat = sys.argv[1:-1], int(sys.argv[-1])
    # Several pages: run by run in turn (page A, page B, page A, ...), so a
    # change in the machine's load falls on each alike.
    first = {page: [] for page in pages}
    every = {page: [] for page in pages}
    load = {page: [] for page in pages}
    for _ in range(repeat):
        for page in pages:
            load[page].append(float(open("/proc/loadavg").read().split()[0]))
            first[page].append(measure(page, "", first_screen))
    for _ in range(repeat):
        for page in pages:
            load[page].append(float(open("/proc/loadavg").read().split()[0]))
            every[page].append(measure(page, "?all", every_chart))
    results = {}
    for page in pages:
        for _, info in first[page] + every[page]:
            if info.get("errors"):
                sys.exit(f"render_time.py: {page} reported errors: " + info["errors"][:500])
        results[page] = {"first_ms": [int(info["renderMs"]) for _, info in first[page]],
                         "all_ms": [int(info["allMs"]) for _, info in every[page]],
                         "first_painted_ms": [int(info["paintedMs"]) for _, info in first[page]],
                         "all_painted_ms": [int(info["allPaintedMs"]) for _, info in every[page]],
                         "wall_s": [w for w, _ in every[page]], "charts": int(every[page][0][1]["charts"]),
                         "first_drawn": int(first[page][0][1]["drawn"]), "renderer": every[page][0][1]["renderer"],
                         "load_average": load[page]}
    print(json.dumps(results[pages[0]] if len(pages) == 1 else results))


if __name__ == "__main__":
    main()
