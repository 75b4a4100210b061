// The Python hook: the environment that puts it first on a worker's path, its directory, and
// how hvdrun tells whether a process has armed it.
#include "launcher/stacks/python_hook.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

namespace hvdrun::launcher {
namespace {

using ::testing::Contains;
using ::testing::Not;

TEST(PythonHook, GoesFirstOnThePathTheWorkerWouldGet) {
  const std::vector<std::string> base{"PYTHONPATH=/site", "HOME=/root"};
  // The overlay's own PYTHONPATH wins over the agent's, and keeps its place after the hook.
  auto env = with_python_hook({"PYTHONPATH=/job/lib", "A=1"}, base, "/tmp/hvdrun-x");
  EXPECT_THAT(env, Contains("PYTHONPATH=/tmp/hvdrun-x:/job/lib"));
  EXPECT_THAT(env, Not(Contains("PYTHONPATH=/job/lib")));
  EXPECT_THAT(env, Contains("HVDRUN_STACKS_DIR=/tmp/hvdrun-x"));
  EXPECT_THAT(env, Contains("HVDRUN_STACKS_SIGNAL=40"));
  EXPECT_THAT(env, Contains("A=1"));
  // Without one, the agent's own.
  EXPECT_THAT(with_python_hook({"A=1"}, base, "/h"), Contains("PYTHONPATH=/h:/site"));
  EXPECT_THAT(with_python_hook({}, {}, "/h"), Contains("PYTHONPATH=/h"));
  // No hook directory: nothing changes.
  EXPECT_EQ(with_python_hook({"A=1"}, base, ""), std::vector<std::string>{"A=1"});
}

TEST(PythonHook, ItsDirectoryHoldsTheHookAndGoesAwayWithIt) {
  std::filesystem::path dir;
  {
    PythonHookDir hook;
    ASSERT_FALSE(hook.path().empty()) << hook.error();
    dir = hook.path();
    std::ifstream in(dir / "sitecustomize.py");
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_NE(text.str().find("faulthandler.register("), std::string::npos);
    EXPECT_EQ(std::filesystem::status(dir).permissions() & std::filesystem::perms::all,
              std::filesystem::perms::owner_all);
  }
  EXPECT_FALSE(std::filesystem::exists(dir));
}

TEST(PythonHook, AProcessWithoutAHandlerIsNotArmed) {
  EXPECT_FALSE(python_hook_armed(::getpid()));  // this test installs none for signal 40
  EXPECT_FALSE(python_hook_armed(-1));
}

}  // namespace
}  // namespace hvdrun::launcher
