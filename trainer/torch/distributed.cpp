#include "trainer/torch/distributed.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "base/error.h"
#include "trainer/torch/shared_memory_allreduce.h"

namespace tune::torch_dp {

namespace {
// Communicators are usable only between MPI_Init and MPI_Finalize; outside
// (single-process tools, unit tests) every helper acts as one rank.
bool mpi_active(MPI_Comm comm) {
  if (comm == MPI_COMM_NULL) return false;
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}
}  // namespace

torch::Device training_device(const Json& config) {
  std::string want = "auto";
  if (config.is_object() && config.contains("device")) {
    if (!config["device"].is_string()) throw ConfigError("config 'device' must be auto, cpu or cuda");
    want = config["device"].get<std::string>();
  }
  if (want == "cpu") return torch::kCPU;
  if (want != "auto" && want != "cuda")
    throw ConfigError("config 'device' must be auto, cpu or cuda, got '" + want + "'");
  // The rank sees only its own GPUs (CUDA_VISIBLE_DEVICES): device 0 is its first.
  if (torch::cuda::is_available()) return torch::Device(torch::kCUDA, 0);
  if (want == "cuda")
    throw ConfigError("config 'device: cuda', but this libtorch build has no CUDA or no GPU is visible");
  return torch::kCPU;
}

int rank_of(MPI_Comm comm) {
  if (!mpi_active(comm)) return 0;
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  return rank;
}

int size_of(MPI_Comm comm) {
  if (!mpi_active(comm)) return 1;
  int size = 1;
  MPI_Comm_size(comm, &size);
  return size;
}

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void check_float(const torch::Tensor& t, const char* what) {
  if (t.scalar_type() != torch::kFloat32 || !(t.device().is_cpu() || t.device().is_cuda())) {
    throw Error(std::string("tune::torch_dp: ") + what + " must be float32 CPU or CUDA tensors, got " +
                             std::string(c10::toString(t.scalar_type())) + " on " + t.device().str());
  }
}

}  // namespace

void broadcast_parameters(torch::nn::Module& module, MPI_Comm comm) {
  if (size_of(comm) <= 1) return;
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> tensors;
  for (auto& p : module.parameters()) tensors.push_back(p);
  for (auto& b : module.buffers()) tensors.push_back(b);
  if (tensors.empty()) return;
  std::vector<torch::Tensor> flat_parts;
  // On the CPU: MPI reads host memory.
  for (auto& t : tensors) flat_parts.push_back(t.detach().to(torch::kCPU, torch::kFloat64).reshape(-1));
  // float64 carries float32 and integer buffers (counters) exactly.
  torch::Tensor flat = torch::cat(flat_parts).contiguous();
  MPI_Bcast(flat.data_ptr<double>(), static_cast<int>(flat.numel()), MPI_DOUBLE, 0, comm);
  int64_t offset = 0;
  for (auto& t : tensors) {
    const int64_t n = t.numel();
    t.copy_(flat.slice(0, offset, offset + n).view_as(t));
    offset += n;
  }
}

void allreduce_gradients(torch::nn::Module& module, MPI_Comm comm) {
  const int size = size_of(comm);
  if (size <= 1) return;
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> grads;
  for (auto& p : module.parameters()) {
    if (!p.requires_grad()) continue;
    if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
    check_float(p.grad(), "gradients");
    grads.push_back(p.grad());
  }
  if (grads.empty()) return;
  std::vector<torch::Tensor> parts;
  for (auto& g : grads) parts.push_back(g.reshape(-1));
  torch::Tensor flat = torch::cat(parts).to(torch::kCPU).contiguous();  // MPI reads host memory
  MPI_Allreduce(MPI_IN_PLACE, flat.data_ptr<float>(), static_cast<int>(flat.numel()), MPI_FLOAT, MPI_SUM, comm);
  flat.div_(static_cast<double>(size));
  int64_t offset = 0;
  for (auto& g : grads) {
    const int64_t n = g.numel();
    g.copy_(flat.slice(0, offset, offset + n).view_as(g));
    offset += n;
  }
}

