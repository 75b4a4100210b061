// The node agent's entry point and its connection to the launcher (agent_connect.h).
#include "launcher/agent/agent_connect.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <thread>

#include "common/unique_fd.h"
#include "hvdrun/error.h"
#include "launcher/agent/agent_auth.h"
#include "launcher/agent/node_agent.h"
#include "rendezvous/env_names.h"

extern char** environ;

namespace hvdrun::launcher::agent {
namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string host, port;
  std::string node;
  std::string secret_file;
  std::chrono::milliseconds timeout{60'000};
};

[[noreturn]] void usage(const std::string& message) {
  throw UsageError(message);
}

Options parse(const std::vector<std::string>& args) {
  Options o;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) usage("--node-agent " + a + " needs a value");
      return args[++i];
    };
    if (a == "--connect") {
      const std::string& endpoint = value();
      const auto colon = endpoint.rfind(':');
      if (colon == std::string::npos || colon == 0 || colon + 1 == endpoint.size()) {
        usage("--node-agent --connect '" + endpoint + "': expected HOST:PORT");
      }
      o.host = endpoint.substr(0, colon);
      o.port = endpoint.substr(colon + 1);
      if (o.host.size() > 2 && o.host.front() == '[' && o.host.back() == ']') {
        o.host = o.host.substr(1, o.host.size() - 2);
      }
    } else if (a == "--node") {
      o.node = value();
    } else if (a == "--secret-file") {
      o.secret_file = value();
    } else if (a == "--connect-timeout") {
      const std::string& v = value();
      char* end = nullptr;
      const double seconds = std::strtod(v.c_str(), &end);
      if (end == v.c_str() || *end != '\0' || !(seconds > 0) || seconds > 86400) {
        usage("--node-agent --connect-timeout '" + v + "': expected seconds (0 < S <= 86400)");
      }
      o.timeout = std::chrono::milliseconds(static_cast<long>(seconds * 1000));
    } else {
      usage("--node-agent: unknown argument '" + a + "'");
    }
  }
  if (o.host.empty() && (!o.secret_file.empty() || !o.node.empty())) {
    usage("--node-agent: --node and --secret-file go with --connect HOST:PORT");
  }
  return o;
}

std::string read_secret(const Options& o) {
  std::string secret;
  if (!o.secret_file.empty()) {
    std::ifstream in(o.secret_file);
    if (!in) usage("--secret-file '" + o.secret_file + "': " + std::strerror(errno));
    std::ostringstream text;
    text << in.rdbuf();
    secret = text.str();
    while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r')) secret.pop_back();
  } else if (const char* env = std::getenv(kAgentSecretVariable)) {
    secret = env;
  }
  ::unsetenv(kAgentSecretVariable);  // never inherited by a worker
  if (secret.empty()) {
    usage(std::string("--node-agent --connect needs the job's secret: ") + kAgentSecretVariable +
          " or --secret-file");
  }
  if (secret.size() > 4096) usage("the job's secret is longer than 4096 bytes");
  return secret;
}

// One attempt at every address of the endpoint; the error of the last on failure.
UniqueFd connect_once(const Options& o, std::string& error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(o.host.c_str(), o.port.c_str(), &hints, &found); rc != 0) {
    error = std::string("cannot resolve ") + o.host + ": " + ::gai_strerror(rc);
    return {};
  }
  UniqueFd fd;
  for (addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    UniqueFd s(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol));
    if (!s.valid()) continue;
    if (::connect(s.get(), ai->ai_addr, ai->ai_addrlen) == 0) {
      const int one = 1;  // frames are small and answered: no wait for more to send
      ::setsockopt(s.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      fd = std::move(s);
      break;
    }
    error = std::strerror(errno);
  }
  ::freeaddrinfo(found);
  return fd;
}

