#include "tuner/cli/hosts_command.h"

#include <chrono>
#include <iostream>
#include <map>
#include <thread>

#include <boost/program_options.hpp>

#include "base/error.h"
#include "base/json.h"
#include "tuner/driver/progress.h"
#include "tuner/query/experiment_access.h"

namespace tune::cli {
namespace {

namespace po = boost::program_options;

// A host name as a hostfile takes it: no space, control character or '#'.
void check_host_name(const std::string& host) {
  bool ok = !host.empty() && host.size() <= 255;
  for (unsigned char c : host) ok = ok && c > ' ' && c != 0x7f && c != '#' && c != ',';
  if (!ok) throw ConfigError("tune hosts: '" + host + "' is not a host name or address");
}

// Waits (bounded) for the driver's answer to request `after`: an event about
// `host` of one of `kinds`.
std::optional<EventRecord> answer(Store& store, int64_t experiment, int64_t after, const std::string& host,
                                  const std::vector<std::string>& kinds, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    for (const std::string& kind : kinds)
      for (const EventRecord& e : store.events_after(experiment, kind, after))
        if (json_field(e.detail, "host", std::string()) == host) return e;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return std::nullopt;
}

}  // namespace

Json host_states(const std::vector<EventRecord>& events) {
  std::map<std::string, Json> hosts;
  std::vector<std::string> order;
  auto host = [&](const std::string& name) -> Json& {
    if (!hosts.count(name)) {
      order.push_back(name);
      hosts[name] = {{"host", name}, {"slots", nullptr}, {"gpus", nullptr}, {"state", "active"},
                     {"attempts", 0},  {"lost", 0},         {"problem", nullptr}};
    }
    return hosts[name];
  };
  for (const EventRecord& e : events) {
    const Json& d = e.detail;
    if (e.kind == "started" && d.is_object() && d.contains("hosts") && d["hosts"].is_array()) {
      for (const Json& h : d["hosts"]) {
        Json& row = host(json_field(h, "name", std::string()));
        row["slots"] = json_field(h, "slots", int64_t{0});
        row["gpus"] = json_field(h, "gpus", int64_t{0});
        row["state"] = "active";
      }
    } else if (e.kind == "trial_started" && d.is_object() && d.contains("hosts") && d["hosts"].is_array()) {
      for (const Json& h : d["hosts"])
        if (h.is_string()) host(h.get<std::string>())["attempts"] = host(h.get<std::string>())["attempts"].get<int64_t>() + 1;
    } else if (e.kind == "trial_retry" && d.is_object() && d.contains("hosts") && d["hosts"].is_array()) {
      for (const Json& h : d["hosts"])
        if (h.is_string()) host(h.get<std::string>())["lost"] = host(h.get<std::string>())["lost"].get<int64_t>() + 1;
    } else if (e.kind == "hosts_excluded" && !json_field(d, "host", std::string()).empty()) {
      host(json_field(d, "host", std::string()))["state"] = "taken out";
    } else if (e.kind == "host_readmitted") {
      host(json_field(d, "host", std::string()))["state"] = "active";
    } else if (e.kind == "host_check_failed") {
      host(json_field(d, "host", std::string()))["problem"] = json_field(d, "problem", std::string());
    } else if (e.kind == "host_added") {
      Json& row = host(json_field(d, "host", std::string()));
      row["slots"] = json_field(d, "slots", int64_t{1});
      row["gpus"] = json_field(d, "gpus", int64_t{0});
      row["state"] = "active";
      row["problem"] = nullptr;
    } else if (e.kind == "host_drained") {
      host(json_field(d, "host", std::string()))["state"] = "drained";
    }
  }
  Json out = Json::array();
  for (const auto& name : order)
    if (!name.empty()) out.push_back(hosts[name]);
  return out;
}

int hosts_command(const std::vector<std::string>& args) {
  std::vector<std::string> words;
  std::string storage;
  int slots = 1, gpus = 0;
  bool json = false;
  po::options_description options("options");
  options.add_options()("words", po::value(&words)->multitoken(), "EXP [add|drain HOST]")(
      "storage", po::value(&storage)->default_value("./tune_results"), "results directory")(
      "slots", po::value(&slots)->default_value(1), "add: cores tune may use on the host")(
      "gpus", po::value(&gpus)->default_value(0), "add: GPUs on the host")("json", po::bool_switch(&json), "JSON output")(
      "help,h", "show this help");
  po::positional_options_description positionals;
  positionals.add("words", -1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(options).positional(positionals).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << "usage: tune hosts EXP [add HOST [--slots N] [--gpus N] | drain HOST] [OPTIONS]\n" << options;
    return 0;
  }
  if (words.empty()) throw ConfigError("tune hosts: missing experiment argument");
  if (words.size() == 1) {
    auto store = internal::open_store(storage);
    const ExperimentRecord experiment = internal::find_experiment(*store, storage, words[0]);
    const Json hosts = host_states(store->events(experiment.id));
    if (json) {
      std::cout << hosts.dump() << "\n";
      return 0;
    }
    if (hosts.empty()) {
      std::cout << "experiment " << experiment.name << " runs on this machine only (no hostfile or Slurm allocation)\n";
      return 0;
    }
    std::vector<std::string> columns = {"host", "slots", "gpus", "state", "attempts", "lost", "problem"};
    std::vector<std::vector<std::string>> rows;
    for (const Json& h : hosts) {
      std::vector<std::string> row;
      for (const auto& c : columns) row.push_back(h[c].is_null() ? "" : h[c].is_string() ? h[c].get<std::string>() : h[c].dump());
      rows.push_back(std::move(row));
    }
    std::cout << internal::render_table(columns, rows);
    return 0;
  }
  if (words.size() != 3 || (words[1] != "add" && words[1] != "drain"))
    throw ConfigError("tune hosts: expected `tune hosts EXP`, `tune hosts EXP add HOST` or `tune hosts EXP drain HOST`");
  const std::string& action = words[1];
  const std::string& host = words[2];
  check_host_name(host);
  if (slots < 1 || slots > 1 << 20) throw ConfigError("tune hosts: --slots must be a positive integer");
  if (gpus < 0 || gpus > 1 << 16) throw ConfigError("tune hosts: --gpus must be 0 or more");
  if (!Store::exists(storage)) throw NotFoundError("no tune store at " + storage);
  auto store = Store::open(storage, /*read_only=*/false);
  const ExperimentRecord experiment = internal::find_experiment(*store, storage, words[0]);
  if (experiment.status != "RUNNING") {
    throw ConfigError("experiment " + experiment.name + " is " + experiment.status +
                      ", not running: give its hosts to `tune resume " + experiment.name + " --hostfile FILE`");
  }
  const auto before = store->events_after(experiment.id, "host_request", 0);
  const int64_t last = before.empty() ? 0 : before.back().id;
  Json request = {{"action", action}, {"host", host}};
  if (action == "add") request.update({{"slots", slots}, {"gpus", gpus}});
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  store->add_event(experiment.id, std::nullopt, "host_request", request, now);
  const auto mine = store->events_after(experiment.id, "host_request", last);
  const int64_t id = mine.empty() ? last : mine.back().id;
  const std::vector<std::string> kinds = action == "add" ? std::vector<std::string>{"host_added", "host_request_failed"}
                                                         : std::vector<std::string>{"host_drained", "host_request_failed"};
  // An add waits for the host's check (up to a few minutes on a slow cluster).
  const auto reply = answer(*store, experiment.id, id, host, kinds, action == "add" ? 300 : 30);
  if (!reply) {
    std::cerr << "tune hosts: no answer from the driver of " << experiment.name
              << " yet (is it running? the request stays queued for it)\n";
    return 1;
  }
  if (reply->kind == "host_request_failed") {
    std::cerr << "tune hosts: " << json_field(reply->detail, "problem", std::string()) << "\n";
    return 1;
  }
  std::cout << (action == "add" ? "host " + host + " joined " : "host " + host + " drains from ") << experiment.name
            << "\n";
  return 0;
}

}  // namespace tune::cli
