// The last word to the node agents of a per-node start (`--nnodes`) when the run that told them
// to come again (--preflight's probes) is followed by none: the checks failed, or only the
// checks were asked for. Each agent connects to the port again, proves the secret, and is sent
// the status it then exits with, so that every node ends with the outcome, as after a job.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace hvdrun::launcher::remote {

// Waits for the agents of `nodes` on `port` (every interface) until `timeout`, sends each
// `status` (0..255) and closes its connection. Returns the nodes whose agents did not come.
// Throws hvdrun::Error when the port cannot be opened.
std::vector<std::string> dismiss_agents(const std::string& secret, std::uint16_t port,
                                        const std::vector<std::string>& nodes, int status,
                                        std::chrono::milliseconds timeout);

}  // namespace hvdrun::launcher::remote
