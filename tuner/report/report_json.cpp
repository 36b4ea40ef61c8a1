// The page's data as JSON text. The large arrays (curves, trial columns,
// intervals) are written directly with 6 significant digits: building a
// nlohmann tree of 10^5 numbers first would cost more than reading the store.
//
// An experiment is written in two parts. What the charts of the page's first
// screen draw (Pareto front, history, curves, importance: the summary, the
// trials' indices and values, each objective's values and the front of a
// multi-objective experiment, the curves, the scheduler's marks) is one
// object, in #tune-data. The rest (the trials' statuses, attempts, best values,
// iterations, end times, errors and parameters, the slot intervals: ~45 % of
// the bytes of a large sweep) is written a field at a time, each its own
// element after the page's scripts, which the browser parses once the first
// screen is set up and the page reads when something needs it; the object's
// "later" lists those fields.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <utility>

#include "tuner/report/report_data.h"

namespace tune::report {
namespace {

class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}

  void key(const char* name) {
    out_ += first_ ? "\"" : ",\"";
    out_ += name;
    out_ += "\":";
    first_ = false;
  }
  void number(double v) {
    if (std::isfinite(v)) {
      fmt::format_to(std::back_inserter(out_), "{:.6g}", v);
    } else {
      out_ += "null";
    }
  }
  void integer(int64_t v) { fmt::format_to(std::back_inserter(out_), "{}", v); }
  void json(const Json& v) { out_ += v.dump(-1, ' ', false, Json::error_handler_t::replace); }

  template <class T, class F>
  void array(const char* name, const std::vector<T>& items, F&& write) {
    if (name) key(name);
    out_ += '[';
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) out_ += ',';
      write(items[i]);
    }
    out_ += ']';
  }
  void numbers(const char* name, const std::vector<double>& v) { array(name, v, [&](double x) { number(x); }); }
  void integers(const char* name, const std::vector<int64_t>& v) { array(name, v, [&](int64_t x) { integer(x); }); }

  // An object's fields: "{" ... "}" with its own comma state.
  template <class F>
  void object(const char* name, F&& fields) {
    if (name) key(name);
    out_ += '{';
    const bool outer = first_;
    first_ = true;
    fields();
    first_ = outer;
    out_ += '}';
  }

 private:
  std::string& out_;
  bool first_ = true;
};

template <class T, class F>
std::vector<decltype(std::declval<F>()(std::declval<const T&>()))> column(const std::vector<T>& items, F&& get) {
  std::vector<decltype(get(items.front()))> out;
  out.reserve(items.size());
  for (const auto& item : items) out.push_back(get(item));
  return out;
}

void write_trials(Writer& w, const ExperimentData& d) {
  const auto& t = d.trials;
  w.object("trials", [&] {
    w.integers("index", column(t, [](const TrialData& x) { return x.index; }));
    w.numbers("value", column(t, [](const TrialData& x) { return x.value; }));
  });
}

// The rest of the data, a field (an array) at a time: `paths` gets the
// experiment's "later" list, `later` each field's path and JSON text.
// "trials.p[]" is written in parts, "trials.p.0", "trials.p.1", ...: one
// column per parameter.
void write_later(std::vector<LaterField>& later, Json& paths, const ExperimentData& d) {
  const auto add = [&](const std::string& path, const auto& write) {
    LaterField field{path, {}};
    Writer w(field.json);
    write(w);
    later.push_back(std::move(field));
  };
  const auto field = [&](const std::string& path, const auto& write) {
    paths.push_back(path);
    add(path, write);
  };
  const auto integers = [&](const std::string& path, const auto& items, const auto& get) {
    field(path, [&](Writer& w) { w.integers(nullptr, column(items, get)); });
  };
  const auto numbers = [&](const std::string& path, const auto& items, const auto& get) {
    field(path, [&](Writer& w) { w.numbers(nullptr, column(items, get)); });
  };
  const auto& t = d.trials;
  field("trials.status", [&](Writer& w) { w.array(nullptr, t, [&](const TrialData& x) { w.json(x.status); }); });
  integers("trials.attempts", t, [](const TrialData& x) { return int64_t{x.attempts}; });
  numbers("trials.best", t, [](const TrialData& x) { return x.best; });
  integers("trials.iterations", t, [](const TrialData& x) { return x.iterations; });
  numbers("trials.end", t, [](const TrialData& x) { return x.end; });
  field("trials.error", [&](Writer& w) {
    w.array(nullptr, t, [&](const TrialData& x) { w.json(x.error.empty() ? Json() : Json(x.error)); });
  });
  paths.push_back("trials.p[]");
  for (size_t k = 0; k < d.params.size(); ++k) {
    add("trials.p." + std::to_string(k), [&](Writer& w) {
      w.array(nullptr, t, [&](const TrialData& x) {
        auto it = x.params.find(d.params[k]);
        w.json(it == x.params.end() ? Json() : *it);
      });
    });
  }
  const auto& i = d.intervals;
  integers("intervals.trial", i, [](const Interval& x) { return x.trial; });
  integers("intervals.attempt", i, [](const Interval& x) { return int64_t{x.attempt}; });
  numbers("intervals.start", i, [](const Interval& x) { return x.start; });
  numbers("intervals.end", i, [](const Interval& x) { return x.end; });
  integers("intervals.lane", i, [](const Interval& x) { return int64_t{x.lane}; });
  field("intervals.host", [&](Writer& w) { w.array(nullptr, i, [&](const Interval& x) { w.json(x.host); }); });
}

