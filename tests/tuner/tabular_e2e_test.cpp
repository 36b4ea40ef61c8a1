// End-to-end: a user's CSV through a sweep, `tune predict` and `tune serve`,
// as a user runs them (the tune CLI; HTTP on 127.0.0.1 only).
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <sstream>
#include <thread>

#include "test_util.h"

extern char** environ;

namespace tune {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using testing::run_tune;
using testing::TempDir;

// 400 rows: y is "yes" mostly when 2*x1 + (color == red) - x2 > 0.5; x2 has
// missing cells (imputed), color is categorical (one-hot encoded).
std::string write_data(const TempDir& dir, int rows = 400) {
  std::mt19937_64 rng(11);
  std::normal_distribution<double> normal(0, 1);
  const char* colors[] = {"red", "green", "blue"};
  std::ostringstream csv;
  csv << "x1,x2,color,y\n";
  for (int i = 0; i < rows; ++i) {
    const double x1 = normal(rng), x2 = normal(rng), noise = 0.3 * normal(rng);
    const std::string color = colors[i % 3];
    const bool yes = 2 * x1 + (color == "red" ? 1.0 : 0.0) - x2 + noise > 0.5;
    csv << x1 << ",";
    if (i % 37 != 5) csv << x2;
    csv << "," << color << "," << (yes ? "yes" : "no") << "\n";
  }
  return dir.write("data.csv", csv.str());
}

const char* kPreprocess =
    "preprocess:\n"
    "  - {simple_imputer: {columns: [x2], strategy: mean}}\n"
    "  - {standard_scaler: [x1, x2]}\n"
    "  - {one_hot: [color]}\n";

std::string xgboost_sweep(const std::string& name) {
  return "name: " + name +
         "\ntrainable: xgboost\nmetric: val_loss\nmode: min\nnum_samples: 4\nmax_concurrent_trials: 2\n"
         "search: {algorithm: random, seed: 4}\n"
         "scheduler: {type: asha, max_t: 30, grace_period: 3, reduction_factor: 2}\n"
         "data: {path: data.csv, label: y, task: classification, valid_fraction: 0.25, seed: 1}\n" +
         std::string(kPreprocess) +
         "param_space:\n  eta: {loguniform: [0.05, 0.5]}\n  max_depth: {randint: [2, 5]}\n  num_boost_round: 30\n";
}

// The rows of a CSV as {column: text}.
std::vector<std::map<std::string, std::string>> read_rows(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  std::vector<std::string> header;
  std::stringstream h(line);
  for (std::string cell; std::getline(h, cell, ',');) header.push_back(cell);
  std::vector<std::map<std::string, std::string>> rows;
  while (std::getline(in, line)) {
    std::map<std::string, std::string> row;
    std::stringstream s(line);
    size_t i = 0;
    for (std::string cell; i < header.size(); ++i) {
      if (!std::getline(s, cell, ',')) cell.clear();
      row[header[i]] = cell;
    }
    rows.push_back(row);
  }
  return rows;
}

// `tune serve ...` as a child process, its output in a file; the port is
// read from its "serving ... at http://127.0.0.1:PORT/..." line.
class ServeProcess {
 public:
  ServeProcess(const std::vector<std::string>& args, const std::string& log) : log_(log) {
    std::vector<std::string> argv = {TUNE_BINARY, "serve"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> raw;
    for (auto& a : argv) raw.push_back(a.data());
    raw.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    EXPECT_EQ(posix_spawn(&pid_, TUNE_BINARY, &actions, nullptr, raw.data(), environ), 0);
    posix_spawn_file_actions_destroy(&actions);
    const std::regex url("http://127\\.0\\.0\\.1:([0-9]+)/");
    for (int i = 0; i < 600 && port_ == 0; ++i) {  // up to 60 s: the CLI loads libtorch
      std::ifstream in(log);
      std::stringstream text;
      text << in.rdbuf();
      std::smatch match;
      const std::string s = text.str();
      if (std::regex_search(s, match, url)) port_ = std::stoi(match[1]);
      else if (exited()) break;
      else std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  ~ServeProcess() {
    if (pid_ > 0 && status_ < 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  int port() const { return port_; }
  std::string log() const {
    std::ifstream in(log_);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  // SIGTERM, then the exit status (-1 if it did not end within 10 s).
  int terminate() {
    kill(pid_, SIGTERM);
    for (int i = 0; i < 100 && !exited(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return status_ >= 0 && WIFEXITED(status_) ? WEXITSTATUS(status_) : -1;
  }

 private:
  bool exited() {
    if (status_ >= 0) return true;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) status_ = status;
    return status_ >= 0;
  }
  std::string log_;
  pid_t pid_ = -1;
  int port_ = 0;
  int status_ = -1;
};

Json instance_of(const std::map<std::string, std::string>& row) {
  Json instance = {{"color", row.at("color")}, {"x1", std::stod(row.at("x1"))}};
  instance["x2"] = row.at("x2").empty() ? Json(nullptr) : Json(std::stod(row.at("x2")));
  return instance;
}

TEST(TabularE2E, AnXgboostSweepOnACsvPredictsAndServesTheSameProbabilities) {
  TempDir dir;
  const std::string data = write_data(dir);
  dir.write("sweep.yaml", xgboost_sweep("churny"));
  const std::string storage = dir.file("results");
  auto run = run_tune("run " + dir.file("sweep.yaml") + " --storage " + storage + " --slots 2 --quiet");
  ASSERT_EQ(run.exit_code, 0) << run.err;

  // One result per boosting round; the best trial learnt the rule.
  auto trials = run_tune("trials churny --storage " + storage + " --json");
  ASSERT_EQ(trials.exit_code, 0) << trials.err;
  auto best = run_tune("best churny --storage " + storage + " --json");
  ASSERT_EQ(best.exit_code, 0) << best.err;
  const Json best_json = Json::parse(best.out);
  EXPECT_GT(best_json["metrics"]["val_accuracy"].get<double>(), 0.8) << best.out;
  EXPECT_EQ(best_json["metrics"]["round"], best_json["metrics"]["training_iteration"]);

  // The store moves; predict and serve still find the best checkpoint.
  const std::string moved = dir.file("moved");
  fs::rename(storage, moved);
  auto predict = run_tune("predict churny --storage " + moved + " --input " + data + " --output " +
                          dir.file("preds.csv"));
  ASSERT_EQ(predict.exit_code, 0) << predict.err;
  EXPECT_NE(predict.out.find("predicted 400 rows with xgboost"), std::string::npos) << predict.out;
  EXPECT_NE(predict.out.find("accuracy 0."), std::string::npos) << predict.out;
  const auto predictions = read_rows(dir.file("preds.csv"));
  ASSERT_EQ(predictions.size(), 400u);
  EXPECT_EQ(predictions[0].count("p_no") + predictions[0].count("p_yes") + predictions[0].count("y"), 3u);

  ServeProcess serve({"churny", "--storage", moved, "--port", "0"}, dir.file("serve.log"));
  ASSERT_GT(serve.port(), 0) << serve.log();
  httplib::Client client("127.0.0.1", serve.port());
  const auto rows = read_rows(data);
  Json instances = Json::array();
  for (int i = 0; i < 40; ++i) instances.push_back(instance_of(rows[static_cast<size_t>(i)]));
  auto response = client.Post("/v1/models/churny:predict", Json{{"instances", instances}}.dump(), "application/json");
  ASSERT_TRUE(response);
  ASSERT_EQ(response->status, 200) << response->body;
  const Json served = Json::parse(response->body)["predictions"];
  ASSERT_EQ(served.size(), 40u);
  for (size_t i = 0; i < served.size(); ++i) {
    EXPECT_EQ(served[i]["label"], predictions[i].at("prediction")) << i;
    EXPECT_NEAR(served[i]["probabilities"]["yes"].get<double>(), std::stod(predictions[i].at("p_yes")), 1e-5) << i;
  }
  auto metadata = client.Get("/v1/models/churny");
  ASSERT_TRUE(metadata);
  const Json meta = Json::parse(metadata->body);
  EXPECT_EQ(meta["task"], "classification");
  EXPECT_EQ(meta["classes"], (Json{"no", "yes"}));
  EXPECT_EQ(meta["trial"], best_json["trial_name"]) << metadata->body;

  auto bad = client.Post("/v1/models/churny:predict", R"({"instances": [{"x1": 1, "x3": 2, "color": "red"}]})",
                         "application/json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_NE(bad->body.find("unknown feature 'x3'"), std::string::npos) << bad->body;
  auto text = client.Post("/v1/models/churny:predict", R"({"instances": [{"x1": "tall", "x2": 0, "color": "red"}]})",
                          "application/json");
  ASSERT_TRUE(text);
  EXPECT_EQ(text->status, 400) << text->body;
  // An unseen category is one-hot all zeros, not an error.
  auto unseen = client.Post("/v1/models/churny:predict", R"({"instances": [{"x1": 1, "x2": 0, "color": "mauve"}]})",
                            "application/json");
  ASSERT_TRUE(unseen);
  EXPECT_EQ(unseen->status, 200) << unseen->body;
  EXPECT_EQ(serve.terminate(), 0) << serve.log();

  // The server's limits are flags. A connection that sends nothing is closed
  // after --idle-timeout (0.5 s here; the default, 5 s, would outlast the
  // 4 s this client waits).
  ServeProcess quick({"churny", "--storage", moved, "--port", "0", "--idle-timeout", "0.5", "--request-timeout", "2",
                      "--max-connections", "64", "--max-connections-per-client", "8", "--max-instances", "100"},
                     dir.file("serve_quick.log"));
  ASSERT_GT(quick.port(), 0) << quick.log();
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(quick.port()));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  timeval wait{4, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
  char byte = 0;
  EXPECT_EQ(::recv(fd, &byte, 1, 0), 0) << "the idle connection was not closed within 4 s";
  ::close(fd);
  // --max-instances 100: a request with 101 is refused with 400.
  Json many = {{"instances", Json::array()}};
  for (int i = 0; i < 101; ++i) many["instances"].push_back({{"x1", 1}, {"x2", 0}, {"color", "red"}});
  httplib::Client quick_client("127.0.0.1", quick.port());
  auto refused = quick_client.Post("/v1/models/churny:predict", many.dump(), "application/json");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 400) << refused->body;
  EXPECT_EQ(quick.terminate(), 0) << quick.log();
  // A bad value is one line and exit status 2, before anything is loaded.
  for (const std::string& flag : {"--idle-timeout 0", "--request-timeout nan", "--max-connections 0",
                                  "--max-connections-per-client -1", "--max-instances 0"}) {
    auto bad_flag = run_tune("serve churny --storage " + moved + " --port 0 " + flag);
    EXPECT_EQ(bad_flag.exit_code, 2) << flag << ": " << bad_flag.err;
    EXPECT_NE(bad_flag.err.find(flag.substr(0, flag.find(' '))), std::string::npos) << bad_flag.err;
    EXPECT_EQ(std::count(bad_flag.err.begin(), bad_flag.err.end(), '\n'), 1) << bad_flag.err;
  }
}

TEST(TabularE2E, XgboostTrialsPausedByAshaBoostOnFromTheirCheckpoints) {
  TempDir dir;
  write_data(dir);
  std::string sweep = xgboost_sweep("promoted");
  sweep.replace(sweep.find("reduction_factor: 2}"), 20, "reduction_factor: 2, promotion: true}");
  sweep += "  checkpoint_interval: 1\n";
  dir.write("sweep.yaml", sweep);
  const std::string storage = dir.file("results");
  auto run = run_tune("run " + dir.file("sweep.yaml") + " --storage " + storage + " --slots 2 --quiet");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto results = run_tune("results promoted --storage " + storage + " --json");
  ASSERT_EQ(results.exit_code, 0) << results.err;
  // Every trial's rounds are 1, 2, ... with no gap or repeat across pauses.
  // In promotion mode every trial pauses at each rung (3, 6, 12) until
  // promoted: one past 3 rounds was restored from its checkpoint at least
  // once, and the best of 4 reaches rung 12 (a rung promotes 1 of 2); once
  // the searcher is done, backfill may take trials further (up to max_t 30)
  // in slots that would idle, from their checkpoints too.
  std::map<int64_t, std::vector<int64_t>> rounds;
  for (const Json& row : Json::parse(results.out)) {
    const Json& metrics = row.contains("metrics") ? row["metrics"] : row;
    rounds[row.value("trial_index", int64_t{-1})].push_back(metrics["round"].get<int64_t>());
  }
  ASSERT_EQ(rounds.size(), 4u) << results.out.substr(0, 400);
  size_t longest = 0;
  for (const auto& [trial, seen] : rounds) {
    for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], static_cast<int64_t>(i) + 1) << "trial " << trial;
    longest = std::max(longest, seen.size());
  }
  EXPECT_GE(longest, 12u);
  EXPECT_LE(longest, 30u);
}

TEST(TabularE2E, BadDataIsRefusedAtItsLineBeforeAnyTrial) {
  TempDir dir;
  write_data(dir, 60);
  dir.write("ragged.csv", "a,b,y\n1,2,yes\n3,4\n5,6,no\n");
  dir.write("one_class.csv", "a,b,y\n1,2,yes\n3,4,yes\n5,6,yes\n7,8,yes\n");
  dir.write("empty.csv", "");
  const std::string head = "name: bad\ntrainable: xgboost\nmetric: val_loss\nmode: min\nparam_space: {eta: 0.1}\n";
  struct Case {
    std::string yaml, expected;
  };
  const std::vector<Case> cases = {
      {head + "data: {path: data.csv, label: why}\n", "sweep.yaml:6: "},
      {head + "data: {path: data.csv, label: y}\npreprocess:\n  - {standard_scaler: [x1, colour]}\n", "sweep.yaml:8: "},
      {head + "data: {path: data.csv, label: y}\npreprocess:\n  - {scaler: [x1]}\n", "sweep.yaml:8: "},
      {head + "data: {path: ragged.csv, label: y}\n", "ragged.csv:3: "},
      {head + "data: {path: one_class.csv, label: y}\n", "one class"},
      {head + "data: {path: empty.csv, label: y}\n", "empty.csv"},
      {head + "data: {path: missing.csv, label: y}\n", "missing.csv"},
      {head + "data: {path: data.csv, label: y, task: clustering}\n", "sweep.yaml:6: "},
  };
  for (const auto& c : cases) {
    dir.write("sweep.yaml", c.yaml);
    auto run = run_tune("run " + dir.file("sweep.yaml") + " --storage " + dir.file("results") + " --quiet");
    EXPECT_EQ(run.exit_code, 2) << c.yaml << run.err;
    EXPECT_NE(run.err.find(c.expected), std::string::npos) << c.yaml << run.err;
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
    EXPECT_FALSE(fs::exists(dir.file("results/bad"))) << c.yaml;
  }
}

#ifdef TUNE_TEST_WITH_TORCH
TEST(TabularE2E, ATabularMlpTrainsDataParallelAndPredictsItsCsv) {
  TempDir dir;
  const std::string data = write_data(dir);
  dir.write("sweep.yaml", "name: mlp\ntrainable: tabular_mlp\nmetric: val_accuracy\nmode: max\nnum_samples: 1\n"
                          "data: {path: data.csv, label: y, valid_fraction: 0.25}\n" +
                              std::string(kPreprocess) +
                              "param_space: {width: 16, layers: 1, lr: 0.01, epochs: 6, batch_size: 16}\n"
                              "resources: {workers: 2}\n");
  auto run = run_tune("run " + dir.file("sweep.yaml") + " --storage " + dir.file("results") + " --slots 2 --quiet");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto best = run_tune("best mlp --storage " + dir.file("results") + " --json");
  ASSERT_EQ(best.exit_code, 0) << best.err;
  const Json metrics = Json::parse(best.out)["metrics"];
  EXPECT_EQ(metrics["world_size"], 2);
  EXPECT_GT(metrics["val_accuracy"].get<double>(), 0.8) << best.out;
  auto predict = run_tune("predict mlp --storage " + dir.file("results") + " --input " + data + " --output " +
                          dir.file("preds.csv"));
  ASSERT_EQ(predict.exit_code, 0) << predict.err;
  EXPECT_NE(predict.out.find("with tabular_mlp"), std::string::npos) << predict.out;
  const auto predictions = read_rows(dir.file("preds.csv"));
  ASSERT_EQ(predictions.size(), 400u);
  double total = 0;
  for (const auto& p : predictions) total += std::stod(p.at("p_no")) + std::stod(p.at("p_yes"));
  EXPECT_NEAR(total / 400, 1.0, 1e-4);
}
#endif

}  // namespace
}  // namespace tune
