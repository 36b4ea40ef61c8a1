// Internal to tuner/serve/serve_loop.cpp and serve_exchange.cpp: the state of
// the connection loop (serve_loop.h) and of each connection. The loop's
// thread alone touches it, but for the completions the workers hand back.
//
// serve_loop.cpp: the loop's turn, accepting within the limits, deadlines,
// stopping. serve_exchange.cpp: one connection's requests and answers
// (reading, the head's check, the workers, writing, lingering).
#pragma once

#include <sys/epoll.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "tuner/serve/serve_http.h"
#include "tuner/serve/serve_loop.h"
#include "tuner/serve/serve_metrics.h"
#include "tuner/serve/serve_socket.h"

namespace tune::serve_detail {

class Routes;

namespace loop {

using namespace std::chrono_literals;

inline constexpr uint64_t kListenerId = 0;
inline constexpr uint64_t kWakeId = 1;
inline constexpr size_t kReadChunk = 16384;
inline constexpr int kReadsPerEvent = 4;             // then other connections' turn
inline constexpr auto kLingerTime = 500ms;
inline constexpr size_t kMaxLingerBytes = size_t{1} << 20;
inline constexpr auto kTick = 100ms;  // how often deadlines are looked at
inline constexpr auto kAcceptPause = 100ms;
// A whole request is answered on the loop's thread, not a worker's, when no
// worker has one, its body is at most kQuickBody, and the slowest recent
// answer (a maximum that decays by 1/32 an answer, from 1 s at the start:
// ~240 answers) took at most kQuickAnswer (serve_exchange.cpp, answer_here).
inline constexpr size_t kQuickBody = 16 << 10;
inline constexpr auto kQuickAnswer = 500us;
inline constexpr Clock::duration kUnknownAnswer = 1s;
inline constexpr size_t kDescriptorsKept = 64;  // below RLIMIT_NOFILE, for everything but connections

enum class Phase {
  kClosed,     // closed; forgotten at the end of the loop's turn
  kLingering,  // answered and closing: the client's last bytes are read and dropped
  kIdle,       // no byte of a request yet
  kReading,    // a request is arriving
  kAnswering,  // a request read whole is with a worker
  kWriting,    // an answer is being sent
};

struct Connection {
  Connection(uint64_t id_, int fd_, std::string client_, const HttpLimits& limits)
      : id(id_), fd(fd_), client(std::move(client_)), parser(limits) {}
  uint64_t id;
  int fd;
  std::string client;
  Phase phase = Phase::kIdle;
  Clock::time_point since;     // of the phase: the order of replacement
  Clock::time_point deadline;  // of the phase
  uint32_t events = EPOLLIN;  // 0: out of the epoll set (with a worker)
  RequestParser parser;
  bool head_checked = false;
  // What the answer depends on in the request, kept from its head.
  bool head_known = false;
  bool head_only = false;  // HEAD
  bool keep_alive = false;
  bool http10 = false;
  std::optional<HttpResponse> refusal;  // sent once the small body is read past
  Route route = Route::kOther;
  Clock::time_point request_started;
  uint64_t body_held = 0;  // counted against the body budget
  std::string pending;     // bytes read after the request: the next one's
  std::string output;
  size_t output_sent = 0;
  bool close_after_output = false;
  size_t lingered = 0;
};

// A worker's answer: sent as far as the socket took it at once.
struct Completion {
  uint64_t id = 0;
  int status = 0;
  Clock::duration elapsed{};  // from the request's first byte to its answer
  Clock::duration answering{};  // in Routes::answer
  std::string output;         // the whole answer
  size_t sent = 0;            // bytes of `output` sent
  Clock::time_point finished;  // just before the worker sent them: the client has nothing sooner
  bool close = false;
  bool failed = false;
};

inline epoll_event interest(uint32_t events, uint64_t id) {
  epoll_event event{};
  event.events = events;
  event.data.u64 = id;
  return event;
}

}  // namespace loop

struct ConnectionLoop::Impl {
  Impl(int listener_fd, const Routes& routes_, Metrics& metrics_, LoopOptions options_);
  ~Impl();

  void run();
  void handle(const epoll_event& event);
  void accept_connections();
  bool make_room(const std::string& client);
  bool evict_one(const std::vector<uint64_t>* among);
  void on_readable(loop::Connection& c);
  void read_request_bytes(loop::Connection& c, const char* data, size_t size);
  void check_head(loop::Connection& c);
  bool answer_here(const loop::Connection& c) const;
  void answer(loop::Connection& c);
  void dispatch(loop::Connection& c);
  void note_answer_time(Clock::duration taken);
  void respond(loop::Connection& c, HttpResponse response, bool close = false);
  void write_answer(loop::Connection& c, std::string output, size_t sent, bool close);
  void flush(loop::Connection& c);
  void after_answer(loop::Connection& c);
  void linger(loop::Connection& c);
  void close_connection(loop::Connection& c);
  void release_body(loop::Connection& c);
  void set_events(loop::Connection& c, uint32_t events);
  void take_completions();
  void expire();
  void begin_stop();
  void reap();
  loop::Connection* find(uint64_t id);

  int listener;
  const Routes& routes;
  Metrics& metrics;
  LoopOptions options;
  int epoll_fd = -1;
  int wake_fd = -1;
  std::atomic<bool> stopping{false};
  bool stop_begun = false;
  size_t max_total = 0;
  size_t max_per_client = 0;
  uint64_t body_held = 0;
  uint64_t next_id = 2;
  size_t with_workers = 0;            // requests handed to workers, not yet taken back
  Clock::duration slowest_answer = loop::kUnknownAnswer;  // of Routes::answer, recently
  size_t open = 0;  // connections not closed
  Clock::time_point now;
  std::optional<Clock::time_point> accepting_again;  // the listener is paused (EMFILE) until then
  std::unordered_map<uint64_t, std::unique_ptr<loop::Connection>> connections;
  std::unordered_map<std::string, std::vector<uint64_t>> by_client;
  std::vector<uint64_t> ready;   // connections with a pipelined request to read
  std::vector<uint64_t> closed;  // to forget at the end of the turn
  std::unique_ptr<WorkerPool> workers;
  std::mutex completions_mutex;
  std::vector<loop::Completion> completions;
  std::array<char, loop::kReadChunk> buffer{};
};

}  // namespace tune::serve_detail
