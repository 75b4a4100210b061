// KvServer (kv_server.h): the facade over KvServerCore.
#include "launcher/horovod/kv_server.h"

#include "launcher/horovod/kv_server_core.h"

namespace hvdrun::launcher::horovod {

KvServer::KvServer(boost::asio::io_context& io, KvServerOptions options, KvPlan plan)
    : core_(std::make_shared<KvServerCore>(io, std::move(options), std::move(plan))) {
  core_->start();
}

KvServer::~KvServer() {
  core_->close();
}

std::uint16_t KvServer::port() const noexcept {
  return core_->port();
}

void KvServer::reset(KvPlan plan) {
  core_->reset(std::move(plan));
}

std::vector<std::string> KvServer::silent_spares(std::chrono::milliseconds limit) const {
  return core_->silent_spares(std::chrono::steady_clock::now(), limit);
}

void KvServer::dismiss_spare(const std::string& name) {
  core_->dismiss_spare(name);
}

void KvServer::close() {
  core_->close();
}

KvServerStats KvServer::stats() const {
  return core_->stats();
}

}  // namespace hvdrun::launcher::horovod
