// The npu command line as a user meets it: exit codes and messages for good and bad input.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace {

struct Run {
    int exitCode = -1;
    std::string output;  // stdout and stderr
};

Run npu(const std::string& args) {
    std::string cmd = std::string(NPU_CLI_PATH) + " " + args + " 2>&1";
    Run r;
    FILE* p = popen(cmd.c_str(), "r");
    REQUIRE(p != nullptr);
    std::array<char, 4096> buf;
    size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
    int status = pclose(p);
    r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return r;
}

const std::string kV10 = std::string(NPU_CTS_DIR) + "/V1_0.jsonl.gz";

}  // namespace

namespace {
// A fresh directory of its own under /tmp (mkdtemp), removed with everything in it at the end.
struct TempDir {
    std::string path;
    TempDir() {
        char t[] = "/tmp/npu-cli-XXXXXX";
        REQUIRE(::mkdtemp(t) != nullptr);
        path = t;
    }
    ~TempDir() { std::filesystem::remove_all(path); }
};
}  // namespace

TEST_CASE("npu without a command prints usage and exits 2", "[cli]") {
    auto r = npu("");
    CHECK(r.exitCode == 2);
    CHECK_THAT(r.output, Catch::Contains("subcommand"));
}

TEST_CASE("npu run with a missing file names the file", "[cli]") {
    auto r = npu("run /nonexistent/x.jsonl --name foo");
    CHECK(r.exitCode == 2);
    CHECK_THAT(r.output, Catch::Contains("/nonexistent/x.jsonl"));
}

TEST_CASE("npu run with an unknown vector name says so", "[cli]") {
    auto r = npu("run " + kV10 + " --name no_such_vector");
    CHECK(r.exitCode == 2);
    CHECK_THAT(r.output, Catch::Contains("no_such_vector"));
}

TEST_CASE("npu run with a bad transport is refused", "[cli]") {
    auto r = npu("run " + kV10 + " --name conv_quant8 --transport carrier-pigeon");
    CHECK(r.exitCode == 2);
    CHECK_THAT(r.output, Catch::Contains("carrier-pigeon"));
}

TEST_CASE("npu run of a malformed file reports the line", "[cli]") {
    TempDir dir;
    const std::string path = dir.path + "/bad.jsonl";
    FILE* f = fopen(path.c_str(), "w");
    REQUIRE(f != nullptr);
    fputs("{\"name\": \"x\", \"main\": 17}\n", f);
    fclose(f);
    auto r = npu("run " + path + " --name x");
    CHECK(r.exitCode == 2);
    CHECK_THAT(r.output, Catch::Contains(":1"));
    std::remove(path.c_str());
}

TEST_CASE("npu run on the NPU matches the expected outputs of a quantized vector", "[cli]") {
    auto r = npu("run " + kV10 + " --name conv_quant8");
    CHECK(r.exitCode == 0);
    CHECK_THAT(r.output, Catch::Contains("match"));
    CHECK_THAT(r.output, Catch::Contains("cycles"));
}

TEST_CASE("npu run --no-autotune still matches", "[cli]") {
    auto r = npu("run " + kV10 + " --name conv_quant8 --no-autotune");
    CHECK(r.exitCode == 0);
    CHECK_THAT(r.output, Catch::Contains("match"));
}

TEST_CASE("npu bench cache --json prints every figure, the tuned compile and the untuned one",
          "[cli][caching]") {
    auto r = npu("bench cache --json --iterations 3");
    REQUIRE(r.exitCode == 0);
    for (const char* key :
         {"\"compile_ms\"", "\"from_cache_ms\"", "\"speedup\"", "\"hash_mb_s\"", "\"raw_blake2b_mb_s\"",
          "\"compile_untuned_ms\"", "\"greedy_cycles\"", "\"tuned_cycles\"", "\"tuning_trials\"",
          "\"model_cache_bytes\"", "\"data_cache_bytes\""}) {
        CHECK_THAT(r.output, Catch::Contains(key));
    }
}

