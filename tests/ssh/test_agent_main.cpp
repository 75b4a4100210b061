// A stand-in for `hvdrun --remote-agent` in the SSH tests: the agent entry point alone.
#include <cstring>

#include "launcher/agent/remote_agent.h"

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--remote-agent") == 0) {
    return hvdrun::launcher::ssh::run_remote_agent(0, 1, 2);
  }
  return 2;
}
