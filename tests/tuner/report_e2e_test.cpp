// End-to-end: tiny sweeps run by the `tune` binary, `tune report` and
// `tune results` on them, and the reports rendered in headless Chromium:
// every chart drawn, no script errors, a screenshot that is not blank.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "png_reader.h"
#include "storage/store.h"
#include "test_util.h"

namespace tune {
namespace {

using Json = nlohmann::json;
using testing::run_command;
using testing::run_tune;
using testing::TempDir;

// What Chromium rendered: the DOM after the page's scripts ran.
struct Rendered {
  std::string dom;
  std::string main;  // <main>...</main>: what the page drew (the DOM also holds the scripts' text)
  std::string state, errors;
  int charts = -1, drawn = -1;
  std::multimap<std::string, int> elements;  // chart kind -> elements drawn

  int count(const std::string& kind) const { return static_cast<int>(elements.count(kind)); }
  int min_elements(const std::string& kind) const {
    int least = -1;
    for (auto [it, end] = elements.equal_range(kind); it != end; ++it) least = least < 0 ? it->second : std::min(least, it->second);
    return least;
  }
};

std::string chromium(const TempDir& profile, const std::string& args) {
  return "chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking"
         " --disable-component-update --disable-sync --user-data-dir=" + profile.path() + " " + args;
}

std::string attribute(const std::string& tag, const std::string& name) {
  std::smatch m;
  return std::regex_search(tag, m, std::regex(name + "=\"([^\"]*)\"")) ? m[1].str() : "";
}

// `query` "?all": every chart drawn; "": only those near the window; a
// "#e0-t2" after it selects trial 2.
Rendered render(const std::string& html, const std::string& query = "?all") {
  TempDir profile;
  // Virtual time runs the page's timers and frames without waiting for them;
  // 3 s stays below a live page's 5 s reload.
  auto run = run_command(chromium(profile, "--virtual-time-budget=3000 --window-size=1200,1000 --dump-dom 'file://" + html +
                                               query + "'"));
  EXPECT_EQ(run.exit_code, 0) << run.err;
  Rendered r;
  r.dom = run.out;
  const size_t main = r.dom.find("<main id=\"tune-report\"");
  if (main != std::string::npos) r.main = r.dom.substr(main, r.dom.find("</main>", main) - main);
  std::smatch m;
  if (std::regex_search(r.main, m, std::regex("<main id=\"tune-report\"[^>]*>"))) {
    r.state = attribute(m[0].str(), "data-state");
    const std::string charts = attribute(m[0].str(), "data-charts"), drawn = attribute(m[0].str(), "data-drawn");
    r.charts = charts.empty() ? -1 : std::stoi(charts);
    r.drawn = drawn.empty() ? -1 : std::stoi(drawn);
  }
  if (std::regex_search(r.dom, m, std::regex("<pre id=\"tune-errors\"[^>]*>([^<]*)</pre>"))) r.errors = m[1].str();
  const std::regex chart("<div class=\"tune-chart\"[^>]*>");
  for (auto it = std::sregex_iterator(r.dom.begin(), r.dom.end(), chart); it != std::sregex_iterator(); ++it) {
    const std::string elements = attribute(it->str(), "data-elements");
    r.elements.emplace(attribute(it->str(), "data-chart"), elements.empty() ? -1 : std::stoi(elements));
  }
  return r;
}

// The first chart of `kind` as rendered: its element up to the next chart's.
std::string chart_markup(const Rendered& r, const std::string& kind) {
  const size_t start = r.main.find("<div class=\"tune-chart\" data-chart=\"" + kind + "\"");
  if (start == std::string::npos) return "";
  return r.main.substr(start, r.main.find("<div class=\"tune-chart\"", start + 1) - start);
}

// The experiments' data in a report file (#tune-data).
Json page_data(const std::string& html) {
  std::stringstream text;
  text << std::ifstream(html).rdbuf();
  const std::string page = text.str(), open = "<script type=\"application/json\" id=\"tune-data\">";
  const size_t start = page.find(open) + open.size();
  return Json::parse(page.substr(start, page.find("</script>", start) - start));
}

void expect_clean(const Rendered& r) {
  EXPECT_EQ(r.state, "ready");
  EXPECT_EQ(r.errors, "");
  EXPECT_EQ(r.charts, static_cast<int>(r.elements.size()));
  EXPECT_EQ(r.drawn, r.charts);
  for (const auto& [kind, elements] : r.elements) EXPECT_GT(elements, 0) << kind;
}

struct Sweeps {
  TempDir dir;
  std::string store = dir.file("store");

