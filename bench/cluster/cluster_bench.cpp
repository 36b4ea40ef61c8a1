// cluster_bench: the parts of multi-host execution bench/cluster/run.sh times.
//
//   cluster_bench placement --hosts 1000 --slots 64 --trials 100000
//       ResourcePool at scale: a cluster kept full of groups of mixed sizes
//       (1-16 ranks, pack and spread); µs per placement decision, memory.
//   cluster_bench receive --address A --bytes N --mode tune|raw --dir D --ready F
//       The driver's side: listens on A (token handshake), writes its endpoint
//       and token to F, receives one checkpoint of N bytes into D.
//   cluster_bench send --endpoint E --token T --bytes N --mode tune|raw
//       A host's side: writes a checkpoint of N bytes (4 files) to its /tmp,
//       connects and sends it: tune = the streaming protocol (4 MiB frames,
//       XXH3-128, staging + rename); raw = the same bytes as one plain stream
//       into one file (the copy to compare against).
// Each prints one JSON line.
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tuner/exec/checkpoint_transfer.h"
#include "tuner/exec/protocol.h"
#include "tuner/exec/resource_pool.h"
#include "tuner/exec/transport.h"

using namespace tune::internal;
using SteadyClock = std::chrono::steady_clock;
namespace fs = std::filesystem;

