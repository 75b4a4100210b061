// The rendezvous servers' settings for a job of so many workers (hvdrun's and Horovod's),
// bounded by the open-file limit, and the torchrun run id.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "common/slot.h"
#include "launcher/horovod/kv_server.h"
#include "launcher/plan/open_files.h"
#include "rendezvous/server.h"

namespace hvdrun::launcher {

// The job's local and remote workers (`remote`: remote_hosts()), and as many more local ones
// (those that cost the most files) as an elastic job may grow to: up to `most` in all.
WorkerCount count_workers(const std::vector<Slot>& slots, const std::vector<std::size_t>& remote,
                          std::size_t most = 0);

// How long an elastic Horovod survivor's GET /rank_and_size is held for its next generation:
// the launcher decides within `elastic_timeout` (a failure seen, slots waited for), and the
// worker is given 30 s more, so that it never gives up first with a less telling error.
std::chrono::milliseconds rank_query_hold(std::chrono::seconds elastic_timeout);

// Horovod's rendezvous server settings for a job of `workers`: the bodies, stored bytes
// and connections its Gloo rendezvous needs (each rank PUTs one address per peer, about 136
// bytes each, into `global`, kept until every rank is done), with headroom. Its port takes
// no credentials, so its connections are also held to credential_free_connections(): those
// held open there never take the files that starting the workers again needs.
horovod::KvServerOptions horovod_server_options(const std::string& bind_address,
                                                WorkerCount workers, std::size_t open_file_limit);

// How many connections hvdrun's rendezvous lets wait to authenticate in a job of `workers`:
// at least the server's default, but no more than the workers themselves (their connections
// are counted in the job's files) and credential_free_connections() for anyone else, as
// Horovod's port gets.
std::size_t rendezvous_max_unauthenticated(WorkerCount workers, std::size_t open_file_limit);

// A job id for TORCHELASTIC_RUN_ID: not a secret, unique enough to tell jobs apart.
std::string make_run_id();

}  // namespace hvdrun::launcher
