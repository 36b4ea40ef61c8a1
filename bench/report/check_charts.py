"""What a report draws, chart by chart, and what its interactions do, in
headless Chromium; with --against, the same page with another ECharts build
swapped in, and every difference between the two.

usage: check_charts.py PAGE.html [PAGE.html ...] [--against ECHARTS.js]

It is how the report's partial ECharts build (tuner/report/report_assets/
echarts_entry.js) was checked against the full one (dist/echarts.min.js of the
same version, from npm): a chart type, component or feature missing from the
build draws less, draws differently or raises an error. Per chart (every chart
drawn at once, `?all`): the elements ECharts drew and a hash of its image
(getDataURL: PNG on canvas, the SVG text on SVG, its ids renumbered); then, in turn, a tooltip
shown on the first point of each series (showTip), the tooltips where the
mouse finds something over each chart (zrender's hover test), a trial
selected in every chart (tuneReport.select), a range brushed on each parallel
axis (axisAreaSelect) and the page's note about it, each panel's toggle
buttons clicked; and the errors the page collected. Prints one JSON object
per page; with --against, the differences seen in each of 3 tries (hover and
tooltips run on timers), and exit status 1 if there are any or either page
reported an error.
"""
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from render_time import Chromium  # noqa: E402

PROBE = r"""
(async function () {
  var T = window.tuneReport, out = { charts: [], steps: [] };
  function frames(n) {
    return new Promise(function (done) {
      (function next() { if (n-- <= 0) done(); else requestAnimationFrame(next); })();
    });
  }
  function hash(text) {
    var h = 2166136261;
    for (var i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
    return (h >>> 0).toString(16) + ':' + text.length;
  }
  function sleep(ms) { return new Promise(function (done) { setTimeout(done, ms); }); }
  function tooltipText(div) {
    return Array.prototype.filter.call(div.querySelectorAll('div'), function (d) {
      var style = getComputedStyle(d);
      return style.display !== 'none' && style.visibility !== 'hidden' && style.opacity !== '0' &&
        d.style.position === 'absolute' && d.innerText;
    }).map(function (d) { return d.innerText; }).join(' | ');
  }
  // An image the same whatever was drawn before it: the SVG renderer names
  // its clip paths, gradients and classes after the chart's zrender
  // instance and a running count ("zr3-c0", "zr3-g1", "zr3-cls-12"),
  // renumbered here in order.
  function image(chart) {
    var url = chart.getDataURL({ pixelRatio: 1 }), names = {}, count = 0;
    if (url.indexOf('data:image/svg') !== 0) return url;
    return decodeURIComponent(url).replace(/zr\d+-[a-z]+-?\d+/g, function (name) {
      if (!(name in names)) names[name] = 'id' + count++;
      return names[name];
    });
  }
  function snapshot(label) {
    return { step: label, charts: T.charts.map(function (c) {
      var types = {};
      c.chart.getZr().storage.getDisplayList().forEach(function (el) { types[el.type] = (types[el.type] || 0) + 1; });
      return { kind: c.kind, elements: types, image: hash(image(c.chart)) };
    }), text: document.getElementById('tune-report').innerText };
  }
  out.steps.push(snapshot('drawn'));
  // Tooltips that hide at once (not fading out over 0.4 s while the next
  // one is read).
  T.charts.forEach(function (c) { c.chart.setOption({ tooltip: { transitionDuration: 0 } }); });
  // A tooltip on the first point of each series.
  for (var n = 0; n < T.charts.length; n++) {
    var c = T.charts[n], series = c.chart.getModel().getSeries(), tips = [];
    for (var s = 0; s < series.length; s++) {
      // A parallel series has no point to show a tooltip at (and the
      // exception would leave the chart refusing later actions): hovered below.
      if (!series[s].getData().count() || series[s].subType === 'parallel') continue;
      try {
        c.chart.dispatchAction({ type: 'showTip', seriesIndex: s, dataIndex: 0 });
      } catch (err) {
        tips.push(series[s].subType + ': error ' + err.message);
        continue;
      }
      await frames(2);
      tips.push(series[s].subType + ': ' + tooltipText(c.div));
      c.chart.dispatchAction({ type: 'hideTip' });
      await sleep(150);  // the tooltip hides 100 ms later
    }
    // The mouse over the chart, row by row from below the legend: places with
    // something under it (up to 12, until 3 show a tooltip) and the tooltip
    // each shows.
    var zr = c.chart.getZr(), tried = 0, shown = 0, hovered = [];
    for (var y = 40; y < zr.getHeight() && tried < 12 && shown < 3; y += 10) {
      for (var x = 5; x < zr.getWidth() && tried < 12 && shown < 3; x += 10) {
        var found = zr.handler.findHover(x, y);
        if (!found || !found.target) continue;
        tried += 1;
        zr.handler.dispatch('mousemove', { zrX: x, zrY: y, offsetX: x, offsetY: y, target: found.target });
        await frames(2);
        await sleep(50);  // an axis tooltip is throttled
        var text = tooltipText(c.div);
        if (text) shown += 1;
        hovered.push(x + ',' + y + ': ' + text);
        x += 40;
      }
    }
    zr.handler.dispatch('mouseout', {});
    c.chart.dispatchAction({ type: 'hideTip' });
    await sleep(150);
    var types = {};
    c.chart.getModel().eachComponent(function (main) { types[main] = (types[main] || 0) + 1; });
    out.charts.push({ kind: c.kind, series: series.map(function (x) { return x.subType; }), components: types, tips: tips,
      hovered: hovered });
  }
  // A trial selected in every chart.
  T.experiments.forEach(function (e) {
    var trials = e.data.trials.index;
    if (trials.length) T.select(e, trials[Math.floor(trials.length / 2)]);
  });
  await frames(2);
  await sleep(50);
  out.steps.push(snapshot('selected'));
  // A range brushed on each parallel axis in turn.
  for (var p = 0; p < T.charts.length; p++) {
    var pc = T.charts[p];
    if (pc.kind !== 'parallel') continue;
    var axes = [];
    pc.chart.getModel().eachComponent('parallelAxis', function (axis) { axes.push(axis); });
    for (var a = 0; a < axes.length; a++) {
      var extent = axes[a].axis.scale.getExtent();  // data values
      pc.chart.dispatchAction({ type: 'axisAreaSelect', parallelAxisId: axes[a].id,
        intervals: [[extent[0], extent[0] + (extent[1] - extent[0]) * 0.5]] });
      await frames(2);
      out.steps.push(snapshot('brushed ' + (p + 1) + ' axis ' + a));
      pc.chart.dispatchAction({ type: 'axisAreaSelect', parallelAxisId: axes[a].id, intervals: [] });
    }
  }
  // Each toggle button.
  var buttons = document.querySelectorAll('.toggle button');
  for (var b = buttons.length - 1; b >= 0; b--) {
    buttons[b].click();
    await frames(2);
    out.steps.push(snapshot('clicked ' + b + ' ' + buttons[b].textContent));
  }
  out.errors = (document.getElementById('tune-errors') || {}).textContent || '';
  out.renderer = T.renderer;
  return JSON.stringify(out);
})()
"""


