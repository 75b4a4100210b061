// JobSpec: the launcher's immutable description of a job, parsed once from the command
// line and environment (cli.h) and passed down to placement, spawning and supervision: what
// the user asked for. What a run starts from beyond it (the hosts after discovery, aliases and
// preflight) is the run's RunPlan (plan/run_plan.h).
#pragma once

#include <chrono>
#include <csignal>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace hvdrun::launcher {

// One host entry from -H or a host file.
struct HostSpec {
  std::string user;  // from "user@host"; empty = current user
  std::string name;  // host name or address as written (IPv6 without brackets)
  int slots = 1;
  std::string origin;  // where it was written, for messages: "-H" or "hosts.txt:3"
  bool operator==(const HostSpec&) const = default;
};

// One -x entry: forward NAME from the launcher's environment, or set NAME=VALUE.
struct EnvForward {
  std::string name;
  std::optional<std::string> value;
  bool operator==(const EnvForward&) const = default;
};

inline constexpr std::chrono::milliseconds kDefaultHeartbeatTimeout{3000};

// Elastic jobs (--min-np, --max-np): survivors of a failure keep running and re-form.
struct ElasticSpec {
  std::optional<int> min_np;          // after parsing an elastic job: set (default -np)
  std::optional<int> max_np;          // after parsing an elastic job: set (default -np)
  std::optional<int> reset_limit;     // --reset-limit: re-formations allowed; none: unlimited
  std::optional<int> slots_per_host;  // --slots-per-host
  std::string discovery_script;       // --host-discovery-script
  std::chrono::milliseconds discovery_interval{1000};
  std::chrono::milliseconds discovery_timeout{10000};  // --discovery-timeout: a run is killed
  std::chrono::seconds timeout{600};      // --elastic-timeout / HOROVOD_ELASTIC_TIMEOUT
  std::chrono::seconds cooldown_min{10};  // --blacklist-cooldown-range MIN MAX
  std::chrono::seconds cooldown_max{300};
  // --unresponsive-timeout: a joined worker silent this long is lost. Elastic jobs: 3 s unless
  // given; static jobs: only when given (the loss ends the job).
  std::optional<std::chrono::milliseconds> heartbeat_timeout;
  bool exclude_stragglers = false;                 // --exclude-stragglers
  std::chrono::milliseconds straggler_margin{50};  // --straggler-margin
  // --spares: warm spares started with the job on free slots beyond --max-np, parked in their
  // join (libhvdrun's init()) until a failure promotes one into the next generation.
  int spares = 0;
};

// --line-prefix: what goes in front of each output line: "[3]<stdout>:" (rank, horovodrun's),
// "[node2:3]<stdout>:" (host-rank), or nothing (none).
enum class OutputPrefix { kRank, kHostRank, kNone };

// --ranks-filter: ranks first..last (inclusive).
struct RankRange {
  int first = 0;
  int last = 0;
  bool operator==(const RankRange&) const = default;
};

// --preflight and its settings: the hosts are checked before the job (preflight_verdict.h).
struct PreflightSpec {
  bool run = false;      // --preflight or --preflight-only
  bool only = false;     // --preflight-only: no job after it
  bool exclude = false;  // --preflight-exclude
  std::chrono::seconds timeout{60};
  double slack = 0.2;
};

