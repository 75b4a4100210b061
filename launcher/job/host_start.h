// HostStart: the job's remote hosts at its start, until each one connected or was given up
// (the workers start then); the hosts that could not be used, with why, for the caller (a
// preflight's table names them). Pure. io thread only.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace hvdrun::launcher {

class HostStart {
 public:
  explicit HostStart(std::vector<std::size_t> remote) : remote_(std::move(remote)) {}

  const std::vector<std::size_t>& remote() const noexcept { return remote_; }
  bool is_remote(std::size_t host) const {
    return std::find(remote_.begin(), remote_.end(), host) != remote_.end();
  }
  // A host could not be used at the start, for `why`.
  void unusable(std::string host, std::string why) {
    unusable_.emplace_back(std::move(host), std::move(why));
  }
  // The job starts without one of them.
  void left_out() { ++left_out_; }
  // Every remote host is connected (`connected` of them) or left out: the workers start.
  bool complete(std::size_t connected) const { return connected + left_out_ == remote_.size(); }
  const std::vector<std::pair<std::string, std::string>>& unusable_hosts() const noexcept {
    return unusable_;
  }

 private:
  std::vector<std::size_t> remote_;
  std::size_t left_out_ = 0;
  std::vector<std::pair<std::string, std::string>> unusable_;  // host, why
};

}  // namespace hvdrun::launcher
