#include "tuner/exec/group_connection.h"

#include <sys/socket.h>
#include <unistd.h>

namespace tune::internal {

GroupConnection::GroupConnection(int fd) : fd_(fd), writer_([this] { write(); }) {}

GroupConnection::~GroupConnection() { close(); }

void GroupConnection::post(std::function<bool(int)> job) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_) return;
    outbox_.push_back(std::move(job));
  }
  wake_.notify_one();
}

void GroupConnection::send(const DownMessage& message) {
  post([message](int fd) { return send_message(fd, encode(message)); });
}

void GroupConnection::close() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_) return;
    closed_ = true;
    ::shutdown(fd_, SHUT_RDWR);
  }
  wake_.notify_all();
  if (writer_.joinable()) writer_.join();
  ::close(fd_);
}

bool GroupConnection::closed() {
  std::lock_guard<std::mutex> lock(mutex_);
  return closed_;
}

void GroupConnection::write() {
  while (true) {
    std::function<bool(int)> job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return closed_ || !outbox_.empty(); });
      if (closed_) return;
      job = std::move(outbox_.front());
      outbox_.pop_front();
    }
    if (!job(fd_)) ::shutdown(fd_, SHUT_RDWR);  // the reader sees the end
  }
}

}  // namespace tune::internal