// Between two runs nothing runs here: SIGTERM, SIGINT and SIGHUP (blocked by the run, one may
// be pending) end the agent at once again, as before its first run, even in a connect.
void unblock_end_signals() {
  sigset_t end;
  sigemptyset(&end);
  for (const int signo : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&end, signo);
  ::sigprocmask(SIG_UNBLOCK, &end, nullptr);
}

// What an agent that connected exits with: the job's status as the launcher told it; a
// non-zero one when the launcher went away without telling it (it failed or was killed: a
// node of a per-node start must not report success for a job that did not end well), or when
// a signal ended the agent (128 + its number, as a shell reports it).
int connected_status(const AgentEnd& end, const std::string& where) {
  if (end.told) return end.status;
  if (end.signal != 0) return 128 + end.signal;
  write_all(2, "hvdrun node agent: the launcher at " + where +
                   " closed the connection before the job's end (it failed, was killed, or lost "
                   "this node): exiting with status 1\n");
  return 1;
}

// hvdrun's own secrets and its move's variables leave the agent's environment, which its
// workers inherit (srun passes the moved hvdrun's environment on; a pod has the nodes' secret).
// The agent's own secret is read first (read_secret()).
void forget_launcher_variables() {
  std::vector<std::string> names{env::kNodesSecret};
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    if (entry.starts_with(env::kSlurmMovePrefix))
      names.emplace_back(entry.substr(0, entry.find('=')));
  }
  for (const auto& name : names) ::unsetenv(name.c_str());
}

}  // namespace

int node_agent_main(const std::vector<std::string>& args) {
  forget_launcher_variables();
  Options o;
  std::string secret;
  try {
    o = parse(args);
    if (o.host.empty()) return run_node_agent(0, 1, 2).status;
    secret = read_secret(o);
  } catch (const UsageError& e) {
    write_all(2, std::string("hvdrun node agent: ") + e.what() + "\n");
    return 2;
  }
  if (o.node.empty()) {
    if (const char* slurm = std::getenv("SLURMD_NODENAME")) o.node = slurm;
  }
  auto deadline = Clock::now() + o.timeout;
  const std::string where = o.host + ":" + o.port;
  bool said = false;
  std::minstd_rand random(static_cast<unsigned>(::getpid()));
  std::uniform_int_distribution<int> jitter(0, 250);
  for (;;) {
    std::string error;
    UniqueFd fd = connect_once(o, error);
    if (fd.valid()) {
      try {
        agent_handshake(fd.get(), secret,
                        std::min(deadline, Clock::now() + std::chrono::seconds(10)));
        const AgentEnd end = run_node_agent(fd.get(), fd.get(), 2, o.node);
        if (!end.again) return connected_status(end, where);
        unblock_end_signals();
        // The launcher runs again on its port (the job after its checks): a new connection.
        write_all(2, "hvdrun node agent: the launcher at " + where +
                         " runs again after its checks: connecting again\n");
        deadline = Clock::now() + o.timeout;
        said = true;
        continue;
      } catch (const NetworkError& e) {  // the launcher was busy: again, after a while
        error = e.what();
      } catch (const SecretMismatch& e) {
        write_all(2, "hvdrun node agent: the launcher at " + where + ": " + e.what() + "\n");
        return 2;
      } catch (const Error& e) {
        write_all(2, "hvdrun node agent: the launcher at " + where + ": " + e.what() + "\n");
        return 1;
      }
    }
    if (Clock::now() >= deadline) {
      write_all(2, "hvdrun node agent: no launcher at " + where + " within " +
                       std::to_string(o.timeout.count() / 1000) + " s (" + error + ")\n");
      return 1;
    }
    if (!said) {
      write_all(2,
                "hvdrun node agent: waiting for the launcher at " + where + " (" + error + ")\n");
      said = true;
    }
    // 250 ms, and up to 250 ms more: agents refused at once do not come back at once.
    std::this_thread::sleep_for(std::chrono::milliseconds(250 + jitter(random)));
  }
}

}  // namespace hvdrun::launcher::agent
