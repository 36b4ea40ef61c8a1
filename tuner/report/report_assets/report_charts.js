// tune report: the Pareto front, optimization history, learning curves, parallel coordinates,
// parameter importance and slices (one builder each, in page order).
(function () {
  'use strict';
  var T = window.tuneReport;

  var finite = T.finite, valueAxis = T.valueAxis;

  function ring(id) {
    return { id: id || 'selected', name: 'selected', type: 'scatter', symbolSize: 16, z: 10, silent: true,
      itemStyle: { color: 'rgba(0,0,0,0)', borderColor: '#111', borderWidth: 2 }, data: [] };
  }

  // The Pareto front of a multi-objective experiment (Optuna's
  // plot_pareto_front): every trial with every objective by two of them, the
  // front's members highlighted, the dominated trials faded. With three or
  // more objectives, two selectors pick the axes; the highlighted trials are
  // the front over all of them, some of which the two shown may not tell
  // apart from dominated ones.
  T.builder(5, function pareto(e, grid) {
    var p = e.data.pareto, t = e.data.trials, title = 'Pareto front';
    if (!p) return;
    var objectives = p.objectives, onFront = {}, rows = [];
    p.front.forEach(function (trial) { onFront[trial] = true; });
    t.index.forEach(function (trial, i) {
      for (var k = 0; k < objectives.length; k++) if (!finite(p.values[k][i])) return;
      rows.push(i);
    });
    if (!rows.length) return T.empty(grid, title, 'No trial has reported ' + T.objectives(p) + ' yet.');
    var panel = T.panel(grid, title, p.front.length + ' of ' + rows.length + ' trials are on the front: no other ' +
      'trial is as good on every metric and better on one. The line joins those no other beats on the two ' +
      'metrics shown; click a point to select its trial.');
    var xk = 0, yk = 1;
    function label(k) { return objectives[k].metric + ' (' + objectives[k].mode + ')'; }
    // v better than w on objective k.
    function better(k, v, w) { return objectives[k].mode === 'max' ? v > w : v < w; }
    function option() {
      var front = [], dominated = [];
      rows.forEach(function (i) {
        (onFront[t.index[i]] ? front : dominated).push([p.values[xk][i], p.values[yk][i], t.index[i]]);
      });
      // The front of the two shown: by x, best first, each member that
      // improves y; between two, the corner at the worse x and the worse y.
      var sorted = front.slice().sort(function (a, b) {
        if (a[0] !== b[0]) return better(xk, a[0], b[0]) ? -1 : 1;
        if (a[1] !== b[1]) return better(yk, a[1], b[1]) ? -1 : 1;
        return 0;
      });
      var line = [];
      sorted.forEach(function (point) {
        var last = line[line.length - 1];
        if (last && !better(yk, point[1], last[1])) return;
        if (last) line.push([point[0], last[1]]);
        line.push(point);
      });
      var xs = rows.map(function (i) { return p.values[xk][i]; }), ys = rows.map(function (i) { return p.values[yk][i]; });
      return {
        grid: { left: 64, right: 20, top: 30, bottom: 44 }, legend: { top: 0 },
        tooltip: { trigger: 'item', formatter: function (q) { return T.trialTooltip(e, q.value[2]); } },
        xAxis: T.valueAxis(label(xk), xs, { nameGap: 26 }),
        yAxis: T.valueAxis(label(yk), ys),
        series: [
          { name: 'dominated', type: 'scatter', symbolSize: 6, large: true, largeThreshold: 2000, progressive: 0,
            itemStyle: { color: '#8c96a8', opacity: 0.35 }, data: dominated },
          { name: 'Pareto front', type: 'scatter', symbolSize: 9, z: 4, itemStyle: { color: '#d62728' }, data: front },
          { name: 'Pareto front', type: 'line', showSymbol: false, silent: true, z: 3,
            lineStyle: { color: '#d62728', width: 1.5 }, itemStyle: { color: '#d62728' }, data: line },
          ring()
        ]
      };
    }
    var entry = T.chart(e, panel, 'pareto', option, function (trial) {
      var i = e.pos[trial];
      var point = rows.indexOf(i) >= 0 ? [[p.values[xk][i], p.values[yk][i], trial]] : [];
      entry.chart.setOption({ series: [{ id: 'selected', data: point }] });
    });
    if (objectives.length > 2) {
      var box = T.el('span', { 'class': 'toggle' }, panel.querySelector('h3'));
      [['x', 0], ['y', 1]].forEach(function (axis) {
        T.el('label', {}, box, ' ' + axis[0] + ' ');
        var select = T.el('select', { 'data-axis': axis[0] }, box);
        objectives.forEach(function (o, k) {
          var choice = T.el('option', { value: String(k) }, select, label(k));
          if (k === axis[1]) choice.selected = true;
        });
        select.addEventListener('change', function () {
          if (axis[0] === 'x') xk = +select.value;
          else yk = +select.value;
          T.redraw(entry, option);
        });
      });
    }
  });

  // Optimization history: each trial's value and the best so far, against
  // trial number or against the time of its last result.
  T.builder(10, function history(e, grid) {
    var t = e.data.trials, s = e.data.summary, title = 'Optimization history';
    var rows = [];
    t.index.forEach(function (trial, i) { if (finite(t.value[i])) rows.push(i); });
    if (!rows.length) return T.empty(grid, title, 'No trial has a finite ' + (s.metric || 'metric') + ' yet.');
    var panel = T.panel(grid, title, 'Each trial\'s last ' + s.metric + ' and the best so far; click a point to select its trial.');
    var axis = 'trial';
    function x(i) { return axis === 'trial' ? t.index[i] : t.end[i]; }
    function option() {
      var sorted = rows.slice().sort(function (a, b) { return x(a) - x(b); });
      // The best so far as steps: only where it improves, and the last trial.
      var best = [], current = null;
      sorted.forEach(function (i, n) {
        var v = t.value[i];
        if (current === null || (s.mode === 'max' ? v > current : v < current)) {
          current = v;
          best.push([x(i), current]);
        } else if (n === sorted.length - 1) {
          best.push([x(i), current]);
        }
      });
      // Beyond 2,000 points, x, y, trial in one typed array, which ECharts
      // takes as it is (an array per point it copies and boxes).
      var points;
      if (rows.length > 2000) {
        points = new Float64Array(3 * rows.length);
        rows.forEach(function (i, n) {
          points[3 * n] = x(i);
          points[3 * n + 1] = t.value[i];
          points[3 * n + 2] = t.index[i];
        });
      } else {
        points = rows.map(function (i) { return [x(i), t.value[i], t.index[i]]; });
      }
      return {
        grid: { left: 64, right: 20, top: 30, bottom: 44 }, legend: { top: 0 },
        tooltip: { trigger: 'item', formatter: function (p) {
          return p.seriesName === 'trial' ? T.trialTooltip(e, p.value[2]) : 'best so far: ' + T.fmt(p.value[1]);
        } },
        xAxis: { type: 'value', scale: true, name: axis === 'trial' ? 'trial' : 'seconds since start',
          nameLocation: 'middle', nameGap: 26 },
        yAxis: valueAxis(s.metric, t.value),
        series: [
          { name: 'trial', type: 'scatter', symbolSize: 6, large: true, largeThreshold: 2000, progressive: 0,
            dimensions: ['x', 'y', 'trial'], encode: { x: 0, y: 1 }, data: points },
          { name: 'best so far', type: 'line', step: 'end', showSymbol: false, data: best, lineStyle: { width: 2 } },
          ring()
        ]
      };
    }
    var entry = T.chart(e, panel, 'history', option, function (trial) {
      var i = e.pos[trial];
      entry.chart.setOption({ series: [{ id: 'selected', data: finite(t.value[i]) ? [[x(i), t.value[i], trial]] : [] }] });
    });
    T.toggle(panel, ['trial', 'time'], function (label) {
      axis = label;
      T.redraw(entry, option);
    });
  });

  // Learning curves: every trial's results (downsampled for large sweeps),
  // with the points where the scheduler stopped, paused, promoted or
  // exploited it, and failures.
  T.builder(20, function curves(e, grid) {
    var c = e.data.curves, t = e.data.trials, s = e.data.summary, m = e.data.marks, title = 'Learning curves';
    var any = false;
    for (var k = 0; k < c.y.length && !any; k++) any = finite(c.y[k]);
    if (!any) return T.empty(grid, title, 'No results with a finite ' + (s.metric || 'metric') + ' yet.');
    var panel = T.panel(grid, title, 'Every trial\'s ' + s.metric + ' per training iteration' +
      (s.curve_points < s.results ? ' (downsampled to ' + s.curve_points + ' of ' + s.results + ' points)' : '') + '.');
    // Trial row i's finite points (a single point twice, so it shows as a line).
    function coordsOf(i) {
      var coords = [];
      for (var k = c.start[i]; k < c.start[i + 1]; k++) if (finite(c.y[k])) coords.push([c.x[k], c.y[k]]);
      if (coords.length === 1) coords.push(coords[0]);
      return coords;
    }
    function option() {
      var n = t.index.length, xmin = Infinity, xmax = -Infinity, lo = Infinity, hi = -Infinity, points = 0, drawn = 0;
      for (var i = 0; i < n; i++) {
        var before = points;
        for (var k = c.start[i]; k < c.start[i + 1]; k++) {
          var x = c.x[k], y = c.y[k];
          if (!finite(y)) continue;
          if (x < xmin) xmin = x;
          if (x > xmax) xmax = x;
          if (y < lo) lo = y;
          if (y > hi) hi = y;
          points += 1;
        }
        if (points > before) drawn += 1;
      }
      var yAxis = valueAxis(s.metric, [lo, hi]);
      if (yAxis.type === 'value') {
        var extent = T.niceExtent(lo, hi);
        yAxis.min = extent[0];
        yAxis.max = extent[1];
      } else {
        yAxis.min = Math.pow(10, Math.floor(Math.log10(lo)));
        yAxis.max = Math.pow(10, Math.ceil(Math.log10(hi)));
      }
      // Up to 2,000 trials: a line each (colour, hover). Beyond, one series
      // with breaks between trials, its points in one typed array (ECharts
      // neither copies nor boxes them), draws several times faster; pick a
      // trial in the other charts and it is highlighted here.
      var series;
      if (drawn <= 2000) {
        var lines = [];
        t.index.forEach(function (trial, i) {
          var coords = coordsOf(i);
          if (coords.length) lines.push({ coords: coords, trial: trial, lineStyle: { color: T.COLORS[trial % T.COLORS.length] } });
        });
        series = [{ name: 'trials', type: 'lines', coordinateSystem: 'cartesian2d', polyline: true,
          data: lines, lineStyle: { width: 1, opacity: 0.6 }, emphasis: { lineStyle: { width: 3, opacity: 1 } } }];
      } else {
        series = [{ name: 'trials', type: 'line', showSymbol: false, connectNulls: false, sampling: null, silent: true,
          progressive: 0, lineStyle: { width: 1, opacity: 0.25 }, data: T.breaks(n, points + drawn, function (i, add) {
            var first = -1, count = 0;
            for (var k = c.start[i]; k < c.start[i + 1]; k++) {
              if (!finite(c.y[k])) continue;
              add(c.x[k], c.y[k]);
              if (first < 0) first = k;
              count += 1;
            }
            if (count === 1) add(c.x[first], c.y[first]);
          }) }];
      }
      Object.keys(T.MARKS).forEach(function (kind) {
        var data = [];
        m.kind.forEach(function (k, n) { if (k === kind && finite(m.y[n])) data.push([m.x[n], m.y[n], m.trial[n]]); });
        if (data.length) {
          series.push({ name: T.MARKS[kind].label, type: 'scatter', symbol: T.MARKS[kind].symbol, symbolSize: 9, z: 5,
            itemStyle: { color: T.MARKS[kind].color }, data: data });
        }
      });
      var median = e.data.median;
      if (median.x.length && median.attribute === 'training_iteration') {
        series.push({ name: 'median of running means', type: 'line', showSymbol: false, z: 6,
          lineStyle: { color: '#111', type: 'dashed', width: 2 }, data: median.x.map(function (x, k) { return [x, median.y[k]]; }) });
      }
      series.push({ id: 'selected', name: 'selected', type: 'lines', coordinateSystem: 'cartesian2d', polyline: true,
        z: 9, silent: true, lineStyle: { width: 3, color: '#111', opacity: 1 }, data: [] });
      return {
        grid: { left: 64, right: 20, top: 34, bottom: 44 }, legend: { top: 0, type: 'scroll' },
        tooltip: { trigger: 'item', formatter: function (p) {
          if (p.seriesType === 'lines') return T.trialTooltip(e, p.data.trial);
          return T.escape(p.seriesName) + ' at iteration ' + p.value[0] + '<br>' + T.trialTooltip(e, p.value[2]);
        } },
        xAxis: { type: 'value', min: xmin, max: xmax, name: 'training_iteration', nameLocation: 'middle', nameGap: 26 },
        yAxis: yAxis, series: series
      };
    }
    var entry = T.chart(e, panel, 'curves', option, function (trial) {
      var coords = e.pos[trial] === undefined ? [] : coordsOf(e.pos[trial]);
      entry.chart.setOption({ series: [{ id: 'selected', data: coords.length ? [{ coords: coords, trial: trial }] : [] }] });
    });
  });

  // A parameter's axis: numbers (log when they span decades), else categories.
  function paramAxis(values) {
    var numeric = true;
    for (var i = 0; i < values.length && numeric; i++) numeric = values[i] === null || typeof values[i] === 'number';
    if (numeric) return { type: T.positiveWideRange(values) ? 'log' : 'value', scale: true, numeric: true };
    var seen = {};
    values.forEach(function (v) { seen[typeof v === 'string' ? v : JSON.stringify(v)] = true; });
    return { type: 'category', data: Object.keys(seen), numeric: false };
  }
  function axisValue(axis, v) { return axis.numeric ? v : typeof v === 'string' ? v : JSON.stringify(v); }
  T.paramAxis = paramAxis;
  T.axisValue = axisValue;

  function colorMap(s, values, dimension, extra) {
    var finiteValues = values.filter(finite);
    var map = { type: 'continuous', dimension: dimension, min: Math.min.apply(null, finiteValues),
      max: Math.max.apply(null, finiteValues), calculable: true, right: 0, top: 'middle', itemHeight: 120,
      formatter: function (v) { return T.fmt(v); },
      text: [s.mode === 'max' ? 'better' : 'worse', s.mode === 'max' ? 'worse' : 'better'],
      inRange: { color: s.mode === 'max' ? ['#d62728', '#f5d76e', '#3b63c4'] : ['#3b63c4', '#f5d76e', '#d62728'] } };
    for (var k in extra || {}) map[k] = extra[k];
    return map;
  }

  // Parallel coordinates: drag along an axis to keep the trials in a range.
  T.builder(40, function parallel(e, grid) {
    var t = e.data.trials, s = e.data.summary, title = 'Parallel coordinates';
    if (!s.params.length) return T.empty(grid, title, 'No sampled parameters.');
    var withMetric = [];
    t.index.forEach(function (trial, i) { if (finite(t.value[i])) withMetric.push(i); });
    if (!withMetric.length) return T.empty(grid, title, 'No trial has a finite ' + (s.metric || 'metric') + ' yet.');
    var panel = T.panel(grid, title, 'Drag along an axis to brush a range; only trials inside every range stay drawn.', 'wide');
    var status = T.el('p', { 'class': 'note' }, panel, '\u00a0');  // its line, filled when drawn
    var rows = [], data = [], rowOf = {};
    // The parameters are in the rest of the data (report.js): read when drawn.
    function option() {
      var axes = s.params.map(function (name, k) { return paramAxis(withMetric.map(function (i) { return t.p[k][i]; })); });
      // The trials drawn: those with a value on every axis (an axis of numbers,
      // a parameter whose values are all numbers or null, has no place for null).
      rows = withMetric.filter(function (i) {
        for (var k = 0; k < axes.length; k++) if (axes[k].numeric && t.p[k][i] === null) return false;
        return true;
      });
      status.textContent = rows.length + ' trials';
      rows.forEach(function (i) {
        var value = axes.map(function (axis, k) { return axisValue(axis, t.p[k][i]); });
        value.push(t.value[i]);
        rowOf[t.index[i]] = data.length;
        data.push({ value: value, trial: t.index[i] });
      });
      var metricValues = rows.map(function (i) { return t.value[i]; });
      var parallelAxis = axes.map(function (axis, k) {
        return { dim: k, name: s.params[k], type: axis.type, data: axis.data, scale: true, nameTruncate: { maxWidth: 90 } };
      });
      parallelAxis.push({ dim: axes.length, name: s.metric, type: T.positiveWideRange(metricValues) ? 'log' : 'value', scale: true });
      return {
        parallel: { left: 60, right: 110, top: 40, bottom: 30, parallelAxisDefault: { nameLocation: 'end', nameGap: 12 } },
        parallelAxis: parallelAxis,
        visualMap: colorMap(s, metricValues, axes.length, { seriesIndex: 0 }),
        tooltip: { trigger: 'item', formatter: function (p) { return T.trialTooltip(e, p.data.trial); } },
        series: [{ type: 'parallel', data: data, smooth: false, progressive: 20000, inactiveOpacity: 0.04, activeOpacity: 0.9,
          lineStyle: { width: 1, opacity: data.length > 2000 ? 0.25 : 0.5 }, emphasis: { lineStyle: { width: 4, opacity: 1, color: '#111' } } }]
      };
    }
    var entry = T.chart(e, panel, 'parallel', option, function (trial) {
      entry.chart.dispatchAction({ type: 'downplay', seriesIndex: 0 });
      if (rowOf[trial] !== undefined) entry.chart.dispatchAction({ type: 'highlight', seriesIndex: 0, dataIndex: rowOf[trial] });
    }, function (chart) {
      chart.on('axisareaselected', function () {
        var series = chart.getModel().getSeries()[0], active = series.getRawIndicesByActiveState('active');
        // Every range cleared: every trial drawn as before.
        if (!active.length && !series.getRawIndicesByActiveState('inactive').length) {
          status.textContent = rows.length + ' trials';
          return;
        }
        var trials = active.map(function (d) { return data[d].trial; }).sort(function (a, b) { return a - b; });
        status.textContent = trials.length + ' of ' + data.length + ' trials in the brushed ranges' +
          (trials.length ? ': ' + trials.slice(0, 30).join(', ') + (trials.length > 30 ? ', …' : '') : '');
      });
    });
  });

  // Parameter importance: the share of the metric's variance each parameter
  // explains on its own (tuner/report/report_analysis.cpp).
  T.builder(35, function importance(e, grid) {
    var s = e.data.summary, title = 'Parameter importance';
    if (!s.importance.length) {
      return T.empty(grid, title, 'Needs at least 3 trials with a finite ' + (s.metric || 'metric') +
        ' that varies with a parameter.');
    }
    var panel = T.panel(grid, title, 'Share of the variance of ' + s.metric + ' explained by each parameter alone ' +
      '(first-order, quantile bins; sums to 1).');
    var items = s.importance.slice().reverse();
    T.chart(e, panel, 'importance', {
      grid: { left: 120, right: 64, top: 10, bottom: 30 }, tooltip: { trigger: 'item' },
      xAxis: { type: 'value', max: 1 }, yAxis: { type: 'category', data: items.map(function (x) { return x[0]; }) },
      series: [{ type: 'bar', data: items.map(function (x) { return +x[1].toFixed(4); }), itemStyle: { color: '#3b63c4' },
        label: { show: true, position: 'right', formatter: function (p) { return (p.value * 100).toFixed(1) + '%'; } } }]
    });
  });

  // Slice plots: the metric against each parameter, coloured by trial number.
  T.builder(60, function slices(e, grid) {
    var t = e.data.trials, s = e.data.summary;
    var rows = [];
    t.index.forEach(function (trial, i) { if (finite(t.value[i])) rows.push(i); });
    if (!s.params.length || !rows.length) return;
    var panel = T.panel(grid, 'Slices', 'The metric against each parameter; colour: trial number (later is darker).', 'wide');
    var sub = T.el('div', { 'class': 'grid small' }, panel);
    s.params.forEach(function (name, k) {
      var box = T.el('div', {}, sub);
      T.el('h3', {}, box, name);
      var data = [];
      var entry = T.chart(e, box, 'slice', function () {
        var axis = paramAxis(rows.map(function (i) { return t.p[k][i]; }));
        rows.forEach(function (i) {
          var v = axisValue(axis, t.p[k][i]);
          if (v !== null) data.push([v, t.value[i], t.index[i]]);
        });
        return {
          grid: { left: 56, right: 12, top: 10, bottom: 40 },
          tooltip: { trigger: 'item', formatter: function (p) { return T.trialTooltip(e, p.value[2]); } },
          xAxis: { type: axis.type, data: axis.data, scale: true, name: name, nameLocation: 'middle', nameGap: 24 },
          yAxis: valueAxis('', t.value, { nameGap: 26 }),
          // Colour by trial number; above 2,000 points (drawn in one pass) one colour.
          visualMap: data.length > 2000 ? [] : { show: false, type: 'continuous', dimension: 2, seriesIndex: 0, min: 0,
            max: Math.max(1, t.index.length - 1), inRange: { color: ['#c6d4f5', '#1c3b8a'] } },
          series: [{ type: 'scatter', symbolSize: 6, large: true, largeThreshold: 2000, progressive: 0, data: data }, ring()]
        };
      }, function (trial) {
        var point = data.filter(function (d) { return d[2] === trial; });
        entry.chart.setOption({ series: [{ id: 'selected', data: point }] });
      });
    });
  });
})();
