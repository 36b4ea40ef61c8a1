// tune report: what the scheduler did (successive-halving rungs, the PBT
// lineage, median-stopping cut-offs), where trials ran (slot timeline), and
// several experiments side by side.
(function () {
  'use strict';
  var T = window.tuneReport;

  var finite = T.finite, metricAxis = T.valueAxis;
  // A stable horizontal offset per trial, so rung points do not overlap.
  function jitter(trial) { return (((trial * 2654435761) % 1000) / 1000 - 0.5) * 0.5; }

  // ASHA / HyperBand: the value each trial had on reaching a rung, whether it
  // went on, and the cut-off (the worst value among those that went on).
  T.builder(30, function rungs(e, grid) {
    var r = e.data.rungs, s = e.data.summary;
    if (!r.rungs.length) return;
    var panel = T.panel(grid, 'Rungs (' + s.scheduler + ')', 'The ' + s.metric + ' of each trial reaching a rung of ' +
      r.attribute + '; the bar is the cut-off: the worst value among the trials that went on.');
    var went = [], stopped = [], done = [];
    var entry = T.chart(e, panel, 'rungs', function () {
      var cuts = [], values = [];
      r.rungs.forEach(function (rung, k) {
        // Nothing goes past the last rung when it is the end (max_t).
        var end = k === r.rungs.length - 1 && !rung.continued.some(function (c) { return c; });
        rung.trials.forEach(function (trial, n) {
          var point = [k + jitter(trial), rung.values[n], trial];
          (end ? done : rung.continued[n] ? went : stopped).push(point);
          values.push(rung.values[n]);
        });
        if (finite(rung.cutoff)) cuts.push([k, rung.cutoff]);
      });
      var labels = r.rungs.map(function (rung) {
        var on = rung.continued.filter(function (c) { return c; }).length;
        return T.fmt(rung.milestone) + '\n' + rung.trials.length + ' in, ' + on + ' on';
      });
      return {
        grid: { left: 64, right: 16, top: 30, bottom: 50 }, legend: { top: 0 },
        tooltip: { trigger: 'item', formatter: function (p) {
          return p.seriesName === 'cut-off' ? 'cut-off ' + T.fmt(p.value[1]) : T.trialTooltip(e, p.value[2]);
        } },
        // Categories carry the labels; the points sit on a hidden value axis
        // over the same span, so they can spread sideways within their rung.
        xAxis: [{ type: 'category', data: labels, name: r.attribute, nameLocation: 'middle', nameGap: 34 },
          { type: 'value', min: -0.5, max: r.rungs.length - 0.5, show: false }],
        yAxis: metricAxis(s.metric, values),
        series: [
          { name: 'went on', type: 'scatter', xAxisIndex: 1, symbolSize: 7, itemStyle: { color: '#2ca02c' }, data: went },
          { name: 'stopped here', type: 'scatter', xAxisIndex: 1, symbolSize: 7, itemStyle: { color: '#d62728' }, data: stopped },
          { name: 'reached the end', type: 'scatter', xAxisIndex: 1, symbolSize: 7, itemStyle: { color: '#3b63c4' }, data: done },
          { name: 'cut-off', type: 'scatter', xAxisIndex: 1, symbol: 'rect', symbolSize: [46, 3], itemStyle: { color: '#111' }, data: cuts },
          { id: 'selected', type: 'scatter', xAxisIndex: 1, symbolSize: 15, silent: true, itemStyle: { color: 'rgba(0,0,0,0)', borderColor: '#111', borderWidth: 2 }, data: [] }
        ]
      };
    }, function (trial) {
      entry.chart.setOption({ series: [{ id: 'selected', data: went.concat(stopped, done).filter(function (p) { return p[2] === trial; }) }] });
    });
  });

  function changesText(changes) {
    return Object.keys(changes).map(function (k) {
      return T.escape(k) + ': ' + T.escape(T.fmt(changes[k][0])) + ' → ' + T.escape(T.fmt(changes[k][1]));
    }).join('<br>');
  }

  // PBT lineage: each trial's run as a bar over iterations; an arrow from the
  // donor's checkpoint to where the trial continued from it, with the
  // perturbation in its tooltip.
  T.builder(31, function lineage(e, grid) {
    var x = e.data.exploits, t = e.data.trials, s = e.data.summary;
    if (!x.length && s.scheduler !== 'pbt' && s.scheduler !== 'pb2') return;
    var title = 'PBT lineage';
    if (!x.length) return T.empty(grid, title, 'No trial has exploited another yet.');
    var panel = T.panel(grid, title, 'Arrows: a trial (end) cloned the checkpoint of another (start) and continued with a ' +
      'perturbed config. Hover an arrow for the perturbation.', 'wide');
    var runs = [];
    var entry = T.chart(e, panel, 'lineage', function () {
      runs = t.index.map(function (trial, i) {
        return { coords: [[0, trial], [Math.max(t.iterations[i], 0.5), trial]], trial: trial };
      });
      var arrows = x.map(function (ex, n) {
        return { coords: [[ex.donor_iteration, ex.donor], [ex.iteration, ex.trial]], trial: ex.trial, exploit: n };
      });
      return {
        grid: { left: 56, right: 20, top: 20, bottom: 44 },
        tooltip: { trigger: 'item', formatter: function (p) {
          if (p.data.exploit === undefined) return T.trialTooltip(e, p.data.trial);
          var ex = x[p.data.exploit];
          return '<b>trial ' + ex.trial + '</b> cloned trial ' + ex.donor + ' (checkpoint at iteration ' + ex.donor_iteration +
            ') at iteration ' + ex.iteration + '<br>' + changesText(ex.changes);
        } },
        xAxis: { type: 'value', min: 0, max: T.niceExtent(0, Math.max.apply(null, t.iterations.concat([1])))[1],
          name: 'training_iteration', nameLocation: 'middle', nameGap: 26 },
        yAxis: { type: 'value', inverse: true, min: Math.min.apply(null, t.index) - 0.5, max: Math.max.apply(null, t.index) + 0.5,
          minInterval: 1, name: 'trial', nameLocation: 'middle', nameGap: 36,
          axisLabel: { formatter: function (v) { return Number.isInteger(v) ? String(v) : ''; } } },
        series: [
          { name: 'trials', type: 'lines', coordinateSystem: 'cartesian2d', data: runs, lineStyle: { width: 5, color: '#c6d4f5', opacity: 1 } },
          { name: 'exploits', type: 'lines', coordinateSystem: 'cartesian2d', z: 4, data: arrows, symbol: ['circle', 'arrow'], symbolSize: 8,
            lineStyle: { width: 1.5, color: '#9467bd', opacity: 0.9, curveness: 0.2 } },
          { id: 'selected', type: 'lines', coordinateSystem: 'cartesian2d', silent: true, data: [], lineStyle: { width: 5, color: '#111', opacity: 1 } }
        ]
      };
    }, function (trial) {
      entry.chart.setOption({ series: [{ id: 'selected', data: runs.filter(function (r) { return r.trial === trial; }) }] });
    });
  });

  // Median stopping: the median of the trials' running means (the bar a
  // trial's best result must beat) and where trials were stopped.
  T.builder(32, function median(e, grid) {
    var md = e.data.median, m = e.data.marks, s = e.data.summary;
    if (!md.x.length) return;
    var panel = T.panel(grid, 'Median stopping', 'The median over trials of their running mean of ' + s.metric + ' at each ' +
      md.attribute + '; a trial whose best is worse than it (after the grace period) is stopped.');
    var stops = [];
    m.kind.forEach(function (k, n) { if (k === 'stopped' && finite(m.y[n]) && finite(m.p[n])) stops.push([m.p[n], m.y[n], m.trial[n]]); });
    T.chart(e, panel, 'median', {
      grid: { left: 64, right: 20, top: 30, bottom: 44 }, legend: { top: 0 },
      tooltip: { trigger: 'item', formatter: function (p) {
        return p.seriesName === 'stopped' ? T.trialTooltip(e, p.value[2]) : 'median ' + T.fmt(p.value[1]) + ' at ' + T.fmt(p.value[0]);
      } },
      xAxis: { type: 'value', scale: true, name: md.attribute, nameLocation: 'middle', nameGap: 26 },
      yAxis: metricAxis(s.metric, md.y.concat(stops.map(function (p) { return p[1]; }))),
      series: [
        { name: 'median of running means', type: 'line', showSymbol: false, lineStyle: { color: '#111', width: 2 },
          data: md.x.map(function (v, k) { return [v, md.y[k]]; }) },
        { name: 'stopped', type: 'scatter', symbol: 'triangle', symbolSize: 9, itemStyle: { color: '#d62728' }, data: stops }
      ]
    });
  });

  // Slot timeline: each attempt of each trial on the lane it ran in.
  T.builder(70, function timeline(e, grid) {
    var s = e.data.summary, title = 'Timeline';
    if (!s.intervals) return T.empty(grid, title, 'No trial has run yet.');
    var util = s.utilisation === null ? '' : ' Utilisation ' + Math.round(s.utilisation * 100) + '%.';
    var panel = T.panel(grid, title, 'When each trial (attempt) held a slot.' + util, 'wide');
    function render(selected) {
      return function (params, api) {
        var from = api.coord([api.value(0), api.value(2)]), to = api.coord([api.value(1), api.value(2)]);
        var height = Math.max(2, api.size([0, 1])[1] * 0.7);
        var rect = echarts.graphic.clipRectByRect({ x: from[0], y: from[1] - height / 2, width: Math.max(1, to[0] - from[0]), height: height },
          { x: params.coordSys.x, y: params.coordSys.y, width: params.coordSys.width, height: params.coordSys.height });
        if (!rect) return null;
        return { type: 'rect', shape: rect, style: selected ? { fill: 'none', stroke: '#111', lineWidth: 2 }
          : { fill: T.COLORS[api.value(3) % T.COLORS.length], opacity: 0.85 } };
      };
    }
    var data = [];
    function option() {
      var iv = e.data.intervals;  // in the rest of the data (report.js): read when drawn
      var hosts = s.hosts.length ? s.hosts : [''], lanes = [], laneOf = {};
      iv.trial.forEach(function (trial, n) {
        var key = (iv.host[n] || '') + '/' + iv.lane[n];
        if (laneOf[key] === undefined) laneOf[key] = -1;
      });
      hosts.forEach(function (host) {
        for (var l = 0; l < s.lanes; l++) {
          var key = host + '/' + l;
          if (laneOf[key] === undefined) continue;
          laneOf[key] = lanes.length;
          lanes.push((host ? host + ' ' : '') + 'slot ' + l);
        }
      });
      iv.trial.forEach(function (trial, n) {
        data.push([iv.start[n], iv.end[n], laneOf[(iv.host[n] || '') + '/' + iv.lane[n]], trial, iv.attempt[n]]);
      });
      return {
        grid: { left: 80, right: 20, top: 10, bottom: 44 },
        tooltip: { trigger: 'item', formatter: function (p) {
          return T.trialTooltip(e, p.value[3]) + '<br>attempt ' + p.value[4] + ': ' + T.fmt(p.value[0]) + ' – ' + T.fmt(p.value[1]) +
            ' s (' + T.duration(p.value[1] - p.value[0]) + ')';
        } },
        xAxis: { type: 'value', min: 0, name: 'seconds since start', nameLocation: 'middle', nameGap: 26 },
        yAxis: { type: 'category', data: lanes, inverse: true },
        series: [
          data.length <= 2000 ? { type: 'custom', renderItem: render(false), encode: { x: [0, 1], y: 2 }, data: data }
            // Beyond 2,000 attempts: thick segments of one series, far faster.
            : { type: 'line', showSymbol: false, connectNulls: false, sampling: null, silent: true, progressive: 0,
              lineStyle: { width: Math.max(1, 0.7 * 326 / lanes.length), cap: 'butt', color: T.COLORS[0], opacity: 0.85 },
              data: T.breaks(data.length, 2 * data.length, function (n, add) {
                add(data[n][0], data[n][2]);
                add(data[n][1], data[n][2]);
              }) },
          { id: 'selected', type: 'custom', renderItem: render(true), encode: { x: [0, 1], y: 2 }, silent: true, data: [] }
        ]
      };
    }
    var entry = T.chart(e, panel, 'timeline', option, function (trial) {
      entry.chart.setOption({ series: [{ id: 'selected', data: data.filter(function (d) { return d[3] === trial; }) }] });
    });
  });

  // Several experiments: their best-so-far curves on one chart.
  T.compare = function (experiments, root) {
    var section = T.el('section', { 'class': 'experiment', id: 'comparison' }, root);
    T.el('h2', {}, section, 'Experiments compared');
    var grid = T.el('div', { 'class': 'grid' }, section);
    var panel = T.panel(grid, 'Best so far', 'Each experiment\'s best value of its metric, by trial number or by time.', 'wide');
    var axis = 'trial';
    function option() {
      var series = experiments.map(function (e) {
        var t = e.data.trials, s = e.data.summary, rows = [];
        t.index.forEach(function (trial, i) { if (finite(t.value[i])) rows.push(i); });
        rows.sort(function (a, b) { return axis === 'trial' ? t.index[a] - t.index[b] : t.end[a] - t.end[b]; });
        var best = null;
        return { name: s.name + ' (' + s.metric + ', ' + s.mode + ')', type: 'line', step: 'end', showSymbol: false,
          data: rows.map(function (i) {
            if (best === null || (s.mode === 'max' ? t.value[i] > best : t.value[i] < best)) best = t.value[i];
            return [axis === 'trial' ? t.index[i] : t.end[i], best];
          }) };
      });
      var all = [];
      series.forEach(function (x) { x.data.forEach(function (p) { all.push(p[1]); }); });
      return { grid: { left: 64, right: 20, top: 34, bottom: 44 }, legend: { top: 0, type: 'scroll' }, tooltip: { trigger: 'axis' },
        xAxis: { type: 'value', scale: true, name: axis === 'trial' ? 'trial' : 'seconds since start', nameLocation: 'middle', nameGap: 26 },
        yAxis: metricAxis('best so far', all), series: series };
    }
    var entry = T.chart({ pos: {} }, panel, 'compare', option());
    T.toggle(panel, ['trial', 'time'], function (label) {
      axis = label;
      T.redraw(entry, option);
    });
  };
})();
