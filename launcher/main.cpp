// hvdrun's entry point: `hvdrun --node-agent` (a host's node agent, node_agent.h) first;
// otherwise argv and environment -> JobSpec (cli.h) -> help, version, or the job (job/run_job.h).
// The only place that maps errors to exit statuses: usage 2, others 1.
#include <signal.h>
#include <sys/resource.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "hvdrun/error.h"
#include "launcher/agent/agent_connect.h"
#include "launcher/cli/cli.h"
#include "launcher/cli/per_node.h"
#include "launcher/process/interrupted.h"
#include "launcher/process/process.h"
#include "launcher/process/signal_watch.h"
#include "launcher/run/run_job.h"

extern char** environ;

namespace {

std::map<std::string, std::string> environment_map() {
  std::map<std::string, std::string> env;
  for (char** entry = environ; entry && *entry; ++entry) {
    std::string text(*entry);
    auto eq = text.find('=');
    if (eq == std::string::npos) continue;
    env.emplace(text.substr(0, eq), text.substr(eq + 1));
  }
  return env;
}

// Raises the soft RLIMIT_NOFILE to the hard limit (workers inherit it, as with horovodrun).
void raise_open_file_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= limit.rlim_max) return;
  limit.rlim_cur = limit.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &limit);
}

int fail(const char* message, int status) {
  std::fprintf(stderr, "hvdrun: error: %s\n", message);
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string_view(argv[1]) == "--node-agent") {
    return hvdrun::launcher::agent::node_agent_main(
        std::vector<std::string>(argv + 2, argv + argc));
  }
  // The signals a job handles wait, blocked, until its handlers are in (SignalWatch unblocks
  // them): one that comes while hvdrun reads its command line and sets the job up ends the job
  // as it would later, instead of killing hvdrun by its default action. Paths that run no job
  // unblock them at once.
  hvdrun::launcher::block_job_signals();
  hvdrun::launcher::ensure_standard_fds();
  ::signal(SIGPIPE, SIG_IGN);  // a closed console must not kill the launcher
  raise_open_file_limit();     // 3 pipes per local worker and a socket per rank
  try {
    std::vector<std::string> args(argv + 1, argv + argc);
    auto environment = environment_map();
    auto parsed = hvdrun::launcher::parse_cli(args, environment);
    for (const auto& remark : parsed.notes) std::fprintf(stderr, "hvdrun: %s\n", remark.c_str());
    if (parsed.action != hvdrun::launcher::CliAction::kRun) {
      hvdrun::launcher::unblock_job_signals();  // --check-build ends on Ctrl-C as before
      std::fputs(parsed.text.c_str(), stdout);
      if (!parsed.text.empty() && parsed.text.back() != '\n') std::fputc('\n', stdout);
      // A reader that went away (EPIPE) took what it wanted, as with the workers' output.
      if ((std::fflush(stdout) != 0 || std::ferror(stdout)) && errno != EPIPE) {
        return fail(("cannot write to stdout: " + std::string(std::strerror(errno))).c_str(), 1);
      }
      return 0;
    }
    const auto& per_node = parsed.spec.per_node;
    if (per_node.nnodes > 1 && per_node.node_rank > 0) {  // this node runs node 0's workers
      hvdrun::launcher::unblock_job_signals();            // the agent ends on them while it waits
      ::setenv(hvdrun::launcher::agent::kAgentSecretVariable, per_node.secret.c_str(), 1);
      const std::string host =
          per_node.host.find(':') != std::string::npos ? "[" + per_node.host + "]" : per_node.host;
      std::fprintf(stderr, "hvdrun: node %d of %d: running the workers node 0 (%s) gives it\n",
                   per_node.node_rank, per_node.nnodes, per_node.host.c_str());
      return hvdrun::launcher::agent::node_agent_main(
          {"--connect", host + ":" + std::to_string(per_node.port), "--node",
           hvdrun::launcher::per_node_host_name(per_node.node_rank), "--connect-timeout",
           // Node 0's pod may be scheduled minutes after this one.
           std::to_string(std::max<long long>(300, parsed.spec.start_timeout.count()))});
    }
    return hvdrun::launcher::run_job(parsed.spec, environment);
  } catch (const hvdrun::UsageError& e) {
    hvdrun::launcher::unblock_job_signals();
    return fail(e.what(), 2);
  } catch (const hvdrun::launcher::Interrupted& e) {
    return fail(e.what(), 128 + e.signo());
  } catch (const std::exception& e) {
    return fail(e.what(), 1);
  }
}
