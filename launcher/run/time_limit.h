// TimeLimit: a run with a time limit (the preflight's probes), as a component on the job's
// events (job_events.h). The limit counts from the first generation's start (the connections
// to the hosts have --start-timeout); once it passes, a job still under way ends as failed for
// the limit's reason, its ranks terminated as after a failure. io thread only.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "launcher/job/job_events.h"

namespace hvdrun::launcher {

class TimeLimit final : public JobEvents {
 public:
  // `why`: the job's outcome when the limit passes ("no report within 30 s").
  TimeLimit(boost::asio::io_context& io, std::chrono::milliseconds limit, std::string why);

  void attached(JobControl& job) override { job_ = &job; }
  void workers_started(const std::vector<WorkerEvent>& started) override;
  void job_ended() override { timer_.cancel(); }

  // The limit passed and ended the job (not one that was ending already).
  bool ran_out() const noexcept { return ran_out_; }

 private:
  boost::asio::steady_timer timer_;
  std::chrono::milliseconds limit_;
  std::string why_;
  bool armed_ = false;
  bool ran_out_ = false;
  JobControl* job_ = nullptr;
};

}  // namespace hvdrun::launcher
