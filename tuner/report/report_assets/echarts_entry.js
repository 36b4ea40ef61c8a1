// The ECharts build the report inlines (vendor/echarts.min.js): made from this
// file by update-vendor.sh (esbuild, an IIFE that sets window.echarts), with
// only the series, components and renderers the report's scripts use, so the
// page has less script to parse and compile than with the full build
// (dist/echarts.min.js, every chart type, map, geo, calendar, toolbox, ...).
// Adding a chart or an option key to report.js, report_charts.js or
// report_schedule.js that needs another part of ECharts means importing and
// use()-ing it here and running ./update-vendor.sh (the end-to-end tests show
// a missing one as a console error: "[ECharts] Unknown series ..." or a
// component that silently draws nothing).
//
// echarts/core brings init, use, graphic (the timeline's clipRectByRect), the
// value, log and category scales, and label layout.
import { use } from 'echarts/core';
import {
  BarChart,       // parameter importance
  CustomChart,    // timeline bars (up to 2,000 attempts) and the selected one
  LineChart,      // best so far, curves and timeline above 2,000 trials, median stopping, comparison
  LinesChart,     // curves up to 2,000 trials, the selected curve, the PBT lineage and its arrows
  ParallelChart,  // parallel coordinates
  ScatterChart    // history, slices, curve marks, rungs, selection rings (large mode included)
} from 'echarts/charts';
import {
  GridComponent,                 // xAxis/yAxis (value, log, category) of every chart but the parallel one
  LegendComponent,               // legend: {...} and legend: {type: 'scroll'}
  ParallelComponent,             // parallel: {...}, parallelAxis and its brushing (axisareaselected)
  TooltipComponent,              // tooltip: trigger 'item' and 'axis' (brings the axis pointer)
  VisualMapContinuousComponent   // visualMap: {type: 'continuous'} (parallel lines, slices)
} from 'echarts/components';
// The page picks SVG below 20,000 points and canvas above (report.js).
import { CanvasRenderer, SVGRenderer } from 'echarts/renderers';

use([BarChart, CustomChart, LineChart, LinesChart, ParallelChart, ScatterChart, GridComponent, LegendComponent,
  ParallelComponent, TooltipComponent, VisualMapContinuousComponent, CanvasRenderer, SVGRenderer]);

export * from 'echarts/core';
