// Worker for the start-timeout test: ranks listed in ITEST_SKIP_INIT (comma-separated)
// never call hvdrun::init() and just wait; the others call it and report the outcome.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "hvdrun/hvdrun.h"

int main() {
  const char* rank_text = std::getenv("RANK");
  const char* skip = std::getenv("ITEST_SKIP_INIT");
  std::string me = rank_text ? rank_text : "?";
  if (skip && ("," + std::string(skip) + ",").find("," + me + ",") != std::string::npos) {
    std::this_thread::sleep_for(std::chrono::seconds(60));
    return 4;
  }
  try {
    hvdrun::init();
    std::printf("rank %d of %d initialised\n", hvdrun::rank(), hvdrun::size());
    hvdrun::shutdown();
    return 0;
  } catch (const hvdrun::Error& e) {
    std::fprintf(stderr, "init failed: %s\n", e.what());
    return 3;
  }
}
