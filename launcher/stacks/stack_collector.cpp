// StackCollector (stack_collector.h).
#include "launcher/stacks/stack_collector.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/post.hpp>
#include <chrono>
#include <ctime>
#include <fstream>
#include <sstream>

#include "launcher/process/run_captured.h"
#include "launcher/stacks/python_hook.h"

namespace hvdrun::launcher {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

constexpr auto kToolTimeout = std::chrono::seconds(5);  // one eu-stack run
constexpr auto kPythonWait = milliseconds(2000);        // for faulthandler's file to be written
constexpr auto kPythonSettled = milliseconds(100);      // no growth this long: written
constexpr std::size_t kMaxDump = 1u << 20;              // of either kind, per rank
constexpr std::size_t kParallel = 8;

std::uintmax_t size_of(const fs::path& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  return ec ? 0 : size;
}

// Sends the hook's signal and waits until its file stops growing; returns what it wrote and
// empties the file for the next dump (the hook appends).
std::string python_stacks(pid_t pid, const fs::path& hook_dir) {
  if (hook_dir.empty() || !python_hook_armed(pid)) return "";
  const auto file = python_stacks_file(hook_dir, pid);
  if (::kill(pid, kStacksSignal) != 0) return "";
  const auto deadline = std::chrono::steady_clock::now() + kPythonWait;
  std::uintmax_t last = 0;
  auto last_change = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(20));
    const auto size = size_of(file);
    if (size != last) {
      last = size;
      last_change = std::chrono::steady_clock::now();
    } else if (size > 0 && std::chrono::steady_clock::now() - last_change >= kPythonSettled) {
      break;
    }
  }
  std::ifstream in(file, std::ios::binary);
  std::string text(std::min<std::uintmax_t>(last, kMaxDump), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  std::error_code ec;
  fs::resize_file(file, 0, ec);
  return text;
}

std::string timestamp() {
  const std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", std::localtime(&now));
  return text;
}

}  // namespace

void append_stacks_file(RankStacks& r, const fs::path& out_dir) {
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  r.file = out_dir / ("rank." + std::to_string(r.target.rank) + ".txt");
  std::ofstream out(r.file, std::ios::app);
  out << "==== rank " << r.target.rank << " (host " << r.target.host << ", pid " << r.target.pid
      << ") at " << timestamp() << " ====\n";
  if (!r.python.empty()) out << "---- Python, every thread (faulthandler) ----\n" << r.python;
  if (!r.native.empty()) out << "---- native, every thread (eu-stack) ----\n" << r.native;
  if (!r.note.empty()) out << "---- " << r.note << " ----\n";
  out << "\n";
}

RankStacks collect_one(const StackTarget& target, const fs::path& hook_dir) {
  RankStacks r;
  r.target = target;
  r.python = python_stacks(target.pid, hook_dir);
  const std::vector<std::string> argv{"/bin/sh", "-c", "exec eu-stack -p \"$1\" 2>&1", "sh",
                                      std::to_string(target.pid)};
  std::vector<std::string> env;
  if (const char* path = std::getenv("PATH")) env.push_back(std::string("PATH=") + path);
  try {
    const Captured c = run_captured(argv, env, kToolTimeout, kMaxDump);
    if (c.timed_out) {
      r.note = "no native frames: eu-stack took longer than 5 s";
    } else if (c.end.kind == ProcessEnd::Kind::kExited && c.end.value == 127) {
      r.note = "no native frames: eu-stack not found (Debian package elfutils)";
    } else if (c.out.find("TID ") == std::string::npos) {
      std::string why = c.out.substr(0, c.out.find('\n'));
      if (why.find("Operation not permitted") != std::string::npos) {
        why += " (ptrace: run as the workers' user with kernel.yama.ptrace_scope 0, or as root)";
      }
      r.note = "no native frames: " + (why.empty() ? c.end.describe() : why);
    } else {
      r.native = c.out;
    }
  } catch (const std::exception& e) {
    r.note = std::string("no native frames: ") + e.what();
  }
  return r;
}

struct StackCollector::State {
  std::atomic<bool> busy{false};
  bool alive = true;  // io thread: false once the collector is gone (its `done` is not called)
};

StackCollector::StackCollector(boost::asio::io_context& io, fs::path hook_dir, fs::path out_dir)
    : io_(io),
      hook_dir_(std::move(hook_dir)),
      out_dir_(std::move(out_dir)),
      state_(std::make_shared<State>()) {}

StackCollector::~StackCollector() {
  if (worker_.joinable()) worker_.join();
  state_->alive = false;
}

bool StackCollector::collect(std::vector<StackTarget> targets, Done done) {
  if (state_->busy.exchange(true)) return false;
  if (worker_.joinable()) worker_.join();  // the last one, finished
  worker_ = std::thread([this, targets = std::move(targets), done = std::move(done)] {
    std::vector<RankStacks> results(targets.size());
    for (std::size_t first = 0; first < targets.size(); first += kParallel) {
      std::vector<std::thread> batch;
      for (std::size_t i = first; i < std::min(targets.size(), first + kParallel); ++i) {
        batch.emplace_back([&, i] { results[i] = collect_one(targets[i], hook_dir_); });
      }
      for (auto& t : batch) t.join();
    }
    for (auto& r : results) append_stacks_file(r, out_dir_);
    boost::asio::post(io_, [state = state_, done, results = std::move(results)]() mutable {
      state->busy = false;
      if (state->alive) done(std::move(results));
    });
  });
  return true;
}

}  // namespace hvdrun::launcher
