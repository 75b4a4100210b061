// A per-node start's command line: the nodes' secret (at least 16 bytes; a file others can
// read is a warning, as a mounted Kubernetes Secret is by default), and no elastic flags.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "tests/launcher/cli/cli_test_util.h"

namespace hvdrun::launcher {
namespace {

using ::testing::HasSubstr;

struct SecretFile {
  SecretFile(const std::string& text, std::filesystem::perms mode) {
    std::ofstream(path) << text << "\n";
    std::filesystem::permissions(path, mode);
  }
  ~SecretFile() { std::filesystem::remove(path); }
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                               ("hvdrun-per-node-secret-" + std::to_string(::getpid()));
};

std::vector<std::string> per_node(const std::string& secret_file,
                                  std::vector<std::string> more = {}) {
  std::vector<std::string> args = {"--nnodes",         "2", "--node-rank",     "0",
                                   "--nproc-per-node", "1", "--rdzv-endpoint", "h:29400"};
  if (!secret_file.empty()) {
    args.push_back("--rdzv-secret-file");
    args.push_back(secret_file);
  }
  args.insert(args.end(), more.begin(), more.end());
  args.push_back("prog");
  return args;
}

bool says(const CliResult& result, const std::string& part) {
  for (const auto& note : result.notes) {
    if (note.find(part) != std::string::npos) return true;
  }
  return false;
}

TEST(CliPerNode, AShortSecretIsRefusedSayingHowShort) {
  const SecretFile file("short-secret", std::filesystem::perms::owner_read);
  EXPECT_THAT(error_of(per_node(file.path.string())),
              HasSubstr("the nodes' secret has 12 bytes, fewer than 16: too easy to guess"));
  EXPECT_THAT(error_of(per_node(""), {{"HVDRUN_RDZV_SECRET", "x"}}),
              HasSubstr("HVDRUN_RDZV_SECRET: the nodes' secret has 1 byte, fewer than 16"));
}

TEST(CliPerNode, ASecretFileOthersCanReadIsAWarningNotARefusal) {
  using std::filesystem::perms;
  const SecretFile shared("0123456789abcdef0123", perms::owner_read | perms::group_read |
                                                      perms::others_read);  // Kubernetes' 0644
  const auto result = parse(per_node(shared.path.string()));
  EXPECT_EQ(result.action, CliAction::kRun);
  EXPECT_TRUE(says(result, "can be read by other users (mode 0444)"))
      << ::testing::PrintToString(result.notes);
  const SecretFile own("0123456789abcdef0123", perms::owner_read | perms::owner_write);
  EXPECT_FALSE(says(parse(per_node(own.path.string())), "can be read by other users"));
}

TEST(CliPerNode, ElasticFlagsAreRefused) {
  const SecretFile file("0123456789abcdef0123", std::filesystem::perms::owner_read);
  EXPECT_THAT(error_of(per_node(file.path.string(), {"--min-np", "1"})),
              HasSubstr("--min-np and --nnodes cannot be used together: a per-node start is not "
                        "elastic"));
  EXPECT_THAT(error_of(per_node(file.path.string(), {"--max-np", "4"})),
              HasSubstr("--max-np and --nnodes cannot be used together"));
}

}  // namespace
}  // namespace hvdrun::launcher
