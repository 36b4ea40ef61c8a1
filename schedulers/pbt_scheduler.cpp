#include "schedulers/pbt_scheduler.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <sstream>

#include "base/error.h"
#include "schedulers/scheduler_factory.h"
#include "search/search_space.h"

namespace tune::internal {

std::vector<std::pair<std::string, Json>> flatten_hyperparams(const Json& node) {
  std::vector<std::pair<std::string, Json>> out;
  const auto& names = domain_names();
  std::function<void(const Json&, const std::string&)> walk = [&](const Json& level, const std::string& prefix) {
    for (const auto& item : level.items()) {
      const std::string path = prefix.empty() ? item.key() : prefix + "." + item.key();
      const Json& v = item.value();
      // A nested mapping of hyperparameters has no domain name as its only key.
      const bool domain = v.is_object() && v.size() == 1 &&
                          std::find(names.begin(), names.end(), v.begin().key()) != names.end();
      if (v.is_object() && !domain) {
        walk(v, path);
      } else {
        out.emplace_back(path, v);
      }
    }
  };
  walk(node, "");
  return out;
}

std::vector<std::string> PbtScheduler::common_keys() {
  return {"time_attr", "metric", "mode", "perturbation_interval", "burn_in_period", "quantile_fraction", "synch", "seed"};
}

PbtScheduler::PbtScheduler(const std::string& type, const Json& params, const std::vector<std::string>& keys,
                           const std::string& metric, const std::string& mode) {
  const SchedulerParams p(type, params, keys);
  time_attr_ = p.string("time_attr", "time_total_s");
  metric_ = p.metric(metric);
  sign_ = p.mode(mode) == "max" ? 1.0 : -1.0;
  interval_ = p.number("perturbation_interval", 60, Bound::above(0));
  burn_in_ = p.number("burn_in_period", 0, Bound::at_least(0));
  quantile_ = p.number_in("quantile_fraction", 0.25, 0, 0.5);
  synch_ = p.boolean("synch", false);
  rng_.seed(static_cast<uint64_t>(p.whole_number("seed", 0, 0)));
  saved_rng_ = rng_;
}

namespace {

std::vector<std::string> with_pbt_keys(std::vector<std::string> keys) {
  for (const char* k : {"hyperparam_mutations", "resample_probability", "perturbation_factors"}) keys.push_back(k);
  return keys;
}

}  // namespace

PbtScheduler::PbtScheduler(const Json& params, const std::string& metric, const std::string& mode)
    : PbtScheduler("pbt", params, with_pbt_keys(common_keys()), metric, mode) {
  const SchedulerParams p("pbt", params, with_pbt_keys(common_keys()));
  resample_ = p.number_in("resample_probability", 0.25, 0, 1);
  if (p.has("perturbation_factors")) {
    const Json& f = p.raw("perturbation_factors");
    const bool ok = f.is_array() && !f.empty() &&
                    std::all_of(f.begin(), f.end(), [](const Json& x) { return x.is_number() && x.get<double>() > 0; });
    if (!ok) p.fail("perturbation_factors", "must be a non-empty list of positive numbers");
    factors_ = f.get<std::vector<double>>();
  }
  parse_mutations(p);
}

void PbtScheduler::parse_mutations(const SchedulerParams& p) {
  if (!p.has("hyperparam_mutations") || !p.raw("hyperparam_mutations").is_object() ||
      p.raw("hyperparam_mutations").empty())
    throw ConfigError("scheduler pbt needs hyperparam_mutations: a mapping of parameter -> domain or list of values");
  for (const auto& [path, spec] : flatten_hyperparams(p.raw("hyperparam_mutations"))) {
    const std::string where = "scheduler pbt: hyperparam_mutations." + path;
    Mutation m;
    m.path = path;
    if (spec.is_array()) {
      if (spec.empty()) throw ConfigError(where + " must not be an empty list");
      m.is_list = true;
      m.values = spec.get<std::vector<Json>>();
    } else if (spec.is_object() && spec.size() == 1) {
      try {
        m.domain = make_domain(spec.begin().key(), spec.begin().value());
      } catch (const ConfigError& e) {
        throw ConfigError(where + ": " + e.what());
      }
      if (m.domain.kind == Domain::Kind::kGrid) throw ConfigError(where + ": grid_search cannot be mutated; use a list");
    } else {
      throw ConfigError(where + " must be a domain (e.g. {loguniform: [1e-4, 1e-1]}) or a list of values, got " +
                        spec.dump());
    }
    mutations_.push_back(std::move(m));
  }
}

void PbtScheduler::on_trial_add(int64_t trial, const Json& config) {
  if (!members_.count(trial)) touch(trial).config = config;
}

void PbtScheduler::on_trial_restored(int64_t trial, const Json& config) { touch(trial).config = config; }

void PbtScheduler::on_checkpoint(int64_t trial, int64_t iteration) {
  Member& m = touch(trial);
  update(trial, m, [](Member& member) { member.has_checkpoint = true; });
  m.checkpoint_iteration = iteration;
}

TrialDecision PbtScheduler::on_result(int64_t trial, const Json& result) {
  Member& m = touch(trial);
  double t = 0, value = 0;
  if (!number_at(result, time_attr_, &t) || !number_at(result, metric_, &value)) return TrialDecision::next();
  update(trial, m, [&](Member& member) { member.score = sign_ * value; });
  if (keeps_history()) {
    m.history.emplace_back(t, m.score);
    if (m.history.size() > kHistory) m.history.erase(m.history.begin());
    m.history_t_max = std::max(m.history_t_max, t);
  }
  m.now = t;
  if (t < burn_in_ || t - m.last_perturb < interval_) return TrialDecision::next();
  m.last_perturb = t;
  if (synch_) {
    m.waiting = true;
    plan_if_all_waiting();
    return TrialDecision::pause();
  }
  TrialDecision d = decide(trial, t);
  // Ray's time sharing: while other trials wait for a slot (new ones still to
  // come, or members paused here), a trial at its boundary gives its slot up
  // and resumes when its turn comes (the one furthest behind runs first:
  // choose_trial_to_run). A population larger than the slots thus advances
  // together instead of member after member. Only a trial that continues as
  // it is and can resume where it is (a checkpoint at this iteration) pauses;
  // an exploit is carried out at once (the donor's checkpoint of now, and
  // the perturbation clock set from it), and the clone pauses at its next
  // boundary.
  double iteration = -1;
  const bool resumable = d.action == TrialAction::kContinue &&
                         number_at(result, "training_iteration", &iteration) && m.checkpoint_iteration == iteration;
  if (resumable && (more_trials_ || !time_shared_.empty())) {
    m.plan = d;
    set_time_shared(trial, m, t);
    return TrialDecision::pause();
  }
  return d;
}

// Keeps `time_shared_` (the trials paused by time sharing, by time) in step
// with Member::paused: paused at time `at`, or no longer (nullopt).
void PbtScheduler::set_time_shared(int64_t trial, Member& m, std::optional<double> at) {
  if (m.paused != at.has_value()) paused_or_resumed_.insert(trial);
  if (m.paused) time_shared_.erase({m.paused_at, trial});
  m.paused = at.has_value();
  m.paused_at = at.value_or(0);
  if (m.paused) time_shared_.insert({m.paused_at, trial});
}

// With iterations as the time attribute: only at a perturbation.
bool PbtScheduler::may_decide(int64_t trial, int64_t training_iteration) const {
  if (time_attr_ != "training_iteration") return true;
  const auto m = members_.find(trial);
  if (m == members_.end()) return true;
  const auto t = static_cast<double>(training_iteration);
  return !(t < burn_in_ || t - m->second.last_perturb < interval_);
}

std::optional<int64_t> PbtScheduler::choose_trial_to_run(const std::vector<int64_t>& paused) {
  if (synch_) {
    // The clones first, while their donors are still at the boundary: a
    // donor resumed first would be cloned from where it has got to since.
    // A clone whose attempt is still ending (the last to reach the
    // boundary) is waited for.
    if (!planned_exploits_.empty()) {
      for (int64_t trial : planned_exploits_)
        if (std::binary_search(paused.begin(), paused.end(), trial)) return trial;
      return std::nullopt;
    }
    for (int64_t trial : paused) {
      auto it = members_.find(trial);
      if (it != members_.end() && it->second.plan) return trial;
    }
    return std::nullopt;
  }
  // Time sharing: new trials first (they have trained least), then the
  // paused member furthest behind in time_attr (the lowest index on a tie).
  // `paused` is ascending; a trial paused otherwise (none here) goes last.
  if (more_trials_) return std::nullopt;
  for (const auto& [t, trial] : time_shared_)
    if (std::binary_search(paused.begin(), paused.end(), trial)) return trial;
  if (!paused.empty()) return paused.front();
  return std::nullopt;
}

TrialDecision PbtScheduler::on_trial_resume(int64_t trial) {
  Member& m = touch(trial);
  TrialDecision d = m.plan ? *m.plan : TrialDecision::next();
  m.plan.reset();
  planned_exploits_.erase(trial);
  m.waiting = false;
  set_time_shared(trial, m, std::nullopt);
  if (d.action == TrialAction::kExploit) m.config = d.new_config;
  return d;
}

// One array per field, members in trial order ("members": {"trial": [...],
// "score": [...], ...}), the histories flattened (each member's count, then
// every time and score): a JSON object per member took ~140 ms to build at
// 16,000 members, and a time-shared population saves with every batch that
// pauses a trial. restore_state() reads this and the earlier per-member form.
Json PbtScheduler::columns(const std::vector<int64_t>* only) const {
  const size_t n = only ? only->size() : members_.size();
  std::vector<int64_t> trials, checkpoint_iteration, history_count;
  std::vector<double> score, last_perturb, paused_at, now, history_t_max, history_t, history_score;
  std::vector<bool> has_checkpoint, alive, waiting, paused;
  Json configs = Json::array(), plans = Json::array();
  const bool history = keeps_history();
  for (auto* v : {&trials, &checkpoint_iteration}) v->reserve(n);
  for (auto* v : {&score, &last_perturb, &paused_at, &now}) v->reserve(n);
  if (history) history_count.reserve(n), history_t_max.reserve(n);
  auto add = [&](int64_t trial, const Member& m) {
    trials.push_back(trial);
    configs.push_back(m.config);
    score.push_back(m.score);  // NaN (no score yet) is written as null
    last_perturb.push_back(m.last_perturb);
    has_checkpoint.push_back(m.has_checkpoint);
    alive.push_back(m.alive);
    waiting.push_back(m.waiting);
    paused.push_back(m.paused);
    paused_at.push_back(m.paused_at);
    now.push_back(m.now);
    checkpoint_iteration.push_back(m.checkpoint_iteration);
    plans.push_back(m.plan ? Json{{"action", static_cast<int>(m.plan->action)}, {"donor", m.plan->donor},
                                  {"config", m.plan->new_config}}
                           : Json());
    if (!history) return;
    history_count.push_back(static_cast<int64_t>(m.history.size()));
    for (const auto& [t, v] : m.history) history_t.push_back(t), history_score.push_back(v);
    history_t_max.push_back(m.history_t_max);
  };
  if (only) {
    for (int64_t trial : *only) add(trial, members_.at(trial));
  } else {
    for (const auto& [trial, m] : members_) add(trial, m);
  }
  Json out = {{"trial", std::move(trials)},
          {"config", std::move(configs)},
          {"score", std::move(score)},
          {"last_perturb", std::move(last_perturb)},
          {"has_checkpoint", std::move(has_checkpoint)},
          {"alive", std::move(alive)},
          {"waiting", std::move(waiting)},
          {"paused", std::move(paused)},
          {"paused_at", std::move(paused_at)},
          {"now", std::move(now)},
          {"checkpoint_iteration", std::move(checkpoint_iteration)},
          {"plan", std::move(plans)}};
  if (history) {
    out["history_count"] = std::move(history_count);
    out["history_t"] = std::move(history_t);
    out["history_score"] = std::move(history_score);
    out["history_t_max"] = std::move(history_t_max);
  }
  return out;
}

namespace {
// Draws of `from` until it equals `to` (a copy of it that has drawn more), at
// most `limit`; nullopt past it.
std::optional<uint64_t> draws_between(std::mt19937_64& from, const std::mt19937_64& to, uint64_t limit) {
  uint64_t n = 0;
  while (from != to) {
    if (n == limit) return std::nullopt;
    from();
    ++n;
  }
  return n;
}
constexpr uint64_t kDrawLimit = uint64_t{1} << 32;
}  // namespace

// The whole state: every member, the generator's state and how many numbers
// it has drawn since the state the parts count from.
Json PbtScheduler::save_state() const {
  std::mt19937_64 at = saved_rng_;
  const std::optional<uint64_t> since = draws_between(at, rng_, kDrawLimit);
  std::ostringstream rng;
  rng << rng_;
  return {{"members", columns(nullptr)},
          {"rng", rng.str()},
          {"draws", saved_draws_ + since.value_or(0)},
          {"more_trials", more_trials_}};
}

// A part: the members changed since the previous part (each whole), the
// generator as a count of draws since the last whole state, more_trials.
// Members change in place (unlike ASHA's lists, which only grow), so the
// parts since a whole state add up to more than it: once they hold four
// times the population (at least 256 members), the next save holds every
// member, those changed first (Scheduler's "base" run of parts): its first
// part carries the generator, its last says "rebased", and the driver then
// drops the parts before it. What the parts cost stays proportional to the
// results, and no save writes the whole population in one turn (a whole
// state of 10,000 members took 12-38 ms). At most `max_members` members a
// part, those changed first: the rest stay changed for the next part.
std::optional<Json> PbtScheduler::save_state_part_up_to(size_t max_members) {
  auto forget_changes = [this] {
    dirty_.clear();
    dirty_order_.clear();
    paused_or_resumed_.clear();
    part_quota_ = 0;
    rebasing_ = false;
  };
  const std::optional<uint64_t> drawn = draws_between(saved_rng_, rng_, kDrawLimit);
  if (!drawn) {  // never in practice: resynchronise through a whole state
    forget_changes();
    saved_rng_ = rng_;
    saved_draws_ = 0;
    part_entries_ = 0;
    saved_more_trials_ = more_trials_;
    return std::nullopt;
  }
  saved_draws_ += *drawn;
  // A save goes through the members changed when it began; those that
  // change meanwhile wait for the next one (or each would be saved with
  // every change).
  bool base = false;
  if (part_quota_ == 0) {
    if (!rebasing_ && part_entries_ > 4 * std::max<size_t>(members_.size(), 64)) {
      rebasing_ = base = true;  // every member, those changed first
      part_entries_ = 0;
      for (const auto& [trial, member] : members_)
        if (dirty_.insert(trial).second) dirty_order_.push_back(trial);
    }
    part_quota_ = dirty_order_.size();
  }
  // The members paused or resumed first (the store's statuses need them),
  // then up to max_members of those changed first; an entry of dirty_order_
  // whose member went in such an earlier part is passed over.
  std::vector<int64_t> trials;
  for (int64_t trial : paused_or_resumed_)
    if (members_.count(trial) && dirty_.erase(trial)) trials.push_back(trial);
  paused_or_resumed_.clear();
  for (size_t taken = 0; taken < max_members && part_quota_ > 0 && !dirty_order_.empty();) {
    const int64_t trial = dirty_order_.front();
    dirty_order_.pop_front();
    --part_quota_;
    if (!dirty_.erase(trial)) continue;
    trials.push_back(trial);
    ++taken;
  }
  const size_t n = trials.size();
  if (n == 0 && *drawn == 0 && more_trials_ == saved_more_trials_ && !base && !rebasing_) return Json();  // nothing new
  saved_more_trials_ = more_trials_;
  part_entries_ += n;
  std::sort(trials.begin(), trials.end());
  Json part{{"part", true}, {"members", columns(&trials)}, {"draws", saved_draws_}, {"more_trials", more_trials_}};
  if (base) {  // the generator itself: the parts before this one may go
    std::ostringstream rng;
    rng << rng_;
    part["base"] = true;
    part["rng"] = rng.str();
  }
  if (rebasing_ && part_quota_ == 0) {
    part["rebased"] = true;
    rebasing_ = false;
  }
  return part;
}

namespace {
double score_of(const Json& j) { return j.is_null() ? NAN : j.get<double>(); }
}  // namespace

void PbtScheduler::restore_member(int64_t trial, const Json& config, double score, double last_perturb,
                                  bool has_checkpoint, bool alive, bool waiting, std::optional<double> paused_at,
                                  int64_t checkpoint_iteration, const Json& plan,
                                  std::vector<std::pair<double, double>> history, std::optional<double> history_t_max,
                                  std::optional<double> now) {
  auto old = members_.find(trial);
  if (old != members_.end()) {  // a part replaces it: out of the rankings first
    update(trial, old->second, [](Member& m) { m.alive = false; });
    set_time_shared(trial, old->second, std::nullopt);
    members_.erase(old);
  }
  Member& m = members_[trial];
  m.config = config;
  m.score = score;
  m.last_perturb = last_perturb;
  m.has_checkpoint = has_checkpoint;
  m.alive = alive;
  m.waiting = waiting;
  if (paused_at) set_time_shared(trial, m, *paused_at);
  m.checkpoint_iteration = checkpoint_iteration;
  planned_exploits_.erase(trial);
  if (!plan.is_null()) {
    m.plan = TrialDecision{static_cast<TrialAction>(json_integer<int>(plan.at("action"))),
                           json_integer<int64_t>(plan.at("donor")), plan.at("config")};
    if (synch_ && m.plan->action == TrialAction::kExploit) planned_exploits_.insert(trial);
    if (synch_) m.waiting = false;  // planned: waits for a slot, not for the boundary (a state saved before it said so)
  }
  m.history = std::move(history);
  // Absent in states saved before the history was capped: its latest time.
  for (const auto& h : m.history) m.history_t_max = std::max(m.history_t_max, h.first);
  if (history_t_max) m.history_t_max = *history_t_max;
  if (m.history.size() > kHistory)
    m.history.erase(m.history.begin(), m.history.end() - static_cast<std::ptrdiff_t>(kHistory));
  // Absent in states saved before it: the time of the latest result.
  m.now = now ? *now : (m.history.empty() ? 0 : m.history.back().first);
  if (!keeps_history()) {  // saved by a version that kept it for PBT too
    m.history.clear();
    m.history_t_max = 0;
  }
  update(trial, m, [](Member&) {});
}

// The members of a whole state or a part, either form.
size_t PbtScheduler::restore_members(const Json& members) {
  if (members.is_object()) {  // one array per field
    const Json& trials = members.at("trial");
    const size_t n = trials.size();
    auto column = [&](const char* name) -> const Json& {
      const Json& c = members.at(name);
      if (!c.is_array() || c.size() != n) throw Error(std::string("pbt state: members' ") + name + " is not one per trial");
      return c;
    };
    const Json &config = column("config"), &score = column("score"), &last_perturb = column("last_perturb"),
               &has_checkpoint = column("has_checkpoint"), &alive = column("alive"), &waiting = column("waiting"),
               &paused = column("paused"), &paused_at = column("paused_at"), &now = column("now"),
               &checkpoint_iteration = column("checkpoint_iteration"), &plan = column("plan");
    // The histories: PB2's, and PBT's as versions up to c84b9f0 saved them.
    const bool histories = members.contains("history_count");
    static const Json kNone = Json::array();
    const Json &history_count = histories ? column("history_count") : kNone,
               &history_t_max = histories ? column("history_t_max") : kNone,
               &history_t = histories ? members.at("history_t") : kNone,
               &history_score = histories ? members.at("history_score") : kNone;
    if (history_t.size() != history_score.size()) throw Error("pbt state: history times and scores differ in length");
    size_t next = 0;
    for (size_t i = 0; i < n; ++i) {
      std::vector<std::pair<double, double>> history;
      std::optional<double> t_max;
      if (histories) {
        const auto count = json_integer<size_t>(history_count[i]);
        if (count > history_t.size() - next) throw Error("pbt state: the histories are shorter than their counts");
        for (size_t k = 0; k < count; ++k, ++next)
          history.emplace_back(history_t[next].get<double>(), score_of(history_score[next]));
        t_max = history_t_max[i].get<double>();
      }
      restore_member(json_integer<int64_t>(trials[i]), config[i], score_of(score[i]), last_perturb[i].get<double>(),
                     has_checkpoint[i].get<bool>(), alive[i].get<bool>(), waiting[i].get<bool>(),
                     paused[i].get<bool>() ? std::optional<double>(paused_at[i].get<double>()) : std::nullopt,
                     json_integer<int64_t>(checkpoint_iteration[i]), plan[i], std::move(history), t_max,
                     now[i].get<double>());
    }
    return n;
  }
  for (const Json& j : members) {  // one object per member (versions before 2026-11-29)
    // Fields absent in states saved before time sharing, the capped history or "now".
    restore_member(json_integer<int64_t>(j.at("trial")), j.at("config"), score_of(j.at("score")),
                   j.at("last_perturb").get<double>(), j.at("has_checkpoint").get<bool>(), j.at("alive").get<bool>(),
                   j.at("waiting").get<bool>(),
                   j.value("paused", false) ? std::optional<double>(j.at("paused_at").get<double>()) : std::nullopt,
                   j.contains("checkpoint_iteration") ? json_integer<int64_t>(j["checkpoint_iteration"]) : -1,
                   j.at("plan"),
                   j.contains("history") ? j.at("history").get<std::vector<std::pair<double, double>>>()
                                         : std::vector<std::pair<double, double>>{},
                   j.contains("history_t_max") ? std::optional<double>(j.at("history_t_max").get<double>())
                                               : std::nullopt,
                   j.contains("now") ? std::optional<double>(j.at("now").get<double>()) : std::nullopt);
  }
  return members.size();
}

// A whole state replaces everything; a part (save_state_part()) replaces the
// members it lists and moves the generator on by its draws.
void PbtScheduler::restore_state(const Json& state) {
  if (state.value("base", false)) {  // a part that carries the generator: members are only replaced
    part_entries_ = restore_members(state.at("members"));
    std::istringstream rng(state.at("rng").get<std::string>());
    rng >> rng_;
    if (!rng) throw Error("pbt state: rng is not a generator's state");
    saved_draws_ = json_integer<uint64_t>(state.at("draws"));
  } else if (state.contains("rng")) {
    members_.clear();
    planned_exploits_.clear();
    ranked_.clear();
    donors_.clear();
    time_shared_.clear();
    restore_members(state.at("members"));
    std::istringstream rng(state.at("rng").get<std::string>());
    rng >> rng_;
    if (!rng) throw Error("pbt state: rng is not a generator's state");
    saved_draws_ = state.contains("draws") ? json_integer<uint64_t>(state["draws"]) : 0;
    part_entries_ = 0;
  } else {
    part_entries_ += restore_members(state.at("members"));
    const auto draws = json_integer<uint64_t>(state.at("draws"));
    if (draws < saved_draws_ || draws - saved_draws_ > kDrawLimit)
      throw Error("pbt state: a part's draws (" + std::to_string(draws) + ") do not follow the state's (" +
                  std::to_string(saved_draws_) + ")");
    rng_.discard(draws - saved_draws_);
    saved_draws_ = draws;
  }
  saved_rng_ = rng_;
  more_trials_ = saved_more_trials_ = state.value("more_trials", true);
  dirty_.clear();  // what was restored is in the store
  dirty_order_.clear();
  paused_or_resumed_.clear();
  part_quota_ = 0;
  rebasing_ = false;
}

void PbtScheduler::update(int64_t trial, Member& m, const std::function<void(Member&)>& change) {
  if (m.alive && !std::isnan(m.score)) {
    ranked_.erase({m.score, trial});
    donors_.erase({m.score, trial});
  }
  change(m);
  if (m.alive && !std::isnan(m.score)) {
    ranked_.insert({m.score, trial});
    if (m.has_checkpoint) donors_.insert({m.score, trial});
  }
}

void PbtScheduler::end(int64_t trial) {
  Member& m = touch(trial);
  planned_exploits_.erase(trial);
  update(trial, m, [](Member& member) { member.alive = false; });
  m.waiting = false;
  set_time_shared(trial, m, std::nullopt);
  if (synch_) plan_if_all_waiting();
}

// Ray's rule: the live trials with a score, ranked by (score, index); the
// bottom and the top ceil(n * fraction) of them (at most half) are the lower
// and upper quantiles. A trial in the lower one clones a random member of the
// upper one that has a checkpoint (and is not itself). In O(log n): the
// trial's rank and the upper quantile's first key come from ranked_, the
// donors at or above that key from donors_ (ascending, as Ray lists them).
std::optional<int64_t> PbtScheduler::donor_for(int64_t trial) {
  const auto self = members_.find(trial);
  if (self == members_.end() || !self->second.alive || std::isnan(self->second.score)) return std::nullopt;
  const size_t ranked = ranked_.size();
  if (ranked <= 1) return std::nullopt;
  auto n = static_cast<size_t>(std::ceil(static_cast<double>(ranked) * quantile_));
  n = std::min(n, ranked / 2);
  if (ranked_.order_of_key({self->second.score, trial}) >= n) return std::nullopt;  // not in the lower quantile
  // The trial itself is below the upper quantile (n <= ranked / 2), never its own donor.
  const size_t first = donors_.order_of_key(*ranked_.find_by_order(ranked - n));
  const size_t count = donors_.size() - first;
  if (count == 0) return std::nullopt;
  const size_t pick = std::uniform_int_distribution<size_t>(0, count - 1)(rng_);
  return donors_.find_by_order(first + pick)->second;
}

TrialDecision PbtScheduler::decide(int64_t trial, double t) { return exploit_from(trial, donor_for(trial), t); }

TrialDecision PbtScheduler::exploit_from(int64_t trial, std::optional<int64_t> chosen, double t) {
  if (!chosen) return TrialDecision::next();
  const int64_t donor = *chosen;
  Json config = explore(members_[donor].config, t);
  Member& self = touch(trial);
  self.config = config;
  const double donor_score = members_[donor].score;
  update(trial, self, [donor_score](Member& m) { m.score = donor_score; });  // it continues from the donor's state
  // ... and from the donor's time (the driver restores the donor's
  // iteration), so it keeps the donor's perturbation clock, as Ray does;
  // except from a donor behind it: then its next perturbation waits until it
  // is past `t` again. Exploits of a trial thus happen at ever later times,
  // and a trial cloned back in time cannot be cloned back at every
  // perturbation and never reach the end of the sweep.
  // `now`, not the donor's last result: a donor exploited since then (and not
  // yet run again) is where its own donor was.
  const Member& from = members_[donor];
  const bool behind = from.now < t;
  self.last_perturb = behind ? t : from.last_perturb;
  self.now = from.now;
  return TrialDecision::exploit(donor, std::move(config));
}

// Ray's synchronous PBT: a boundary is decided once every trial of the sweep
// is at it, those the searcher has still to give included (they start in the
// slots the waiting members gave up, and catch up); on_no_more_trials looks
// again once the last has come.
void PbtScheduler::plan_if_all_waiting() {
  if (more_trials_) return;
  bool any = false;
  for (const auto& [trial, m] : members_) {
    if (m.alive && !m.waiting) return;
    any = any || m.waiting;
  }
  if (!any) return;
  // The quantiles are taken once, before any exploit: a clone takes its
  // donor's score, and deciding trial after trial against the changing
  // ranking made the next trial up the bottom one, and so on (7 exploits of
  // 8 trials at a quarter, and clones of clones that still held their own
  // checkpoints).
  std::vector<std::pair<int64_t, std::optional<int64_t>>> donors;
  for (const auto& [trial, m] : members_) {
    if (m.waiting) donors.emplace_back(trial, donor_for(trial));  // the ranking as it is at the boundary
  }
  for (const auto& [trial, donor] : donors) {
    Member& m = touch(trial);
    m.plan = exploit_from(trial, donor, m.last_perturb);
    if (m.plan->action == TrialAction::kExploit) planned_exploits_.insert(trial);
    // No longer waiting for this boundary, only for a slot: a member that
    // has not resumed yet is not at the next one (two members back at their
    // next boundary while the other two, not yet resumed, still counted as
    // waiting made a plan for all four, those two skipping a boundary).
    m.waiting = false;
  }
}

Json PbtScheduler::explore(const Json& donor_config, double) {
  Json config = donor_config;
  std::uniform_real_distribution<double> unit(0, 1);
  for (const Mutation& m : mutations_) {
    const Json* current = find_path(config, m.path);
    const bool resample = unit(rng_) < resample_;
    if (m.is_list) {
      auto it = current ? std::find(m.values.begin(), m.values.end(), *current) : m.values.end();
      if (resample || it == m.values.end()) {
        set_path(config, m.path, m.values[std::uniform_int_distribution<size_t>(0, m.values.size() - 1)(rng_)]);
      } else {
        auto index = static_cast<int64_t>(it - m.values.begin()) + (unit(rng_) < 0.5 ? -1 : 1);
        index = std::clamp<int64_t>(index, 0, static_cast<int64_t>(m.values.size()) - 1);
        set_path(config, m.path, m.values[static_cast<size_t>(index)]);
      }
      continue;
    }
    const bool numeric_domain = m.domain.kind == Domain::Kind::kFloat || m.domain.kind == Domain::Kind::kInt ||
                                m.domain.kind == Domain::Kind::kNormal;
    if (resample || !current || !current->is_number() || !numeric_domain) {
      set_path(config, m.path, m.domain.sample(rng_));
      continue;
    }
    double value = current->get<double>() * factors_[std::uniform_int_distribution<size_t>(0, factors_.size() - 1)(rng_)];
    if (m.domain.kind != Domain::Kind::kNormal) {
      const double high = m.domain.kind == Domain::Kind::kInt && !m.domain.upper_inclusive ? m.domain.high - 1 : m.domain.high;
      value = std::clamp(value, m.domain.low, high);
    }
    if (m.domain.kind == Domain::Kind::kInt) {
      set_path(config, m.path, static_cast<int64_t>(std::llround(value)));
    } else {
      set_path(config, m.path, value);
    }
  }
  return config;
}

std::unique_ptr<Scheduler> make_pbt(const Json& params, const std::string& metric, const std::string& mode) {
  return std::make_unique<PbtScheduler>(params, metric, mode);
}

}  // namespace tune::internal
