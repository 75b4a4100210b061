// make_membership: the membership a job's kind takes (job/membership.h): an elastic job's
// (ElasticMembers, with its warm spares) or a static one's (StaticMembership). run/ gives it to
// the job it builds.
#pragma once

#include <boost/asio/io_context.hpp>
#include <memory>
#include <vector>

#include "launcher/job/job_parts.h"
#include "launcher/job/membership.h"
#include "launcher/process/watchdog.h"
#include "launcher/spec/local_host.h"

namespace hvdrun::launcher {

// `slots`: the first generation's; the references outlive the membership.
std::unique_ptr<Membership> make_membership(boost::asio::io_context& io, const JobParts& parts,
                                            const std::vector<Slot>& slots, Watchdog& watchdog,
                                            LocalHosts& local_hosts);

}  // namespace hvdrun::launcher
