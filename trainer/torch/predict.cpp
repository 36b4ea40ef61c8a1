#include "trainer/torch/predict.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>

#include "storage/analysis.h"
#include "base/error.h"
#include "trainer/torch/distributed.h"

namespace tune::torch_dp {

LoadedModel load_model(const std::string& checkpoint_dir) {
  std::error_code ec;
  if (!std::filesystem::exists(checkpoint_dir + "/state.json", ec))
    throw NotFoundError("not a checkpoint directory (no state.json): " + checkpoint_dir);
  Json state = read_json_file(checkpoint_dir + "/state.json");
  if (state.is_discarded() || !state.is_object() || !state.contains("trainable") || !state["trainable"].is_string() ||
      !state.contains("config")) {
    throw Error(checkpoint_dir + "/state.json does not name its trainable and config (not written by a tune example?)");
  }
  LoadedModel loaded;
  loaded.trainable = state["trainable"].get<std::string>();
  loaded.config = state["config"];
  loaded.checkpoint = checkpoint_dir;
  loaded.model = make_model(loaded.trainable, loaded.config);
  load_checkpoint(checkpoint_dir, *loaded.model);
  loaded.model->eval();
  return loaded;
}

LoadedModel load_best_model(const std::string& storage, const std::string& experiment, const std::string& metric,
                            const std::string& mode) {
  const BestCheckpoint best = find_best_checkpoint(storage, experiment, metric, mode);
  LoadedModel loaded = load_model(best.path);
  loaded.trial_name = best.trial_name;
  loaded.metric = best.metric;
  loaded.score = best.score;
  return loaded;
}

Predictions predict(Classifier& model, const torch::Tensor& features, MPI_Comm comm, int64_t batch_size) {
  const int rank = rank_of(comm), size = size_of(comm);
  const int64_t n = features.size(0), begin = n * rank / size, end = n * (rank + 1) / size;
  torch::NoGradGuard no_grad;
  model.eval();
  std::vector<torch::Tensor> classes, confidence;
  for (int64_t b = begin; b < end; b += batch_size) {
    torch::Tensor probabilities = torch::softmax(model.forward(features.slice(0, b, std::min(end, b + batch_size))), 1);
    auto [best, index] = probabilities.max(1);
    classes.push_back(index);
    confidence.push_back(best);
  }
  torch::Tensor local_classes = classes.empty() ? torch::empty({0}, torch::kLong) : torch::cat(classes);
  torch::Tensor local_confidence = confidence.empty() ? torch::empty({0}) : torch::cat(confidence).contiguous();
  if (size == 1) return {local_classes, local_confidence};
  std::vector<int> counts(static_cast<size_t>(size)), displacements(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) {
    displacements[static_cast<size_t>(r)] = static_cast<int>(n * r / size);
    counts[static_cast<size_t>(r)] = static_cast<int>(n * (r + 1) / size - n * r / size);
  }
  Predictions all;
  if (rank == 0) {
    all.classes = torch::empty({n}, torch::kLong);
    all.confidence = torch::empty({n}, torch::kFloat32);
  }
  MPI_Gatherv(local_classes.data_ptr<int64_t>(), counts[static_cast<size_t>(rank)], MPI_INT64_T,
              rank == 0 ? all.classes.data_ptr<int64_t>() : nullptr, counts.data(), displacements.data(), MPI_INT64_T,
              0, comm);
  MPI_Gatherv(local_confidence.data_ptr<float>(), counts[static_cast<size_t>(rank)], MPI_FLOAT,
              rank == 0 ? all.confidence.data_ptr<float>() : nullptr, counts.data(), displacements.data(), MPI_FLOAT,
              0, comm);
  if (rank != 0) return {torch::empty({0}, torch::kLong), torch::empty({0})};
  return all;
}

data::Dataset read_prediction_input(const std::string& trainable, const std::string& input) {
  if (trainable == "fashion_mlp" || trainable == "fashion_cnn") {
    if (input == "fashion-mnist:test") return data::load_fashion_mnist("test");
    if (input == "fashion-mnist:train") return data::load_fashion_mnist("train");
    std::string labels = input;
    const auto at = labels.find("images-idx3");
    if (at != std::string::npos) labels.replace(at, 11, "labels-idx1");
    return data::load_idx_images(input, at != std::string::npos && std::filesystem::exists(labels) ? labels : "");
  }
  if (trainable == "taxi_tip") {
    if (input.rfind("taxi-trips:", 0) == 0) {
      char* end = nullptr;
      const long long n = std::strtoll(input.c_str() + 11, &end, 10);
      if (n < 1 || *end != '\0') throw ConfigError("tune predict: --input taxi-trips:N needs N >= 1, got '" + input + "'");
      return data::generate_taxi_trips(n, /*seed=*/2026);  // unseen by training (data_seed 0..)
    }
    return data::read_csv(input, data::taxi_feature_names(), "is_big_tip");
  }
  throw ConfigError("tune predict: no input reader for trainable '" + trainable +
                    "' (supported: fashion_mlp, fashion_cnn, taxi_tip)");
}

void check_predict_options(const PredictOptions& options) {
  if (options.input.empty()) throw ConfigError("tune predict: --input is required");
  if (options.output.empty()) throw ConfigError("tune predict: --output is required");
  if (options.workers < 1) throw ConfigError("tune predict: --workers must be >= 1");
  if (options.batch_size < 1) throw ConfigError("tune predict: --batch-size must be >= 1");
  if (options.experiment.empty() && options.checkpoint.empty()) {
    throw ConfigError("tune predict: give an experiment name or --checkpoint DIR");
  }
}

int predict_checkpoint_to_csv(const std::string& checkpoint_dir, const PredictOptions& options, std::ostream& out) {
  return predict_to_csv(load_model(checkpoint_dir), options, MPI_COMM_NULL, out);
}

std::string loadable_checkpoint(const std::string& checkpoint_dir) { return load_model(checkpoint_dir).checkpoint; }

int predict_as_rank(const PredictOptions& options, std::ostream& out) {
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  int code = 1;
  try {
    code = predict_to_csv(load_model(options.checkpoint), options, MPI_COMM_WORLD, out);
  } catch (const std::exception& e) {
    std::cerr << "tune predict (rank " << rank_of(MPI_COMM_WORLD) << "): " << e.what() << "\n";
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return code;
}

int predict_to_csv(const LoadedModel& loaded, const PredictOptions& options, MPI_Comm comm, std::ostream& out) {
  keep_freed_memory();
  torch::set_num_threads(1);
  const auto started = std::chrono::steady_clock::now();
  data::Dataset input = read_prediction_input(loaded.trainable, options.input);
  Predictions p = predict(*loaded.model, input.features, comm, options.batch_size);
  if (rank_of(comm) != 0) return 0;
  std::ofstream csv(options.output);
  if (!csv) throw Error("tune predict: cannot write " + options.output);
  csv << "row,prediction,confidence" << (input.labels.defined() ? ",label" : "") << "\n";
  const int64_t n = p.classes.size(0);
  auto classes = p.classes.accessor<int64_t, 1>();
  auto confidence = p.confidence.accessor<float, 1>();
  int64_t correct = 0;
  for (int64_t i = 0; i < n; ++i) {
    csv << i << "," << classes[i] << "," << std::setprecision(6) << confidence[i];
    if (input.labels.defined()) {
      const int64_t label = input.labels[i].item<int64_t>();
      csv << "," << label;
      correct += label == classes[i];
    }
    csv << "\n";
  }
  csv.close();
  if (!csv) throw Error("tune predict: cannot write " + options.output);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  out << "predicted " << n << " rows on " << size_of(comm) << " rank(s) in " << std::fixed << std::setprecision(2)
      << seconds << " s -> " << options.output;
  if (input.labels.defined() && n > 0) {
    out << "; accuracy " << std::setprecision(4) << static_cast<double>(correct) / static_cast<double>(n) << " ("
        << correct << "/" << n << ")";
  }
  out << "\n";
  return 0;
}

}  // namespace tune::torch_dp
