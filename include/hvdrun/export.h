// HVDRUN_API marks what libhvdrun exports. The library is built with hidden visibility, so a
// symbol without it stays inside (the TCP ring, the rendezvous client, NCCL, spdlog...).
// HVDRUN_LOCAL keeps a member type of an exported class inside (nested types take their
// class's visibility, and so would every template instantiated over them).
#pragma once

#if defined(__GNUC__) || defined(__clang__)
#define HVDRUN_API __attribute__((visibility("default")))
#define HVDRUN_LOCAL __attribute__((visibility("hidden")))
#else
#define HVDRUN_API
#define HVDRUN_LOCAL
#endif
