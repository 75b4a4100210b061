// Names of the environment variables hvdrun sets for workers and reads itself: the one
// place where they are spelled. Shared by the launcher (writer) and libhvdrun (reader).
#pragma once

namespace hvdrun::env {

// hvdrun's own, never a worker's: the nodes' long-lived shared secret of a per-node start
// (the alternative to --rdzv-secret-file), and the prefix of the variables of hvdrun's move
// into its Slurm allocation (HVDRUN_SLURM_MOVED, ..., the control port's secret).
inline constexpr const char* kNodesSecret = "HVDRUN_RDZV_SECRET";
inline constexpr const char* kSlurmMovePrefix = "HVDRUN_SLURM_";

// Rendezvous server of the job, "host:port".
inline constexpr const char* kRendezvousAddr = "HVDRUN_RENDEZVOUS_ADDR";
// Per-job secret (hex); proves a client belongs to the job. Never printed.
inline constexpr const char* kSecret = "HVDRUN_SECRET";
// This worker's key in the job: unique among every process the job starts, kept for the
// worker's life (its rank may change from generation to generation).
inline constexpr const char* kSlot = "HVDRUN_SLOT";
// 1 in an elastic job: libhvdrun re-forms after a generation ends (hvdrun/elastic.h).
inline constexpr const char* kElastic = "HVDRUN_ELASTIC";
// 1 for a warm spare (hvdrun --spares): its hvdrun::init() waits, in no generation, until
// the launcher promotes it into one (or says it is not needed: NotMemberError).
inline constexpr const char* kSpare = "HVDRUN_SPARE";
// --elastic-timeout in seconds: a survivor waits that long, and 10 s more, for its generation
// to end and then as long again for the next to form (the launcher decides first).
inline constexpr const char* kElasticTimeout = "HVDRUN_ELASTIC_TIMEOUT";
// Host name of the slot as the user wrote it (-H / host file).
inline constexpr const char* kHostname = "HVDRUN_HOSTNAME";
// Seconds a worker waits in init() for all ranks to join (the launcher's --start-timeout).
inline constexpr const char* kStartTimeout = "HVDRUN_START_TIMEOUT";
// Seconds a collective waits for a peer before failing (default 60).
inline constexpr const char* kTimeout = "HVDRUN_TIMEOUT";
// Log level: trace, debug, info, warn, error, off.
inline constexpr const char* kLogLevel = "HVDRUN_LOG_LEVEL";
// Collective backend: cpu, nccl or auto.
inline constexpr const char* kBackend = "HVDRUN_BACKEND";
// 1: every collective is timed and sent to the launcher for its timeline
// (--timeline-collectives), not every 8th only.
inline constexpr const char* kTimelineCollectives = "HVDRUN_TIMELINE_COLLECTIVES";
// Network interface or address workers bind their data sockets to.
inline constexpr const char* kNetworkInterface = "HVDRUN_NETWORK_INTERFACE";

// Horovod (gloo mode) topology variables.
inline constexpr const char* kHorovodRank = "HOROVOD_RANK";
inline constexpr const char* kHorovodSize = "HOROVOD_SIZE";
inline constexpr const char* kHorovodLocalRank = "HOROVOD_LOCAL_RANK";
inline constexpr const char* kHorovodLocalSize = "HOROVOD_LOCAL_SIZE";
inline constexpr const char* kHorovodCrossRank = "HOROVOD_CROSS_RANK";
inline constexpr const char* kHorovodCrossSize = "HOROVOD_CROSS_SIZE";
inline constexpr const char* kHorovodHostname = "HOROVOD_HOSTNAME";
// 1 in an elastic job whose survivors re-form: a Horovod worker's hvd.init() after
// hvd.shutdown() asks Horovod's rendezvous for its place (GET /rank_and_size).
inline constexpr const char* kHorovodElastic = "HOROVOD_ELASTIC";
// Horovod's Gloo mode: controller, CPU operations, HTTP rendezvous, interfaces.
inline constexpr const char* kHorovodController = "HOROVOD_CONTROLLER";
inline constexpr const char* kHorovodCpuOperations = "HOROVOD_CPU_OPERATIONS";
inline constexpr const char* kHorovodGlooRendezvousAddr = "HOROVOD_GLOO_RENDEZVOUS_ADDR";
inline constexpr const char* kHorovodGlooRendezvousPort = "HOROVOD_GLOO_RENDEZVOUS_PORT";
inline constexpr const char* kHorovodGlooIface = "HOROVOD_GLOO_IFACE";
inline constexpr const char* kNcclSocketIfname = "NCCL_SOCKET_IFNAME";

// torchrun variables, for init_process_group("env://").
inline constexpr const char* kTorchRank = "RANK";
inline constexpr const char* kTorchWorldSize = "WORLD_SIZE";
inline constexpr const char* kTorchLocalRank = "LOCAL_RANK";
inline constexpr const char* kTorchLocalWorldSize = "LOCAL_WORLD_SIZE";
inline constexpr const char* kTorchGroupRank = "GROUP_RANK";
inline constexpr const char* kTorchMasterAddr = "MASTER_ADDR";
inline constexpr const char* kTorchMasterPort = "MASTER_PORT";
inline constexpr const char* kTorchGroupWorldSize = "GROUP_WORLD_SIZE";
inline constexpr const char* kTorchRoleRank = "ROLE_RANK";
inline constexpr const char* kTorchRoleWorldSize = "ROLE_WORLD_SIZE";
inline constexpr const char* kTorchRoleName = "ROLE_NAME";
inline constexpr const char* kTorchRunId = "TORCHELASTIC_RUN_ID";
inline constexpr const char* kTorchRestartCount = "TORCHELASTIC_RESTART_COUNT";
inline constexpr const char* kTorchMaxRestarts = "TORCHELASTIC_MAX_RESTARTS";
inline constexpr const char* kTorchNcclAsyncErrorHandling = "TORCH_NCCL_ASYNC_ERROR_HANDLING";
inline constexpr const char* kNcclAsyncErrorHandling = "NCCL_ASYNC_ERROR_HANDLING";  // torch < 2.2
// One OpenMP thread per worker where workers share a host, unless the user chose (torchrun).
inline constexpr const char* kOmpNumThreads = "OMP_NUM_THREADS";

}  // namespace hvdrun::env
