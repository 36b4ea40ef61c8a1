// scale_bench: one driver facing a cluster's worth of trials. A simulated
// executor runs N concurrent trials (no processes: each "trial" is a timer)
// spread over H simulated hosts; each reports once per --period seconds
// after its previous answer (a training step), or at once after a kRunAhead
// answer, until the scheduler stops it or it reaches --max-t; the driver
// starts new trials as slots free. Everything is the real driver: placement,
// the scheduler (ASHA or PBT), the searcher, the store and its commits.
//
//   scale_bench --trials 10000 --hosts 1000 --period 1 --seconds 60 --scheduler asha
//
// Prints ONE JSON object: results/s (each one a scheduler decision), p50/p99
// of report() latency (a result pushed to its answer, which comes after the
// commit), the driver's CPU (cores used, every thread but the simulated
// cluster's), its memory per live trial
// (RSS growth over the live trials), the store's bytes per million results.
#include <pthread.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <queue>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "schedulers/scheduler.h"
#include "tuner/driver/driver.h"
#include "tuner/driver/prepare.h"
#include "tuner/exec/executor.h"
#include "tuner/exec/transport.h"

namespace fs = std::filesystem;
using SteadyClock = std::chrono::steady_clock;
using namespace tune;
using namespace tune::internal;

namespace {

struct Options {
  int trials = 10000;     // concurrent trials (slots)
  int hosts = 1000;       // 0: one machine with `trials` slots
  double period = 1.0;    // seconds of "training" between reports
  double seconds = 30;    // measured run, after every slot first filled
  int max_t = 81;         // iterations of a trial that is never stopped
  std::string scheduler = "asha";
  int checkpoint_every = 0;  // 0: PBT's perturbation interval, none for others
  std::string tmp;
  // Where the simulated hosts write their checkpoints: each host of a real
  // cluster writes on its own disk, not the driver's, so by default a tmpfs
  // (/dev/shm when there is one) and not the store's disk. On the store's
  // disk the hosts' mkdirs (10,000 at each PBT checkpoint iteration) took a
  // third of this 2-core box's CPU from the driver (bench/scale/README.md).
  std::string hosts_dir;
  std::string latency_log;  // when set: one line per answered result, "sent_s latency_ms"
};

[[noreturn]] void usage(const std::string& message) {
  std::cerr << "scale_bench: " << message
            << "\nusage: scale_bench [--trials N] [--hosts H] [--period S] [--seconds S] [--max-t T]"
               " [--scheduler asha|pbt|fifo] [--checkpoint-every K] [--tmp DIR] [--hosts-dir DIR] [--latency-log FILE]\n";
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(a + " needs a value");
      return argv[++i];
    };
    try {
      if (a == "--trials") o.trials = std::stoi(value());
      else if (a == "--hosts") o.hosts = std::stoi(value());
      else if (a == "--period") o.period = std::stod(value());
      else if (a == "--seconds") o.seconds = std::stod(value());
      else if (a == "--max-t") o.max_t = std::stoi(value());
      else if (a == "--scheduler") o.scheduler = value();
      else if (a == "--checkpoint-every") o.checkpoint_every = std::stoi(value());
      else if (a == "--tmp") o.tmp = value();
      else if (a == "--hosts-dir") o.hosts_dir = value();
      else if (a == "--latency-log") o.latency_log = value();
      else usage("unknown option " + a);
    } catch (const std::logic_error&) {
      usage("bad value for " + a);
    }
  }
  if (o.trials < 1 || o.hosts < 0 || o.period <= 0 || o.seconds <= 0 || o.max_t < 1) usage("values must be positive");
  if (o.hosts > 0 && o.trials % o.hosts != 0) usage("--trials must be a multiple of --hosts");
  if (o.scheduler != "asha" && o.scheduler != "pbt" && o.scheduler != "fifo") usage("--scheduler: asha, pbt or fifo");
  return o;
}

long rss_kb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return 0;
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return NAN;
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

// The trials: a timer per live attempt. One thread sends the results that
// are due; answers (from the driver's thread) set the next one.
class SimulatedCluster : public TrialExecutor {
 public:
  SimulatedCluster(EventSink& sink, const Options& o, const std::string& checkpoints)
      : sink_(sink), o_(o), checkpoints_(checkpoints), thread_([this] { loop(); }) {}
  ~SimulatedCluster() override { shutdown(); }

