// WorkerId's text form (worker_id.h).
#include "launcher/plan/worker_id.h"

namespace hvdrun::launcher {

std::string to_string(const WorkerId& id) {
  std::string text = "host " + std::to_string(id.host) + " slot " + std::to_string(id.slot);
  if (id.incarnation > 0) text += " incarnation " + std::to_string(id.incarnation);
  return text;
}

}  // namespace hvdrun::launcher
