// One connection's requests and answers for the connection loop
// (serve_loop.h): bytes to requests, the head's check, the workers, writing
// the answer, lingering before the close.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

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

void ConnectionLoop::Impl::dispatch(Connection& c) {
  c.phase = Phase::kAnswering;
  set_events(c, 0);  // the next request waits in the socket until this one is answered
  metrics.in_flight().fetch_add(1, std::memory_order_relaxed);
  workers->enqueue([this, id = c.id, request = c.parser.take_request()]() {
    HttpResponse response;
    try {
      response = routes.answer(request);
    } catch (...) {
      response = error_response(500, "internal error");
    }
    {
      std::lock_guard<std::mutex> lock(completions_mutex);
      completions.push_back(Completion{id, std::move(response)});
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
    if (Connection* c = find(completion.id)) respond(*c, std::move(completion.response));
  }
}

void ConnectionLoop::Impl::respond(Connection& c, HttpResponse response, bool close) {
  response.close = response.close || close || stop_begun || !c.head_known || !c.keep_alive;
  metrics.record(c.route, response.status, now - c.request_started);
  c.output = serialize(response, c.head_known && c.head_only, c.head_known && c.http10 && !response.close);
  c.output_sent = 0;
  c.close_after_output = response.close;
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
