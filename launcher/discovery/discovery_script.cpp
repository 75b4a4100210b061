// DiscoveryScript (discovery_script.h): spawn, two pipe readers, a SIGCHLD watch and the
// timeout, joined in maybe_done().
#include "launcher/discovery/discovery_script.h"

#include <fcntl.h>

#include <array>

#include "hvdrun/error.h"
#include "launcher/process/process.h"
#include "launcher/spec/hosts.h"

namespace hvdrun::launcher {

namespace asio = boost::asio;

namespace {
constexpr std::size_t kMaxOutput = 1u << 20;
constexpr std::size_t kKeptError = 4096;
// How long the script's pipes may stay open after it exited: a process it started in another
// session (setsid ... &) may hold them for ever; what came until then is its output.
constexpr auto kOutputAfterExit = std::chrono::milliseconds(500);

// The last line of the script's stderr, for the failure message.
std::string last_line(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  const auto newline = text.rfind('\n');
  return newline == std::string::npos ? text : text.substr(newline + 1);
}
}  // namespace

struct DiscoveryScript::Run {
  Run(asio::io_context& io, Spawned spawned)
      : child(std::move(spawned.child)),
        out(io, spawned.out.release()),
        err(io, spawned.err.release()),
        timer(io),
        after_exit(io),
        sigchld(io, SIGCHLD) {}
  Child child;
  asio::posix::stream_descriptor out, err;
  asio::steady_timer timer;
  asio::steady_timer after_exit;  // bounds the wait for the pipes once it exited
  asio::signal_set sigchld;
  std::function<void(DiscoveryResult)> done;
  Refine refine;
  std::string stdout_text, stderr_text;
  std::array<char, 4096> out_buffer{}, err_buffer{};
  bool out_open = true, err_open = true;
  std::optional<ProcessEnd> end;
  std::string failure;  // set by the timeout or the output limit
};

DiscoveryScript::DiscoveryScript(asio::io_context& io, Watchdog& watchdog, const ElasticSpec& spec,
                                 const std::map<std::string, std::string>& environment)
    : io_(io), watchdog_(watchdog), spec_(spec) {
  for (const auto& [name, value] : environment) env_.push_back(name + "=" + value);
}

DiscoveryScript::~DiscoveryScript() {
  cancel();
  parser_.join();  // a parse under way ends; its result goes nowhere
}

void DiscoveryScript::cancel() {
  alive_ = std::make_shared<char>();
  if (!run_) return;
  const pid_t pgid = run_->child.pgid();
  run_.reset();  // the Child kills and reaps its group
  watchdog_.forget(pgid);
}

void DiscoveryScript::run(std::function<void(DiscoveryResult)> done, Refine refine) {
  if (run_) return;
  const std::string& script = spec_.discovery_script;
  Spawned spawned;
  try {
    spawned = spawn({"/bin/sh", "-c", script}, env_);
  } catch (const Error& e) {
    asio::post(io_, [done = std::move(done), what = std::string(e.what())] {
      done({{}, "cannot run the discovery script: " + what});
    });
    return;
  }
  exec_error(spawned);  // /bin/sh itself; the script's own failures come as its exit status
  watchdog_.watch(spawned.child.pgid());
  for (UniqueFd* fd : {&spawned.out, &spawned.err}) ::fcntl(fd->get(), F_SETFL, O_NONBLOCK);
  run_ = std::make_unique<Run>(io_, std::move(spawned));
  run_->done = std::move(done);
  run_->refine = std::move(refine);
  Run* run = run_.get();
  run->timer.expires_after(spec_.discovery_timeout);
  run->timer.async_wait([this, run](const boost::system::error_code& ec) {
    if (ec || run_.get() != run) return;
    run->failure = "did not finish within " + std::to_string(spec_.discovery_timeout.count()) +
                   " ms (--discovery-timeout): killed";
    run->child.signal_group(SIGKILL);
  });
  if (auto end = run->child.try_reap()) {
    exited(std::move(*end));  // ended before the watch
  } else {
    watch_exit();
  }
  read(true);
  read(false);
}

// The script's end is known; its pipes get kOutputAfterExit more to reach their end.
void DiscoveryScript::exited(ProcessEnd end) {
  Run* run = run_.get();
  run->end = std::move(end);
  run->after_exit.expires_after(kOutputAfterExit);
  run->after_exit.async_wait([this, run](const boost::system::error_code& ec) {
    if (ec || run_.get() != run) return;
    boost::system::error_code ignored;
    run->out.close(ignored);
    run->err.close(ignored);
    run->out_open = run->err_open = false;
    maybe_done();
  });
  maybe_done();
}

void DiscoveryScript::watch_exit() {
  Run* run = run_.get();
  run->sigchld.async_wait([this, run](const boost::system::error_code& ec, int) {
    if (ec || run_.get() != run) return;
    if (auto end = run->child.try_reap()) return exited(std::move(*end));
    watch_exit();
  });
}

void DiscoveryScript::read(bool out) {
  Run* run = run_.get();
  auto& stream = out ? run->out : run->err;
  auto& buffer = out ? run->out_buffer : run->err_buffer;
  stream.async_read_some(
      asio::buffer(buffer),
      [this, run, out, &buffer](const boost::system::error_code& ec, std::size_t n) {
        if (run_.get() != run) return;
        if (ec) {
          (out ? run->out_open : run->err_open) = false;
          maybe_done();
          return;
        }
        const char* data = buffer.data();
        if (out) {
          run->stdout_text.append(data, n);
          if (run->stdout_text.size() > kMaxOutput && run->failure.empty()) {
            run->failure = "printed more than 1 MiB: killed";
            run->child.signal_group(SIGKILL);
          }
        } else {
          run->stderr_text.append(data, n);
          if (run->stderr_text.size() > 2 * kKeptError) {
            run->stderr_text.erase(0, run->stderr_text.size() - kKeptError);
          }
        }
        read(out);
      });
}

void DiscoveryScript::maybe_done() {
  Run* run = run_.get();
  if (!run || run->out_open || run->err_open || !run->end) return;
  const std::string name = "discovery script " + quoted(spec_.discovery_script);
  DiscoveryResult result;
  if (!run->failure.empty()) {
    result.error = name + " " + run->failure;
  } else if (!run->end->success()) {
    const std::string said = last_line(run->stderr_text);
    result.error = name + " failed: " + run->end->describe() +
                   (said.empty() ? "" : " (stderr: " + quoted(said) + ")");
  }
  auto done = std::move(run->done);
  auto refine = std::move(run->refine);
  std::string text = std::move(run->stdout_text);
  watchdog_.forget(run->child.pgid());
  run_.reset();
  if (!result.error.empty()) return done(std::move(result));
  asio::post(parser_,
             [text = std::move(text), script = spec_.discovery_script, slots = spec_.slots_per_host,
              done = std::move(done), refine = std::move(refine),
              alive = std::weak_ptr<char>(alive_), io = asio::make_work_guard(io_)]() mutable {
               DiscoveryResult parsed;
               try {
                 parsed.hosts = parse_discovery_output(text, script, slots);
                 if (refine) refine(parsed);
               } catch (const UsageError& e) {
                 parsed.error = e.what();
               }
               asio::post(io.get_executor(),
                          [parsed = std::move(parsed), done = std::move(done), alive]() mutable {
                            if (alive.lock()) done(std::move(parsed));
                          });
             });
}

}  // namespace hvdrun::launcher