// The figures themselves are never asserted (a benchmark, not a timed test): only that every one
// was measured, and the zero-copy count, which does not depend on speed.
TEST_CASE("npu bench exec --json measures every mode on both transports and copies nothing", "[cli][bench]") {
    auto r = npu("bench exec --json --iterations 10");  // the fewest it takes
    INFO(r.output);
    REQUIRE(r.exitCode == 0);
    const size_t begin = r.output.find('{'), end = r.output.rfind('}');
    REQUIRE(begin != std::string::npos);
    REQUIRE(end != std::string::npos);
    const nlohmann::json j = nlohmann::json::parse(r.output.substr(begin, end - begin + 1));
    for (const char* transport : {"loopback", "unix"}) {
        for (const char* mode : {"sync_us", "async_us", "fenced_us", "burst_us"}) {
            INFO(transport << " " << mode);
            REQUIRE(j.contains(transport));
            REQUIRE(j[transport].contains(mode));
            REQUIRE(j[transport][mode].is_number());
            CHECK(j[transport][mode].get<double>() > 0);
        }
    }
    REQUIRE(j["bare_socket_us"].is_number());
    CHECK(j["bare_socket_us"].get<double>() > 0);
    // A 1 MiB input and a 1 MiB output: pools of 64 KiB or more are mapped, not copied.
    REQUIRE(j["copied_bytes"].is_number());
    CHECK(j["copied_bytes"].get<uint64_t>() == 0);
    REQUIRE(j["loopback"]["copied_bytes"].is_number());
    CHECK(j["loopback"]["copied_bytes"].get<uint64_t>() == 0);
    CHECK(j["iterations"] == 10);
}

TEST_CASE("npu run on the reference matches too", "[cli]") {
    auto r = npu("run " + kV10 + " --name conv_quant8 --device reference");
    CHECK(r.exitCode == 0);
}

TEST_CASE("npu run of an operation the NPU does not take exits 3", "[cli]") {
    auto r = npu("run " + kV10 + " --name floor --device npu");
    CHECK(r.exitCode == 3);
    CHECK_THAT(r.output, Catch::Contains("FLOOR"));
}

TEST_CASE("npu demo runs the quantized CNN bit-exact with a cycle table", "[cli]") {
    auto r = npu("demo");
    INFO(r.output);
    CHECK(r.exitCode == 0);
    CHECK_THAT(r.output, Catch::Contains("CONV_2D"));
    CHECK_THAT(r.output, Catch::Contains("FULLY_CONNECTED"));
    CHECK_THAT(r.output, Catch::Contains("match"));
}

TEST_CASE("npu info --json names the hardware configuration", "[cli]") {
    auto r = npu("info --json");
    CHECK(r.exitCode == 0);
    CHECK_THAT(r.output, Catch::Contains("array_rows"));
    CHECK_THAT(r.output, Catch::Contains("clock_hz"));
}

TEST_CASE("npu info reports whether dma-bufs (a dma-heap) are available, as they are", "[cli][memory]") {
    auto r = npu("info");
    INFO(r.output);
    CHECK(r.exitCode == 0);
    const bool heap = ::access("/dev/dma_heap/system", F_OK) == 0;
    CHECK_THAT(r.output,
               Catch::Contains(heap ? "dma-buf            available" : "dma-buf            unavailable"));
    CHECK_THAT(r.output, Catch::Contains("zero copy"));
}

TEST_CASE("npu run --cache-dir keeps the compilation; npu cache lists, verifies and clears it",
          "[cli][caching]") {
    TempDir tmp;
    const std::string root = tmp.path;
    const std::string dirs = " --cache-dir " + root + "/compilations --cache-state-dir " + root + "/state";
    for (int i = 0; i < 2; ++i) {
        auto r = npu("run " + kV10 + " --name conv_quant8" + dirs);
        INFO(r.output);
        CHECK(r.exitCode == 0);
        CHECK_THAT(r.output, Catch::Contains(i == 0 ? ", compiled" : ", loaded from the compilation cache"));
    }
    const std::string where = " " + root + "/compilations --state-dir " + root + "/state";
    auto list = npu("cache list" + where + " --json");
    INFO(list.output);
    CHECK(list.exitCode == 0);
    CHECK_THAT(list.output, Catch::Contains("\"entries\"") && Catch::Contains("model_bytes"));
    auto verify = npu("cache verify" + where);
    CHECK(verify.exitCode == 0);
    CHECK_THAT(verify.output, Catch::Contains("1 good, 0 bad"));
    CHECK(npu("cache clear" + where).exitCode == 0);
    auto empty = npu("cache list" + where);
    CHECK_THAT(empty.output, Catch::Contains("(0 entries)"));
    auto bad = npu("cache frobnicate");
    CHECK(bad.exitCode == 2);
}