// ---- GradientSync ---------------------------------------------------------
//
// Two paths. Through the shared memory window (every rank on one node): after
// backward, synchronize() averages all gradients in one reduce(). Otherwise,
// buckets over MPI_Iallreduce, started from gradient hooks during backward.
// Buckets are reduced strictly in index order on every rank (MPI requires
// collectives in the same order everywhere): a bucket whose gradients are all
// ready waits for the earlier ones before its MPI_Iallreduce starts. OpenMPI
// has no progress thread, so every hook also tests outstanding requests.

struct GradientSync::State {
  struct Slot {
    torch::Tensor parameter;
    int bucket = 0;
    int64_t offset = 0, numel = 0;
    bool filled = false;
    int hook = -1;
  };
  struct Bucket {
    torch::Tensor flat;  // where the rank's gradients are packed for MPI_Iallreduce
    int ready = 0, slots = 0;
    MPI_Request request = MPI_REQUEST_NULL;
  };

  MPI_Comm comm = MPI_COMM_NULL;
  int size = 1;
  GradientSyncOptions options;
  std::vector<Slot> slots;
  std::vector<Bucket> buckets;
  std::shared_ptr<internal::SharedMemoryAllreduce> shared;  // null: buckets over MPI_Iallreduce
  int64_t total = 0;                                         // floats in all gradients
  int next_launch = 0;
  double communication = 0, exposed = 0;
  int64_t steps = 0;

  void on_gradient(size_t index, const torch::Tensor& grad) {
    torch::NoGradGuard no_grad;
    Slot& slot = slots[index];
    Bucket& bucket = buckets[static_cast<size_t>(slot.bucket)];
    bucket.flat.slice(0, slot.offset, slot.offset + slot.numel).copy_(grad.reshape(-1));
    if (!slot.filled) {
      slot.filled = true;
      ++bucket.ready;
    }
    if (options.overlap) launch_ready();
  }

  void launch_ready() {
    const auto start = Clock::now();
    while (next_launch < static_cast<int>(buckets.size()) &&
           buckets[static_cast<size_t>(next_launch)].ready == buckets[static_cast<size_t>(next_launch)].slots) {
      Bucket& b = buckets[static_cast<size_t>(next_launch++)];
      MPI_Iallreduce(MPI_IN_PLACE, b.flat.data_ptr<float>(), static_cast<int>(b.flat.numel()), MPI_FLOAT, MPI_SUM,
                     comm, &b.request);
    }
    for (int i = 0; i < next_launch; ++i) {
      Bucket& b = buckets[static_cast<size_t>(i)];
      if (b.request != MPI_REQUEST_NULL) {
        int done = 0;
        MPI_Test(&b.request, &done, MPI_STATUS_IGNORE);
      }
    }
    communication += seconds_since(start);
  }

  void synchronize() {
    const auto start = Clock::now();
    torch::NoGradGuard no_grad;
    if (shared) {
      synchronize_shared();
    } else {
      for (auto& slot : slots) {
        if (slot.filled) continue;
        Bucket& bucket = buckets[static_cast<size_t>(slot.bucket)];
        bucket.flat.slice(0, slot.offset, slot.offset + slot.numel).zero_();
        slot.filled = true;
        ++bucket.ready;
      }
      launch_ready();
      for (auto& b : buckets) MPI_Wait(&b.request, MPI_STATUS_IGNORE);
      const double inv = 1.0 / size;
      for (auto& b : buckets) {
        b.flat.mul_(inv);
        b.ready = 0;
      }
      for (auto& slot : slots) {
        write_gradient(slot, buckets[static_cast<size_t>(slot.bucket)].flat.slice(0, slot.offset, slot.offset + slot.numel));
        slot.filled = false;
      }
      next_launch = 0;
    }
    ++steps;
    const double elapsed = seconds_since(start);
    exposed += elapsed;
    communication += elapsed;
  }

