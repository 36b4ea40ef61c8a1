// Datasets for the example trainables: Fashion-MNIST from gzipped IDX files,
// and generated taxi trips (the schema of the Ray Train taxi-tip example).
//
//   auto train = tune::data::load_fashion_mnist("train");   // 60,000 x 1 x 28 x 28
//   auto test = tune::data::load_fashion_mnist("test");     // 10,000
//   auto trips = tune::data::generate_taxi_trips(5000, /*seed=*/1);
//
// Failures (missing file, bad magic, truncated data) throw tune::Error
// with a one-line message naming the file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace tune::data {

struct Dataset {
  torch::Tensor features;  // float32, N x ...
  torch::Tensor labels;    // int64, N (undefined when unknown)
  int64_t size() const { return features.defined() ? features.size(0) : 0; }
  // Rows `index` (int64) of both tensors.
  Dataset select(const torch::Tensor& index) const;
  Dataset slice(int64_t begin, int64_t end) const;
};

// Reads a gzipped (or plain) IDX file (the MNIST format: magic 0x0000TTDD,
// big-endian dims, then data) of unsigned bytes into a uint8 tensor of its
// shape. zlib reads both gzipped and uncompressed files.
torch::Tensor read_idx(const std::string& path);

// Where Fashion-MNIST is read from: $TUNE_FASHION_MNIST_DIR if set, else
// /usr/share/datasets/fashion-mnist (Debian's dataset-fashion-mnist).
std::string fashion_mnist_dir();

// split: "train" (60,000) or "test" (10,000). Images as float32 N x 1 x 28 x 28,
// scaled to [0, 1] then normalized with the training set's mean 0.2860 and
// std 0.3530. Throws with the apt-get command when the files are missing.
Dataset load_fashion_mnist(const std::string& split, const std::string& dir = "");

// Reads images (and labels if `labels_path` is not empty) from IDX files,
// normalized as load_fashion_mnist.
Dataset load_idx_images(const std::string& images_path, const std::string& labels_path = "");

extern const char* const kFashionClasses[10];

// Taxi trips: six numeric features (passenger_count, trip_distance,
// fare_amount, trip_duration, hour, day_of_week) and a binary label
// is_big_tip (tip > 20% of the fare), drawn from a fixed logistic model of
// the features so that a classifier can learn it (~80% is reachable).
// Deterministic for a seed.
const std::vector<std::string>& taxi_feature_names();
Dataset generate_taxi_trips(int64_t n, uint64_t seed);

// Reads a CSV file with a header: the columns `feature_names` (in any order,
// other columns ignored) become features; `label_column`, if present, the
// labels. Throws with file:line for a missing column or a non-numeric cell.
Dataset read_csv(const std::string& path, const std::vector<std::string>& feature_names,
                 const std::string& label_column);
// Writes `data` as CSV with the given feature names (and label_column if labels are defined).
void write_csv(const std::string& path, const Dataset& data, const std::vector<std::string>& feature_names,
               const std::string& label_column);

}  // namespace tune::data