  void run(const std::string& name, const std::string& yaml, int expected_exit = 0) {
    auto result = run_tune("run " + dir.write(name + ".yaml", yaml) + " --storage " + store + " --quiet");
    ASSERT_EQ(result.exit_code, expected_exit) << result.err;
  }
  std::string report(const std::string& experiments) {
    const std::string html = dir.file("report-" + std::to_string(++reports_) + ".html");
    auto result = run_tune("report " + experiments + " --storage " + store + " --output " + html);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    return html;
  }
  int reports_ = 0;
};

const char* kBranin = R"(name: branin-fifo
trainable: branin
metric: loss
mode: min
num_samples: 6
max_concurrent_trials: 2
search: {algorithm: random, seed: 3}
stop: {training_iteration: 5}
param_space: {x0: {uniform: [-5, 10]}, x1: {uniform: [0, 15]}, iterations: 5}
)";

const char* kAsha = R"(name: branin-asha
trainable: branin
metric: loss
mode: min
num_samples: 9
max_concurrent_trials: 2
search: {algorithm: random, seed: 5}
scheduler: {type: asha, max_t: 9, grace_period: 1, reduction_factor: 3}
param_space: {x0: {uniform: [-5, 10]}, x1: {uniform: [0, 15]}, iterations: 9}
)";

// Synchronous, so that an exploit is certain: at each boundary every live
// member waits, and the worst of them clones the best (asynchronous, which
// trials had scores when one reached its boundary was down to timing, and CI
// once saw a sweep without any exploit).
const char* kPbt = R"(name: synthetic-pbt
trainable: synthetic
metric: loss
mode: min
num_samples: 4
max_concurrent_trials: 2
search: {algorithm: random, seed: 2}
scheduler: {type: pbt, time_attr: training_iteration, perturbation_interval: 2, seed: 1, synch: true,
            hyperparam_mutations: {x: {uniform: [0.1, 3.0]}}}
param_space: {x: {uniform: [0.1, 3.0]}, iterations: 8, checkpoint: true, sleep_s: 0.01}
)";

const char* kFailing = R"(name: all-errors
trainable: synthetic
metric: loss
mode: min
num_samples: 2
param_space: {x: {uniform: [0.1, 3.0]}, fail_at: 1, fail_once: false}
)";

