// ProgressSampler: every second while the job runs, the members' timed collectives taken from
// the rendezvous, grouped by collective (collective_groups.h) and told to the components; the
// Horovod spares' queries checked; then the components' tick (the hang watch, the straggler
// monitor). A part of the job (job.h). io thread only.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "launcher/job/collective_groups.h"
#include "launcher/job/job_publisher.h"
#include "launcher/job/spares.h"
#include "launcher/servers/rendezvous_faces.h"

namespace hvdrun::launcher {

class ProgressSampler {
 public:
  // Every reference is the job's and outlives this.
  ProgressSampler(boost::asio::io_context& io, RendezvousFaces& faces, JobPublisher& publisher,
                  Spares& spares)
      : faces_(faces), publisher_(publisher), spares_(spares), timer_(io) {}

  // The job launched: a sample every second from now on.
  void start() { watch(); }
  // The job is finished: no tick any more; the last second's samples (of the workers still
  // connected) are told.
  void stop();
  // Then the collectives still waiting for a member are told as they are.
  void flush() { publisher_.publish(&JobEvents::collectives_timed, groups_.flush()); }

 private:
  void watch();
  void take_samples();

  RendezvousFaces& faces_;
  JobPublisher& publisher_;
  Spares& spares_;
  boost::asio::steady_timer timer_;
  CollectiveGroups groups_;  // the members' timed collectives, by collective
  bool stopped_ = false;
};

}  // namespace hvdrun::launcher