namespace {
// A hardware config file in a directory of its own, removed when the test ends.
struct HwConfigFile {
    TempDir dir;
    std::string path;
    explicit HwConfigFile(const std::string& json) {
        path = dir.path + "/hw.json";
        FILE* f = std::fopen(path.c_str(), "w");
        REQUIRE(f != nullptr);
        std::fputs(json.c_str(), f);
        std::fclose(f);
    }
};
}  // namespace

TEST_CASE("--hw-config selects the simulated NPU for every command; a bad file exits 2 naming the field",
          "[cli]") {
    HwConfigFile small(R"({"array_rows": 8, "array_cols": 16})");
    HwConfigFile bad(R"({"array_rows": 0})");
    SECTION("info, loopback") {
        auto r = npu("info --hw-config " + small.path);
        INFO(r.output);
        CHECK(r.exitCode == 0);
        CHECK_THAT(r.output, Catch::Contains("8 x 16"));
    }
    SECTION("info, unix: the daemon the shim starts takes the config") {
        const std::string socket = small.dir.path + "/info.sock";
        auto r = npu("info --transport unix --socket " + socket + " --hw-config " + small.path);
        INFO(r.output);
        CHECK(r.exitCode == 0);
        CHECK_THAT(r.output, Catch::Contains("8 x 16"));
    }
    SECTION("run and demo") {
        auto r = npu("run " + kV10 + " --name conv_quant8 --hw-config " + small.path);
        INFO(r.output);
        CHECK(r.exitCode == 0);
        auto d = npu("demo --hw-config " + small.path);
        CHECK(d.exitCode == 0);
    }
    SECTION("conformance over both transports") {
        // Its own socket: another test may be using the default one at the same time.
        const std::string socket = " --socket " + small.dir.path + "/conf.sock";
        for (const char* transport : {"loopback", "unix"}) {
            auto r = npu(std::string("conformance ") + kV10 +
                         " --device npu --filter 'conv_quant8*' --jobs 2 --transport " + transport + socket +
                         " --hw-config " + small.path);
            INFO(transport << ": " << r.output);
            CHECK(r.exitCode == 0);
            CHECK_THAT(r.output, Catch::Contains("0 failed"));
        }
    }
    SECTION("a bad file") {
        for (const std::string& cmd :
             {std::string("info"), "run " + kV10 + " --name conv_quant8", std::string("demo"),
              "conformance " + kV10, std::string("bench rpc --iterations 10")}) {
            auto r = npu(cmd + " --hw-config " + bad.path);
            INFO(cmd << ": " << r.output);
            CHECK(r.exitCode == 2);
            CHECK_THAT(r.output, Catch::Contains("array_rows"));
        }
    }
}

// ---- Hostile and careless input (issue 14): every refusal is clear, nothing is lost ----------

namespace {

std::string slurp(const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

void writeFile(const std::string& path, const std::string& text) {
    std::ofstream(path) << text;
}

Run shell(const std::string& script) {
    Run r;
    FILE* p = popen(("sh -c '" + script + "' 2>&1").c_str(), "r");
    REQUIRE(p != nullptr);
    std::array<char, 4096> buf;
    size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
    int status = pclose(p);
    r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return r;
}

// The pid of the process listening on a unix socket (SO_PEERCRED), or -1.
pid_t listenerPid(const std::string& socketPath) {
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, socketPath.c_str(), sizeof(addr.sun_path) - 1);
    pid_t pid = -1;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
        ucred cred{};
        socklen_t len = sizeof(cred);
        if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) pid = cred.pid;
    }
    ::close(fd);
    return pid;
}

