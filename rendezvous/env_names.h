// Names of the environment variables hvdrun sets for workers and reads itself: the one
// place where they are spelled. Shared by the launcher (writer) and libhvdrun (reader).
#pragma once

namespace hvdrun::env {

// Rendezvous server of the job, "host:port".
inline constexpr const char* kRendezvousAddr = "HVDRUN_RENDEZVOUS_ADDR";
// Per-job secret (hex); proves a client belongs to the job. Never printed.
inline constexpr const char* kSecret = "HVDRUN_SECRET";
// Launcher slot index of this worker (its rank in the first generation).
inline constexpr const char* kSlot = "HVDRUN_SLOT";
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

// torchrun variables, for init_process_group("env://").
inline constexpr const char* kTorchRank = "RANK";
inline constexpr const char* kTorchWorldSize = "WORLD_SIZE";
inline constexpr const char* kTorchLocalRank = "LOCAL_RANK";
inline constexpr const char* kTorchLocalWorldSize = "LOCAL_WORLD_SIZE";
inline constexpr const char* kTorchGroupRank = "GROUP_RANK";
inline constexpr const char* kTorchMasterAddr = "MASTER_ADDR";
inline constexpr const char* kTorchMasterPort = "MASTER_PORT";

}  // namespace hvdrun::env
