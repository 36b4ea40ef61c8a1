#include "tuner/cli/tabular_cli.h"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <tuple>
#include <utility>

#include <boost/program_options.hpp>

#include "base/error.h"
#include "storage/analysis.h"
#include "trainer/tabular/model.h"
#include "trainer/tabular/table.h"
#include "tuner/serve/serve.h"

namespace tune::cli {
namespace {

namespace fs = std::filesystem;
namespace po = boost::program_options;

}  // namespace

ChosenCheckpoint choose_checkpoint(const ModelChoice& choice) {
  ChosenCheckpoint chosen;
  if (!choice.checkpoint.empty()) {
    if (!fs::is_directory(choice.checkpoint)) throw NotFoundError("no checkpoint directory " + choice.checkpoint);
    chosen.path = choice.checkpoint;
    return chosen;
  }
  if (choice.experiment.empty()) throw ConfigError("give an experiment name or --checkpoint DIR");
  static_cast<BestCheckpoint&>(chosen) =
      find_best_checkpoint(choice.storage, choice.experiment, choice.metric, choice.mode);
  chosen.experiment = choice.experiment;
  return chosen;
}

int predict_tabular(const ChosenCheckpoint& chosen, const std::string& input, const std::string& output,
                    std::ostream& out) {
  const auto started = std::chrono::steady_clock::now();
  const tabular::LoadedModel model = tabular::load_model(chosen.path);
  const tabular::Table rows = tabular::read_csv(input);
  const std::string partial = output + ".partial";
  double score = 0;
  {
    std::ofstream csv(partial);
    if (!csv) throw Error("tune predict: cannot write " + output);
    score = tabular::write_predictions_csv(model, rows, csv);
    if (!csv.flush()) throw Error("tune predict: cannot write " + output);
  }
  fs::rename(partial, output);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  out << "predicted " << rows.rows() << " rows with " << model.trainable << " in " << std::fixed
      << std::setprecision(2) << seconds << " s -> " << output;
  if (!std::isnan(score)) {
    out << "; " << (model.schema.task == "regression" ? "rmse " : "accuracy ") << std::setprecision(4) << score
        << " against " << model.schema.label;
  }
  out << "\n";
  return 0;
}

int serve_command(const std::vector<std::string>& args) {
  ModelChoice choice;
  ServeOptions serve;
  double request_timeout_s = serve.request_timeout.count() / 1000.0, idle_timeout_s = serve.idle_timeout.count() / 1000.0;
  auto max_instances = static_cast<int64_t>(serve.max_instances), max_connections = static_cast<int64_t>(serve.max_connections),
       max_per_client = static_cast<int64_t>(serve.max_connections_per_client);
  po::options_description options("options");
  options.add_options()("experiment", po::value(&choice.experiment), "experiment whose best checkpoint is served")(
      "storage", po::value(&choice.storage)->default_value(choice.storage), "results directory")(
      "checkpoint", po::value(&choice.checkpoint), "serve this checkpoint directory instead of the best trial's")(
      "metric", po::value(&choice.metric), "select the best trial by this metric (default: the experiment's)")(
      "mode", po::value(&choice.mode), "min or max (default: the experiment's)")(
      "host", po::value(&serve.host)->default_value(serve.host), "address to listen on (beyond loopback needs --token)")(
      "port", po::value(&serve.port)->default_value(serve.port), "port (0: any free port)")(
      "token", po::value(&serve.token), "bearer token clients must send (default: $TUNE_SERVE_TOKEN)")(
      "max-body-bytes", po::value(&serve.max_body_bytes)->default_value(serve.max_body_bytes), "largest request body")(
      "threads", po::value(&serve.threads)->default_value(serve.threads), "server threads (0: one per core, >= 2)")(
      "max-instances", po::value(&max_instances)->default_value(max_instances), "most instances in one request")(
      "max-connections", po::value(&max_connections)->default_value(max_connections),
      "connections open at once, from all clients")(
      "max-connections-per-client", po::value(&max_per_client)->default_value(max_per_client),
      "connections open at once from one client address (IPv6: one /64)")(
      "request-timeout", po::value(&request_timeout_s)->default_value(request_timeout_s),
      "seconds a request may take to arrive whole, and its answer to be taken")(
      "idle-timeout", po::value(&idle_timeout_s)->default_value(idle_timeout_s),
      "seconds a connection with no request in progress stays open")(
      "help,h", "show this help");
  po::positional_options_description positionals;
  positionals.add("experiment", 1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(options).positional(positionals).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << "usage: tune serve EXP [OPTIONS]\n" << options;
    return 0;
  }
  if (serve.token.empty()) {
    if (const char* token = std::getenv("TUNE_SERVE_TOKEN")) serve.token = token;
  }
  for (const auto& [flag, seconds] : {std::pair<const char*, double>{"--request-timeout", request_timeout_s},
                                      std::pair<const char*, double>{"--idle-timeout", idle_timeout_s}}) {
    if (!(seconds >= 0.001 && seconds <= 86400))
      throw ConfigError(std::string("tune serve: ") + flag + " must be a number of seconds in [0.001, 86400]");
  }
  for (const auto& [flag, value, most] : {std::tuple<const char*, int64_t, int64_t>{"--max-instances", max_instances, 10000000},
                                         {"--max-connections", max_connections, 1000000},
                                         {"--max-connections-per-client", max_per_client, 1000000}}) {
    if (value < 1 || value > most)
      throw ConfigError(std::string("tune serve: ") + flag + " must be a whole number in [1, " + std::to_string(most) + "]");
  }
  serve.max_instances = static_cast<size_t>(max_instances);
  serve.max_connections = static_cast<size_t>(max_connections);
  serve.max_connections_per_client = static_cast<size_t>(max_per_client);
  serve.request_timeout = std::chrono::milliseconds(std::llround(request_timeout_s * 1000));
  serve.idle_timeout = std::chrono::milliseconds(std::llround(idle_timeout_s * 1000));
  const ChosenCheckpoint chosen = choose_checkpoint(choice);
  auto model = std::make_shared<const tabular::LoadedModel>(tabular::load_model(chosen.path));
  ServedModel served;
  served.name = chosen.experiment.empty() ? fs::path(chosen.path).parent_path().parent_path().filename().string()
                                          : chosen.experiment;
  Json features = Json::array();
  for (const auto& column : model->schema.pipeline.input_schema()) {
    features.push_back({{"name", column.name},
                        {"type", column.kind == tabular::Kind::kNumeric ? "number" : "string"}});
  }
  served.metadata = {{"trainable", model->trainable}, {"task", model->schema.task},
                     {"label", model->schema.label},   {"features", features},
                     {"checkpoint", chosen.path},      {"config", model->config}};
  if (!model->schema.classes.empty()) served.metadata["classes"] = model->schema.classes;
  if (!chosen.trial_name.empty()) {
    served.metadata["trial"] = chosen.trial_name;
    served.metadata["metric"] = {{"name", chosen.metric}, {"value", chosen.score}};
  }
  served.predict = [model](const Json& instances) {
    return tabular::predict_json(*model, tabular::table_from_json(instances, model->schema.pipeline.input_schema()));
  };
  return serve_until_signal(std::move(served), serve, std::cout);
}

}  // namespace tune::cli
