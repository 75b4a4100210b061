// Which of a process's output streams bytes came from: a worker's, relayed by a node agent or
// read from its pipe, and the console's.
#pragma once

namespace hvdrun {

enum class StreamKind { kStdout, kStderr };

}  // namespace hvdrun
