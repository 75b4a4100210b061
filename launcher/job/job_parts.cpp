// The job's parts' shared view (job_parts.h).
#include "launcher/job/job_parts.h"

namespace hvdrun::launcher {

std::uint16_t JobParts::start_generation(GenerationStart start) const {
  const std::uint16_t port = faces.start_generation(std::move(start));
  pools.rendezvous().master_port = port;
  return port;
}

}  // namespace hvdrun::launcher
