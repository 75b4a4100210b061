// print_dry_run (dry_run.h).
#include "launcher/run/dry_run.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <set>
#include <sstream>

#include "hvdrun/error.h"
#include "launcher/workers/worker_env.h"
#include "rendezvous/env_names.h"

namespace hvdrun::launcher {
namespace {

constexpr std::size_t kRowsShown = 64;  // ranks in the table; the rest counted

// Where the program would be found on this machine ("" if it is not), as execvp searches.
std::string find_program(const std::string& program,
                         const std::map<std::string, std::string>& environment) {
  const auto runnable = [](const std::filesystem::path& path) {
    std::error_code ec;
    return std::filesystem::is_regular_file(path, ec) && ::access(path.c_str(), X_OK) == 0;
  };
  if (program.find('/') != std::string::npos) return runnable(program) ? program : "";
  const auto path = environment.find("PATH");
  std::istringstream dirs(path == environment.end() ? "/usr/bin:/bin" : path->second);
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const auto candidate = std::filesystem::path(dir.empty() ? "." : dir) / program;
    if (runnable(candidate)) return candidate.string();
  }
  return "";
}

std::string place(int index, int count) {
  return std::to_string(index) + "/" + std::to_string(count);
}

// Values that exist only once the job runs are shown as what they will be.
std::string shown_value(const std::string& name, const std::string& value) {
  if (name == env::kSecret) return "<the job's secret>";
  if (name == env::kRendezvousAddr) return value.substr(0, value.rfind(':')) + ":<port>";
  if (name == env::kHorovodGlooRendezvousPort || name == env::kTorchMasterPort) return "<port>";
  return value;
}

}  // namespace

int print_dry_run(const JobSpec& spec, const JobStart& start,
                  const std::map<std::string, std::string>& environment, std::ostream& out) {
  std::set<std::size_t> hosts_used;
  for (const auto& slot : start.slots) hosts_used.insert(slot.host_index);
  const bool any_local = std::any_of(start.slots.begin(), start.slots.end(), [&](const Slot& s) {
    return std::find(start.remote.begin(), start.remote.end(), s.host_index) == start.remote.end();
  });
  const std::string& program = spec.command.front();
  const std::string found = find_program(program, environment);
  if (any_local && found.empty()) {
    throw UsageError("program '" + program + "' is not found or not executable on this machine" +
                     (program.find('/') == std::string::npos ? " (searched $PATH)" : ""));
  }

  out << "hvdrun --dry-run: " << start.slots.size() << " ranks on " << hosts_used.size()
      << (hosts_used.size() == 1 ? " host" : " hosts") << "; nothing started\n";
  out << std::left << std::setw(6) << "rank" << std::setw(24) << "host" << std::setw(8) << "local"
      << std::setw(8) << "cross" << std::setw(8) << "node"
      << "gpu\n";
  for (std::size_t i = 0; i < start.slots.size() && i < kRowsShown; ++i) {
    const Slot& s = start.slots[i];
    const bool remote =
        std::find(start.remote.begin(), start.remote.end(), s.host_index) != start.remote.end();
    out << std::setw(6) << s.rank << std::setw(24) << (s.host + (remote ? "" : " (here)"))
        << std::setw(8) << place(s.local_rank, s.local_size) << std::setw(8)
        << place(s.cross_rank, s.cross_size) << std::setw(8) << place(s.node_rank, s.node_count)
        << s.local_rank << "\n";
  }
  if (start.slots.size() > kRowsShown) {
    out << "... and " << start.slots.size() - kRowsShown << " more ranks\n";
  }
  out << "gpu: libhvdrun pins local rank % the GPUs it sees (HVDRUN_GPU_DEVICE overrides)\n";
  out << "program: " << program;
  if (!found.empty()) {
    out << " (" << found << " on this machine)";
  } else {
    out << " (not on this machine; not checked on the remote hosts)";
  }
  for (std::size_t i = 1; i < spec.command.size(); ++i) out << " " << spec.command[i];
  out << "\n";
  out << "rendezvous: "
      << (start.plan.fixed.empty() ? "each host's route to " + start.plan.bind : start.plan.fixed)
      << " (bound to " << start.plan.bind << ")\n";

  // The environment of each rank, without the ports and secret that exist once it runs.
  RendezvousInfo rdzv;
  rdzv.addr = start.plan.fixed.empty() ? start.plan.bind : start.plan.fixed;
  rdzv.master_addr = rdzv.addr;
  rdzv.port = 1;
  rdzv.master_port = 1;
  rdzv.horovod_port = 1;
  rdzv.secret = "x";
  rdzv.run_id = start.run_id;
  rdzv.size = static_cast<int>(start.slots.size());
  rdzv.stacks_dir = "<the job's directory>";            // made when the job starts (python_hook.h)
  std::map<std::string, std::set<std::string>> values;  // hvdrun's variables and their values
  for (const auto& slot : start.slots) {
    for (const auto& entry : worker_environment(environment, spec, slot, rdzv)) {
      const auto eq = entry.find('=');
      const std::string name = entry.substr(0, eq);
      const std::string value = entry.substr(eq + 1);
      const auto inherited = environment.find(name);
      if (inherited != environment.end() && inherited->second == value) continue;
      values[name].insert(value);
    }
  }
  std::string same, differ;
  for (const auto& [name, set] : values) {
    if (set.size() == 1) {
      same += "  " + name + "=" + shown_value(name, *set.begin()) + "\n";
    } else {
      differ += (differ.empty() ? "" : " ") + name;
    }
  }
  out << "environment hvdrun sets, the same for every rank:\n" << same;
  out << "and per rank: " << (differ.empty() ? "none" : differ) << "\n";
  return 0;
}

}  // namespace hvdrun::launcher
