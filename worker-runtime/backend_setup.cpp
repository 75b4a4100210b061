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
#include "worker-runtime/nccl/comm_plan.h"
#ifdef HVDRUN_HAVE_NCCL
#include "worker-runtime/nccl/nccl_setup.h"
#endif

namespace hvdrun {
namespace {

// A rank's choice: 1 can run NCCL, 0 runs the CPU backend, -1 failed to decide.
constexpr std::int32_t kNccl = 1, kCpu = 0, kFailed = -1;

// What each rank reports to the others, as int32s on the ring: its choice, and for an
// NCCL generation what the communicator plan needs (nccl::MemberComm).
struct Vote {
  std::int32_t choice = kFailed;
  std::int32_t device = -1;
  std::int32_t nccl_version = 0;
  std::int32_t has_shrink = 0;
  std::int32_t has_previous = 0;  // 1: the fields below describe its previous communicator
  std::int32_t generation = 0;
  std::int32_t rank = -1, size = 0, previous_device = -1;
  std::int32_t alive = 0;
  std::int32_t check_collectives = 0;  // HVDRUN_CHECK_COLLECTIVES
};
constexpr std::size_t kVoteFields = sizeof(Vote) / sizeof(std::int32_t);
static_assert(sizeof(Vote) == kVoteFields * sizeof(std::int32_t));

template <class Test>
std::string ranks_where(const std::vector<Vote>& votes, Test&& test) {
  std::string list;
  for (std::size_t r = 0; r < votes.size(); ++r) {
    if (!test(votes[r])) continue;
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
std::vector<Vote> exchange_votes(Communicator& communicator, const Vote& mine) {
  if (communicator.topology().size == 1) return {mine};
  std::vector<std::byte> bytes;
  communicator.allgather(&mine, kVoteFields, DataType::kInt32, bytes);
  std::vector<Vote> votes(bytes.size() / sizeof(Vote));
  std::memcpy(votes.data(), bytes.data(), votes.size() * sizeof(Vote));
  return votes;
}

Vote vote_of(const nccl::BackendChoice& choice, const nccl::DeviceFacts& facts,
             const PreviousDevice& previous) {
  Vote vote;
  vote.choice = choice.kind == nccl::BackendKind::kNccl ? kNccl : kCpu;
  vote.device = choice.device;
  vote.nccl_version = facts.nccl_version;
  vote.has_shrink = facts.has_shrink ? 1 : 0;
  if (previous.backend) {
    const DeviceCommState state = previous.backend->comm_state();
    vote.has_previous = 1;
    vote.generation = static_cast<std::int32_t>(previous.generation);
    vote.rank = state.rank;
    vote.size = state.size;
    vote.previous_device = state.device;
    vote.alive = state.alive ? 1 : 0;
  }
  return vote;
}

struct Agreement {
  nccl::BackendChoice choice;
  std::vector<Vote> votes;
};

// This rank's choice made consistent with every other rank's; rethrows this rank's own error.
Agreement agree(Communicator& communicator, const Options& options,
                const PreviousDevice& previous) {
  const Topology& t = communicator.topology();
  Agreement agreement;
  nccl::BackendChoice& choice = agreement.choice;
  std::exception_ptr error;
  Vote mine;
  try {
    const nccl::DeviceFacts facts = host_facts(options);
    choice = nccl::choose_backend(options.gpu, facts, t.local_rank, t.local_size);
    mine = vote_of(choice, facts, previous);
  } catch (const Error&) {
    error = std::current_exception();
  }
  mine.check_collectives = options.check_collectives ? 1 : 0;
  agreement.votes = exchange_votes(communicator, mine);
  if (error) std::rethrow_exception(error);
  const auto& votes = agreement.votes;
  if (const std::string failed =
          ranks_where(votes, [](const Vote& v) { return v.choice == kFailed; });
      !failed.empty()) {
    throw BackendError("backend choice failed on rank(s) " + failed + " (see their error)");
  }
  const std::string cpu = ranks_where(votes, [](const Vote& v) { return v.choice == kCpu; });
  if (choice.kind == nccl::BackendKind::kNccl && !cpu.empty()) {
    const std::string why = "rank(s) " + cpu + " cannot use NCCL (see their log)";
    if (options.gpu.backend == nccl::BackendRequest::kNccl) {
      throw BackendError("HVDRUN_BACKEND=nccl cannot be honoured: " + why);
    }
    choice = {nccl::BackendKind::kCpu, -1, "cpu (TCP ring): " + why};
  }
  return agreement;
}

// HVDRUN_CHECK_COLLECTIVES: on for every rank when any rank set it.
void agree_on_the_check(Communicator& communicator, const Options& options,
                        const std::vector<Vote>& votes) {
  const std::string on = ranks_where(votes, [](const Vote& v) { return v.check_collectives != 0; });
  if (!on.empty() && !options.check_collectives) {
    runtime_log().info("{}=1 on rank(s) {}: this rank checks its device calls too",
                       env::kCheckCollectives, on);
  }
  communicator.set_check_device_calls(!on.empty());
}

#ifdef HVDRUN_HAVE_NCCL
nccl::CommPlan plan_of(const std::vector<Vote>& votes) {
  std::vector<nccl::MemberComm> members;
  members.reserve(votes.size());
  for (const Vote& v : votes) {
    members.push_back({v.device, v.has_shrink != 0, v.nccl_version, v.has_previous != 0,
                       static_cast<std::uint32_t>(v.generation), v.rank, v.size, v.previous_device,
                       v.alive != 0});
  }
  return nccl::plan_communicator(members);
}
#endif

}  // namespace

void attach_device_backend(Communicator& communicator, rdzv::Client* client, const Options& options,
                           PreviousDevice previous) {
  const Agreement agreement = agree(communicator, options, previous);
  agree_on_the_check(communicator, options, agreement.votes);
  const nccl::BackendChoice& choice = agreement.choice;
  runtime_log().info("backend: {}", choice.reason);
  if (choice.kind == nccl::BackendKind::kCpu) {
    previous.backend.reset();
    communicator.set_device_backend(nullptr, choice.reason);
    return;
  }
#ifdef HVDRUN_HAVE_NCCL
  const nccl::CommPlan plan = plan_of(agreement.votes);
  if (previous.backend) runtime_log().info("NCCL: {}", plan.reason);
  communicator.set_device_backend(
      nccl::start_nccl_backend(communicator.topology(), choice.device, client, options,
                               &communicator.abort_signal(), plan, std::move(previous.backend)),
      choice.reason);
#else
  (void)client;
  throw BackendError("NCCL chosen in a build without NCCL");  // choose_backend prevents it
#endif
}

}  // namespace hvdrun