  void start(const AttemptId& attempt, TrialStart trial, const Placement&) override {
    std::lock_guard<std::mutex> lock(mutex_);
    Attempt& a = attempts_[attempt];
    a.iteration = trial.iteration;
    a.quality = std::uniform_real_distribution<double>(0.1, 1.0)(rng_) * (1 + trial.config.value("x", 0.5));
    // The first report comes after half a step to a step and a half: the
    // trials' phases spread evenly over the whole period, so N trials offer
    // N / period results a second at every moment. (Until 2026-11-30 this
    // was half a step to one: all of a second's results came in half of it,
    // at twice the rate the bench's figures say, and PBT's perturbations,
    // which every trial reaches in the same second, came in half a second.)
    due_.push({SteadyClock::now() + seconds(o_.period * std::uniform_real_distribution<double>(0.5, 1.5)(rng_)), attempt});
    live_ += 1;
    wake_.notify_one();
  }
  void cancel(const AttemptId& attempt, const std::string&) override {
    std::lock_guard<std::mutex> lock(mutex_);
    end(attempt, true);
  }
  int live() const override { return live_.load(); }
  void shutdown() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stop_) return;
      stop_ = true;
      std::vector<AttemptId> left;
      for (const auto& [id, a] : attempts_) left.push_back(id);
      for (const AttemptId& id : left) end(id, true);
    }
    wake_.notify_one();
    thread_.join();
  }

  std::vector<double> latencies() {
    std::lock_guard<std::mutex> lock(mutex_);
    return latency_ms_;
  }
  // When each answered result was sent (parallel to latencies()).
  std::vector<SteadyClock::time_point> sent_times() {
    std::lock_guard<std::mutex> lock(mutex_);
    return sent_;
  }
  void clear_latencies() {
    std::lock_guard<std::mutex> lock(mutex_);
    latency_ms_.clear();
    sent_.clear();
  }
  int64_t results() const { return results_.load(); }
  // CPU seconds the simulated cluster's own thread has used (not the driver's).
  double cpu_seconds() {
    clockid_t clock;
    timespec t{};
    if (pthread_getcpuclockid(thread_.native_handle(), &clock) != 0 || clock_gettime(clock, &t) != 0) return 0;
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
  }

 private:
  struct Attempt {
    int64_t iteration = 0;
    double quality = 1;
    bool waiting = false;  // a result is out, not answered
  };
  struct Due {
    SteadyClock::time_point at;
    AttemptId attempt;
    bool operator>(const Due& o) const { return at > o.at; }
  };
  static SteadyClock::duration seconds(double s) {
    return std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(s));
  }

  // Under mutex_.
  void end(const AttemptId& attempt, bool stopped) {
    if (!attempts_.erase(attempt)) return;
    live_ -= 1;
    TrialEvent event;
    event.kind = TrialEvent::Kind::kEnded;
    event.attempt = attempt;
    event.stopped = stopped;
    sink_.push(std::move(event));
  }

  // Sends the results that are due. They are made under the lock; their
  // checkpoint folders (what a trial writes on its own host) are made and
  // they are pushed outside it, so the driver's answers (answered(), on its
  // thread) never wait behind a long run of sends or mkdirs.
  void loop() {
    std::vector<TrialEvent> out;
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stop_) {
      if (due_.empty()) {
        wake_.wait(lock);
        continue;
      }
      if (due_.top().at > SteadyClock::now()) {
        wake_.wait_until(lock, due_.top().at);
        continue;
      }
      const auto now = SteadyClock::now();
      while (!due_.empty() && due_.top().at <= now && out.size() < 64) {
        const Due next = due_.top();
        due_.pop();
        auto it = attempts_.find(next.attempt);
        if (it != attempts_.end()) out.push_back(make_result(next.attempt, it->second));  // else cancelled meanwhile
      }
      lock.unlock();
      for (TrialEvent& event : out) {
        if (!event.checkpoint.empty()) fs::create_directories(event.checkpoint);
        const auto sent = SteadyClock::now();
        event.reply = [this, id = event.attempt, sent](Verdict verdict) { answered(id, sent, verdict); };
        sink_.push(std::move(event));
      }
      out.clear();
      lock.lock();
    }
  }

  // Under mutex_: the attempt's next result (its folder and reply are made by loop()).
  TrialEvent make_result(const AttemptId& id, Attempt& a) {
    a.iteration += 1;
    a.waiting = true;
    TrialEvent event;
    event.kind = TrialEvent::Kind::kResult;
    event.attempt = id;
    // A learning curve: better trials lower, every trial improving.
    event.metrics = {{"loss", a.quality / std::sqrt(static_cast<double>(a.iteration)) +
                                  std::uniform_real_distribution<double>(0, 0.01)(rng_)}};
    const int every = o_.checkpoint_every > 0 ? o_.checkpoint_every : (o_.scheduler == "pbt" ? 4 : 0);
    if (every > 0 && a.iteration % every == 0) {
      const fs::path dir = fs::path(checkpoints_) / (std::to_string(id.trial) + "_" + std::to_string(id.attempt) + "_" +
                                                     std::to_string(a.iteration));
      event.checkpoint = dir.string();
    }
    results_ += 1;
    return event;
  }

  // From the driver's thread, after the commit.
  void answered(const AttemptId& id, SteadyClock::time_point sent, Verdict verdict) {
    const auto now = SteadyClock::now();
    std::lock_guard<std::mutex> lock(mutex_);
    latency_ms_.push_back(std::chrono::duration<double, std::milli>(now - sent).count());
    sent_.push_back(sent);
    auto it = attempts_.find(id);
    if (it == attempts_.end()) return;
    it->second.waiting = false;
    if (verdict == Verdict::kStop || it->second.iteration >= o_.max_t) {
      end(id, verdict == Verdict::kStop);
      return;
    }
    // The next step starts now (kContinue) or started when the result was sent (kRunAhead).
    due_.push({(verdict == Verdict::kRunAhead ? sent : now) + seconds(o_.period), id});
    wake_.notify_one();
  }

  EventSink& sink_;
  const Options& o_;
  std::string checkpoints_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::map<AttemptId, Attempt> attempts_;
  std::priority_queue<Due, std::vector<Due>, std::greater<Due>> due_;
  std::mt19937_64 rng_{7};
  std::vector<double> latency_ms_;
  std::vector<SteadyClock::time_point> sent_;
  std::atomic<int> live_{0};
  std::atomic<int64_t> results_{0};
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const fs::path tmp = fs::path(o.tmp.empty() ? fs::temp_directory_path().string() : o.tmp);
  char pattern_buffer[4096];
  std::snprintf(pattern_buffer, sizeof pattern_buffer, "%s/tune-scale-XXXXXX", tmp.string().c_str());
  if (!mkdtemp(pattern_buffer)) {
    std::perror("scale_bench: mkdtemp");
    return 1;
  }
  const fs::path dir = pattern_buffer;
  std::string hosts_parent = o.hosts_dir;
  if (hosts_parent.empty()) hosts_parent = access("/dev/shm", W_OK | X_OK) == 0 ? "/dev/shm" : dir.string();
  std::snprintf(pattern_buffer, sizeof pattern_buffer, "%s/tune-scale-hosts-XXXXXX", hosts_parent.c_str());
  if (!mkdtemp(pattern_buffer)) {
    std::perror("scale_bench: mkdtemp (--hosts-dir)");
    std::error_code ec;
    fs::remove_all(dir, ec);  // made above
    return 1;
  }
  const fs::path checkpoints = pattern_buffer;
  std::cerr << "scale_bench: the hosts' checkpoints in " << checkpoints.string() << "\n";

  SweepSpec spec;
  spec.name = "scale";
  spec.metric = "loss";
  spec.mode = "min";
  spec.num_samples = 50 * static_cast<int64_t>(o.trials);  // never runs out in the measured time
  spec.param_space.add("x", uniform(0, 1));
  spec.search.seed = 1;
  spec.stop.training_iteration = o.max_t;
  Json params = Json::object();
  if (o.scheduler == "asha") {
    params = {{"max_t", o.max_t}, {"grace_period", 1}, {"reduction_factor", 3}};
  } else if (o.scheduler == "pbt") {
    params = {{"perturbation_interval", 4},
              {"hyperparam_mutations", {{"x", {{"uniform", {0.0, 1.0}}}}}},
              {"seed", 1}};
  }
  spec.scheduler.type = o.scheduler;
  spec.scheduler.params = params;

  RunConfig run;
  run.storage_path = (dir / "store").string();
  run.verbose = false;
  run.slots = o.hosts > 0 ? o.trials / o.hosts : o.trials;
  auto sweep = prepare_sweep(spec, run, [](Session&) {}, nullptr, nullptr, false);
  if (o.hosts > 0) {
    sweep.hosts.clear();
    for (int h = 0; h < o.hosts; ++h) {
      const std::string name = "127.0." + std::to_string(h / 250) + "." + std::to_string(h % 250 + 1);
      sweep.hosts.push_back({name, o.trials / o.hosts, 0, false});
    }
    sweep.slots = o.trials;
    run.secret_file = (dir / "cluster.key").string();
    write_cluster_key(run.secret_file);
  }

  std::atomic<int> interrupt{0};
  std::atomic<SimulatedCluster*> cluster{nullptr};
  DriverEnvironment env;
  env.interrupt = &interrupt;
  env.make_executor = [&](const ExecutorContext& context) {
    auto executor = std::make_unique<SimulatedCluster>(context.events, o, checkpoints.string());
    cluster = executor.get();
    return executor;
  };

  // A watcher: waits until every slot has been filled once (the ramp), then
  // measures for o.seconds and interrupts the sweep.
  struct Window {
    double cpu_start = 0, cpu_end = 0;
    int64_t results_start = 0, results_end = 0;
    SteadyClock::time_point start, end;
    long rss_live = 0;
    int live = 0;
    double ramp_s = 0;
    std::vector<double> latencies;
    std::vector<SteadyClock::time_point> sent;
  } w;
  // The driver's CPU: every thread of the process (the driver's loop, the
  // store's, ...) less the simulated cluster's thread (the watcher sleeps).
  auto driver_cpu = [&cluster] {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9 - cluster.load()->cpu_seconds();
  };
  const long rss_before = rss_kb();
  const auto begin = SteadyClock::now();
  std::thread watcher([&] {
    while (!cluster.load() || cluster.load()->live() < o.trials) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      if (SteadyClock::now() - begin > std::chrono::seconds(600)) break;
    }
    w.ramp_s = std::chrono::duration<double>(SteadyClock::now() - begin).count();
    if (!cluster.load()) {  // the driver never started the executor
      interrupt = 1;
      return;
    }
    cluster.load()->clear_latencies();
    w.start = SteadyClock::now();
    w.results_start = cluster.load()->results();
    w.cpu_start = driver_cpu();
    std::this_thread::sleep_for(std::chrono::duration<double>(o.seconds));
    w.end = SteadyClock::now();
    w.results_end = cluster.load()->results();
    w.cpu_end = driver_cpu();
    w.latencies = cluster.load()->latencies();
    w.sent = cluster.load()->sent_times();
    w.live = cluster.load()->live();
    w.rss_live = rss_kb();
    interrupt = 1;
  });
  try {
    run_experiment(std::move(sweep), run, false, env);
  } catch (const std::exception& e) {
    std::cerr << "scale_bench: " << e.what() << "\n";
  }
  watcher.join();

  if (!o.latency_log.empty()) {
    std::ofstream log(o.latency_log);
    for (size_t i = 0; i < w.latencies.size() && i < w.sent.size(); ++i)
      log << std::chrono::duration<double>(w.sent[i] - w.start).count() << " " << w.latencies[i] << "\n";
    if (!log) std::cerr << "scale_bench: cannot write " << o.latency_log << "\n";
  }
  const double elapsed = std::chrono::duration<double>(w.end - w.start).count();
  const double results = static_cast<double>(w.results_end - w.results_start);
  uintmax_t store_bytes = 0;
  for (const auto& entry : fs::directory_iterator(dir / "store"))
    if (entry.is_regular_file()) store_bytes += entry.file_size();
  // The results the store holds (ramp and wind-down included).
  int64_t stored = 0;
  {
    sqlite3* db = nullptr;
    if (sqlite3_open_v2((dir / "store" / "tune.db").c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
      sqlite3_stmt* count = nullptr;
      if (sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM results", -1, &count, nullptr) == SQLITE_OK &&
          sqlite3_step(count) == SQLITE_ROW)
        stored = sqlite3_column_int64(count, 0);
      sqlite3_finalize(count);
    }
    sqlite3_close(db);
  }
  const double per_live_kb = w.live > 0 ? static_cast<double>(w.rss_live - rss_before) / w.live : NAN;
  std::printf(
      "{\"bench\": \"scale\", \"scheduler\": \"%s\", \"trials\": %d, \"hosts\": %d, \"period_s\": %g, "
      "\"ramp_s\": %.2f, \"seconds\": %.2f, \"results_per_s\": %.0f, \"offered_per_s\": %.0f, "
      "\"report_p50_ms\": %.2f, \"report_p99_ms\": %.2f, \"report_max_ms\": %.2f, "
      "\"driver_cores\": %.3f, \"driver_kb_per_live_trial\": %.2f, \"live_trials\": %d, "
      "\"stored_results\": %lld, \"store_bytes_per_million_results\": %.0f}\n",
      o.scheduler.c_str(), o.trials, o.hosts, o.period, w.ramp_s, elapsed, results / elapsed, o.trials / o.period,
      percentile(w.latencies, 0.5), percentile(w.latencies, 0.99), percentile(w.latencies, 1.0),
      (w.cpu_end - w.cpu_start) / elapsed, per_live_kb, w.live, static_cast<long long>(stored),
      stored > 0 ? static_cast<double>(store_bytes) / static_cast<double>(stored) * 1e6 : NAN);
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::remove_all(checkpoints, ec);
  return 0;
}