TEST(ReportEndToEnd, AFifoSweepDrawsEveryChartAndAScreenshotWithContent) {
  Sweeps s;
  s.run("branin", kBranin);
  const std::string html = s.report("branin-fifo");
  const Rendered r = render(html);
  expect_clean(r);
  // history, curves, parallel, importance, a slice per parameter, timeline.
  EXPECT_EQ(r.charts, 7);
  EXPECT_EQ(r.count("slice"), 2);
  EXPECT_GE(r.min_elements("curves"), 6);    // a line per trial, axes, labels
  EXPECT_GE(r.min_elements("history"), 6);   // a point per trial
  EXPECT_GE(r.min_elements("timeline"), 6);  // a bar per trial
  EXPECT_GE(r.min_elements("parallel"), 6);
  // The parallel coordinates' note counts the trials it draws (it reads the
  // parameters, which come with the rest of the data, when it is drawn).
  EXPECT_NE(r.main.find("<p class=\"note\">6 trials</p>"), std::string::npos);
  // Small reports draw SVG: every mark is a DOM node.
  size_t svgs = 0;
  for (size_t at = r.main.find("<svg"); at != std::string::npos; at = r.main.find("<svg", at + 1)) ++svgs;
  EXPECT_EQ(svgs, 7u);

  // Without ?all only the charts near the window are drawn; the rest wait
  // until they are scrolled to.
  const Rendered top = render(html, "");
  EXPECT_EQ(top.state, "ready");
  EXPECT_EQ(top.errors, "");
  EXPECT_GE(top.drawn, 2);
  EXPECT_LT(top.drawn, top.charts);

  // A trial named in the URL is selected: its details shown, highlighted in the charts.
  const Rendered selected = render(html, "?all#e0-t2");
  expect_clean(selected);
  std::smatch box;
  ASSERT_TRUE(std::regex_search(selected.main, box, std::regex("<div class=\"selected\">Selected: <b>trial 2</b>[^<]*")));
  EXPECT_NE(selected.main.find("attempts 1, iterations 5"), std::string::npos);
  // The same with only the first screen drawn: the selection waits for the
  // rest of the data (its status, attempts, parameters), parsed after it.
  const Rendered selected_top = render(html, "#e0-t2");
  EXPECT_EQ(selected_top.state, "ready");
  EXPECT_EQ(selected_top.errors, "");
  EXPECT_TRUE(std::regex_search(selected_top.main, box,
                                std::regex("<div class=\"selected\">Selected: <b>trial 2</b> \\(TERMINATED\\)")));
  EXPECT_NE(selected_top.main.find("attempts 1, iterations 5"), std::string::npos);

  TempDir profile;
  const std::string png = s.dir.file("shot.png");
  auto shot = run_command(chromium(profile, "--virtual-time-budget=3000 --hide-scrollbars --window-size=1200,1600 --screenshot=" +
                                                png + " file://" + html));
  ASSERT_EQ(shot.exit_code, 0) << shot.err;
  const testing::Image image = testing::read_png(png);
  EXPECT_EQ(image.width, 1200);
  EXPECT_GE(image.distinct_colours(), 100u);
  EXPECT_GT(image.inked(), 0.03);
}

TEST(ReportEndToEnd, SchedulerViewsShowRungsAndLineage) {
  Sweeps s;
  s.run("asha", kAsha);
  s.run("pbt", kPbt);
  const Rendered asha = render(s.report("branin-asha"));
  expect_clean(asha);
  EXPECT_EQ(asha.count("rungs"), 1);
  EXPECT_NE(asha.main.find("stopped by the scheduler"), std::string::npos);
  const Rendered pbt = render(s.report("synthetic-pbt"));
  expect_clean(pbt);
  EXPECT_EQ(pbt.count("lineage"), 1);
  EXPECT_GE(pbt.min_elements("lineage"), 4 + 1);  // a bar per trial and at least one exploit
  // Both experiments in one page: their best-so-far curves side by side.
  const Rendered both = render(s.report("branin-asha synthetic-pbt"));
  expect_clean(both);
  EXPECT_EQ(both.count("compare"), 1);
  EXPECT_EQ(both.charts, asha.charts + pbt.charts + 1);
}

const char* kZdt1 = R"(name: zdt1-random
trainable: zdt1
metric: [f1, f2]
mode: [min, min]
num_samples: 30
max_concurrent_trials: 2
search: {algorithm: random, seed: 4}
param_space: {x0: {uniform: [0, 1]}, x1: {uniform: [0, 1]}, x2: {uniform: [0, 1]}, x3: {uniform: [0, 1]},
              x4: {uniform: [0, 1]}, x5: {uniform: [0, 1]}}
)";

// The highlighted points of the Pareto chart: SVG paths in the front's colour
// that a scaled symbol draws (the legend's icon is only translated).
int front_points(const Rendered& r) {
  const std::string chart = chart_markup(r, "pareto");
  const std::regex point("<path [^>]*transform=\"matrix\\([^>]*fill=\"#d62728\"");
  return static_cast<int>(std::distance(std::sregex_iterator(chart.begin(), chart.end(), point), std::sregex_iterator()));
}

