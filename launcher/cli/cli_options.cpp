// hvdrun's option table and --help text (cli_options.h).
#include "launcher/cli/cli_options.h"

#include <vector>

#include "launcher/cli/horovod_tuning.h"

namespace hvdrun::launcher {
namespace {

using namespace option_group;

constexpr std::string_view kMpiOnly =
    "is an MPI option: hvdrun runs Horovod in Gloo mode (no mpirun); drop it";

constexpr OptionInfo kOptions[] = {
    {"num-proc", "-np", "N", true, false, kJob, "number of worker processes",
     "the slots of -H/--hostfile; required without them", ""},
    {"x", "-x", "NAME[=VALUE]", false, true, kJob,
     "set NAME=VALUE for the workers, or forward hvdrun's NAME; repeatable", "none", ""},
    {"start-timeout", "", "S", true, false, kJob, "seconds for all workers to join",
     "$HOROVOD_START_TIMEOUT, else 30", ""},
    {"grace-period", "", "S", true, false, kJob,
     "seconds from SIGTERM to SIGKILL; decimals allowed", "5", ""},
    {"stall-timeout", "", "S", true, false, kJob,
     "report a collective of libhvdrun workers waiting S s: who waits, who has not entered; 0 off",
     "60", ""},
    {"stall-shutdown", "", "S", true, false, kJob,
     "end the job once a collective has waited S s, naming the ranks it waits for", "never", ""},
    {"straggler-report", "", "S", true, false, kJob,
     "say every S s which ranks arrive last at the collectives and how late (libhvdrun)",
     "at the end", ""},
    {"forward-signals", "", "LIST", true, false, kJob,
     "signals to hvdrun passed on to every worker (job goes on): HUP,INT,QUIT,USR1,USR2 or none",
     "HUP,USR1,USR2", ""},
    {"max-restarts", "", "N", true, false, kJob,
     "after a worker fails, restart every worker up to N times (a new generation each time)", "0",
     ""},
    {"min-np", "", "N", true, false, kElastic,
     "elastic job: survivors of a failure re-form and go on while at least N workers run",
     "-np (with --max-np)", "", "min-num-proc"},
    {"max-np", "", "N", true, false, kElastic,
     "elastic job: at most N workers; replacements and returning hosts fill up to it",
     "-np (with --min-np)", "", "max-num-proc"},
    {"elastic-timeout", "", "S", true, false, kElastic,
     "seconds to wait for --min-np workers before the job fails",
     "$HOROVOD_ELASTIC_TIMEOUT, else 600", ""},
    {"reset-limit", "", "N", true, false, kElastic,
     "the job fails at the re-formation after N of them", "no limit", ""},
    {"blacklist-cooldown-range", "", "MIN MAX", true, false, kElastic,
     "seconds a failed worker's host is not used: MIN (0: none), doubling up to MAX", "10 300", ""},
    {"unresponsive-timeout", "", "S", true, false, kElastic,
     "kill a worker silent this long (stopped, cut off): elastic jobs replace it, static ones fail",
     "3 in elastic jobs, else off", ""},
    {"exclude-stragglers", "", "", true, false, kElastic,
     "a host whose rank is persistently the last to collectives, by the margin, cools down", "off",
     ""},
    {"straggler-margin", "", "MS", true, false, kElastic,
     "--exclude-stragglers: median lateness that makes a rank a straggler", "50", ""},
    {"spares", "", "K", true, false, kElastic,
     "K warm spares wait at their join on free slots; a failed worker's place goes to one at once",
     "0", ""},
    {"host-discovery-script", "", "SCRIPT", true, false, kElastic,
     "elastic job on the hosts SCRIPT prints ('host' or 'host:slots' lines), run by /bin/sh",
     "none", ""},
    {"slots-per-host", "", "N", true, false, kElastic,
     "slots of a discovered host printed without ':slots'", "1", ""},
    {"discovery-interval", "", "S", true, false, kElastic,
     "seconds between runs of the discovery script; decimals allowed", "1", ""},
    {"discovery-timeout", "", "S", true, false, kElastic,
     "a run of the discovery script taking longer is killed and fails; decimals allowed", "10", ""},
    {"hosts", "-H", "LIST", true, false, kHosts,
     "[user@]host[:slots],... (1 slot if not given; IPv6 as [addr]:slots)", "localhost:N", ""},
    {"hostfile", "-hostfile", "FILE", true, false, kHosts,
     "lines 'host slots=N', 'host:N' or 'host'; # comments", "none", ""},
    {"nnodes", "", "N", true, false, kHosts,
     "per-node start: N nodes each run this same command (Kubernetes)", "$PET_NNODES", ""},
    {"node-rank", "", "I", true, false, kHosts,
     "this node's rank; node 0 runs the job, the others its workers", "$PET_NODE_RANK, else 0", ""},
    {"nproc-per-node", "", "K", true, false, kHosts, "workers on each node",
     "$PET_NPROC_PER_NODE, else 1", ""},
    {"rdzv-endpoint", "", "HOST:PORT", true, false, kHosts,
     "node 0's address and the port its agents connect to",
     "$PET_RDZV_ENDPOINT, else $PET_MASTER_ADDR:PORT", ""},
    {"rdzv-secret-file", "", "FILE", true, false, kHosts,
     "the nodes' shared secret (a mounted Kubernetes Secret)", "$HVDRUN_RDZV_SECRET", ""},
    {"output-filename", "", "DIR", true, false, kOutput,
     "also write rank N's output to DIR/rank.N/{stdout,stderr}", "none", ""},
    {"prefix-output-with-timestamp", "-prefix-timestamp", "", true, false, kOutput,
     "put a time stamp in front of every output line", "off", ""},
    {"line-prefix", "", "WHAT", true, false, kOutput,
     "in front of each line: rank ([3]<stdout>:), host-rank ([node2:3]<stdout>:) or none", "rank",
     ""},
    {"ranks-filter", "", "LIST", true, false, kOutput,
     "show only these ranks' output on the console, e.g. 0,3-5 (--output-filename gets all)", "all",
     ""},
    {"verbose", "", "", true, false, kOutput, "print each phase of the launch", "off", ""},
    {"timeline", "", "FILE", true, false, kOutput,
     "write the job's life (hosts, workers, generations, failures) as a Perfetto/Chrome trace",
     "none", ""},
    {"timeline-max-events", "", "N", true, false, kOutput,
     "events in --timeline at most; the rest are counted in its last event", "100000", ""},
    {"timeline-collectives", "", "", true, false, kOutput,
     "also draw each libhvdrun collective in --timeline: kind, size, wait and transfer time", "off",
     ""},
    {"timeline-rank-events", "", "N", true, false, kOutput,
     "collectives in --timeline per rank at most; the rest are counted on its track", "10000", ""},
    {"preflight", "", "", true, false, kJob,
     "check every host first (agent, program, GPUs, GEMM, link); a host that fails is not used",
     "off", ""},
    {"preflight-only", "", "", true, false, kJob,
     "run the preflight checks, print their table and exit: 0 if every host passed, else 1", "off",
     ""},
    {"preflight-exclude", "", "", true, false, kJob,
     "static job: run on the hosts that pass if they still give -np slots, not fail", "off", ""},
    {"preflight-timeout", "", "S", true, false, kJob,
     "seconds the preflight checks may take, the hosts' connections included", "60", ""},
    {"preflight-slack", "", "PCT", true, false, kJob,
     "a host this many percent below the median GEMM or link speed fails", "20", ""},
    {"dry-run", "", "", true, false, kJob,
     "print the plan (ranks, hosts, GPUs, environment) after the checks; start nothing", "off", ""},
    {"log-level", "", "L", true, false, kOutput,
     "trace debug info warn error critical off, or TRACE..FATAL; also Horovod's level",
     "$HVDRUN_LOG_LEVEL, else warn", ""},
    {"network-interface", "", "X", true, true, kNetwork, "network interface to use (repeatable)",
     "any", ""},
    {"network-interfaces", "", "A,B", true, false, kNetwork,
     "network interfaces to use, comma-separated", "any", ""},
    {"ssh-port", "-p", "P", true, false, kNetwork, "ssh port of the remote hosts",
     "~/.ssh/config Port, else 22", ""},
    {"ssh-identity-file", "-i", "FILE", true, false, kNetwork,
     "private key tried after ssh-agent, before ~/.ssh/id_*", "~/.ssh/config IdentityFile", ""},
    {"ssh-host-key-check", "", "yes|accept-new|no", true, false, kNetwork,
     "check remote host keys against ~/.ssh/known_hosts; accept-new adds unknown hosts",
     "accept-new", ""},
    {"rendezvous-addr", "", "ADDR", true, false, kNetwork,
     "address remote workers use to reach hvdrun (the rendezvous server binds it)",
     "hvdrun's address on the route to each host", ""},
    {"remote-hvdrun", "", "PATH", true, false, kNetwork, "path of hvdrun on the remote hosts",
     "this hvdrun's own path", ""},
    {"launcher", "", "ssh|slurm|auto", true, false, kNetwork,
     "how remote hosts' node agents start: SSH, or one srun step",
     "slurm for a Slurm allocation's hosts, else ssh", ""},
    {"config-file", "", "FILE", true, false, kTuning,
     "horovodrun's YAML file of the settings below; flags win over it", "none", ""},
    {"gloo", "", "", true, false, kCompat, "accepted; hvdrun always runs Horovod in Gloo mode", "",
     ""},
    {"disable-cache", "", "", true, false, kCompat, "accepted; hvdrun keeps no cache", "", ""},
    {"mpi", "", "", true, false, kCompat, "refused: hvdrun runs Horovod in Gloo mode", "",
     kMpiOnly},
    {"jsrun", "", "", true, false, kCompat, "refused (LSF jsrun)", "", kMpiOnly},
    {"mpi-args", "", "ARGS", true, false, kCompat, "refused", "", kMpiOnly},
    {"binding-args", "-b", "ARGS", true, false, kCompat, "refused", "", kMpiOnly},
    {"check-build", "-cb", "", true, false, kOther,
     "print what this hvdrun offers (controllers, backends, NCCL, GPUs) and exit", "", ""},
    {"help", "-h", "", true, false, kOther, "print this help and exit", "", ""},
    {"version", "-v", "", true, false, kOther, "print the version and exit", "", ""},
};

// Appends one option's line: `left`, then the words of `help` and the unbreakable
// `tail` from column kHelpColumn, wrapped before kHelpWidth.
constexpr std::size_t kHelpColumn = 32;
constexpr std::size_t kHelpWidth = 100;

void append_wrapped(std::string& text, std::string left, std::string_view help,
                    const std::string& tail) {
  std::vector<std::string> units;
  for (std::size_t pos = 0; pos < help.size();) {
    const auto end = std::min(help.find(' ', pos), help.size());
    if (end > pos) units.emplace_back(help.substr(pos, end - pos));
    pos = end + 1;
  }
  if (!tail.empty()) units.push_back(tail);
  const std::string indent(kHelpColumn, ' ');
  left +=
      left.size() + 2 > kHelpColumn ? "\n" + indent : std::string(kHelpColumn - left.size(), ' ');
  std::size_t column = kHelpColumn;
  for (const auto& unit : units) {
    if (column > kHelpColumn && column + 1 + unit.size() > kHelpWidth) {
      left += "\n" + indent;
      column = kHelpColumn;
    } else if (column > kHelpColumn) {
      left += ' ';
      ++column;
    }
    left += unit;
    column += unit.size();
  }
  text += left + "\n";
}

}  // namespace

std::span<const OptionInfo> cli_options() {
  static const std::vector<OptionInfo> all = [] {
    std::vector<OptionInfo> options(std::begin(kOptions), std::end(kOptions));
    for (const auto& param : tuning_params()) options.push_back(param.option);
    return options;
  }();
  return all;
}

std::string help_text() {
  std::string text = "hvdrun: run a distributed job, one worker process per slot.\n";
  text += std::string(kUsage) + "\n";
  for (const auto group : {kJob, kElastic, kHosts, kOutput, kNetwork, kTuning, kCompat, kOther}) {
    text += "\n" + std::string(group) + ":\n";
    for (const auto& option : cli_options()) {
      if (option.group != group || option.help.empty()) continue;  // no help: a --no- twin
      std::string left = "  " + std::string(option.alias);
      if (option.long_form) {
        left += (option.alias.empty() ? "--" : ", --") + std::string(option.name);
        if (!option.other_name.empty()) left += ", --" + std::string(option.other_name);
      }
      if (!option.value_name.empty()) left += " " + std::string(option.value_name);
      const auto tail = option.default_text.empty()
                            ? std::string()
                            : "(default: " + std::string(option.default_text) + ")";
      append_wrapped(text, std::move(left), option.help, tail);
    }
  }
  text +=
      "\nOptions end at `--` or at the program; everything after it belongs to the program.\n"
      "Long options may be shortened to any unambiguous prefix (--verb).\n";
  return text;
}

}  // namespace hvdrun::launcher