// Stops a daemon left listening on `socketPath` by a test (they end on their own after their
// idle timeout; this keeps the test from leaving one behind for those seconds).
void stopDaemonAt(const std::string& socketPath) {
    const pid_t pid = listenerPid(socketPath);
    if (pid > 0) ::kill(pid, SIGTERM);
}

// Starts npu-fwd as a child of the test; returns its pid once it listens.
pid_t startDaemon(const std::vector<std::string>& args, const std::string& socketPath) {
    pid_t pid = ::fork();
    if (pid == 0) {
        int null = ::open("/dev/null", O_WRONLY);
        ::dup2(null, 1);
        ::dup2(null, 2);
        std::vector<char*> argv{const_cast<char*>(NPU_FWD_TEST_PATH)};
        for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        ::execv(NPU_FWD_TEST_PATH, argv.data());
        ::_exit(127);
    }
    for (int i = 0; i < 500 && listenerPid(socketPath) != pid; ++i) ::usleep(10'000);
    return pid;
}

int reap(pid_t pid) {
    int status = 0;
    for (int i = 0; i < 500; ++i) {
        if (::waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        ::usleep(10'000);
    }
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    return -2;
}

}  // namespace

TEST_CASE("--socket on a regular file or a fifo is refused and the file is kept", "[cli][reliability]") {
    TempDir dir;
    const std::string file = dir.path + "/notes.txt";
    writeFile(file, "precious");
    const std::string fifo = dir.path + "/fifo";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    for (const std::string& path : {file, fifo}) {
        // The daemon itself, and the daemon the shim starts for `npu info --transport unix`.
        auto d = shell(std::string("timeout 20 ") + NPU_FWD_TEST_PATH + " --socket " + path);
        INFO(d.output);
        CHECK(d.exitCode == 1);
        CHECK_THAT(d.output, Catch::Contains("not a socket") && Catch::Contains("refusing to replace"));
        auto r = npu("info --transport unix --socket " + path);
        INFO(r.output);
        CHECK(r.exitCode != 0);
        CHECK_THAT(r.output, Catch::Contains("not a socket"));
    }
    CHECK(slurp(file) == "precious");
    struct stat st {};
    REQUIRE(::lstat(fifo.c_str(), &st) == 0);
    CHECK(S_ISFIFO(st.st_mode));
}

TEST_CASE("npu-fwd --max-clients 1 tells the extra client the limit", "[cli][reliability]") {
    TempDir dir;
    const std::string socket = dir.path + "/fwd.sock";
    const pid_t daemon = startDaemon({"--socket", socket, "--max-clients", "1", "--idle-exit", "30"}, socket);
    // Hold the one place with a raw connection (the daemon serves it as a client). While
    // startDaemon's probe connection is still counted (a loaded machine), the daemon refuses the
    // holder: it closes a refused connection after 1 s without a handshake, so a holder that sees
    // no EOF within 1.5 s is being served. Try again until one is.
    int holder = -1;
    for (int attempt = 0; attempt < 20 && holder < 0; ++attempt) {
        holder = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        std::strncpy(addr.sun_path, socket.c_str(), sizeof(addr.sun_path) - 1);
        REQUIRE(::connect(holder, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
        // Every accepted connection first gets the reply socket's preamble (docs/protocol.md),
        // read and dropped here: EOF after it is the refusal.
        pollfd p{holder, POLLIN, 0};
        char preamble[64];
        while (::poll(&p, 1, 1500) > 0) {
            if (::recv(holder, preamble, sizeof preamble, 0) > 0) continue;
            ::close(holder);
            holder = -1;
            break;
        }
    }
    REQUIRE(holder >= 0);
    auto r = npu("info --transport unix --socket " + socket);
    INFO(r.output);
    CHECK(r.exitCode != 0);
    CHECK_THAT(r.output, Catch::Contains("at most 1 client"));
    CHECK_THAT(r.output, !Catch::Contains("Broken pipe"));
    ::close(holder);
    ::kill(daemon, SIGTERM);
    CHECK(reap(daemon) == 0);
}

TEST_CASE("a daemon started by npu conformance does not hold the caller's output: | tail ends",
          "[cli][reliability]") {
    TempDir dir;
    const std::string socket = dir.path + "/conf.sock";
    const std::string out = dir.path + "/out.txt";
    // Without the fix the daemon a worker starts keeps the pipe to tail open, and tail never ends.
    auto r =
        shell("( " + std::string(NPU_CLI_PATH) + " conformance " + kV10 +
              " --filter conv_quant8 --transport unix -j1 --call-timeout 60 --socket " + socket +
              " 2>&1 | tail -n 2 > " + out +
              " ) >/dev/null 2>&1 & p=$!; i=0; while kill -0 $p 2>/dev/null && [ $i -lt 600 ]; do sleep 0.1; "
              "i=$((i+1)); done; if kill -0 $p 2>/dev/null; then echo HUNG; else echo ENDED; fi");
    stopDaemonAt(socket);
    INFO(r.output << slurp(out));
    CHECK_THAT(r.output, Catch::Contains("ENDED"));
    CHECK_THAT(slurp(out), Catch::Contains("1 passed"));
}

// The shim restarts the daemon and replays the vector's calls (docs/reliability.md, "Watchdog,
// reset, replay"), so the lost daemon costs nothing; the worker's own reconnection (counted in
// devices_lost) remains for a device the shim cannot recover.
TEST_CASE("a daemon killed during npu conformance is restarted by the shim: nothing fails or errs",
          "[cli][reliability]") {
    TempDir dir;
    const std::string socket = dir.path + "/kill.sock";
    const pid_t daemon = startDaemon({"--socket", socket, "--idle-exit", "30"}, socket);
    REQUIRE(listenerPid(socket) == daemon);
    auto r =
        shell("NPU_CONFORMANCE_TEST_KILL=" + std::to_string(daemon) +
              ":conv_quant8_all_inputs_as_internal timeout 300 " + NPU_CLI_PATH + " conformance " + kV10 +
              " --filter conv_quant8 --filter conv_quant8_all_inputs_as_internal --filter conv_quant8_large"
              " --transport unix -j1 --json --call-timeout 60 --socket " +
              socket);
    reap(daemon);
    stopDaemonAt(socket);  // the daemon the worker restarted
    INFO(r.output);
    CHECK(r.exitCode == 0);
    CHECK_THAT(r.output, Catch::Contains("\"errors\": 0"));
    CHECK_THAT(r.output, Catch::Contains("\"failed\": 0"));
    CHECK_THAT(r.output, Catch::Contains("\"passed\": 3"));
    CHECK_THAT(r.output, Catch::Contains("\"devices_lost\": 0"));
}

TEST_CASE("sizes from the user are bounded with a message naming the limit", "[cli][reliability]") {
    auto huge = shell(std::string("timeout 60 ") + NPU_CLI_PATH + " sim gemm 1048576 1048576 1048576");
    INFO(huge.output);
    CHECK(huge.exitCode == 2);
    CHECK_THAT(huge.output, Catch::Contains("limit of 2097152 folds"));
    auto zero = npu("sim gemm 0 4 4");
    CHECK(zero.exitCode == 2);
    CHECK_THAT(zero.output, Catch::Contains("from 1 to 16777216"));
    CHECK_THAT(zero.output, !Catch::Contains("1797693"));  // no 309-digit bound
    auto over = npu("sim gemm 99999999999999999999999 4 4");
    CHECK(over.exitCode == 2);
    CHECK_THAT(over.output, Catch::Contains("out of range"));

    TempDir dir;
    const std::string fifo = dir.path + "/hw.json";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    for (const std::string& path : {fifo, std::string("/dev/zero")}) {
        auto r = shell(std::string("timeout 30 ") + NPU_CLI_PATH + " sim gemm 4 4 4 --hw-config " + path);
        INFO(path << ": " << r.output);
        CHECK(r.exitCode == 2);
        CHECK_THAT(r.output, Catch::Contains("regular file"));
    }
}

TEST_CASE("timeouts: nan, inf and negative values are refused; the per-class flags exist",
          "[cli][reliability]") {
    for (const char* bad : {"nan", "inf", "-1", "0"}) {
        auto r = npu(std::string("conformance ") + kV10 + " --filter conv_quant8 --timeout " + bad);
        INFO(bad << ": " << r.output);
        CHECK(r.exitCode == 2);
        CHECK_THAT(r.output, Catch::Contains("--timeout"));
    }
    auto nanPrepare = npu("run " + kV10 + " --name conv_quant8 --prepare-timeout nan");
    CHECK(nanPrepare.exitCode == 2);
    CHECK_THAT(nanPrepare.output, Catch::Contains("not a finite number"));
    // A peer that accepts but never answers: the handshake (a control call) ends after
    // --call-timeout, naming it.
    TempDir dir;
    const std::string socket = dir.path + "/mute.sock";
    int mute = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, socket.c_str(), sizeof(addr.sun_path) - 1);
    REQUIRE(::bind(mute, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
    REQUIRE(::listen(mute, 4) == 0);
    auto tight = npu("info --transport unix --socket " + socket + " --call-timeout 0.2");
    ::close(mute);
    INFO(tight.output);
    CHECK(tight.exitCode == 1);
    CHECK_THAT(tight.output, Catch::Contains("HELLO") && Catch::Contains("within 200 ms"));
    auto roomy = npu("run " + kV10 +
                     " --name conv_quant8 --prepare-timeout 300 --call-timeout 10 --execute-timeout 60");
    CHECK(roomy.exitCode == 0);
}

TEST_CASE("npu frobnicate names the unknown command", "[cli][reliability]") {
    auto r = npu("frobnicate");
    CHECK(r.exitCode == 2);
    CHECK_THAT(r.output, Catch::Contains("unknown command 'frobnicate'") && Catch::Contains("conformance"));
}

TEST_CASE("npu cache verify on a missing directory fails and does not create it", "[cli][reliability]") {
    TempDir dir;
    const std::string missing = dir.path + "/no-such-cache";
    auto r = npu("cache verify " + missing + " --state-dir " + dir.path + "/state");
    INFO(r.output);
    CHECK(r.exitCode == 1);
    CHECK_THAT(r.output, Catch::Contains("no such cache directory"));
    CHECK_FALSE(std::filesystem::exists(missing));
}

TEST_CASE("npu cache verify says 'another key' for a cache written under another state dir",
          "[cli][reliability]") {
    TempDir dir;
    const std::string cache = dir.path + "/compilations";
    auto run = npu("run " + kV10 + " --name conv_quant8 --cache-dir " + cache + " --cache-state-dir " +
                   dir.path + "/a");
    REQUIRE(run.exitCode == 0);
    auto other = npu("cache verify " + cache + " --state-dir " + dir.path + "/b");
    INFO(other.output);
    CHECK(other.exitCode == 1);
    CHECK_THAT(other.output, Catch::Contains("another cache key"));
    CHECK_THAT(other.output, !Catch::Contains("does not match the recorded hash"));
}

TEST_CASE("an invalid model exits 2 on every device, whichever validator rejects it", "[cli][reliability]") {
    TempDir dir;
    const std::string file = dir.path + "/squeeze.jsonl";
    // SQUEEZE with its second input removed (not omitted): the loader reads it, the HAL rejects it.
    writeFile(
        file,
        R"({"name":"squeeze_removed","hal":"V1_1","spec":"squeeze","source":"hand-written",)"
        R"("expect_failure":false,"is_relaxed":false,"multinomial_tolerance":0.0,"min_supported_version":"V1_1",)"
        R"("main":{"operands":[{"type":"TENSOR_FLOAT32","dims":[4,1,1,2],"scale":0.0,"zero_point":0,)"
        R"("lifetime":"SUBGRAPH_INPUT","channel_quant":null,"is_ignored":false,"number_of_consumers":1,)"
        R"("data":"MzOzPzMzE0DNzExAMzODQM3MrECamclAZmbmQJqZAUE="},{"type":"TENSOR_FLOAT32","dims":[4,2],)"
        R"("scale":0.0,"zero_point":0,"lifetime":"SUBGRAPH_OUTPUT","channel_quant":null,"is_ignored":false,)"
        R"("number_of_consumers":0,"data":"MzOzPzMzE0DNzExAMzODQM3MrECamclAZmbmQJqZAUE="}],)"
        R"("operations":[{"type":"SQUEEZE","inputs":[0],"outputs":[1]}],"input_indexes":[0],"output_indexes":[1]},)"
        R"("referenced":[]})"
        "\n");
    for (const char* device : {"npu", "reference"}) {
        auto r = npu("run " + file + " --name squeeze_removed --device " + device);
        INFO(device << ": " << r.output);
        CHECK(r.exitCode == 2);
        CHECK_THAT(r.output, Catch::Contains("INVALID_ARGUMENT") && Catch::Contains("operation 0 (SQUEEZE)"));
    }
}

TEST_CASE("npu run of an unsupported operation says why", "[cli][reliability]") {
    auto r = npu("run " + kV10 + " --name floor --device npu");
    INFO(r.output);
    CHECK(r.exitCode == 3);
    CHECK_THAT(r.output, Catch::Contains("why:") && Catch::Contains("FLOOR"));
}

TEST_CASE("npu run shows whole outputs, time in the right unit, and writes --output .npy", "[cli]") {
    auto text = npu("run " + kV10 + " --name conv_quant8");
    INFO(text.output);
    CHECK(text.exitCode == 0);
    // 683 cycles at 1 GHz: fractional microseconds, not "0 us".
    CHECK_THAT(text.output,
               Catch::Matches("(.|\\n)*device +[0-9]+ cycles = [0-9]+\\.[0-9]{3} us simulated(.|\\n)*"));
    CHECK_THAT(text.output, Catch::Contains("summed over the queues"));

    auto reference = npu("run " + kV10 + " --name conv_quant8 --device reference");
    INFO(reference.output);
    CHECK_THAT(reference.output, Catch::Contains("us on the CPU") && !Catch::Contains("device time"));

    auto json = npu("run " + kV10 + " --name conv_quant8 --json");
    const auto start = json.output.find('{');
    REQUIRE(start != std::string::npos);
    const auto j = nlohmann::json::parse(json.output.substr(start));
    REQUIRE(j["outputs"][0]["values"].is_array());
    CHECK(j["outputs"][0]["values"] == nlohmann::json::array({15, 15, 15, 15}));
    CHECK(j["outputs"][0]["dims"] == nlohmann::json::array({1, 2, 2, 1}));
    CHECK(j["device_time_us"].get<double>() > 0.0);

    TempDir dir;
    const std::string npy = dir.path + "/out.npy";
    auto written = npu("run " + kV10 + " --name conv_quant8 --output " + npy);
    CHECK(written.exitCode == 0);
    std::ifstream in(npy, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), {});
    REQUIRE(bytes.size() % 64 == 4);  // the header pads to a multiple of 64, then 4 bytes of data
    CHECK(bytes.compare(0, 6, "\x93NUMPY") == 0);
    CHECK_THAT(bytes, Catch::Contains("'descr': '|u1'") && Catch::Contains("'shape': (1, 2, 2, 1)"));
    CHECK(bytes.substr(bytes.size() - 4) == std::string(4, '\x0f'));

    auto unwritable = npu("run " + kV10 + " --name conv_quant8 --output /nonexistent/dir/out.npy");
    CHECK(unwritable.exitCode == 2);
    CHECK_THAT(unwritable.output, Catch::Contains("/nonexistent/dir/out.npy"));
}

TEST_CASE("npu list lists the vectors; a wrong --name suggests the closest", "[cli]") {
    auto list = npu("list " + kV10 + " --filter 'conv_quant8*'");
    INFO(list.output);
    CHECK(list.exitCode == 0);
    CHECK_THAT(list.output, Catch::Contains("conv_quant8_channels") && Catch::Contains("CONV_2D") &&
                                Catch::Contains("16 vector(s)"));
    CHECK_THAT(list.output, !Catch::Contains("conv_float"));
    auto typo = npu("run " + kV10 + " --name conv_qant8");
    INFO(typo.output);
    CHECK(typo.exitCode == 2);
    CHECK_THAT(typo.output, Catch::Contains("did you mean: conv_quant8"));
    auto nothing = npu("run " + kV10 + " --name zzzzzzzzzzzzzzzzzzzz");
    CHECK_THAT(nothing.output, Catch::Contains("npu list FILE lists its vectors"));
    CHECK(npu("list /nonexistent.jsonl").exitCode == 2);
}
