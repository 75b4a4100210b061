// attach_device_backend() (see backend_setup.h). Compiled with or without NCCL; the NCCL
// parts are behind HVDRUN_HAVE_NCCL.
#include "worker-runtime/backend_setup.h"

#include <cstdint>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "hvdrun/error.h"
#include "worker-runtime/logging.h"
#include "worker-runtime/nccl/backend_choice.h"
#ifdef HVDRUN_HAVE_NCCL
#include "worker-runtime/nccl/nccl_setup.h"
#endif

namespace hvdrun {
namespace {

// A rank's vote: 1 can run NCCL, 0 runs the CPU backend, -1 failed to decide.
constexpr std::int32_t kNccl = 1, kCpu = 0, kFailed = -1;

std::string ranks_with(const std::vector<std::int32_t>& votes, std::int32_t vote) {
  std::string list;
  for (std::size_t r = 0; r < votes.size(); ++r) {
    if (votes[r] != vote) continue;
    list += (list.empty() ? "" : ", ") + std::to_string(r);
  }
  return list;
}

nccl::DeviceFacts host_facts(const Options& options) {
#ifdef HVDRUN_HAVE_NCCL
  if (options.gpu.backend != nccl::BackendRequest::kCpu) return nccl::probe_devices();
  nccl::DeviceFacts facts;
  facts.built_with_nccl = true;
  return facts;
#else
  (void)options;
  return {};
#endif
}

// Every rank's vote, exchanged over the ring (no exchange for a world of one).
std::vector<std::int32_t> exchange_votes(Communicator& communicator, std::int32_t mine) {
  if (communicator.topology().size == 1) return {mine};
  std::vector<std::byte> bytes;
  communicator.allgather(&mine, 1, DataType::kInt32, bytes);
  std::vector<std::int32_t> votes(bytes.size() / sizeof(std::int32_t));
  std::memcpy(votes.data(), bytes.data(), votes.size() * sizeof(std::int32_t));
  return votes;
}

// This rank's choice made consistent with every other rank's; rethrows this rank's own error.
nccl::BackendChoice agree(Communicator& communicator, const Options& options) {
  const Topology& t = communicator.topology();
  nccl::BackendChoice choice;
  std::exception_ptr error;
  try {
    choice = nccl::choose_backend(options.gpu, host_facts(options), t.local_rank, t.local_size);
  } catch (const Error&) {
    error = std::current_exception();
  }
  const std::int32_t mine =
      error ? kFailed : (choice.kind == nccl::BackendKind::kNccl ? kNccl : kCpu);
  const std::vector<std::int32_t> votes = exchange_votes(communicator, mine);
  if (error) std::rethrow_exception(error);
  if (const std::string failed = ranks_with(votes, kFailed); !failed.empty()) {
    throw BackendError("backend choice failed on rank(s) " + failed + " (see their error)");
  }
  const std::string cpu = ranks_with(votes, kCpu);
  if (choice.kind == nccl::BackendKind::kNccl && !cpu.empty()) {
    const std::string why = "rank(s) " + cpu + " cannot use NCCL (see their log)";
    if (options.gpu.backend == nccl::BackendRequest::kNccl) {
      throw BackendError("HVDRUN_BACKEND=nccl cannot be honoured: " + why);
    }
    choice = {nccl::BackendKind::kCpu, -1, "cpu (TCP ring): " + why};
  }
  return choice;
}

}  // namespace

void attach_device_backend(Communicator& communicator, rdzv::Client* client,
                           const Options& options) {
  const nccl::BackendChoice choice = agree(communicator, options);
  runtime_log().info("backend: {}", choice.reason);
  if (choice.kind == nccl::BackendKind::kCpu) {
    communicator.set_device_backend(nullptr, choice.reason);
    return;
  }
#ifdef HVDRUN_HAVE_NCCL
  communicator.set_device_backend(
      nccl::start_nccl_backend(communicator.topology(), choice.device, client, options,
                               &communicator.abort_signal()),
      choice.reason);
#else
  (void)client;
  throw BackendError("NCCL chosen in a build without NCCL");  // choose_backend prevents it
#endif
}

}  // namespace hvdrun