struct JobSpec {
  // -np: the workers of the first generation (a static job keeps exactly this many; an
  // elastic one starts with them, or with every slot up to --max-np: RunPlan::num_proc).
  int num_proc = 0;
  std::vector<HostSpec> hosts;                   // in the order given; default localhost:num_proc
  std::vector<std::string> command;              // program and its arguments
  std::chrono::seconds start_timeout{30};        // --start-timeout / HOROVOD_START_TIMEOUT
  std::chrono::milliseconds grace_period{5000};  // --grace-period (seconds on the CLI)
  // --forward-signals: signals to hvdrun passed on to every worker; the job goes on.
  std::vector<int> forward_signals{SIGHUP, SIGUSR1, SIGUSR2};
  // --stall-timeout: a collective of libhvdrun workers waiting this long is reported (0: never).
  std::chrono::milliseconds stall_timeout{60000};
  // --stall-shutdown: a stall this long ends the job (none: never).
  std::optional<std::chrono::milliseconds> stall_shutdown;
  // --straggler-report: the stragglers said every this long while the job runs (0: at the end
  // only).
  std::chrono::milliseconds straggler_report{0};
  int max_restarts = 0;  // --max-restarts: whole-job restarts
  ElasticSpec elastic;
  std::optional<std::string> output_dir;             // --output-filename
  bool prefix_timestamp = false;                     // --prefix-output-with-timestamp
  OutputPrefix output_prefix = OutputPrefix::kRank;  // --line-prefix
  std::vector<RankRange> ranks_filter;  // --ranks-filter: ranks shown on the console; empty: all
  bool verbose = false;                 // --verbose
  bool dry_run = false;                 // --dry-run: print the plan, start nothing
  PreflightSpec preflight;
  std::optional<std::string> timeline;          // --timeline FILE
  std::size_t timeline_max_events = 100'000;    // --timeline-max-events
  bool timeline_collectives = false;            // --timeline-collectives
  std::size_t timeline_rank_events = 10'000;    // --timeline-rank-events
  std::string log_level = "warn";               // --log-level / HVDRUN_LOG_LEVEL
  std::vector<std::string> network_interfaces;  // --network-interface(s): rendezvous address
  std::vector<EnvForward> env_forward;          // -x
  // HOROVOD_* variables from horovodrun's tuning flags and --config-file (horovod_tuning.h).
  std::map<std::string, std::string> tuning_env;
  int ssh_port = 0;                               // -p/--ssh-port (0 = ~/.ssh/config, else 22)
  std::string ssh_identity_file;                  // -i/--ssh-identity-file
  std::string ssh_host_key_check = "accept-new";  // --ssh-host-key-check yes|accept-new|no
  std::string rendezvous_addr;  // --rendezvous-addr; empty: per host, the route's address
  std::string remote_hvdrun;    // --remote-hvdrun; empty: this hvdrun's own path
  // hvdrun's own arguments as given (after argv[0]): the same command, run elsewhere.
  std::vector<std::string> launcher_args{};
  // How remote hosts' node agents start (--launcher): over SSH, through one srun step of the
  // Slurm allocation (auto: slurm when the hosts came from the allocation), or by each node
  // itself (--nnodes: they connect to the --rdzv-endpoint port).
  enum class Launcher { kSsh, kSlurm, kNodes };
  Launcher launcher = Launcher::kSsh;
  // A per-node start (--nnodes, --node-rank, --nproc-per-node, --rdzv-endpoint, or their PET_*
  // variables): node 0 runs the job, with hosts "localhost" and node-1 .. node-(N-1); the
  // others run a node agent that connects to host:port.
  struct PerNode {
    int nnodes = 0;  // 0: not a per-node start
    int node_rank = 0;
    std::string host;        // the endpoint's host: node 0's
    std::uint16_t port = 0;  // the endpoint's port: node 0's agent port
    std::string secret;      // from --rdzv-secret-file or HVDRUN_RDZV_SECRET
  };
  PerNode per_node;

  // A job whose size may change: --min-np, --max-np or a discovery script.
  bool elastic_job() const noexcept {
    return elastic.min_np.has_value() || elastic.max_np.has_value() ||
           !elastic.discovery_script.empty();
  }
  // An elastic job whose survivors re-form after a failure (HVDRUN_ELASTIC); with
  // --max-restarts, every worker is restarted instead, on the slots available then.
  bool survivors_reform() const noexcept { return elastic_job() && max_restarts == 0; }
};

}  // namespace hvdrun::launcher
