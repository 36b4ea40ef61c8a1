#include "trainer/torch/datasets.h"

#include <zlib.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <ATen/CPUGeneratorImpl.h>

#include "base/error.h"

namespace tune::data {

Dataset Dataset::select(const torch::Tensor& index) const {
  return {features.index_select(0, index), labels.defined() ? labels.index_select(0, index) : torch::Tensor()};
}

Dataset Dataset::slice(int64_t begin, int64_t end) const {
  return {features.slice(0, begin, end), labels.defined() ? labels.slice(0, begin, end) : torch::Tensor()};
}

namespace {

// RAII for a zlib gzFile.
struct GzFile {
  gzFile file;
  explicit GzFile(const std::string& path) : file(gzopen(path.c_str(), "rb")) {}
  ~GzFile() {
    if (file) gzclose(file);
  }
  bool read(void* into, size_t bytes) {
    char* out = static_cast<char*>(into);
    while (bytes > 0) {
      const unsigned chunk = static_cast<unsigned>(std::min<size_t>(bytes, 1u << 30));
      const int got = gzread(file, out, chunk);
      if (got <= 0) return false;
      out += got;
      bytes -= static_cast<size_t>(got);
    }
    return true;
  }
};

uint32_t big_endian(const unsigned char* b) {
  return (uint32_t(b[0]) << 24) | (uint32_t(b[1]) << 16) | (uint32_t(b[2]) << 8) | uint32_t(b[3]);
}

constexpr double kFashionMean = 0.2860, kFashionStd = 0.3530;

}  // namespace

torch::Tensor read_idx(const std::string& path) {
  if (!std::filesystem::exists(path)) throw Error("IDX file not found: " + path);
  GzFile in(path);
  if (!in.file) throw Error("cannot open IDX file " + path);
  unsigned char magic[4];
  if (!in.read(magic, 4)) throw Error("IDX file " + path + " is empty or not gzip/IDX");
  if (magic[0] != 0 || magic[1] != 0 || magic[2] != 0x08 || magic[3] < 1 || magic[3] > 4) {
    throw Error("IDX file " + path + ": bad magic (expected unsigned-byte data, 1-4 dims)");
  }
  std::vector<int64_t> shape;
  int64_t total = 1;
  for (int i = 0; i < magic[3]; ++i) {
    unsigned char b[4];
    if (!in.read(b, 4)) throw Error("IDX file " + path + ": truncated header");
    shape.push_back(big_endian(b));
    total *= shape.back();
  }
  torch::Tensor out = torch::empty(shape, torch::kUInt8);
  if (total > 0 && !in.read(out.data_ptr<uint8_t>(), static_cast<size_t>(total))) {
    throw Error("IDX file " + path + ": truncated data (expected " + std::to_string(total) + " bytes)");
  }
  return out;
}

std::string fashion_mnist_dir() {
  const char* env = std::getenv("TUNE_FASHION_MNIST_DIR");
  return env && *env ? env : "/usr/share/datasets/fashion-mnist";
}

Dataset load_idx_images(const std::string& images_path, const std::string& labels_path) {
  torch::Tensor images = read_idx(images_path);
  if (images.dim() != 3) throw Error("IDX file " + images_path + ": expected N x H x W images");
  Dataset out;
  out.features = ((images.to(torch::kFloat32) / 255.0 - kFashionMean) / kFashionStd).unsqueeze(1).contiguous();
  if (!labels_path.empty()) {
    torch::Tensor labels = read_idx(labels_path);
    if (labels.dim() != 1 || labels.size(0) != images.size(0)) {
      throw Error("IDX file " + labels_path + ": expected " + std::to_string(images.size(0)) + " labels");
    }
    out.labels = labels.to(torch::kLong);
  }
  return out;
}

Dataset load_fashion_mnist(const std::string& split, const std::string& dir_in) {
  if (split != "train" && split != "test") {
    throw ConfigError("Fashion-MNIST split must be train or test, got '" + split + "'");
  }
  const std::string dir = dir_in.empty() ? fashion_mnist_dir() : dir_in;
  const std::string prefix = dir + "/" + (split == "train" ? "train" : "t10k");
  const std::string images = prefix + "-images-idx3-ubyte.gz", labels = prefix + "-labels-idx1-ubyte.gz";
  for (const auto& path : {images, labels}) {
    if (!std::filesystem::exists(path)) {
      throw Error("Fashion-MNIST not found: " + path +
                               " is missing; install it with `apt-get install dataset-fashion-mnist` "
                               "(or set TUNE_FASHION_MNIST_DIR)");
    }
  }
  return load_idx_images(images, labels);
}

const char* const kFashionClasses[10] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                         "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};

const std::vector<std::string>& taxi_feature_names() {
  static const std::vector<std::string> names = {"passenger_count", "trip_distance", "fare_amount",
                                                 "trip_duration",   "hour",          "day_of_week"};
  return names;
}

Dataset generate_taxi_trips(int64_t n, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  auto normal = [&](double mean, double std) { return torch::randn({n}, gen, torch::kFloat64) * std + mean; };
  auto uniform = [&]() { return torch::rand({n}, gen, torch::kFloat64); };
  // Mostly single passengers, up to 6.
  torch::Tensor passengers = torch::clamp(torch::floor(-torch::log(uniform()) * 1.2) + 1, 1, 6);
  torch::Tensor distance = torch::exp(normal(0.7, 0.8));                        // miles
  torch::Tensor duration = distance * 3.5 + torch::abs(normal(4, 4)) + 1;       // minutes
  torch::Tensor fare = 2.5 + 2.5 * distance + 0.3 * duration + torch::abs(normal(0, 1));
  torch::Tensor hour = torch::floor(uniform() * 24);
  torch::Tensor day = torch::floor(uniform() * 7);
  const double pi = 3.14159265358979323846;
  torch::Tensor logit = 2.2 - 0.45 * passengers - 0.09 * fare + 0.35 * torch::log(distance + 0.1) +
                        1.3 * torch::cos(2 * pi * (hour - 22) / 24) + 0.8 * (day >= 5).to(torch::kFloat64);
  torch::Tensor label = (uniform() < torch::sigmoid(3 * logit)).to(torch::kLong);
  Dataset out;
  out.features = torch::stack({passengers, distance, fare, duration, hour, day}, 1).to(torch::kFloat32).contiguous();
  out.labels = label;
  return out;
}

Dataset read_csv(const std::string& path, const std::vector<std::string>& feature_names,
                 const std::string& label_column) {
  std::ifstream in(path);
  if (!in) throw Error("cannot open CSV file " + path);
  auto split = [](const std::string& line) {
    std::vector<std::string> cells;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) {
      while (!cell.empty() && (cell.back() == '\r' || cell.back() == ' ')) cell.pop_back();
      while (!cell.empty() && cell.front() == ' ') cell.erase(cell.begin());
      cells.push_back(cell);
    }
    return cells;
  };
  std::string line;
  if (!std::getline(in, line)) throw Error(path + ":1: empty CSV file (a header row is needed)");
  const auto header = split(line);
  std::vector<int> columns;
  for (const auto& name : feature_names) {
    auto it = std::find(header.begin(), header.end(), name);
    if (it == header.end()) throw Error(path + ":1: missing column '" + name + "'");
    columns.push_back(static_cast<int>(it - header.begin()));
  }
  auto label_it = std::find(header.begin(), header.end(), label_column);
  const int label = label_it == header.end() ? -1 : static_cast<int>(label_it - header.begin());
  std::vector<float> values;
  std::vector<int64_t> labels;
  int64_t line_number = 1;
  auto number = [&](const std::vector<std::string>& cells, int column) {
    if (column >= static_cast<int>(cells.size())) {
      throw Error(path + ":" + std::to_string(line_number) + ": too few columns");
    }
    const std::string& cell = cells[static_cast<size_t>(column)];
    char* end = nullptr;
    const double v = std::strtod(cell.c_str(), &end);
    if (cell.empty() || *end != '\0' || !std::isfinite(v)) {
      throw Error(path + ":" + std::to_string(line_number) + ": column '" + header[static_cast<size_t>(column)] +
                               "' is not a finite number: '" + cell + "'");
    }
    return v;
  };
  while (std::getline(in, line)) {
    ++line_number;
    if (line.empty() || line == "\r") continue;
    const auto cells = split(line);
    for (int c : columns) values.push_back(static_cast<float>(number(cells, c)));
    if (label >= 0) labels.push_back(static_cast<int64_t>(number(cells, label)));
  }
  Dataset out;
  const int64_t rows = static_cast<int64_t>(values.size() / std::max<size_t>(1, feature_names.size()));
  out.features = torch::tensor(values, torch::kFloat32).reshape({rows, static_cast<int64_t>(feature_names.size())});
  if (label >= 0) out.labels = torch::tensor(labels, torch::kLong);
  return out;
}

void write_csv(const std::string& path, const Dataset& data, const std::vector<std::string>& feature_names,
               const std::string& label_column) {
  std::ofstream out(path);
  if (!out) throw Error("cannot write CSV file " + path);
  for (size_t i = 0; i < feature_names.size(); ++i) out << (i ? "," : "") << feature_names[i];
  if (data.labels.defined()) out << "," << label_column;
  out << "\n";
  out.precision(9);  // float32 round-trips exactly
  auto f = data.features.contiguous();
  const float* p = f.data_ptr<float>();
  const int64_t cols = f.size(1);
  for (int64_t r = 0; r < f.size(0); ++r) {
    for (int64_t c = 0; c < cols; ++c) out << (c ? "," : "") << p[r * cols + c];
    if (data.labels.defined()) out << "," << data.labels[r].item<int64_t>();
    out << "\n";
  }
  if (!out) throw Error("cannot write CSV file " + path);
}

}  // namespace tune::data
