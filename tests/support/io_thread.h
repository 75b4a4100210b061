// IoThread<T>: an io_context on its own thread that owns one object (a server), so tests drive
// it as the launcher's single io thread would. The object is built by `make(io)` before the
// thread starts and destroyed on the io thread; on_io runs a call there and returns its result.
#pragma once

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <future>
#include <memory>
#include <thread>
#include <utility>

namespace hvdrun::test {

template <class T>
class IoThread {
 public:
  template <class Make>
  explicit IoThread(Make make) : guard_(boost::asio::make_work_guard(io_)), object_(make(io_)) {
    thread_ = std::thread([this] { io_.run(); });
  }
  ~IoThread() {
    boost::asio::post(io_, [this] { object_.reset(); });
    guard_.reset();
    thread_.join();
  }
  IoThread(const IoThread&) = delete;
  IoThread& operator=(const IoThread&) = delete;

  template <class F>
  auto on_io(F f) -> decltype(f(std::declval<T&>())) {
    std::packaged_task<decltype(f(std::declval<T&>()))()> task([&] { return f(*object_); });
    auto result = task.get_future();
    boost::asio::post(io_, [&task] { task(); });
    return result.get();
  }

 private:
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_;
  std::unique_ptr<T> object_;
  std::thread thread_;
};

}  // namespace hvdrun::test