namespace {

std::string arg(int argc, char** argv, const std::string& name, const std::string& fallback = "") {
  for (int i = 2; i + 1 < argc; ++i)
    if (argv[i] == "--" + name) return argv[i + 1];
  if (fallback.empty()) {
    std::cerr << "cluster_bench: missing --" << name << "\n";
    std::exit(2);
  }
  return fallback;
}

long max_rss_kb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

double seconds_since(SteadyClock::time_point start) { return std::chrono::duration<double>(SteadyClock::now() - start).count(); }

int placement(int argc, char** argv) {
  const int hosts = std::stoi(arg(argc, argv, "hosts", "1000"));
  const int slots = std::stoi(arg(argc, argv, "slots", "64"));
  const int trials = std::stoi(arg(argc, argv, "trials", "100000"));
  const long rss_before = max_rss_kb();
  std::vector<Host> cluster;
  for (int h = 0; h < hosts; ++h) cluster.push_back({"node" + std::to_string(h), slots, 8, false});
  ResourcePool pool(cluster);
  std::mt19937_64 rng(1);
  std::uniform_int_distribution<int> size(1, 16);
  std::vector<Placement> live;
  std::vector<double> micros;
  micros.reserve(static_cast<size_t>(trials));
  int placed = 0, waited = 0;
  while (placed < trials) {
    PlacementRequest request;
    request.ranks = size(rng);
    request.gpus_per_rank = rng() % 4 == 0 ? 1 : 0;
    request.policy = rng() % 2 ? PlacementPolicy::kPack : PlacementPolicy::kSpread;
    const auto start = SteadyClock::now();
    auto got = pool.acquire(request);
    micros.push_back(seconds_since(start) * 1e6);
    if (!got) {
      // Full: the oldest-started group ends (as attempts finish), then retry.
      ++waited;
      std::uniform_int_distribution<size_t> pick(0, live.size() - 1);
      const size_t i = pick(rng);
      const auto release_start = SteadyClock::now();
      pool.release(live[i]);
      micros.back() += seconds_since(release_start) * 1e6;
      live[i] = std::move(live.back());
      live.pop_back();
      continue;
    }
    live.push_back(std::move(*got));
    ++placed;
  }
  std::sort(micros.begin(), micros.end());
  double sum = 0;
  for (double m : micros) sum += m;
  auto q = [&](double p) { return micros[static_cast<size_t>(p * static_cast<double>(micros.size() - 1))]; };
  nlohmann::json out = {{"bench", "placement"}, {"hosts", hosts}, {"slots_per_host", slots}, {"trials", trials},
                        {"decisions", micros.size()}, {"full_waits", waited}, {"live_groups_at_end", live.size()},
                        {"mean_us", sum / static_cast<double>(micros.size())}, {"p50_us", q(0.5)},
                        {"p99_us", q(0.99)}, {"max_us", micros.back()},
                        {"max_rss_mb", static_cast<double>(max_rss_kb()) / 1024.0},
                        {"rss_growth_mb", static_cast<double>(max_rss_kb() - rss_before) / 1024.0}};
  std::cout << out.dump() << std::endl;
  return 0;
}

// Four files of bytes/4 (pseudo-random, so nothing compresses or dedups).
void write_checkpoint(const std::string& dir, uint64_t bytes) {
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string block(1 << 20, '\0');
  std::mt19937_64 rng(7);
  for (auto& c : block) c = static_cast<char>(rng());
  for (int f = 0; f < 4; ++f) {
    std::ofstream out(dir + "/part" + std::to_string(f) + ".bin", std::ios::binary);
    for (uint64_t left = bytes / 4; left > 0;) {
      const auto n = static_cast<size_t>(std::min<uint64_t>(left, block.size()));
      out.write(block.data(), static_cast<std::streamsize>(n));
      left -= n;
    }
  }
}

int receive(int argc, char** argv) {
  const std::string mode = arg(argc, argv, "mode");
  const uint64_t bytes = std::stoull(arg(argc, argv, "bytes"));
  const std::string dir = arg(argc, argv, "dir");
  auto listener = Listener::tcp(arg(argc, argv, "address"), Secret::random());
  {
    std::ofstream ready(arg(argc, argv, "ready") + ".tmp");
    ready << listener->endpoint() << "\n" << listener->secret().key << "\n";
  }
  fs::rename(arg(argc, argv, "ready") + ".tmp", arg(argc, argv, "ready"));
  int fd = -1;
  for (int i = 0; i < 600 && fd < 0; ++i) {
    if (auto peer = listener->accept_one(100)) fd = peer->fd;  // its first frame is a hello
  }
  if (fd < 0) {
    std::cerr << "cluster_bench: no sender connected\n";
    return 1;
  }
  fs::remove_all(dir);
  fs::create_directories(dir);
  double seconds = 0;
  std::string error;
  if (mode == "tune") {
    auto manifest = receive_message(fd);  // the result message names the files
    const auto start = SteadyClock::now();
    auto files = manifest ? manifest_from_json(manifest->at("files")) : std::nullopt;
    error = files ? receive_checkpoint(fd, *files, dir + "/checkpoint").error : "no manifest";
    seconds = seconds_since(start);
  } else {
    std::string buffer(size_t{4} << 20, '\0');
    std::FILE* out = std::fopen((dir + "/copy.bin").c_str(), "wb");
    uint64_t got = 0;
    const auto start = SteadyClock::now();
    while (got < bytes) {
      const ssize_t n = ::read(fd, buffer.data(), buffer.size());
      if (n <= 0) break;
      std::fwrite(buffer.data(), 1, static_cast<size_t>(n), out);
      got += static_cast<uint64_t>(n);
    }
    std::fflush(out);
    std::fclose(out);
    seconds = seconds_since(start);
    if (got != bytes) error = "short copy";
  }
  const char ack = 1;  // the sender's clock stops at the ack
  (void)!::write(fd, &ack, 1);
  ::close(fd);
  if (!error.empty()) {
    std::cerr << "cluster_bench: " << error << "\n";
    return 1;
  }
  fs::remove_all(dir);
  nlohmann::json out = {{"bench", "stream"}, {"mode", mode}, {"bytes", bytes}, {"receive_s", seconds},
                        {"mb_per_s", static_cast<double>(bytes) / 1e6 / seconds}};
  std::cout << out.dump() << std::endl;
  return 0;
}

int send(int argc, char** argv) {
  const std::string mode = arg(argc, argv, "mode");
  const uint64_t bytes = std::stoull(arg(argc, argv, "bytes"));
  const std::string dir = fs::temp_directory_path() / "cluster_bench_checkpoint";
  write_checkpoint(dir, bytes);
  Secret secret;
  secret.key = arg(argc, argv, "token");
  const int fd = connect_driver(arg(argc, argv, "endpoint"), secret);
  send_message(fd, {{"type", "hello"}});
  const auto start = SteadyClock::now();
  bool ok = true;
  if (mode == "tune") {
    const auto files = list_checkpoint(dir);
    ok = send_message(fd, {{"type", "result"}, {"files", manifest_json(files)}}) && send_checkpoint(fd, dir, files);
  } else {
    std::string buffer(size_t{4} << 20, '\0');
    for (const auto& file : list_checkpoint(dir)) {
      std::FILE* in = std::fopen((fs::path(dir) / file.path).c_str(), "rb");
      size_t n;
      while (ok && (n = std::fread(buffer.data(), 1, buffer.size(), in)) > 0) {
        for (size_t done = 0; ok && done < n;) {
          const ssize_t w = ::write(fd, buffer.data() + done, n - done);
          ok = w > 0;
          done += w > 0 ? static_cast<size_t>(w) : 0;
        }
      }
      std::fclose(in);
    }
  }
  char ack = 0;
  ok = ok && ::read(fd, &ack, 1) == 1;
  const double seconds = seconds_since(start);
  ::close(fd);
  fs::remove_all(dir);
  nlohmann::json out = {{"bench", "send"}, {"mode", mode}, {"bytes", bytes}, {"ok", ok}, {"send_to_ack_s", seconds}};
  std::cout << out.dump() << std::endl;
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "";
  if (what == "placement") return placement(argc, argv);
  if (what == "receive") return receive(argc, argv);
  if (what == "send") return send(argc, argv);
  std::cerr << "usage: cluster_bench placement|receive|send [options] (see the source)\n";
  return 2;
}
