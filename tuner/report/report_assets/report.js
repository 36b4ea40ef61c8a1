// tune report: the page's core. Reads the JSON in #tune-data (written by
// tuner/report/report_json.cpp), lays out one section per experiment, and keeps the
// selected trial in every chart and in location.hash ("#e0-t12").
//
// Data, per experiment (arrays are columns, one entry per trial/point):
//   summary   name, status, metric, mode, scheduler, search, created_at,
//             wall_s, running, counts, best {trial, value, params, checkpoint},
//             constants, params [names], importance [[name, share]],
//             slots_per_trial, lanes, utilisation, hosts, results, curve_points,
//             intervals (how many)
//   trials    index, status, attempts, value, best, iterations, end, error,
//             p [one column per param]
//   pareto    only for a multi-objective experiment: objectives [{metric,
//             mode}], values [one column per objective, in trials' order],
//             front [trial indices, by the first objective, best first]
//   curves    start (offsets per trial, one extra at the end), x, y
//   marks     trial, x (iteration), y (metric), p (the scheduler's progress
//             attribute), kind (stopped|paused|promoted|exploited|retried|error)
//   intervals trial, attempt, start, end, lane, host
//   rungs     attribute, rungs [{milestone, cutoff, trials, values, continued}]
//   median    attribute, x, y
//   exploits  [{trial, donor, iteration, donor_iteration, time, changes}]
//   later     the fields ("trials.status", "intervals.start", ...) that are
//             not in #tune-data but each in its own element after the page's
//             scripts, <script type="application/json"
//             id="tune-later-EXPERIMENT-PATH">: what no chart of the first
//             screen draws (~45 % of a large sweep's data). "trials.p[]" is
//             in parts, one per parameter: tune-later-0-trials.p.0, .1, ...
//             The browser parses those elements after main() has set the
//             first screen up, and the page reads a field (JSON.parse) the
//             first time it is touched. Until the page is parsed, touching
//             one throws T.LATER: draw() and T.redraw() try again then, and
//             tooltips and selections wait (T.whenLoaded).
//
// Charts are registered (T.builder) by report_charts.js and report_schedule.js;
// main() lays them out and draws each as it comes near the viewport. On
// #tune-report: data-charts (how many), data-drawn (drawn so far),
// data-state="ready" and data-render-ms once the charts in view are drawn,
// data-all-ms once every chart is; the tests and bench/report read them.
(function () {
  'use strict';

  var T = (window.tuneReport = { builders: [], charts: [], experiments: [] });
  // performance.mark('tune:...') at each step of loading, for profiling.
  T.mark = function (name) { if (window.performance && performance.mark) performance.mark('tune:' + name); };
  T.mark('scripts');
  var COLORS = ['#3b63c4', '#e8833a', '#3aa55d', '#c43b5c', '#8a5cc4', '#2ab0b8', '#b8a22a', '#6b7280'];
  T.COLORS = COLORS;
  T.MARKS = {
    stopped: { symbol: 'triangle', color: '#d62728', label: 'stopped by the scheduler' },
    paused: { symbol: 'rect', color: '#ff9f1c', label: 'paused' },
    promoted: { symbol: 'arrow', color: '#2ca02c', label: 'promoted (resumed)' },
    exploited: { symbol: 'diamond', color: '#9467bd', label: 'exploited (PBT clone)' },
    retried: { symbol: 'pin', color: '#7f7f7f', label: 'failed, retried' },
    error: { symbol: 'circle', color: '#111111', label: 'failed' }
  };

  T.el = function (tag, attrs, parent, text) {
    var node = document.createElement(tag);
    for (var key in attrs || {}) node.setAttribute(key, attrs[key]);
    if (text !== undefined) node.textContent = text;
    if (parent) parent.appendChild(node);
    return node;
  };

  T.fmt = function (v) {
    if (v === null || v === undefined || (typeof v === 'number' && !isFinite(v))) return '–';
    if (typeof v !== 'number') return typeof v === 'string' ? v : JSON.stringify(v);
    if (Number.isInteger(v)) return String(v);
    var a = Math.abs(v);
    return a !== 0 && (a < 1e-3 || a >= 1e6) ? v.toExponential(3).replace(/\.?0+e/, 'e') : String(+v.toPrecision(5));
  };

  T.duration = function (s) {
    if (!isFinite(s)) return '–';
    if (s < 60) return s.toFixed(1) + ' s';
    if (s < 3600) return Math.floor(s / 60) + ' min ' + Math.round(s % 60) + ' s';
    return Math.floor(s / 3600) + ' h ' + Math.round((s % 3600) / 60) + ' min';
  };

  // A Unix time as local "2026-11-25 15:44:36" (toLocaleString's first call
  // sets up ICU's date formats: ~50 ms before the first chart).
  T.date = function (seconds) {
    var d = new Date(seconds * 1000);
    function two(n) { return (n < 10 ? '0' : '') + n; }
    return d.getFullYear() + '-' + two(d.getMonth() + 1) + '-' + two(d.getDate()) + ' ' + two(d.getHours()) + ':' +
      two(d.getMinutes()) + ':' + two(d.getSeconds());
  };

  T.finite = function (v) { return v !== null && v !== undefined && isFinite(v); };

  // The rest of the data (see "later" above): whether it can be read yet,
  // and fn() now or once it can.
  T.LATER = new Error('the rest of the report\'s data is not parsed yet');
  T.loaded = function () { return document.readyState !== 'loading'; };
  T.whenLoaded = function (fn) {
    if (T.loaded()) fn();
    else document.addEventListener('DOMContentLoaded', function () { fn(); });
  };
  // Experiment n's fields listed in its "later" become getters that read
  // them from their elements (see "later" above) and then stay plain values.
  function deferFields(x, n) {
    function read(path) {
      if (!T.loaded()) throw T.LATER;
      var node = document.getElementById('tune-later-' + n + '-' + path);
      return node ? JSON.parse(node.textContent) : undefined;
    }
    (x.later || []).forEach(function (entry) {
      var parts = /\[\]$/.test(entry), path = parts ? entry.slice(0, -2) : entry;
      var keys = path.split('.'), owner = x;
      for (var k = 0; k < keys.length - 1; k++) owner = owner[keys[k]] = owner[keys[k]] || {};
      var name = keys[keys.length - 1];
      Object.defineProperty(owner, name, { configurable: true, enumerable: true, get: function () {
        var value;
        if (parts) {
          value = [];
          for (var part; (part = read(path + '.' + value.length)) !== undefined;) value.push(part);
        } else {
          value = read(path);
        }
        Object.defineProperty(owner, name, { value: value, writable: true, enumerable: true, configurable: true });
        return value;
      } });
    });
  }

  // A metric's axis: log when its values are positive and span decades.
  T.valueAxis = function (name, values, extra) {
    var axis = { type: T.positiveWideRange(values) ? 'log' : 'value', name: name, scale: true, nameGap: 48,
      nameLocation: 'middle', axisLabel: { formatter: T.fmt } };
    for (var k in extra || {}) axis[k] = extra[k];
    return axis;
  };

  // Axis bounds at round numbers around [lo, hi] (for series such as 'lines'
  // that do not size their axes).
  T.niceExtent = function (lo, hi) {
    if (lo === hi) return [lo - 1, hi + 1];
    var step = Math.pow(10, Math.floor(Math.log10(hi - lo))) / 2;
    return [Math.floor(lo / step) * step, Math.ceil(hi / step) * step];
  };

  // Polylines as one series' data, broken between them (ECharts draws one
  // series far faster than thousands): `n` polylines of at most `size`
  // points in all, as one Float64Array x0, y0, x1, y1, ... with NaN, NaN
  // after each (ECharts takes a typed array as it is; an array of points it
  // copies and boxes point by point). each(i, add) calls add(x, y) for the
  // points of polyline i.
  T.breaks = function (n, size, each) {
    var flat = new Float64Array(2 * (size + n)), at = 0;
    function add(x, y) {
      flat[at++] = x;
      flat[at++] = y;
    }
    for (var i = 0; i < n; i++) {
      var before = at;
      each(i, add);
      if (at > before) add(NaN, NaN);
    }
    return flat.subarray(0, at);
  };

  // Buttons in a panel's title that switch a chart between views.
  T.toggle = function (panel, labels, onChange) {
    var box = T.el('span', { 'class': 'toggle' }, panel.querySelector('h3'));
    labels.forEach(function (label, n) {
      var b = T.el('button', { type: 'button', 'class': n === 0 ? 'on' : '' }, box, label);
      b.addEventListener('click', function () {
        Array.prototype.forEach.call(box.children, function (c) { c.className = c === b ? 'on' : ''; });
        onChange(label);
      });
    });
  };

  T.escape = function (s) {
    return String(s).replace(/[&<>"]/g, function (c) {
      return { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[c];
    });
  };

  // "trial 12 (TERMINATED)", its metric (each objective's, and whether it is
  // on the Pareto front, with several) and its sampled parameters: the
  // tooltip of every point that stands for a trial.
  T.trialTooltip = function (e, trial) {
    var i = e.pos[trial];
    if (i === undefined) return '';
    if (!T.loaded()) return '<b>trial ' + trial + '</b>';  // its details are in the rest of the data
    var t = e.data.trials, s = e.data.summary, p = e.data.pareto;
    var lines = ['<b>trial ' + trial + '</b> (' + T.escape(t.status[i]) + ')' +
      (p && p.front.indexOf(trial) >= 0 ? ', on the Pareto front' : '')];
    if (p) {
      p.objectives.forEach(function (o, k) { lines.push(T.escape(o.metric) + ': ' + T.fmt(p.values[k][i])); });
    } else {
      lines.push(T.escape(s.metric || 'metric') + ': ' + T.fmt(t.value[i]) + ' (best ' + T.fmt(t.best[i]) + ')');
    }
    s.params.slice(0, 12).forEach(function (name, k) {
      lines.push(T.escape(name) + ': ' + T.escape(T.fmt(t.p[k][i])));
    });
    if (t.error[i]) lines.push('<span class="error-text">' + T.escape(t.error[i]).slice(0, 200) + '</span>');
    return lines.join('<br>');
  };

  T.positiveWideRange = function (values) {
    var lo = Infinity, hi = -Infinity;
    for (var i = 0; i < values.length; i++) {
      var v = values[i];
      if (v === null || !isFinite(v)) continue;
      if (v <= 0) return false;
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
    return lo < Infinity && hi / lo > 1000;
  };

  // Registers a chart builder: build(experiment, grid) adds its panel(s);
  // `order` places it on the page (Pareto front 5, history 10, curves 20, scheduler views
  // 30-32, importance 35, parallel 40, slices 60, timeline 70).
  T.builder = function (order, build) { T.builders.push({ order: order, build: build }); };

  // Adds a chart to `panel`: drawn once every section is laid out (so each
  // chart gets its final width) and it comes near the viewport. `option` is
  // the ECharts option or a function that makes it, called only then (so a
  // chart below the fold costs nothing until it is scrolled to); a builder
  // only decides at once whether it has something to draw. `select(trial)`
  // redraws its highlight and `setup(chart)` runs right after it is drawn.
  T.chart = function (e, panel, kind, option, select, setup) {
    var div = T.el('div', { 'class': 'tune-chart', 'data-chart': kind }, panel);
    var entry = { kind: kind, chart: null, div: div, select: select || null, drawn: false, experiment: e,
      option: option, setup: setup || null };
    T.charts.push(entry);
    return entry;
  };

  // What every option gets before ECharts sees it: no animation, and no axis
  // drawn where the other crosses zero (it would cut through the plot).
  function settled(option) {
    option.animation = false;
    [].concat(option.xAxis || [], option.yAxis || []).forEach(function (axis) {
      axis.axisLine = axis.axisLine || {};
      axis.axisLine.onZero = false;
    });
    return option;
  }

  // Replaces a chart's option (a panel's toggle switching views); one not
  // drawn yet gets it when it is.
  T.redraw = function (entry, option) {
    if (!entry.chart) {
      entry.option = option;
      return;
    }
    if (typeof option === 'function') {
      try {
        option = option();
      } catch (err) {
        if (err !== T.LATER) throw err;
        T.whenLoaded(function () { T.redraw(entry, option); });
        return;
      }
    }
    entry.chart.setOption(settled(option), true);
    var e = entry.experiment;
    if (entry.select && e.selected !== null && e.selected !== undefined) entry.select(e.selected);
  };

  // A chart is drawn when it comes within 200 px of the viewport, so a sweep
  // of 10,000 trials shows its first charts at once; data-drawn counts the
  // charts drawn so far.
  function draw(entry) {
    if (entry.chart || entry.waiting) return;
    var option = entry.option;
    if (typeof option === 'function') {
      T.mark('option ' + entry.kind);
      try {
        option = option();
      } catch (err) {
        if (err === T.LATER) {
          // It draws the rest of the data: once the page is parsed (until
          // then it counts as pending, so a chart in view holds data-state).
          if (!entry.counted) T.pending += 1;
          entry.counted = entry.waiting = true;
          T.whenLoaded(function () {
            entry.waiting = false;
            draw(entry);
          });
          return;
        }
        // Counted as drawn (empty), so the page still gets ready; the error is shown.
        console.error('chart failed: ' + (err && err.stack ? err.stack : err));
        option = {};
      }
    }
    entry.option = null;
    if (!entry.counted) T.pending += 1;
    entry.counted = true;
    var chart = (entry.chart = echarts.init(entry.div, null, { renderer: T.renderer }));
    chart.on('finished', function () {
      if (entry.drawn) return;
      entry.drawn = true;
      T.mark('drawn ' + entry.kind);
      entry.div.setAttribute('data-elements', String(chart.getZr().storage.getDisplayList().length));
      T.drawn += 1;
      T.root.setAttribute('data-drawn', String(T.drawn));
      if (T.drawn === T.charts.length) T.root.setAttribute('data-all-ms', String(Math.round(performance.now())));
      T.pending -= 1;
      if (T.pending === 0) T.ready();
    });
    var e = entry.experiment;
    chart.on('click', function (p) {
      var trial = p.data && p.data.trial !== undefined ? p.data.trial : Array.isArray(p.value) ? p.value[2] : undefined;
      if (typeof trial === 'number' && e.pos[trial] !== undefined) T.select(e, trial);
    });
    T.mark('draw ' + entry.kind);
    chart.setOption(settled(option));
    T.mark('set ' + entry.kind);
    if (entry.setup) entry.setup(chart);
    if (entry.select && e.selected !== null && e.selected !== undefined) entry.select(e.selected);
  }

  T.panel = function (parent, title, note, cls) {
    var panel = T.el('div', { 'class': 'panel' + (cls ? ' ' + cls : '') }, parent);
    T.el('h3', {}, panel, title);
    if (note) T.el('p', { 'class': 'note' }, panel, note);
    return panel;
  };

  T.empty = function (parent, title, why) {
    var panel = T.panel(parent, title);
    T.el('div', { 'class': 'empty' }, panel, why);
    return panel;
  };

  T.select = function (e, trial) {
    if (!T.loaded()) return T.whenLoaded(function () { T.select(e, trial); });
    e.selected = trial;
    try {
      history.replaceState(null, '', '#e' + e.number + '-t' + trial);
    } catch (ignored) {
      location.hash = 'e' + e.number + '-t' + trial;
    }
    T.charts.forEach(function (c) {
      if (c.experiment === e && c.select && c.chart) c.select(trial);
    });
    var box = e.selectedBox, i = e.pos[trial], t = e.data.trials;
    box.hidden = false;
    box.innerHTML = 'Selected: ' + T.trialTooltip(e, trial).replace(/<br>/g, ' · ') +
      ' · attempts ' + t.attempts[i] + ', iterations ' + t.iterations[i];
  };

  // The charts in view are drawn: the page is usable (once; charts drawn
  // later as the page scrolls only update data-drawn).
  T.ready = function () {
    if (T.root.getAttribute('data-state') === 'ready') return;
    T.root.setAttribute('data-render-ms', String(Math.round(performance.now())));
    T.root.setAttribute('data-state', 'ready');
    T.mark('ready');
    var match = /^#e(\d+)-t(\d+)$/.exec(location.hash);
    if (match && T.experiments[+match[1]]) {
      var e = T.experiments[+match[1]];
      if (e.pos[+match[2]] !== undefined) T.select(e, +match[2]);
    }
    try {
      var y = sessionStorage.getItem('tune-report-scroll');
      if (y) window.scrollTo(0, +y);
    } catch (ignored) { /* file:// storage may be refused */ }
  };

  // While an experiment runs, reload (the driver rewrites the file); the
  // hash keeps the selection, sessionStorage the scroll position.
  function scheduleReload(data) {
    if (!data.live || !(data.reload_s > 0)) return;
    T.root.setAttribute('data-reload-s', String(data.reload_s));
    setTimeout(function () {
      try {
        sessionStorage.setItem('tune-report-scroll', String(window.scrollY));
      } catch (ignored) { /* not kept then */ }
      location.reload();
    }, data.reload_s * 1000);
  }

  function summaryCard(e, parent) {
    var s = e.data.summary, card = T.el('div', { 'class': 'card' }, parent), table = T.el('table', {}, card);
    function row(k, v) {
      var tr = T.el('tr', {}, table);
      T.el('td', {}, tr, k);
      T.el('td', {}, tr, v);
    }
    var counts = Object.keys(s.counts).map(function (k) { return s.counts[k] + ' ' + k; }).join(', ');
    row('status', s.status + (s.running ? ' (live)' : ''));
    row('trials', (e.data.trials.index.length || 0) + (counts ? ' — ' + counts : ''));
    var p = e.data.pareto;
    row(p ? 'metrics' : 'metric', p ? T.objectives(p) : s.metric ? s.metric + ' (' + s.mode + ')' : 'none');
    row('search / scheduler', (s.search || '?') + ' / ' + s.scheduler);
    row('wall time', T.duration(s.wall_s));
    row('slot utilisation', s.utilisation === null ? '–' : Math.round(s.utilisation * 100) + '% of ' + s.lanes +
      ' trial slot' + (s.lanes === 1 ? '' : 's') + (s.slots_per_trial > 1 ? ' × ' + s.slots_per_trial + ' cores' : ''));
    row('results', s.results + (s.curve_points < s.results ? ' (curves show ' + s.curve_points + ')' : ''));
    var best = T.el('div', { 'class': 'card' }, parent);
    if (p) return frontCard(e, best);
    if (!s.best) {
      T.el('div', { 'class': 'empty' }, best, s.metric ? 'No trial has reported a finite ' + s.metric + ' yet.' : 'No metric.');
      return;
    }
    T.el('h3', {}, best, 'Best trial: ' + s.best.trial + ' — ' + s.metric + ' ' + T.fmt(s.best.value));
    var t2 = T.el('table', {}, best);
    var sampled = s.params.length ? s.params : Object.keys(s.best.params);
    sampled.slice(0, 16).forEach(function (k) {
      var tr = T.el('tr', {}, t2);
      T.el('td', {}, tr, k);
      T.el('td', {}, tr, T.fmt(s.best.params[k]));
    });
    var constants = Object.keys(s.constants).map(function (k) { return k + '=' + T.fmt(s.constants[k]); });
    if (constants.length) T.el('p', { 'class': 'note' }, best, 'constants: ' + constants.join(', '));
    if (s.best.checkpoint) T.el('p', { 'class': 'note' }, best, 'checkpoint: ' + s.best.checkpoint);
  }

  // "f1 (min), f2 (min)".
  T.objectives = function (p) {
    return p.objectives.map(function (o) { return o.metric + ' (' + o.mode + ')'; }).join(', ');
  };

  // A multi-objective experiment has no one best trial: its Pareto front,
  // each member's objectives (as `tune best` lists them).
  function frontCard(e, card) {
    var p = e.data.pareto, s = e.data.summary;
    if (!p.front.length) {
      T.el('div', { 'class': 'empty' }, card, 'No trial has reported ' + T.objectives(p) + ' yet.');
      return;
    }
    T.el('h3', {}, card, 'Pareto front: ' + p.front.length + ' trial' + (p.front.length === 1 ? '' : 's'));
    T.el('p', { 'class': 'note' }, card, 'No other trial is as good on every metric and better on one.');
    var table = T.el('table', {}, card), head = T.el('tr', {}, table);
    T.el('td', {}, head, 'trial');
    p.objectives.forEach(function (o) { T.el('td', {}, head, o.metric); });
    p.front.slice(0, 10).forEach(function (trial) {
      var tr = T.el('tr', {}, table), i = e.pos[trial];
      T.el('td', {}, tr, String(trial));
      p.objectives.forEach(function (o, k) { T.el('td', {}, tr, T.fmt(p.values[k][i])); });
    });
    if (p.front.length > 10) T.el('p', { 'class': 'note' }, card, '… and ' + (p.front.length - 10) + ' more');
    var constants = Object.keys(s.constants).map(function (k) { return k + '=' + T.fmt(s.constants[k]); });
    if (constants.length) T.el('p', { 'class': 'note' }, card, 'constants: ' + constants.join(', '));
  }

  function experimentSection(e) {
    var s = e.data.summary;
    var section = T.el('section', { 'class': 'experiment', id: 'experiment-' + e.number }, T.root);
    T.el('h2', {}, section, s.name);
    T.el('p', { 'class': 'sub' }, section, 'created ' + T.date(s.created_at));
    summaryCard(e, T.el('div', { 'class': 'summary' }, section));
    e.selectedBox = T.el('div', { 'class': 'selected', hidden: '' }, section);
    var grid = T.el('div', { 'class': 'grid' }, section);
    T.builders.slice().sort(function (a, b) { return a.order - b.order; }).forEach(function (builder) {
      try {
        builder.build(e, grid, section);
      } catch (err) {
        console.error('chart failed: ' + (err && err.stack ? err.stack : err));
      }
    });
  }

  T.main = function () {
    T.mark('main');
    var data = JSON.parse(document.getElementById('tune-data').textContent);
    T.mark('parsed');
    T.data = data;
    T.root = document.getElementById('tune-report');
    T.pending = 1;  // held until every section is laid out
    var points = 0;
    data.experiments.forEach(function (x) { points += x.curves.x.length + x.trials.index.length; });
    T.renderer = points < 20000 ? 'svg' : 'canvas';
    T.root.setAttribute('data-renderer', T.renderer);
    var head = T.el('header', {}, T.root);
    T.el('h1', {}, head, 'tune report');
    var sub = T.el('p', { 'class': 'sub' }, head, data.experiments.map(function (x) { return x.summary.name; }).join(', ') +
      ' — ' + data.storage + ' — generated ' + T.date(data.generated_at) + ' ');
    if (data.live) T.el('span', { 'class': 'live' }, sub, 'live: refreshing every ' + data.reload_s + ' s');
    data.experiments.forEach(function (x, n) {
      deferFields(x, n);
      var e = { number: n, data: x, pos: {}, selected: null };
      x.trials.index.forEach(function (trial, i) { e.pos[trial] = i; });
      T.experiments.push(e);
    });
    if (T.compare && T.experiments.length > 1) T.compare(T.experiments, T.root);
    T.experiments.forEach(experimentSection);
    T.mark('laid out');
    T.drawn = 0;
    T.root.setAttribute('data-charts', String(T.charts.length));
    T.root.setAttribute('data-drawn', '0');
    var resizing = null;
    window.addEventListener('resize', function () {
      clearTimeout(resizing);
      resizing = setTimeout(function () { T.charts.forEach(function (c) { if (c.chart) c.chart.resize(); }); }, 200);
    });
    scheduleReload(data);
    if (!T.charts.length) T.root.setAttribute('data-all-ms', String(Math.round(performance.now())));
    // "report.html?all" draws every chart at once (to print, or to time it),
    // once the page is parsed: in one go, as most of them draw the rest of
    // the data.
    if (!window.IntersectionObserver || !T.charts.length || /[?&]all\b/.test(location.search)) {
      T.whenLoaded(function () {
        T.charts.forEach(draw);
        T.pending -= 1;
        if (T.pending === 0) T.ready();
      });
      return;
    }
    // The observer reports every chart once at the start, in view or not;
    // after that first report the charts in view are being drawn.
    var first = true;
    var observer = new IntersectionObserver(function (changes) {
      T.mark('observed');
      changes.forEach(function (change) {
        if (!change.isIntersecting) return;
        observer.unobserve(change.target);
        draw(T.charts.filter(function (c) { return c.div === change.target; })[0]);
      });
      if (first) {
        first = false;
        T.pending -= 1;
        if (T.pending === 0) T.ready();
      }
    }, { rootMargin: '200px 0px' });
    T.charts.forEach(function (c) { observer.observe(c.div); });
  };
})();
