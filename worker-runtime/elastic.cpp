// hvdrun::elastic (hvdrun/elastic.h): State's snapshots, sync by broadcast from rank 0, the
// commit-time check for host updates, and the run() loop over Runtime::reform().
#include "hvdrun/elastic.h"

#include <algorithm>
#include <cstdint>

#include "hvdrun/hvdrun.h"
#include "worker-runtime/job.h"
#include "worker-runtime/logging.h"

namespace hvdrun::elastic {
struct State::Impl {
  struct Object {
    std::string name;
    Save save;
    Restore restore;
    std::string snapshot;
  };
  std::vector<Object> objects;
  std::vector<std::function<void()>> reset_callbacks;
  int resets = 0;
};

State::State() : impl_(std::make_unique<Impl>()) {}
State::~State() = default;

void State::add(std::string name, Save save, Restore restore) {
  for (const auto& o : impl_->objects) {
    if (o.name == name) throw UsageError("elastic::State: '" + name + "' is registered twice");
  }
  std::string first = save();
  impl_->objects.push_back(
      {std::move(name), std::move(save), std::move(restore), std::move(first)});
}

void State::on_reset(std::function<void()> callback) {
  impl_->reset_callbacks.push_back(std::move(callback));
}

void State::save() {
  for (auto& o : impl_->objects) o.snapshot = o.save();
}

void State::restore() {
  for (auto& o : impl_->objects) o.restore(o.snapshot);
}

void State::commit() {
  save();
  Runtime& runtime = active_runtime("elastic::State::commit");
  if (!runtime.elastic()) return;
  // Every rank raises HostsUpdated at the same commit, or none does: the push reaches the
  // ranks at different moments.
  std::int32_t ended = runtime.generation_ended() ? 1 : 0;
  std::int32_t any = 0;
  runtime.communicator().allreduce(&ended, &any, 1, DataType::kInt32, ReduceOp::kMax);
  if (any != 0) throw HostsUpdated("the job's workers changed: re-forming at this commit");
}

void State::sync() {
  Communicator& c = active_runtime("elastic::State::sync").communicator();
  const bool root = c.topology().rank == 0;
  for (auto& o : impl_->objects) {
    std::string bytes = root ? o.save() : std::string();
    std::uint64_t length = bytes.size();
    c.broadcast(&length, 1, DataType::kInt64, 0);
    bytes.resize(length);
    if (length > 0) c.broadcast(bytes.data(), length, DataType::kUInt8, 0);
    if (!root) o.restore(bytes);
    o.snapshot = std::move(bytes);
  }
}

int State::resets() const noexcept {
  return impl_->resets;
}

void State::reset() {
  ++impl_->resets;
  for (const auto& callback : impl_->reset_callbacks) callback();
}

void State::check_size(const std::string& name, std::size_t got, std::size_t element,
                       std::size_t count) {
  const bool whole = element > 0 && got % element == 0;
  if (whole && (count == 0 || got == element * count)) return;
  throw ProtocolError("elastic::State: '" + name + "' got " + std::to_string(got) + " bytes, not " +
                      (count ? std::to_string(element * count) + " bytes"
                             : "a multiple of " + std::to_string(element)));
}

void run(State& state, const std::function<void()>& fn) {
  Runtime& runtime = active_runtime("elastic::run");
  for (;;) {
    try {
      state.sync();
      fn();
      return;
    } catch (const HostsUpdated& e) {
      runtime_log().info("{}", e.what());
    } catch (const Error& e) {
      if (!runtime.elastic() || !e.generation_failure()) throw;
      runtime_log().info("generation failed ({}); restoring the last commit", e.what());
      state.restore();
    }
    runtime.reform();
    state.reset();
  }
}

}  // namespace hvdrun::elastic
