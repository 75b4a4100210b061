// TimeLimit (time_limit.h).
#include "launcher/run/time_limit.h"

namespace hvdrun::launcher {

TimeLimit::TimeLimit(boost::asio::io_context& io, std::chrono::milliseconds limit, std::string why)
    : timer_(io), limit_(limit), why_(std::move(why)) {}

void TimeLimit::workers_started(const std::vector<WorkerEvent>& /*started*/) {
  if (armed_ || job_ == nullptr) return;  // from the first generation's start only
  armed_ = true;
  timer_.expires_after(limit_);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec && job_->end_job(why_)) ran_out_ = true;
  });
}

}  // namespace hvdrun::launcher
