// The membership of a job's kind (make_membership.h).
#include "launcher/members/make_membership.h"

#include "launcher/members/elastic_members.h"
#include "launcher/members/static_membership.h"

namespace hvdrun::launcher {

std::unique_ptr<Membership> make_membership(boost::asio::io_context& io, const JobParts& parts,
                                            const std::vector<Slot>& slots, Watchdog& watchdog,
                                            LocalHosts& local_hosts) {
  if (parts.spec.elastic_job()) {
    return std::make_unique<ElasticMembers>(io, parts, slots, watchdog, local_hosts);
  }
  return std::make_unique<StaticMembership>(parts, static_cast<std::uint32_t>(slots.size()));
}

}  // namespace hvdrun::launcher
