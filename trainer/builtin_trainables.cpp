// The built-in pure-function trainables: branin, hartmann6, zdt1 and synthetic.
#include <unistd.h>

#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <random>
#include <stdexcept>
#include <thread>

#include "base/error.h"
#include "trainer/session.h"
#include "trainer/test_functions.h"

namespace tune {
namespace {

double number(const Json& config, const char* key, double fallback) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return fallback;
  if (!it->is_number()) throw ConfigError(std::string("config '") + key + "' must be a number");
  return it->get<double>();
}

// Reports `value` plus noise that shrinks as 1/iteration, so every trial has a
// learning curve converging to the function's value. The noise stream is
// seeded by the trial index, so curves are reproducible.
void noisy_curve(Session& session, double value) {
  const Json& config = session.config();
  const int64_t iterations = static_cast<int64_t>(number(config, "iterations", 10));
  const double noise = number(config, "noise", 1.0);
  const double sleep_s = number(config, "sleep_s", 0.0);
  std::mt19937_64 rng(static_cast<uint64_t>(session.trial_index()) * 7919 + 17);
  std::normal_distribution<double> gauss(0, 1);
  for (int64_t i = 0; i < session.iteration(); ++i) gauss(rng);  // skip restored iterations
  for (int64_t i = session.iteration() + 1; i <= iterations; ++i) {
    if (sleep_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(sleep_s));
    session.report({{"loss", value + noise * gauss(rng) / static_cast<double>(i)},
                    {"value", value}});
  }
}

void branin_trainable(Session& session) {
  const Json& c = session.config();
  noisy_curve(session, test_functions::branin(number(c, "x0", 0), number(c, "x1", 0)));
}

void hartmann6_trainable(Session& session) {
  const Json& c = session.config();
  std::array<double, 6> x{};
  for (int i = 0; i < 6; ++i) x[i] = number(c, ("x" + std::to_string(i)).c_str(), 0.5);
  noisy_curve(session, test_functions::hartmann6(x));
}

// zdt1: two objectives (f1, f2) of x0..x{n-1} in [0, 1], n >= 2 (the
// config's consecutive x keys), reported once per iteration without noise:
// a multi-objective sweep's demo and test.
void zdt1_trainable(Session& session) {
  const Json& c = session.config();
  std::vector<double> x;
  while (c.contains("x" + std::to_string(x.size()))) {
    const std::string key = "x" + std::to_string(x.size());
    const double v = number(c, key.c_str(), 0);
    if (v < 0 || v > 1) throw ConfigError("config '" + key + "' must be in [0, 1]");
    x.push_back(v);
  }
  if (x.size() < 2) throw ConfigError("zdt1 needs parameters x0 and x1 (and optionally x2, x3, ...)");
  const auto [f1, f2] = test_functions::zdt1(x);
  const int64_t iterations = static_cast<int64_t>(number(c, "iterations", 1));
  for (int64_t i = session.iteration() + 1; i <= iterations; ++i) session.report({{"f1", f1}, {"f2", f2}});
}

// synthetic: a configurable curve for demos, tests and benchmarks.
//   iterations (10), sleep_s (0): per-report sleep, checkpoint (false): write a
//   checkpoint file every report, fail_at (0 = never): fail at that iteration
//   with fail_mode throw|exit|abort|nan, only while no checkpoint is restored
//   when fail_once is true (default), so a retry succeeds. hang_at (0 =
//   never): stop reporting before that iteration, as a deadlocked trainable
//   does: sleep hang_s seconds (default: forever), only while no checkpoint
//   is restored when hang_once is true (default); hang_rank (-1 = every rank):
//   only that rank sleeps (with 0, the others wait for it inside report()).
//   record_env (a directory): each rank writes the host and GPUs it was given
//   there. print_kb (0): print that many KB of lines to stdout an iteration,
//   as a trainable with a debug print in its loop does. checkpoint_mb (0):
//   each checkpoint also holds a file of that many MB.
// What a rank sees of its placement, for placement tests and debugging:
// DIR/trial_<index>_rank_<rank>.txt holds its host name, GPUs and pid, one
// block appended per attempt.
void record_environment(Session& session, const std::string& dir) {
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  const char* gpus = std::getenv("CUDA_VISIBLE_DEVICES");
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/trial_" + std::to_string(session.trial_index()) + "_rank_" + std::to_string(session.rank()) +
                    ".txt",
                std::ios::app)
      << "host=" << host << "\nCUDA_VISIBLE_DEVICES=" << (gpus ? gpus : "(unset)") << "\npid=" << ::getpid() << "\n";
}