TEST(ReportEndToEnd, AMultiObjectiveSweepShowsItsParetoFront) {
  Sweeps s;
  s.run("zdt1", kZdt1);
  const std::string html = s.report("zdt1-random");
  const Rendered r = render(html);
  expect_clean(r);
  EXPECT_EQ(r.count("pareto"), 1);
  const Json front = page_data(html)["experiments"][0]["pareto"]["front"];
  // The front `tune best` lists, and nothing like a single best trial.
  auto best = run_tune("best zdt1-random --json --storage " + s.store);
  ASSERT_EQ(best.exit_code, 0) << best.err;
  const Json best_json = Json::parse(best.out);  // named: a range over a temporary's member dangles
  std::vector<int64_t> listed;
  for (const Json& member : best_json["pareto_front"]) listed.push_back(member["trial_index"]);
  EXPECT_EQ(front, Json(listed));
  ASSERT_GE(listed.size(), 2u);
  EXPECT_EQ(front_points(r), static_cast<int>(listed.size()));
  EXPECT_NE(r.main.find("Pareto front: " + std::to_string(listed.size()) + " trials"), std::string::npos);
  EXPECT_EQ(r.main.find("Best trial"), std::string::npos);
  EXPECT_NE(r.main.find("f1 (min)"), std::string::npos);  // an axis' name
  EXPECT_EQ(r.main.find("<select"), std::string::npos);   // two objectives: nothing to pick
  // A member selected in the URL: ringed on the chart, its objectives in the details.
  const std::string first = std::to_string(listed.front());
  const Rendered selected = render(html, "?all#e0-t" + first);
  expect_clean(selected);
  EXPECT_TRUE(std::regex_search(chart_markup(selected, "pareto"),
                                std::regex("<path [^>]*transform=\"matrix\\([^>]*stroke=\"#111\"")));
  EXPECT_NE(selected.main.find("Selected: <b>trial " + first + "</b> (TERMINATED), on the Pareto front · f1: "),
            std::string::npos);

  // Three objectives: selectors for the axes; the front is over all three,
  // so a member that the two shown make look dominated is highlighted too.
  {
    auto store = Store::open(s.store);
    ExperimentRecord e{0, "three", "FINISHED", "a", "min"};
    e.spec = {{"objectives", {{{"metric", "a"}, {"mode", "min"}}, {{"metric", "b"}, {"mode", "min"}},
                              {{"metric", "c"}, {"mode", "max"}}}}};
    const int64_t id = store->create_experiment(e);
    // (1, 2, 0) (2, 1, 0) (2, 2, 5) on the front; (3, 3, 1) dominated by (2, 2, 5).
    const std::vector<std::vector<double>> points = {{1, 2, 0}, {2, 1, 0}, {2, 2, 5}, {3, 3, 1}};
    for (size_t i = 0; i < points.size(); ++i) {
      const int64_t trial = store->add_trial(id, static_cast<int64_t>(i), {{"x", i}});
      store->set_trial_status(trial, kRunning, 1);
      store->add_result(trial, 1, 1, {{"a", points[i][0]}, {"b", points[i][1]}, {"c", points[i][2]}}, 2);
      store->set_trial_status(trial, kTerminated, 3);
    }
  }
  const Rendered three = render(s.report("three"));
  expect_clean(three);
  EXPECT_EQ(front_points(three), 3);
  EXPECT_NE(three.main.find("<select data-axis=\"x\">"), std::string::npos);
  EXPECT_NE(three.main.find("<select data-axis=\"y\">"), std::string::npos);
  EXPECT_NE(three.main.find("Pareto front: 3 trials"), std::string::npos);
}

