// ConnectPool (connect_pool.h).
#include "launcher/remote/connect_pool.h"

namespace hvdrun::launcher::remote {

ConnectPool::~ConnectPool() {
  finish();
  {
    std::lock_guard lock(mutex_);
    quit_ = true;
  }
  changed_.notify_all();
  for (auto& thread : threads_) thread.join();
}

void ConnectPool::post(std::function<void()> connect) {
  std::lock_guard lock(mutex_);
  queue_.push_back(std::move(connect));
  // The idle threads take one each (some may not have woken yet): more work starts more.
  if (queue_.size() > idle_ && threads_.size() < max_threads_) {
    threads_.emplace_back([this] { work(); });
  }
  changed_.notify_all();
}

void ConnectPool::finish() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [this] { return queue_.empty() && running_ == 0; });
}

std::size_t ConnectPool::threads() const {
  std::lock_guard lock(mutex_);
  return threads_.size();
}

void ConnectPool::work() {
  std::unique_lock lock(mutex_);
  for (;;) {
    ++idle_;
    changed_.wait(lock, [this] { return quit_ || !queue_.empty(); });
    --idle_;
    if (queue_.empty()) return;  // quit
    auto connect = std::move(queue_.front());
    queue_.pop_front();
    ++running_;
    lock.unlock();
    connect();
    connect = nullptr;
    lock.lock();
    --running_;
    changed_.notify_all();
  }
}

}  // namespace hvdrun::launcher::remote