void synthetic_trainable(Session& session) {
  const Json& c = session.config();
  const int64_t iterations = static_cast<int64_t>(number(c, "iterations", 10));
  const double sleep_s = number(c, "sleep_s", 0.0);
  const bool checkpoint = c.value("checkpoint", false);
  const int64_t fail_at = static_cast<int64_t>(number(c, "fail_at", 0));
  const std::string fail_mode = c.value("fail_mode", std::string("throw"));
  const bool fail_once = c.value("fail_once", true);
  const int64_t hang_at = static_cast<int64_t>(number(c, "hang_at", 0));
  const double hang_s = number(c, "hang_s", -1);
  const bool hang_once = c.value("hang_once", true);
  const int64_t hang_rank = static_cast<int64_t>(number(c, "hang_rank", -1));
  const double x = number(c, "x", 1.0);
  const int64_t print_kb = static_cast<int64_t>(number(c, "print_kb", 0));
  const int64_t checkpoint_mb = static_cast<int64_t>(number(c, "checkpoint_mb", 0));
  if (c.contains("record_env") && c["record_env"].is_string()) record_environment(session, c["record_env"]);
  double state = 0;
  if (session.checkpoint()) {
    std::ifstream in(session.checkpoint()->path + "/state.txt");
    in >> state;
  }
  for (int64_t i = session.iteration() + 1; i <= iterations; ++i) {
    if (sleep_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(sleep_s));
    if (i == hang_at && (!hang_once || !session.checkpoint()) && (hang_rank < 0 || hang_rank == session.rank())) {
      // A hang: nothing but the driver's result_timeout_s ends it.
      const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(hang_s);
      while (hang_s < 0 || std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (i == fail_at && (!fail_once || !session.checkpoint())) {
      if (fail_mode == "exit") std::_Exit(3);
      if (fail_mode == "abort") std::abort();
      if (fail_mode == "nan") {
        session.report({{"loss", std::nan("")}});
        return;
      }
      throw Error("synthetic failure at iteration " + std::to_string(i));
    }
    state += x;
    const double loss = x * x / static_cast<double>(i);
    if (print_kb > 0) {  // a chatty trainable: print_kb KB of lines on stdout an iteration
      const std::string line = "iteration " + std::to_string(i) + " " + std::string(1000, '.') + "\n";
      for (int64_t k = 0; k < print_kb; ++k) std::fwrite(line.data(), 1, line.size(), stdout);
      std::fflush(stdout);
    }
    if (checkpoint) {
      std::string dir = session.make_checkpoint_dir();
      if (session.rank() == 0) {
        // A checkpoint that was not written whole (a full disk) is an error,
        // never a stored checkpoint a restore would read as 0.
        std::ofstream out(dir + "/state.txt");
        out << std::setprecision(17) << state;
        out.close();
        if (!out) throw Error("cannot write " + dir + "/state.txt: " + std::strerror(errno));
        if (checkpoint_mb > 0) {  // weights of that size
          std::ofstream weights(dir + "/weights.bin", std::ios::binary);
          const std::string megabyte(1 << 20, '\0');
          for (int64_t k = 0; k < checkpoint_mb && weights; ++k) weights.write(megabyte.data(), megabyte.size());
          weights.close();
          if (!weights) throw Error("cannot write " + dir + "/weights.bin: " + std::strerror(errno));
        }
      }
      session.report({{"loss", loss}, {"state", state}}, dir);
    } else {
      session.report({{"loss", loss}, {"state", state}});
    }
  }
}

}  // namespace

void register_builtin_trainables() {
  static bool done = [] {
    register_trainable("branin", branin_trainable,
                       {true, "Branin function of x0, x1 with noise shrinking per iteration", {}});
    register_trainable("hartmann6", hartmann6_trainable,
                       {true, "Hartmann6 function of x0..x5 with noise shrinking per iteration", {}});
    register_trainable("zdt1", zdt1_trainable,
                       {true, "ZDT1: two objectives f1, f2 (both min) of x0..xN in [0, 1]", {}});
    register_trainable("synthetic", synthetic_trainable,
                       {true, "configurable curve for tests and benchmarks", {}});
    return true;
  }();
  (void)done;
}

}  // namespace tune
