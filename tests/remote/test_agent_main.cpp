// A stand-in for `hvdrun --node-agent` in the SSH tests: the agent entry point alone.
#include <cstring>
#include <string>
#include <vector>

#include "launcher/agent/agent_connect.h"

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "--node-agent") == 0) {
    return hvdrun::launcher::agent::node_agent_main(
        std::vector<std::string>(argv + 2, argv + argc));
  }
  return 2;
}
