// describe_duration (duration_text.h).
#include "common/duration_text.h"

namespace hvdrun {

std::string describe_duration(std::chrono::milliseconds d) {
  if (d.count() % 1000 == 0) return std::to_string(d.count() / 1000) + " s";
  return std::to_string(d.count()) + " ms";
}

}  // namespace hvdrun
