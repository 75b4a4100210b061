// HVDRUN_API marks what libhvdrun exports. The library is built with hidden visibility, so a
// symbol without it stays inside (the TCP ring, the rendezvous client, NCCL, spdlog...).
#pragma once

#if defined(__GNUC__) || defined(__clang__)
#define HVDRUN_API __attribute__((visibility("default")))
#else
#define HVDRUN_API
#endif
