// A stand-in for `hvdrun --node-agent` in the SSH tests: the agent entry point alone.
#include <cstring>

#include "launcher/agent/node_agent.h"

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--node-agent") == 0) {
    return hvdrun::launcher::agent::run_node_agent(0, 1, 2);
  }
  return 2;
}
