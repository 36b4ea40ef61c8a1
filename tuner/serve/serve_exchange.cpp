// One connection's requests and answers for the connection loop
// (serve_loop.h): bytes to requests, the head's check, the workers, writing
// the answer, lingering before the close.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "tuner/serve/serve_connection.h"
#include "tuner/serve/serve_routes.h"

namespace tune::serve_detail {

using namespace loop;

void ConnectionLoop::Impl::on_readable(Connection& c) {
  for (int reads = 0; reads < kReadsPerEvent; ++reads) {
    ssize_t count = ::recv(c.fd, buffer.data(), buffer.size(), 0);
    if (count < 0 && errno == EINTR) continue;
    if (count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (count <= 0) return close_connection(c);  // the client left (a request it began goes unanswered)
    if (c.phase == Phase::kLingering) {
      c.lingered += static_cast<size_t>(count);
      if (c.lingered > kMaxLingerBytes) return close_connection(c);
      continue;
    }
    // A client that sends a request's head and body in two writes with
    // Nagle on would otherwise wait for our delayed ACK (40 ms) in between.
    int on = 1;
    ::setsockopt(c.fd, IPPROTO_TCP, TCP_QUICKACK, &on, sizeof on);
    read_request_bytes(c, buffer.data(), static_cast<size_t>(count));
    if (c.phase != Phase::kIdle && c.phase != Phase::kReading) return;  // answering: the rest waits
  }
}

void ConnectionLoop::Impl::read_request_bytes(Connection& c, const char* data, size_t size) {
  RequestParser& parser = c.parser;
  while (size > 0 && (c.phase == Phase::kIdle || c.phase == Phase::kReading)) {
    if (c.phase == Phase::kIdle) {
      c.phase = Phase::kReading;
      c.since = c.request_started = now;
      c.deadline = now + options.request_timeout;
    }
    size_t used = parser.feed(data, size);
    data += used;
    size -= used;
    if (parser.state() == RequestParser::State::kFailed) {
      return respond(c, error_response(parser.error().status, parser.error().message), true);
    }
    if (parser.head_complete() && !c.head_checked) check_head(c);
    if (c.phase != Phase::kReading) break;  // answered from the head
    uint64_t body = parser.request().body.size();
    if (body > c.body_held) {
      body_held += body - c.body_held;
      c.body_held = body;
      if (body_held > options.body_budget) {
        HttpResponse busy = error_response(503, "the server holds too many request bodies: retry shortly");
        busy.headers.emplace_back("Retry-After", "1");
        return respond(c, std::move(busy), true);
      }
    }
    if (parser.state() == RequestParser::State::kComplete) {
      if (c.refusal) {
        HttpResponse refusal = std::move(*c.refusal);
        respond(c, std::move(refusal));
      } else if (answer_here(c)) {
        answer(c);
      } else {
        dispatch(c);
      }
    }
  }
  if (size > 0 && (c.phase == Phase::kAnswering || c.phase == Phase::kWriting)) c.pending.append(data, size);
}

// The head is read: answered from it now, or the body is read.
void ConnectionLoop::Impl::check_head(Connection& c) {
  c.head_checked = true;
  const HttpRequest& head = c.parser.request();
  c.route = routes.classify(head.path);
  c.head_known = true;
  c.head_only = head.method == "HEAD";
  c.keep_alive = head.keep_alive;
  c.http10 = head.minor_version == 0;
  std::optional<HttpResponse> refusal = routes.refuse(head);
  bool body_due = c.parser.state() == RequestParser::State::kBody;
  if (refusal) {
    if (!reads_past_refused_body(head)) return respond(c, std::move(*refusal), true);
    if (!body_due) return respond(c, std::move(*refusal));
    c.parser.discard_body();
    c.refusal = std::move(refusal);
    return;
  }
  if (body_due && head.expect_continue) {
    static const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    if (::send(c.fd, kContinue.data(), kContinue.size(), MSG_NOSIGNAL | MSG_DONTWAIT) !=
        static_cast<ssize_t>(kContinue.size())) {
      close_connection(c);
    }
  }
}

// Handing a request to a worker and its answer back costs two thread
// wake-ups, which more than doubled a lone client's latency (a one-row
// predict: 36 -> 90-180 µs p50 on a loaded 2-core machine). When no worker
// has a request (nothing would wait behind this one) and it is likely quick
// (a small body; every recent answer quick), this thread answers it. Its
// model call holds up the other connections' reads and writes meanwhile: a
// model that turns slow does so once, then answers go to the workers until
// ~240 more have been quick again.
bool ConnectionLoop::Impl::answer_here(const Connection& c) const {
  return with_workers == 0 && c.parser.request().body.size() <= kQuickBody && slowest_answer <= kQuickAnswer;
}

void ConnectionLoop::Impl::answer(Connection& c) {
  metrics.in_flight().fetch_add(1, std::memory_order_relaxed);
  auto begun = Clock::now();
  HttpResponse response;
  try {
    response = routes.answer(c.parser.request());
  } catch (...) {
    response = error_response(500, "internal error");
  }
  now = Clock::now();
  note_answer_time(now - begun);
  metrics.in_flight().fetch_sub(1, std::memory_order_relaxed);
  respond(c, std::move(response));
}

void ConnectionLoop::Impl::note_answer_time(Clock::duration taken) {
  slowest_answer = std::max(taken, slowest_answer - slowest_answer / 32);
}

// The worker owns the socket's sending side until its completion is taken:
// it sends the answer itself, as far as the socket takes it at once, so that
// the client does not wait for this thread to be scheduled as well. The loop
// neither reads, closes nor replaces a connection with a worker, and it is
// out of the epoll set meanwhile (its next request waits in the socket).
void ConnectionLoop::Impl::dispatch(Connection& c) {
  c.phase = Phase::kAnswering;
  set_events(c, 0);
  ++with_workers;
  metrics.in_flight().fetch_add(1, std::memory_order_relaxed);
  bool head_only = c.head_only;
  bool keep_alive = c.keep_alive;
  bool http10 = c.http10;
  workers->enqueue([this, id = c.id, fd = c.fd, started = c.request_started, head_only, keep_alive, http10,
                    request = c.parser.take_request()]() {
    auto begun = Clock::now();
    HttpResponse response;
    try {
      response = routes.answer(request);
    } catch (...) {
      response = error_response(500, "internal error");
    }
    Completion done;
    done.id = id;
    done.status = response.status;
    done.answering = Clock::now() - begun;
    done.close = response.close = response.close || !keep_alive || stopping.load();
    done.output = serialize(response, head_only, http10 && !done.close);
    done.finished = Clock::now();
    done.elapsed = done.finished - started;
    while (done.sent < done.output.size()) {
      ssize_t count = ::send(fd, done.output.data() + done.sent, done.output.size() - done.sent,
                             MSG_NOSIGNAL | MSG_DONTWAIT);
      if (count > 0) {
        done.sent += static_cast<size_t>(count);
      } else if (count < 0 && errno == EINTR) {
        continue;
      } else {
        done.failed = count == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
        break;
      }
    }
    {
      std::lock_guard<std::mutex> lock(completions_mutex);
      completions.push_back(std::move(done));
    }
    uint64_t one = 1;
    [[maybe_unused]] ssize_t written = ::write(wake_fd, &one, sizeof one);
  });
}

void ConnectionLoop::Impl::take_completions() {
  std::vector<Completion> done;
  {
    std::lock_guard<std::mutex> lock(completions_mutex);
    done.swap(completions);
  }
  for (Completion& completion : done) {
    metrics.in_flight().fetch_sub(1, std::memory_order_relaxed);
    --with_workers;
    note_answer_time(completion.answering);
    Connection* c = find(completion.id);
    if (c == nullptr) continue;
    metrics.record(c->route, completion.status, completion.elapsed);
    if (completion.failed) {
      close_connection(*c);
      continue;
    }
    write_answer(*c, std::move(completion.output), completion.sent, completion.close || stop_begun);
    if (c->phase == Phase::kIdle) {  // the worker sent it all: idle from then (the order of replacement)
      c->since = completion.finished;
      c->deadline = completion.finished + options.idle_timeout;
    }
  }
}

// An answer made on this thread (a refusal from the head, a parse error,
// 408, 503).
void ConnectionLoop::Impl::respond(Connection& c, HttpResponse response, bool close) {
  response.close = response.close || close || stop_begun || !c.head_known || !c.keep_alive;
  metrics.record(c.route, response.status, now - c.request_started);
  std::string output = serialize(response, c.head_known && c.head_only, c.head_known && c.http10 && !response.close);
  write_answer(c, std::move(output), 0, response.close);
}

// Sends what is left of `output` (its first `sent` bytes are gone); the
// request is done with.
void ConnectionLoop::Impl::write_answer(Connection& c, std::string output, size_t sent, bool close) {
  c.output = std::move(output);
  c.output_sent = sent;
  c.close_after_output = close;
  c.phase = Phase::kWriting;
  c.since = now;
  c.deadline = now + options.request_timeout;
  release_body(c);
  c.refusal.reset();
  c.parser.reset();  // frees the request; what follows it is in c.pending
  c.head_checked = c.head_known = false;
  c.route = Route::kOther;
  flush(c);
}

void ConnectionLoop::Impl::flush(Connection& c) {
  while (c.output_sent < c.output.size()) {
    ssize_t count = ::send(c.fd, c.output.data() + c.output_sent, c.output.size() - c.output_sent, MSG_NOSIGNAL);
    if (count > 0) {
      c.output_sent += static_cast<size_t>(count);
    } else if (count < 0 && errno == EINTR) {
      continue;
    } else if (count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return set_events(c, EPOLLOUT);
    } else {
      return close_connection(c);
    }
  }
  after_answer(c);
}

void ConnectionLoop::Impl::after_answer(Connection& c) {
  if (c.output.capacity() > (size_t{64} << 10)) {
    std::string().swap(c.output);
  } else {
    c.output.clear();
  }
  c.output_sent = 0;
  if (c.close_after_output) return linger(c);
  c.phase = Phase::kIdle;
  c.since = now;
  c.deadline = now + options.idle_timeout;
  set_events(c, EPOLLIN);
  if (!c.pending.empty()) ready.push_back(c.id);
}

// Closes after an answer while the client may still be sending: reading (and
// dropping) a bounded rest first keeps the kernel from answering with a
// reset that could destroy the answer in flight.
void ConnectionLoop::Impl::linger(Connection& c) {
  ::shutdown(c.fd, SHUT_WR);
  c.phase = Phase::kLingering;
  c.since = now;
  c.deadline = now + kLingerTime;
  c.pending.clear();
  c.lingered = 0;
  set_events(c, EPOLLIN);
}

void ConnectionLoop::Impl::release_body(Connection& c) {
  body_held -= c.body_held;
  c.body_held = 0;
}

}  // namespace tune::serve_detail
