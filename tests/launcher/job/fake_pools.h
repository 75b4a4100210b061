// FakePools: worker pools without processes, for the job core's unit tests (pools.h). A worker
// "runs" from its start until the test ends it or a SIGTERM or SIGKILL reaches it; every end
// is reported to the job later on the io thread, as a real pool reports a reaped process. The
// pools record what the job asked of them.
#pragma once

#include <signal.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "launcher/workers/pools.h"

namespace hvdrun::launcher::test {

class FakePools final : public Pools {
 public:
  FakePools(boost::asio::io_context& io, PoolEvents& events, std::vector<HostSpec> hosts)
      : io_(io), events_(events), hosts_(std::move(hosts)) {}

  // Called as each worker starts (after it is recorded in `started`).
  std::function<void(const WorkerLaunch&)> on_start;
  std::vector<WorkerLaunch> started;
  std::vector<std::pair<WorkerId, int>> signals;  // every signal sent, with its worker
  bool closed = false;

  // The running worker ends so (reported later, on the io thread).
  void end(const WorkerId& id, ProcessEnd end) {
    if (running_.erase(id) == 0) return;
    boost::asio::post(io_, [this, id, end] { events_.worker_exited(id, end); });
  }
  bool runs(const WorkerId& id) const { return running_.contains(id); }

  void set_addresses(const AddressPlan& /*plan*/, const RendezvousInfo& rendezvous) override {
    rdzv_ = rendezvous;
  }
  RendezvousInfo& rendezvous() noexcept override { return rdzv_; }
  void connect(const std::vector<std::size_t>& /*remote*/) override {}
  Discovered add_discovered(std::size_t /*index*/, const HostSpec& host) override {
    hosts_.push_back(host);
    return Discovered::kUsable;
  }
  void host_connected(std::size_t /*host*/, remote::HostReady /*ready*/) override {}
  bool connected(std::size_t /*host*/) const override { return false; }
  std::size_t connected_count() const override { return 0; }
  bool is_host_address(const std::string& /*address*/) const override { return false; }
  const std::string& host_name(std::size_t host) const override { return hosts_.at(host).name; }
  bool stdin_is_file() const override { return false; }
  RendezvousInfo rendezvous_for(std::size_t /*host*/, std::size_t /*rank0*/) const override {
    return rdzv_;
  }
  void start(std::vector<WorkerLaunch> launches) override {
    for (auto& launch : launches) {
      running_.insert(launch.id);
      started.push_back(std::move(launch));
      if (on_start) on_start(started.back());
    }
  }
  void signal_all(int signo) override {
    const std::set<WorkerId> running = running_;
    for (const auto& id : running) signal(id, signo);
  }
  void signal(const WorkerId& id, int signo) override {
    signals.emplace_back(id, signo);
    if (signo == SIGTERM || signo == SIGKILL) end(id, ProcessEnd::signaled(signo));
  }
  bool streams_open(const WorkerId& /*id*/) const override { return false; }
  std::size_t open_streams() const override { return 0; }
  std::size_t open_remote_streams() const override { return 0; }
  void close_streams() override {}
  void close_local_streams() override {}
  void close_remote_streams() override {}
  void close() override { closed = true; }
  std::vector<std::pair<WorkerId, pid_t>> local_pids() const override { return {}; }
  std::vector<WorkerId> request_remote_stacks() override { return {}; }
  void end_job(int /*status*/, bool /*again*/) override {}

 private:
  boost::asio::io_context& io_;
  PoolEvents& events_;
  std::vector<HostSpec> hosts_;
  RendezvousInfo rdzv_;
  std::set<WorkerId> running_;
};

}  // namespace hvdrun::launcher::test
