// Internal: the driver's side of one worker group's connection (rank 0's
// socket). The driver's messages go out in order through one writer thread:
// a run may carry a checkpoint of gigabytes, and the driver's thread never
// waits for it. The group's reader (group_executor.cpp) reads the socket and
// closes the connection at its end; a message posted after close() is
// dropped, never sent to a later connection.
//
//   auto connection = std::make_shared<GroupConnection>(fd);
//   connection->send(VerdictMessage{Verdict::kContinue});
//   connection->post([](int fd) { return send_checkpoint(fd, dir, files); });
//   connection->close();   // unblocks both directions, joins the writer
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "tuner/exec/protocol.h"

namespace tune::internal {

class GroupConnection {
 public:
  // Takes ownership of the connected socket `fd`.
  explicit GroupConnection(int fd);
  ~GroupConnection();
  GroupConnection(const GroupConnection&) = delete;
  GroupConnection& operator=(const GroupConnection&) = delete;

  // Queues `job` for the writer thread (it gets the socket); a job that
  // returns false ends the connection (the reader then sees its end).
  void post(std::function<bool(int)> job);
  void send(const DownMessage& message);
  int fd() const { return fd_; }
  // Unblocks both directions, stops the writer, closes the socket. Idempotent.
  void close();
  bool closed();

 private:
  void write();

  int fd_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<bool(int)>> outbox_;
  bool closed_ = false;
  std::thread writer_;
};

}  // namespace tune::internal