  // The shared window: the gradients of CPU parameters are views of this
  // rank's region (made so at the first step, and again whenever the
  // gradient was replaced, e.g. set to none by zero_grad), so backward
  // accumulates straight into the window; other gradients are copied in.
  // One in-place reduce() then leaves the averages there. Plain memory
  // copies: per-tensor torch calls cost more than the copies for small
  // models.
  void synchronize_shared() {
    float* region = shared->region();
    for (auto& slot : slots) {
      float* to = region + slot.offset;
      torch::Tensor& grad = slot.parameter.mutable_grad();
      if (grad.defined() && grad.data_ptr() == static_cast<void*>(to)) continue;  // backward wrote it there
      if (!grad.defined()) {
        std::fill(to, to + slot.numel, 0.0f);
      } else if (grad.is_cpu() && grad.is_contiguous()) {
        std::copy_n(grad.data_ptr<float>(), slot.numel, to);
      } else {
        torch::from_blob(to, {slot.numel}, torch::kFloat32).copy_(grad.reshape(-1));
      }
      if (slot.parameter.is_cpu() && slot.parameter.is_contiguous())
        grad = torch::from_blob(to, slot.parameter.sizes(), torch::kFloat32);
    }
    shared->reduce(0, total, 1.0f / static_cast<float>(size));
    for (auto& slot : slots) {
      float* averaged = region + slot.offset;
      const torch::Tensor& grad = slot.parameter.grad();
      if (!grad.defined() || grad.data_ptr() != static_cast<void*>(averaged))
        write_gradient(slot, torch::from_blob(averaged, {slot.numel}, torch::kFloat32));
    }
  }

  // Gradients must not outlive the GradientSync as views of the window: it
  // goes back to the pool, and a later GradientSync writes it.
  void detach_gradients() {
    if (!shared) return;
    float* region = shared->region();
    for (auto& slot : slots) {
      torch::Tensor& grad = slot.parameter.mutable_grad();
      if (grad.defined() && grad.data_ptr() == static_cast<void*>(region + slot.offset)) grad = grad.clone();
    }
  }

  // The parameter's gradient := `averaged` (a flat CPU tensor, copied).
  static void write_gradient(Slot& slot, const torch::Tensor& averaged) {
    torch::Tensor& grad = slot.parameter.mutable_grad();
    if (grad.defined()) {
      grad.copy_(averaged.view(grad.sizes()));
    } else {
      grad = averaged.to(slot.parameter.device(), /*non_blocking=*/false, /*copy=*/true).view_as(slot.parameter);
    }
  }
};

GradientSync::GradientSync(torch::nn::Module& module, MPI_Comm comm, GradientSyncOptions options)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.comm = comm;
  s.size = size_of(comm);
  s.options = options;
  if (s.size <= 1) return;
  std::vector<torch::Tensor> parameters;
  for (auto& p : module.parameters()) {
    if (!p.requires_grad()) continue;
    check_float(p, "parameters");
    parameters.push_back(p);
  }
  // Reverse order: the last layers' gradients are computed first.
  std::reverse(parameters.begin(), parameters.end());
  for (auto& p : parameters) s.total += p.numel();
  if (options.shared_memory) s.shared = internal::SharedMemoryAllreduce::acquire(comm, s.total);
  // The shared window takes the whole gradient as one region, reduced after
  // backward: one bucket, no hooks.
  std::vector<int64_t> bucket_sizes;
  int64_t current = 0;
  const int64_t limit = s.shared ? s.total : std::max<int64_t>(1, options.bucket_bytes / static_cast<int64_t>(sizeof(float)));
  for (auto& p : parameters) {
    if (bucket_sizes.empty() || (current > 0 && current + p.numel() > limit)) {
      bucket_sizes.push_back(0);
      current = 0;
    }
    State::Slot slot;
    slot.parameter = p;
    slot.bucket = static_cast<int>(bucket_sizes.size()) - 1;
    slot.offset = current;
    slot.numel = p.numel();
    current += p.numel();
    bucket_sizes.back() = current;
    s.slots.push_back(slot);
  }
  if (s.shared) return;
  for (int64_t n : bucket_sizes) {
    State::Bucket bucket;
    bucket.flat = torch::zeros({n}, torch::kFloat32);  // on the CPU even for CUDA models: MPI reads host memory
    s.buckets.push_back(bucket);
  }
  for (size_t i = 0; i < s.slots.size(); ++i) {
    State::Slot& slot = s.slots[i];
    ++s.buckets[static_cast<size_t>(slot.bucket)].slots;
    State* raw = state_.get();
    slot.hook = static_cast<int>(slot.parameter.register_hook([raw, i](torch::Tensor grad) { raw->on_gradient(i, grad); }));
  }
}