void write_curves(Writer& w, const ExperimentData& d) {
  std::vector<int64_t> start, x;
  std::vector<double> y;
  for (const auto& t : d.trials) {
    start.push_back(static_cast<int64_t>(x.size()));
    x.insert(x.end(), t.curve_x.begin(), t.curve_x.end());
    y.insert(y.end(), t.curve_y.begin(), t.curve_y.end());
  }
  start.push_back(static_cast<int64_t>(x.size()));
  w.object("curves", [&] {
    w.integers("start", start);
    w.integers("x", x);
    w.numbers("y", y);
  });
}

void write_schedule(Writer& w, const ExperimentData& d) {
  w.object("marks", [&] {
    w.integers("trial", column(d.marks, [](const Mark& m) { return m.trial; }));
    w.integers("x", column(d.marks, [](const Mark& m) { return m.iteration; }));
    w.numbers("y", column(d.marks, [](const Mark& m) { return m.value; }));
    w.numbers("p", column(d.marks, [](const Mark& m) { return m.progress; }));
    w.array("kind", d.marks, [&](const Mark& m) { w.json(mark_name(m.kind)); });
  });
  w.object("rungs", [&] {
    w.key("attribute");
    w.json(d.rung_attribute);
    w.array("rungs", d.rungs, [&](const RungData& r) {
      w.object(nullptr, [&] {
        w.key("milestone");
        w.number(r.milestone);
        w.key("cutoff");
        w.number(r.cutoff);
        w.integers("trials", r.trials);
        w.numbers("values", r.values);
        w.array("continued", r.continued, [&](bool c) { w.integer(c ? 1 : 0); });
      });
    });
  });
  w.object("median", [&] {
    w.key("attribute");
    w.json(d.median.attribute);
    w.numbers("x", d.median.progress);
    w.numbers("y", d.median.median);
  });
  w.array("exploits", d.exploits, [&](const ExploitData& x) {
    w.json({{"trial", x.trial}, {"donor", x.donor}, {"iteration", x.iteration},
            {"donor_iteration", x.donor_iteration}, {"time", x.time}, {"changes", x.changes}});
  });
}

// A multi-objective experiment's objectives, each one's value per trial (in
// "trials" order) and its Pareto front (trial indices, by the first
// objective, best first). Absent with one metric.
void write_pareto(Writer& w, const ExperimentData& d) {
  w.object("pareto", [&] {
    w.array("objectives", d.objectives, [&](const Objective& o) { w.json({{"metric", o.metric}, {"mode", o.mode}}); });
    w.array("values", d.objective_values, [&](const std::vector<double>& v) { w.numbers(nullptr, v); });
    w.integers("front", d.pareto_front);
  });
}

Json summary(const ExperimentData& d) {
  const ExperimentRecord& r = d.record;
  Json counts = Json::object();
  for (const auto& t : d.trials) counts[t.status] = counts.value(t.status, 0) + 1;
  Json best = nullptr;
  for (const auto& t : d.trials) {
    if (t.index != d.best_trial) continue;
    best = {{"trial", t.index}, {"value", t.value}, {"params", t.params}, {"status", t.status},
            {"checkpoint", d.best_checkpoint.empty() ? Json() : Json(d.best_checkpoint)}};
  }
  Json constants = Json::object();
  if (!d.trials.empty()) {
    for (const auto& [key, value] : d.trials.front().params.items()) {
      if (std::find(d.params.begin(), d.params.end(), key) == d.params.end()) constants[key] = value;
    }
  }
  Json importance = Json::array();
  for (const auto& i : d.importance) importance.push_back({i.param, i.value});
  return {{"name", r.name}, {"status", r.status}, {"metric", d.metric}, {"mode", d.mode},
          {"scheduler", d.scheduler}, {"search", d.search}, {"created_at", r.created_at},
          {"wall_s", d.wall_s}, {"running", d.running}, {"counts", counts}, {"best", best},
          {"constants", constants}, {"params", d.params}, {"importance", importance},
          {"slots_per_trial", d.slots_per_trial}, {"lanes", d.lanes},
          {"utilisation", std::isfinite(d.utilisation) ? Json(d.utilisation) : Json()},
          {"hosts", d.hosts}, {"results", d.results}, {"curve_points", d.curve_points},
          {"intervals", d.intervals.size()}};
}

}  // namespace

void append_experiment_json(std::string& out, std::vector<LaterField>& later, const ExperimentData& data) {
  Json paths = Json::array();
  write_later(later, paths, data);
  Writer w(out);
  w.object(nullptr, [&] {
    w.key("summary");
    w.json(summary(data));
    write_trials(w, data);
    if (!data.objectives.empty()) write_pareto(w, data);
    write_curves(w, data);
    write_schedule(w, data);
    w.object("intervals", [] {});  // its fields come later
    w.key("later");
    w.json(paths);
  });
}

}  // namespace tune::report
