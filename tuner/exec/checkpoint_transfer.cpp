#include "tuner/exec/checkpoint_transfer.h"

#include <xxhash.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "base/error.h"
#include "tuner/exec/protocol.h"

namespace tune::internal {
namespace fs = std::filesystem;
namespace {

std::string digest_hex(XXH3_state_t* state) {
  const XXH128_hash_t h = XXH3_128bits_digest(state);
  char text[33];
  std::snprintf(text, sizeof text, "%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return text;
}

struct Hasher {
  Hasher() : state(XXH3_createState(), XXH3_freeState) { XXH3_128bits_reset(state.get()); }
  void add(const char* data, size_t n) { XXH3_128bits_update(state.get(), data, n); }
  std::string hex() { return digest_hex(state.get()); }
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state;
};

bool safe_relative(const std::string& path) {
  // "a//b": fs::path iteration skips the empty part, so look for it here.
  if (path.empty() || path.size() > 4096 || path.front() == '/' || path.find("//") != std::string::npos) return false;
  for (const auto& part : fs::path(path)) {
    const std::string p = part.string();
    if (p.empty() || p == "." || p == "..") return false;
  }
  return path.find('\0') == std::string::npos;
}

}  // namespace

std::vector<CheckpointFile> list_checkpoint(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw Error("checkpoint directory " + dir + " does not exist");
  std::vector<CheckpointFile> files;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const fs::file_status status = it->symlink_status();
    if (fs::is_directory(status)) continue;
    if (!fs::is_regular_file(status)) throw Error("checkpoint " + dir + " holds a link or special file: " + it->path().string());
    files.push_back({fs::relative(it->path(), dir).string(), static_cast<uint64_t>(it->file_size())});
  }
  if (ec) throw Error("cannot list checkpoint " + dir + ": " + ec.message());
  std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
  return files;
}

Json manifest_json(const std::vector<CheckpointFile>& files) {
  Json out = Json::array();
  for (const auto& f : files) out.push_back({{"path", f.path}, {"size", f.size}});
  return out;
}

std::optional<std::vector<CheckpointFile>> manifest_from_json(const Json& json) {
  if (!json.is_array() || json.size() > 100000) return std::nullopt;
  std::vector<CheckpointFile> files;
  for (const auto& f : json) {
    if (!f.is_object() || !f.contains("path") || !f["path"].is_string() || !f.contains("size") ||
        !f["size"].is_number_unsigned())
      return std::nullopt;
    CheckpointFile file{f["path"].get<std::string>(), f["size"].get<uint64_t>()};
    if (!safe_relative(file.path)) return std::nullopt;
    files.push_back(std::move(file));
  }
  return files;
}

bool send_checkpoint(int fd, const std::string& dir, const std::vector<CheckpointFile>& files) {
  Hasher hash;
  std::string buffer(kCheckpointChunk, '\0');
  for (const auto& file : files) {
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> in(std::fopen((fs::path(dir) / file.path).c_str(), "rb"), std::fclose);
    if (!in) return false;
    uint64_t left = file.size;
    while (left > 0) {
      const size_t want = static_cast<size_t>(std::min<uint64_t>(left, buffer.size()));
      if (std::fread(buffer.data(), 1, want, in.get()) != want) return false;  // it shrank
      hash.add(buffer.data(), want);
      if (!send_bytes(fd, buffer.data(), want)) return false;
      left -= want;
    }
  }
  return send_message(fd, {{"type", "checksum"}, {"xxh3_128", hash.hex()}});
}

ReceivedCheckpoint receive_checkpoint(int fd, const std::vector<CheckpointFile>& files, const std::string& target) {
  const fs::path staging = target + ".partial";
  std::error_code ec;
  fs::remove_all(staging, ec);
  auto give_up = [&](const std::string& why, bool stream_broken) {
    fs::remove_all(staging, ec);
    return ReceivedCheckpoint{why, stream_broken};
  };
  // A failure on this side (no room, no folder) still reads the stream to its
  // checksum, so the connection stays in step for the messages after it.
  std::string local_error;
  fs::create_directories(staging, ec);
  if (ec) local_error = "cannot create " + staging.string() + ": " + ec.message();
  Hasher hash;
  std::string chunk;
  for (const auto& file : files) {
    const fs::path path = staging / file.path;
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> out(nullptr, std::fclose);
    if (local_error.empty()) {
      fs::create_directories(path.parent_path(), ec);
      out.reset(std::fopen(path.c_str(), "wb"));
      if (!out) local_error = "cannot write " + path.string();
    }
    uint64_t left = file.size;
    while (left > 0) {
      if (!receive_bytes(fd, chunk, kCheckpointChunk) || chunk.empty() || chunk.size() > left)
        return give_up("the checkpoint stream broke off in " + file.path, true);
      hash.add(chunk.data(), chunk.size());
      if (local_error.empty() && std::fwrite(chunk.data(), 1, chunk.size(), out.get()) != chunk.size())
        local_error = "cannot write " + path.string() + " (disk full?)";
      left -= chunk.size();
    }
    if (local_error.empty() && std::fflush(out.get()) != 0) local_error = "cannot write " + path.string() + " (disk full?)";
  }
  const auto checksum = receive_message(fd);
  if (!checksum || checksum->value("type", "") != "checksum") return give_up("the checkpoint stream ended early", true);
  if (!local_error.empty()) return give_up(local_error, false);
  if (checksum->value("xxh3_128", "") != hash.hex()) return give_up("the checkpoint's checksum does not match", false);
  fs::remove_all(target, ec);
  fs::rename(staging, target, ec);
  if (ec) return give_up("cannot move the checkpoint into " + target + ": " + ec.message(), false);
  return {};
}

}  // namespace tune::internal
