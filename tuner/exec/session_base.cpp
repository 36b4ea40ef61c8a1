#include "tuner/exec/session_base.h"

#include <fcntl.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include "base/error.h"
#include "base/json.h"
#include "storage/store.h"

namespace tune::internal {
namespace {

// An integer field of a trial start. A peer's frame may hold a float or a
// number out of range here; converting that would be undefined behaviour, so
// it is a bad frame (decode_down answers nullopt).
int64_t integer(const Json& json, const char* key, std::optional<int64_t> fallback = std::nullopt) {
  auto it = json.find(key);
  if (it == json.end() && fallback) return *fallback;
  if (it == json.end()) throw Error(std::string("trial start without \"") + key + "\"");
  return json_integer<int64_t>(*it);
}

}  // namespace

Json TrialStart::to_json() const {
  Json json = {{"experiment", experiment}, {"trainable", trainable},
               {"trial_index", trial_index}, {"trial_dir", trial_dir},
               {"config", config},         {"iteration", iteration},
               {"exploits", exploits},
               {"cpus", cpus},             {"checkpoint", nullptr},
               {"setup", setup},           {"stream_checkpoints", stream_checkpoints},
               {"checkpoint_files", checkpoint_files}, {"run_ahead", run_ahead}};
  if (checkpoint) json["checkpoint"] = {{"path", checkpoint->path}, {"iteration", checkpoint->iteration}};
  return json;
}

TrialStart TrialStart::from_json(const Json& json) {
  TrialStart start;
  start.experiment = json.at("experiment").get<std::string>();
  start.trainable = json.at("trainable").get<std::string>();
  start.trial_index = integer(json, "trial_index");
  start.trial_dir = json.at("trial_dir").get<std::string>();
  start.config = json.at("config");
  start.iteration = integer(json, "iteration");
  start.exploits = integer(json, "exploits", 0);
  const int64_t cpus = integer(json, "cpus", 1);
  if (cpus < 1 || cpus > INT32_MAX) throw Error("trial start with cpus out of range");
  start.cpus = static_cast<int>(cpus);
  if (json.contains("setup")) start.setup = json.at("setup");
  start.stream_checkpoints = json.value("stream_checkpoints", false);
  if (json.contains("checkpoint_files")) start.checkpoint_files = json.at("checkpoint_files");
  start.run_ahead = json.value("run_ahead", false);
  const Json& checkpoint = json.at("checkpoint");
  if (!checkpoint.is_null()) {
    start.checkpoint = Checkpoint{checkpoint.at("path").get<std::string>(),
                                  integer(checkpoint, "iteration")};
  }
  return start;
}

std::string checkpoint_dir_name(int64_t iteration, int64_t exploits) {
  char buffer[64];
  if (exploits > 0) {
    std::snprintf(buffer, sizeof buffer, "checkpoint_%06lld_exploit%lld", static_cast<long long>(iteration),
                  static_cast<long long>(exploits));
  } else {
    std::snprintf(buffer, sizeof buffer, "checkpoint_%06lld", static_cast<long long>(iteration));
  }
  return buffer;
}

void log_ack(const TrialStart& start, int64_t iteration, Verdict verdict) {
  static const char* const path = std::getenv("TUNE_ACK_LOG");
  if (!path || !*path) return;
  const std::string line = start.experiment + " " + std::to_string(start.trial_index) + " " +
                           std::to_string(iteration) + (verdict == Verdict::kStop ? " s\n" : " c\n");
  const int fd = ::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  (void)!::write(fd, line.data(), line.size());  // unbuffered: in the file once write returns
  ::close(fd);
}

SessionBase::SessionBase(TrialStart start)
    : start_(std::move(start)), iteration_(start_.iteration), run_ahead_(start_.run_ahead) {}

std::string SessionBase::trial_name() const { return trial_folder_name(start_.trial_index); }

std::string SessionBase::make_checkpoint_dir() {
  std::filesystem::path dir = std::filesystem::path(start_.trial_dir) / checkpoint_dir_name(iteration_ + 1, start_.exploits);
  if (rank() == 0) {
    // A retried attempt may have left a partial directory with this name.
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    std::filesystem::create_directories(dir);
  }
  return dir.string();
}

// At most one result is in flight: the answer to the one before is read
// before a result is sent. A result with a checkpoint always waits for its
// answer (the trainable may reuse what it wrote once report() returns).
void SessionBase::report(const Json& metrics, const std::string& checkpoint_dir) {
  if (std::optional<Verdict> earlier = settle(); earlier == Verdict::kStop) throw TrialStopped{};
  const bool ahead = run_ahead_ && checkpoint_dir.empty();
  if (!send(metrics, checkpoint_dir)) throw TrialStopped{};
  ++iteration_;
  in_flight_ = true;
  if (ahead) return;
  if (settle() == Verdict::kStop) throw TrialStopped{};
}

std::optional<Verdict> SessionBase::settle() {
  if (!in_flight_) return std::nullopt;
  in_flight_ = false;
  const Verdict verdict = await_answer(iteration_);
  run_ahead_ = verdict == Verdict::kRunAhead;
  return verdict;
}

}  // namespace tune::internal