TEST(ReportEndToEnd, FailedAndNaNExperimentsStillGiveAReadablePage) {
  Sweeps s;
  s.run("failing", kFailing, /*expected_exit=*/1);
  {
    // Results whose metric was NaN (stored as null), written through the API.
    auto store = Store::open(s.store);
    const int64_t id = store->create_experiment(ExperimentRecord{0, "nan-metrics", "FINISHED", "loss", "min"});
    for (int i = 0; i < 2; ++i) {
      const int64_t trial = store->add_trial(id, i, {{"x", i}});
      store->set_trial_status(trial, kRunning, 100 + i);
      store->add_result(trial, 1, 1, {{"loss", nullptr}, {"time_this_iter_s", 0.5}}, 101 + i);
      store->set_trial_status(trial, kTerminated, 102 + i);
    }
    store->create_experiment(ExperimentRecord{0, "no-trials", "RUNNING", "loss", "min"});
  }
  const Rendered failed = render(s.report("all-errors"));
  expect_clean(failed);
  EXPECT_EQ(failed.charts, 0);
  EXPECT_NE(failed.main.find("2 ERROR"), std::string::npos);
  EXPECT_NE(failed.main.find("No trial has reported a finite loss yet."), std::string::npos);
  const Rendered nan = render(s.report("nan-metrics"));
  expect_clean(nan);
  EXPECT_EQ(nan.charts, 1);  // only the timeline has something to draw
  EXPECT_EQ(nan.count("timeline"), 1);
  const Rendered empty = render(s.report("no-trials"));
  expect_clean(empty);
  EXPECT_EQ(empty.charts, 0);
  EXPECT_NE(empty.main.find("No trial has run yet."), std::string::npos);
}

TEST(ReportEndToEnd, APageReloadsWhileItsExperimentRunsAndStopsAfterwards) {
  Sweeps s;
  int64_t id;
  {
    auto store = Store::open(s.store);
    id = store->create_experiment(ExperimentRecord{0, "live", "RUNNING", "loss", "min"});
    const int64_t trial = store->add_trial(id, 0, {{"x", 1}});
    store->set_trial_status(trial, kRunning, 1);
  }
  const Rendered running = render(s.report("live"));
  expect_clean(running);
  EXPECT_EQ(attribute(running.main.substr(0, running.main.find('>')), "data-reload-s"), "5");
  EXPECT_NE(running.main.find("live: refreshing every 5 s"), std::string::npos);
  Store::open(s.store)->set_experiment_status(id, "FINISHED");
  const Rendered finished = render(s.report("live"));
  expect_clean(finished);
  EXPECT_EQ(finished.main.find("data-reload-s"), std::string::npos);
  EXPECT_EQ(finished.main.find("live: refreshing"), std::string::npos);
}

TEST(ReportEndToEnd, CommandLineErrorsAndTheResultsExport) {
  Sweeps s;
  s.run("branin", kBranin);
  auto unknown = run_tune("report branin-fif --storage " + s.store + " --output " + s.dir.file("x.html"));
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("did you mean 'branin-fifo'?"), std::string::npos) << unknown.err;
  EXPECT_EQ(std::count(unknown.err.begin(), unknown.err.end(), '\n'), 1);
  EXPECT_EQ(run_tune("report branin-fifo --storage " + s.store).exit_code, 2);  // no --output
  EXPECT_EQ(run_tune("results branin-fifo --storage " + s.store).exit_code, 2);  // no format

  auto csv = run_tune("results branin-fifo --csv --storage " + s.store);
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_EQ(csv.out.rfind("trial_index,attempt,iteration,time,loss,", 0), 0u) << csv.out.substr(0, 200);
  EXPECT_EQ(std::count(csv.out.begin(), csv.out.end(), '\n'), 1 + 6 * 5);  // header + every result
  auto json = run_tune("results branin-fifo --json --storage " + s.store);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const Json rows = Json::parse(json.out);
  ASSERT_EQ(rows.size(), 30u);
  EXPECT_TRUE(rows[0].contains("config/x0"));
}

}  // namespace
}  // namespace tune
