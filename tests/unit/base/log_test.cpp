// base logging: NPU_VLOG selects tags; lines go to stderr whole, prefixed with the tag.
#include "npu/base/log.h"

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

// Runs `f` with stderr redirected into a temporary file; returns what was written.
template <typename F>
std::string captureStderr(F f) {
    std::fflush(stderr);
    char path[] = "/tmp/npu-log-test-XXXXXX";
    const int tmp = ::mkstemp(path);
    REQUIRE(tmp >= 0);
    ::unlink(path);
    const int saved = ::dup(2);
    ::dup2(tmp, 2);
    f();
    std::fflush(stderr);
    ::dup2(saved, 2);
    ::close(saved);
    std::string out(4096, '\0');
    const ssize_t n = ::pread(tmp, out.data(), out.size(), 0);
    ::close(tmp);
    out.resize(n > 0 ? size_t(n) : 0);
    return out;
}

int evaluations = 0;
int counted() {
    return ++evaluations;
}

}  // namespace

TEST_CASE("vlog prints only the tags NPU_VLOG names; errors always print") {
    // Read once per process, on the first call: set it before anything logs.
    ::setenv("NPU_VLOG", "cache; driver", 1);
    CHECK(npu::base::vlogEnabled("cache"));
    CHECK(npu::base::vlogEnabled("driver"));
    CHECK_FALSE(npu::base::vlogEnabled("protocol"));
    CHECK_FALSE(npu::base::vlogEnabled("cach"));

    const std::string out = captureStderr([] {
        npu::base::vlog("cache", "hit %d", 7);
        npu::base::vlog("protocol", "not shown");
        npu::base::logError("protocol", "lost %s", "peer");
    });
    CHECK(out == "npu[cache] hit 7\nnpu[protocol] lost peer\n");
}

TEST_CASE("NPU_VLOG evaluates its arguments only for an enabled tag") {
    evaluations = 0;
    const std::string out = captureStderr([] {
        NPU_VLOG("protocol", "%d", counted());
        NPU_VLOG("driver", "%d", counted());
    });
    CHECK(evaluations == 1);
    CHECK(out == "npu[driver] 1\n");
}