def with_echarts(page, echarts, directory):
    """A copy of `page` with its ECharts script (the page's second <script>) replaced."""
    text = open(page, encoding="utf-8").read()
    start = text.index("<script>", text.index("</script>")) + len("<script>")
    end = text.index("</script>", start)
    script = open(echarts, encoding="utf-8").read().encode("ascii", "backslashreplace").decode("ascii")
    copy = os.path.join(directory, "against-" + os.path.basename(page))
    with open(copy, "w", encoding="utf-8") as out:
        out.write(text[:start] + script + text[end:])
    return copy


def probe(page):
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:
        chrome = Chromium(profile, 1000)
        try:
            target = next(t for t in chrome.call("Target.getTargets")["targetInfos"] if t["type"] == "page")
            chrome.session = chrome.call("Target.attachToTarget", {"targetId": target["targetId"], "flatten": True})["sessionId"]
            chrome.call("Page.navigate", {"url": "file://" + os.path.abspath(page) + "?all"})
            start = time.perf_counter()
            while True:
                info = chrome.evaluate("JSON.stringify(Object.assign({}, (document.getElementById('tune-report') || "
                                       "{dataset: {}}).dataset))")
                info = json.loads(info or "{}")
                if info.get("state") == "ready" and info.get("drawn") == info.get("charts"):
                    break
                if time.perf_counter() - start > 120:
                    raise RuntimeError(page + ": not every chart was drawn in 120 s")
                time.sleep(0.05)
            reply = chrome.call("Runtime.evaluate", {"expression": PROBE, "awaitPromise": True, "returnByValue": True})
            if "exceptionDetails" in reply:
                raise RuntimeError(page + ": " + json.dumps(reply["exceptionDetails"])[:1000])
            return json.loads(reply["result"]["value"])
        finally:
            chrome.close()


def differences(a, b, path=""):
    if type(a) is not type(b):
        return [f"{path}: {json.dumps(a)[:300]} != {json.dumps(b)[:300]}"]
    if isinstance(a, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            out += differences(a.get(k), b.get(k), f"{path}.{k}")
        return out
    if isinstance(a, list):
        out = [f"{path}: {len(a)} items != {len(b)}"] if len(a) != len(b) else []
        for n, (x, y) in enumerate(zip(a, b)):
            out += differences(x, y, f"{path}[{n}]")
        return out
    if isinstance(a, str) and a != b:
        at = next((n for n, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        start = max(0, at - 60)
        return [f"{path} (at {at}): {json.dumps(a[start:at + 120])} != {json.dumps(b[start:at + 120])}"]
    return [] if a == b else [f"{path}: {json.dumps(a)[:300]} != {json.dumps(b)[:300]}"]


def main():
    args = sys.argv[1:]
    against = None
    if "--against" in args:
        k = args.index("--against")
        against = args[k + 1]
        del args[k:k + 2]
    if not args:
        sys.exit(__doc__)
    failed = False
    with tempfile.TemporaryDirectory() as directory:
        for page in args:
            result = probe(page)
            summary = {"page": page, "renderer": result["renderer"], "errors": result["errors"],
                       "charts": [[c["kind"], sum(s["elements"].values())] for c, s in
                                  zip(result["charts"], result["steps"][0]["charts"])],
                       "steps": len(result["steps"])}
            failed = failed or bool(result["errors"])
            if against:
                variant = with_echarts(page, against, directory)
                other = probe(variant)
                failed = failed or bool(other["errors"])
                # Hover and tooltips run on timers: a difference counts when
                # it is there in each of 3 tries.
                diff = differences(result, other)
                for _ in range(2):
                    if not diff:
                        break
                    again = set(differences(probe(page), probe(variant)))
                    diff = [d for d in diff if d in again]
                summary["differences"] = diff
                failed = failed or bool(diff)
            print(json.dumps(summary))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
