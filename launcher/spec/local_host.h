// Whether a host name refers to this machine: "localhost", a loopback address, this
// machine's hostname, or a name resolving to one of this machine's interface addresses.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace hvdrun::launcher {

bool is_local_host(std::string_view name);

// is_local_host() for many names: this machine's hostname and interface addresses are read
// once, and each name's answer (a DNS lookup for a name that is not an address) is kept. For a
// job's host lists and every run of its discovery script. Thread-safe (the discovery script's
// output is read off the io thread).
class LocalHosts {
 public:
  LocalHosts();
  ~LocalHosts();
  LocalHosts(const LocalHosts&) = delete;
  LocalHosts& operator=(const LocalHosts&) = delete;
  bool contains(std::string_view name);
  // `name` is known not to be this machine (a per-node start's node-1): never looked up.
  void add_remote(std::string_view name);

 private:
  struct Machine;
  bool look_up(const std::string& name) const;
  std::unique_ptr<Machine> machine_;
  std::mutex mutex_;                     // guards answers_
  std::map<std::string, bool> answers_;  // by lowercase name
};

}  // namespace hvdrun::launcher