GradientSync::~GradientSync() {
  if (!state_) return;
  state_->detach_gradients();
  for (auto& slot : state_->slots) {
    if (slot.hook >= 0) slot.parameter.remove_hook(static_cast<unsigned>(slot.hook));
  }
  // Unwinding from an exception on this rank only: another collective call
  // could hang the group; the worker aborts it instead.
  if (std::uncaught_exceptions() > 0) return;
  for (auto& b : state_->buckets) {
    if (b.request != MPI_REQUEST_NULL) MPI_Wait(&b.request, MPI_STATUS_IGNORE);
  }
}

void GradientSync::synchronize() {
  if (state_->size > 1) state_->synchronize();
}
bool GradientSync::uses_shared_memory() const { return state_->shared != nullptr; }
int GradientSync::num_buckets() const {
  return state_->shared ? 1 : static_cast<int>(state_->buckets.size());
}
double GradientSync::communication_seconds() const { return state_->communication; }
double GradientSync::exposed_seconds() const { return state_->exposed; }
int64_t GradientSync::steps() const { return state_->steps; }

std::unique_ptr<GradientSync> prepare_model(torch::nn::Module& module, MPI_Comm comm, GradientSyncOptions options) {
  keep_freed_memory();
  flush_denormals();
  if (rank_of(comm) == 0) hint_if_reference_blas();
  broadcast_parameters(module, comm);
  return std::make_unique<GradientSync>(module, comm, options);
}

// ---- metrics (DistributedSampler: sampler.cpp) ----------------------------

std::vector<double> allreduce_sum(std::vector<double> values, MPI_Comm comm) {
  if (size_of(comm) <= 1 || values.empty()) return values;
  MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), MPI_DOUBLE, MPI_SUM, comm);
  return values;
}

void MeanMetrics::add(const std::string& key, double sum, double count) {
  auto& entry = sums_[key];
  entry.first += sum;
  entry.second += count;
}

Json MeanMetrics::reduce(MPI_Comm comm) const {
  std::vector<double> values;
  for (const auto& [key, entry] : sums_) {
    values.push_back(entry.first);
    values.push_back(entry.second);
  }
  values = allreduce_sum(std::move(values), comm);
  Json out = Json::object();
  size_t i = 0;
  for (const auto& [key, entry] : sums_) {
    out[key] = values[i + 1] > 0 ? values[i] / values[i + 1] : 0.0;
    i += 2;
  }
  return out;
}

// ---- checkpoints ----------------------------------------------------------

void save_checkpoint(const std::string& dir, torch::nn::Module& module, torch::optim::Optimizer* optimizer,
                     int64_t epoch, MPI_Comm comm, const Json& extra) {
  if (rank_of(comm) == 0) {
    std::filesystem::create_directories(dir);
    {
      torch::serialize::OutputArchive archive;
      module.save(archive);
      archive.save_to(dir + "/model.pt");
    }
    if (optimizer) {
      torch::serialize::OutputArchive archive;
      optimizer->save(archive);
      archive.save_to(dir + "/optimizer.pt");
    }
    Json state = extra.is_object() ? extra : Json::object();
    state["epoch"] = epoch;
    std::ofstream out(dir + "/state.json");
    out << state.dump(2) << "\n";
    if (!out) throw Error("cannot write checkpoint " + dir + "/state.json");
  }
  if (size_of(comm) > 1) MPI_Barrier(comm);
}

Json load_checkpoint(const std::string& dir, torch::nn::Module& module, torch::optim::Optimizer* optimizer,
                     std::optional<torch::Device> device) {
  auto load = [&](const std::string& name, auto&& into) {
    const std::string path = dir + "/" + name;
    if (!std::filesystem::exists(path)) throw Error("checkpoint file missing: " + path);
    try {
      torch::serialize::InputArchive archive;
      archive.load_from(path, device ? c10::optional<c10::Device>(*device) : c10::nullopt);
      into(archive);
    } catch (const c10::Error& e) {
      throw Error("cannot load " + path + ": " + e.what_without_backtrace());
    }
  };
  load("model.pt", [&](torch::serialize::InputArchive& a) { module.load(a); });
  if (optimizer) load("optimizer.pt", [&](torch::serialize::InputArchive& a) { optimizer->load(a); });
  Json state = Json::object();
  std::error_code ec;
  if (std::filesystem::exists(dir + "/state.json", ec)) state = read_json_file(dir + "/state.json");
  if (state.is_discarded() || !state.is_object()) throw Error("bad checkpoint state " + dir + "/state.json");
  return state;
}

}  // namespace tune::torch_dp
