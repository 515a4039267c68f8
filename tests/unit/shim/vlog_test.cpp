// NPU_VLOG: each tag the README lists (driver, firmware, sim, protocol, cache) logs at the places
// it names, `all` and `1` turn every tag on, and nothing logs by default. NPU_VLOG is read once per
// process, so each setting runs the same workload in a child process (forked before this process
// starts any thread) whose stderr goes to a file.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "../hal/execution_suite.h"
#include "npu/fw/platform/host/firmware_host.h"
#include "npu/shim/npu_device.h"

using namespace npu;
using namespace npu::hal::test;

namespace {

const char* const kTags[] = {"driver", "firmware", "sim", "protocol", "cache"};

// A loopback NPU: prepare (cached in `cacheDir`), execute, allocate a device buffer. Returns the
// exit code for the parent (0: the workload ran).
int runWorkload(const std::string& cacheDir) {
    auto loop = fw::host::startLoopbackFirmware();
    if (!loop) return 10;
    shim::ShimOptions options;
    options.cacheDirectory = cacheDir;
    options.cacheStateDirectory = cacheDir + "/state";
    auto device = shim::createNpuDevice(std::move(loop->hostEnd), options);
    if (!device) return 11;
    auto prepared = (*device)->prepareModel(addModel());
    if (!prepared) return 12;
    auto r = addRequest(1, 2);
    if (!(*prepared)->executeSynchronously(r.request, hal::MeasureTiming::NO, std::nullopt, std::nullopt))
        return 13;
    if (!(*device)->allocate({}, {*prepared}, {role(0)}, {})) return 14;
    return 0;
}

// The stderr of the workload run with NPU_VLOG=`setting` (unset when null).
std::string logOf(const char* setting) {
    const auto dir = std::filesystem::temp_directory_path() /
                     ("npu-vlog-" + std::to_string(getpid()) + "-" + (setting ? setting : "unset"));
    std::filesystem::create_directories(dir);
    const std::string logPath = (dir / "stderr.log").string();
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        if (setting != nullptr)
            setenv("NPU_VLOG", setting, 1);
        else
            unsetenv("NPU_VLOG");
        const int fd = open(logPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0 || dup2(fd, STDERR_FILENO) < 0) _exit(9);
        _exit(runWorkload((dir / "cache").string()));
    }
    int status = 0;
    pid_t done = 0;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while ((done = waitpid(child, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (done == 0) {
        kill(child, SIGKILL);
        waitpid(child, &status, 0);
    }
    std::ifstream in(logPath);
    std::stringstream text;
    text << in.rdbuf();
    std::filesystem::remove_all(dir);
    INFO("NPU_VLOG=" << (setting ? setting : "(unset)") << "; stderr:\n" << text.str());
    REQUIRE(done == child);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
    return text.str();
}

bool logs(const std::string& text, const char* tag) {
    return text.find(std::string("npu[") + tag + "] ") != std::string::npos;
}

}  // namespace

TEST_CASE("NPU_VLOG: every tag logs where it says, alone; all and 1 log every tag; unset logs nothing",
          "[shim][vlog]") {
    for (const char* tag : kTags) {
        const std::string text = logOf(tag);
        INFO("NPU_VLOG=" << tag << "; stderr:\n" << text);
        CHECK(logs(text, tag));
        for (const char* other : kTags) {
            if (std::string(other) != tag) CHECK_FALSE(logs(text, other));
        }
    }
    for (const char* everything : {"all", "1"}) {
        const std::string text = logOf(everything);
        for (const char* tag : kTags) {
            INFO("NPU_VLOG=" << everything << ", tag " << tag);
            CHECK(logs(text, tag));
        }
    }
    const std::string two = logOf("sim,cache");
    CHECK(logs(two, "sim"));
    CHECK(logs(two, "cache"));
    CHECK_FALSE(logs(two, "driver"));
    CHECK(logOf(nullptr).find("npu[") == std::string::npos);
}
