// The hosts of a multi-host sweep over its life: every host is checked before
// the first trial (a host that cannot run tune refuses the sweep); a host
// taken out after repeated losses is checked again after a back-off and
// rejoins when it passes; when no host can run a trial, the taken-out ones
// are checked at once, and the sweep stops only if none comes back; at the
// end each host's scratch for the experiment is removed.
#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <thread>

#include "base/error.h"
#include "base/json.h"
#include "base/names.h"
#include "base/options.h"
#include "tuner/driver/driver_impl.h"

namespace tune::internal {
namespace {

// What every host must have for this sweep's trials: the data file a
// trainable reads, a command trainable's program (when given as a path) and
// its working folder.
std::vector<std::string> needed_paths(const SweepSpec& spec) {
  std::vector<std::string> paths;
  if (const std::string data = json_field(spec.data, "path", std::string()); !data.empty()) paths.push_back(data);
  const Json argv = json_field(spec.command, "argv", Json::array());
  const std::string program = !argv.empty() && argv[0].is_string() ? argv[0].get<std::string>() : "";
  if (program.find('/') != std::string::npos && program.find('{') == std::string::npos) paths.push_back(program);
  if (const std::string cwd = json_field(spec.command, "cwd", std::string()); !cwd.empty()) paths.push_back(cwd);
  return paths;
}

}  // namespace

void Driver::preflight() {
  check_paths_ = needed_paths(sweep_.spec);
  std::vector<std::string> hosts;
  for (const Host& host : pool_.hosts()) hosts.push_back(host.name);
  if (run_.verbose) std::cerr << "tune: checking " << hosts.size() << " hosts\n";
  std::vector<HostCheckResult> failed;
  // A host that fails is checked once more (a network that just came back,
  // a loaded machine) before the sweep is refused.
  for (int round = 0; round < 2 && !hosts.empty(); ++round) {
    if (round > 0) std::this_thread::sleep_for(std::chrono::seconds(2));
    for (const std::string& host : hosts) executor_->check_host({host, check_paths_, ""});
    std::vector<HostCheckResult> results;
    // Each check ends within the executor's own timeout; this bound is a backstop.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (results.size() < hosts.size() && std::chrono::steady_clock::now() < deadline) {
      for (auto& result : executor_->take_host_checks()) results.push_back(std::move(result));
      if (results.size() < hosts.size()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (results.size() < hosts.size()) throw ConfigError("some hosts did not answer a check within 120 s");
    hosts.clear();
    failed.clear();
    for (auto& result : results) {
      if (result.ok) continue;
      hosts.push_back(result.host);
      failed.push_back(std::move(result));
    }
  }
  if (failed.empty()) return;
  std::string more;
  if (failed.size() > 1) {
    std::vector<std::string> names;
    for (size_t i = 1; i < failed.size(); ++i) names.push_back(failed[i].host);
    more = " (" + std::to_string(names.size()) + " more hosts failed: " + join_names(names) + ")";
  }
  throw ConfigError(failed.front().problem + more);
}

// A lost attempt counted against `host`; if that took it out, it is checked
// again after a back-off.
void Driver::host_lost(const std::string& host) {
  if (!pool_.record_loss(host)) return;
  hosts_changed_ = true;
  const std::vector<std::string> now = pool_.excluded();
  store_->add_event(experiment_.id, std::nullopt, "hosts_excluded", {{"hosts", now}, {"host", host}},
                    clock_.unix_time());
  const double delay = sweep_.spec.failure.host_check_interval_s;
  if (run_.verbose)
    std::cerr << "tune: host " << host << " taken out after repeated losses; checking it again in "
              << short_number(delay) << " s\n";
  host_checks_[host] = HostCheckState{clock_.now() + delay, delay};
}

// One of the hosts of a lost attempt that neither the connections nor
// mpirun's log could blame: a check tells whether it is at fault.
void Driver::suspect(const std::string& host) {
  if (pool_.single_host() || host_checks_.count(host) || !suspects_.insert(host).second) return;
  pool_.suspend(host, true);
  executor_->check_host({host, check_paths_, ""});
}

// `tune hosts EXP add|drain HOST`, read from the store once a second. A host
// joins after it passes a check; a drained host takes no new placement.
void Driver::host_requests() {
  const double now = clock_.now();
  if (now - last_request_poll_ < 1.0) return;
  last_request_poll_ = now;
  for (const EventRecord& request : store_->events_after(experiment_.id, "host_request", last_request_, &last_request_)) {
    if (request.time < started_unix_ || !request.detail.is_object()) continue;  // before this driver
    const Json& d = request.detail;
    const std::string action = d.contains("action") && d["action"].is_string() ? d["action"].get<std::string>() : "";
    const std::string host = d.contains("host") && d["host"].is_string() ? d["host"].get<std::string>() : "";
    auto refuse = [&](const std::string& problem) {
      store_->add_event(experiment_.id, std::nullopt, "host_request_failed",
                        {{"host", host}, {"action", action}, {"problem", problem}}, clock_.unix_time());
    };
    if (action == "drain") {
      if (!pool_.drain(host)) {
        refuse("host " + host + " is not one of " + sweep_.spec.name + "'s");
        continue;
      }
      hosts_changed_ = true;
      store_->add_event(experiment_.id, std::nullopt, "host_drained", {{"host", host}}, clock_.unix_time());
      if (run_.verbose) std::cerr << "tune: host " << host << " drains: it takes no new trial\n";
    } else if (action == "add") {
      Host joining{host, 1, 0, is_local_host(host)};
      try {
        joining.slots = json_integer<int>(d.value("slots", Json(1)));
        joining.gpus = json_integer<int>(d.value("gpus", Json(0)));
      } catch (const Error&) {
        refuse("bad slots or gpus for host " + host);
        continue;
      }
      if (pool_.knows(host) && !pool_.drained(host)) {
        refuse("host " + host + " is already one of " + sweep_.spec.name + "'s");
      } else if (joining.slots < 1 || joining.gpus < 0) {
        refuse("host " + host + " needs at least one slot");
      } else {
        joining_[host] = joining;
        executor_->check_host({host, check_paths_, ""});
      }
    } else {
      refuse("unknown host request '" + action + "'");
    }
  }
}

void Driver::hosts_housekeeping() {
  const double now = clock_.now();
  host_requests();
  // Checks that came back.
  for (const HostCheckResult& result : executor_->take_host_checks()) {
    if (result.clean) continue;
    if (auto joining = joining_.find(result.host); joining != joining_.end()) {
      if (result.ok && pool_.add_host(joining->second)) {
        hosts_changed_ = true;
        const Host& h = joining->second;
        store_->add_event(experiment_.id, std::nullopt, "host_added",
                          {{"host", h.name}, {"slots", h.slots}, {"gpus", h.gpus}}, clock_.unix_time());
        if (run_.verbose) std::cerr << "tune: host " << h.name << " joined with " << h.slots << " slots\n";
      } else {
        store_->add_event(experiment_.id, std::nullopt, "host_request_failed",
                          {{"host", result.host}, {"action", "add"},
                           {"problem", result.ok ? "host " + result.host + " is already in the sweep" : result.problem}},
                          clock_.unix_time());
      }
      joining_.erase(joining);
      continue;
    }
    if (suspects_.erase(result.host)) {
      pool_.suspend(result.host, false);
      hosts_changed_ = true;
      if (!result.ok) {
        store_->add_event(experiment_.id, std::nullopt, "host_check_failed",
                          {{"host", result.host}, {"problem", result.problem}}, clock_.unix_time());
        host_lost(result.host);
      }
      continue;
    }
    auto it = host_checks_.find(result.host);
    if (it == host_checks_.end()) continue;
    if (result.ok && pool_.readmit(result.host)) {
      host_checks_.erase(it);
      hosts_changed_ = true;
      store_->add_event(experiment_.id, std::nullopt, "host_readmitted", {{"host", result.host}}, clock_.unix_time());
      if (run_.verbose) std::cerr << "tune: host " << result.host << " is healthy again and takes trials\n";
      continue;
    }
    const double longest = std::max(300.0, sweep_.spec.failure.host_check_interval_s);
    it->second.delay = std::min(longest, it->second.delay * 2);
    it->second.due = now + it->second.delay;
    store_->add_event(experiment_.id, std::nullopt, "host_check_failed",
                      {{"host", result.host}, {"problem", result.problem}}, clock_.unix_time());
  }
  // No host can run a trial: check every taken-out host now; stop only when
  // all of them failed that check.
  if (hosts_changed_ && !stopping_) {
    hosts_changed_ = false;
    const bool none = !pool_.could_ever_fit(request());
    if (none && no_hosts_since_ < 0) {
      no_hosts_since_ = now;
      store_->add_event(experiment_.id, std::nullopt, "no_hosts_left", {{"excluded", pool_.excluded()}},
                        clock_.unix_time());
      std::cerr << "tune: no host left that can run a trial (taken out: " << join_names(pool_.excluded())
                << "); checking them again\n";
      for (auto& [host, state] : host_checks_) state.due = now;
    } else if (!none) {
      no_hosts_since_ = -1;
    }
  }
  if (no_hosts_since_ >= 0 && !stopping_) {
    const bool all_failed_since = std::all_of(host_checks_.begin(), host_checks_.end(), [&](const auto& entry) {
      return entry.second.due > now && entry.second.due - entry.second.delay >= no_hosts_since_;
    });
    if (all_failed_since) {  // (also when no taken-out host is left to check)
      no_hosts_left_ = true;
      stop_and_requeue("no hosts left");
      return;
    }
  }
  // Checks that are due.
  for (auto& [host, state] : host_checks_) {
    if (state.due < 0 || state.due > now) continue;
    state.due = -1;
    executor_->check_host({host, check_paths_, ""});
  }
}

// Streamed checkpoints leave files in each host's scratch (a lost attempt
// cannot clean up after itself): at the end every host removes the
// experiment's folder there. A host whose clean fails (its link down for a
// moment, OpenMPI's daemon not starting) is asked again each second until the
// deadline; one that never answers keeps it, and the user is told.
void Driver::clean_scratch() {
  if (pool_.single_host() || sweep_.spec.checkpoint.shared_filesystem || !executor_ || !executor_->checks_hosts())
    return;
  using Clock = std::chrono::steady_clock;
  struct Clean {
    Clock::time_point ask_at;
    bool asked = false;
    std::string problem;
  };
  std::map<std::string, Clean> left;
  for (const Host& host : pool_.hosts()) left[host.name] = {Clock::now(), false, ""};
  const auto deadline = Clock::now() + std::chrono::seconds(15);
  while (!left.empty() && Clock::now() < deadline) {
    for (auto& [host, clean] : left) {
      if (clean.asked || Clock::now() < clean.ask_at) continue;
      executor_->check_host({host, {}, sweep_.spec.name});
      clean.asked = true;
    }
    for (const auto& result : executor_->take_host_checks()) {
      auto it = left.find(result.host);
      if (!result.clean || it == left.end()) continue;
      if (result.ok) {
        left.erase(it);
      } else {
        it->second = {Clock::now() + std::chrono::seconds(1), false, result.problem};
      }
    }
    if (!left.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (const auto& [host, clean] : left) {
    std::cerr << "tune: could not remove the scratch folder of " << sweep_.spec.name << " on host " << host
              << " (remove it by hand: " << sweep_.spec.name << " in $TUNE_SCRATCH or /tmp/tune-scratch there): "
              << (clean.problem.empty() ? "no answer within 15 s" : clean.problem) << "\n";
  }
}

}  // namespace tune::internal
