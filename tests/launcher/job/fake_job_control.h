// FakeJob: a job behind the control interface its components see (job_control.h), for their
// unit tests: its answers are the test's fields, and it records every request.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "launcher/job/job_control.h"

namespace hvdrun::launcher::test {

class FakeJob final : public JobControl {
 public:
  struct StacksAsked {
    std::string why;
    std::vector<int> culprits;
    std::function<void()> then;
  };

  bool generation_running() const override { return running; }
  std::uint32_t generation() const override { return current; }
  std::vector<rdzv::MemberProgress> progress() const override { return members; }
  bool straggler_found(std::uint32_t key, const std::string& verdict) override {
    stragglers.emplace_back(key, verdict);
    if (takes_stragglers) ++current;  // the others re-form without it
    return takes_stragglers;
  }
  void limit_reached(Limit limit, const std::string& reason) override {
    limits.emplace_back(limit, reason);
  }
  bool end_job(const std::string& why) override {
    ended_for.push_back(why);
    return running;
  }
  void collect_stacks(const std::string& why, const std::vector<int>& culprits,
                      std::function<void()> then) override {
    stacks.push_back({why, culprits, std::move(then)});
  }
  void suspect(std::optional<std::vector<int>> ranks) override { suspects = std::move(ranks); }
  void happened(const std::string& what, const Args& args) override {
    events.emplace_back(what, args);
  }

  // What it answers.
  bool running = true;
  bool takes_stragglers = true;
  std::uint32_t current = 1;
  std::vector<rdzv::MemberProgress> members;
  // What it was asked.
  std::vector<std::pair<std::uint32_t, std::string>> stragglers;
  std::vector<std::pair<Limit, std::string>> limits;
  std::vector<std::string> ended_for;
  std::vector<StacksAsked> stacks;
  std::optional<std::vector<int>> suspects;
  std::vector<std::pair<std::string, Args>> events;
};

}  // namespace hvdrun::launcher::test
