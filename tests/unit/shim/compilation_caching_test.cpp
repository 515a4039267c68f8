// Compilation caching through the NPU device, case by case as the NNAPI VTS
// CompilationCachingTests and CompilationCachingSecurityTest do them.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "npu/framework/cts_loader.h"
#include "npu/fw/platform/host/firmware_host.h"
#include "npu/shim/npu_device.h"

namespace {

using namespace npu;
namespace fs = std::filesystem;

framework::TestCase vector(const std::string& file, const std::string& name) {
    auto tc = framework::findTestCase(framework::ctsDataDir() + "/" + file, name);
    REQUIRE(tc.has_value());
    return std::move(*tc);
}

struct Fixture {
    fs::path dir;
    std::unique_ptr<fw::host::FirmwareHost> firmware;
    std::shared_ptr<hal::IDevice> device;
    framework::TestCase model = vector("V1_0.jsonl.gz", "conv_quant8_large");
    framework::TestCase other = vector("V1_0.jsonl.gz", "fully_connected_quant8_large");
    hal::CacheToken token{};

    Fixture() {
        dir = fs::temp_directory_path() /
              ("npu-caching-" + std::to_string(getpid()) + "-" + std::to_string(counter()++));
        fs::create_directories(dir);
        auto loop = fw::host::startLoopbackFirmware();
        REQUIRE(loop.has_value());
        firmware = std::move(loop->firmware);
        shim::ShimOptions options;
        options.cacheStateDirectory = (dir / "state").string();
        auto d = shim::createNpuDevice(std::move(loop->hostEnd), options);
        REQUIRE(d.has_value());
        device = *d;
        for (size_t i = 0; i < token.size(); ++i) token[i] = static_cast<uint8_t>(i * 7 + 1);
    }
    ~Fixture() {
        device.reset();
        firmware.reset();
        fs::remove_all(dir);
    }
    static int& counter() {
        static int c = 0;
        return c;
    }
    int open(const std::string& name, int flags = O_RDWR) {
        int fd = ::open((dir / name).c_str(), flags | O_CREAT | O_CLOEXEC, 0600);
        REQUIRE(fd >= 0);
        fds.push_back(fd);
        return fd;
    }
    std::vector<int> fds;
    void closeAll() {
        for (int fd : fds) ::close(fd);
        fds.clear();
    }

    Result<std::shared_ptr<hal::IPreparedModel>> save(const framework::TestCase& tc, std::vector<int> m,
                                                      std::vector<int> d, const hal::CacheToken& t) {
        return device->prepareModel(tc.model, hal::ExecutionPreference::FAST_SINGLE_ANSWER,
                                    hal::Priority::MEDIUM, std::nullopt, m, d, t);
    }
    Result<std::shared_ptr<hal::IPreparedModel>> load(std::vector<int> m, std::vector<int> d,
                                                      const hal::CacheToken& t) {
        return device->prepareModelFromCache(std::nullopt, m, d, t);
    }
    // Executes and compares with the vector's expected outputs.
    bool runsCorrectly(hal::IPreparedModel& prepared, const framework::TestCase& tc) {
        auto request = framework::makeRequest(tc);
        REQUIRE(request.has_value());
        auto r = prepared.executeSynchronously(request->request, hal::MeasureTiming::NO, std::nullopt,
                                               std::nullopt);
        if (!r) return false;
        return !framework::compareOutputs(tc, framework::readOutputs(*request), r->outputShapes).has_value();
    }
    std::vector<uint8_t> read(const std::string& name) {
        std::ifstream in(dir / name, std::ios::binary);
        return {std::istreambuf_iterator<char>(in), {}};
    }
    void write(const std::string& name, const std::vector<uint8_t>& bytes) {
        std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    }
};

void expectGeneralFailure(const Result<std::shared_ptr<hal::IPreparedModel>>& r) {
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().status == hal::ErrorStatus::GENERAL_FAILURE);
}

}  // namespace

TEST_CASE("caching: the driver reports one model-cache and one data-cache file", "[caching]") {
    Fixture f;
    auto n = f.device->getNumberOfCacheFilesNeeded();
    REQUIRE(n.has_value());
    CHECK(n->numModelCache == 1);
    CHECK(n->numDataCache == 1);
}

TEST_CASE("caching: save then retrieve gives the outputs of a fresh compile", "[caching]") {
    Fixture f;
    auto saved = f.save(f.model, {f.open("m")}, {f.open("d")}, f.token);
    REQUIRE(saved.has_value());
    REQUIRE(f.runsCorrectly(**saved, f.model));
    f.closeAll();
    CHECK(f.read("m").size() > 0);
    auto loaded = f.load({f.open("m")}, {f.open("d")}, f.token);
    REQUIRE(loaded.has_value());
    CHECK(f.runsCorrectly(**loaded, f.model));
}

TEST_CASE("caching: non-empty files and non-zero offsets are handled", "[caching]") {
    Fixture f;
    int m = f.open("m"), d = f.open("d");
    REQUIRE(::write(m, "x", 1) == 1);  // as the VTS test does: a byte written first
    REQUIRE(::write(d, "y", 1) == 1);
    REQUIRE(f.save(f.model, {m}, {d}, f.token).has_value());
    f.closeAll();
    m = f.open("m");
    d = f.open("d");
    REQUIRE(lseek(m, 3, SEEK_SET) == 3);
    REQUIRE(lseek(d, 1, SEEK_SET) == 1);
    auto loaded = f.load({m}, {d}, f.token);
    REQUIRE(loaded.has_value());
    CHECK(f.runsCorrectly(**loaded, f.model));
}

TEST_CASE("caching: an invalid number of cache files on save skips caching, the load then fails",
          "[caching]") {
    Fixture f;
    SECTION("one model-cache file too many") {
        auto saved = f.save(f.model, {f.open("m"), f.open("extra")}, {f.open("d")}, f.token);
        REQUIRE(saved.has_value());
        CHECK(f.runsCorrectly(**saved, f.model));
    }
    SECTION("no data-cache file") {
        auto saved = f.save(f.model, {f.open("m")}, {}, f.token);
        REQUIRE(saved.has_value());
        CHECK(f.runsCorrectly(**saved, f.model));
    }
    f.closeAll();
    auto loaded = f.load({f.open("m")}, {f.open("d")}, f.token);
    REQUIRE_FALSE(loaded.has_value());
    CHECK((loaded.error().status == hal::ErrorStatus::GENERAL_FAILURE ||
           loaded.error().status == hal::ErrorStatus::INVALID_ARGUMENT));
}

TEST_CASE("caching: an invalid number of cache files on load fails", "[caching]") {
    Fixture f;
    REQUIRE(f.save(f.model, {f.open("m")}, {f.open("d")}, f.token).has_value());
    f.closeAll();
    for (auto [models, datas] : {std::pair{2, 1}, std::pair{0, 1}, std::pair{1, 2}, std::pair{1, 0}}) {
        std::vector<int> m, d;
        for (int i = 0; i < models; ++i) m.push_back(f.open(i == 0 ? "m" : "extra"));
        for (int i = 0; i < datas; ++i) d.push_back(f.open(i == 0 ? "d" : "extra2"));
        auto loaded = f.load(m, d, f.token);
        REQUIRE_FALSE(loaded.has_value());
        CHECK((loaded.error().status == hal::ErrorStatus::GENERAL_FAILURE ||
               loaded.error().status == hal::ErrorStatus::INVALID_ARGUMENT));
        f.closeAll();
    }
}

TEST_CASE("caching: invalid access modes", "[caching]") {
    Fixture f;
    SECTION("a read-only file on save: compiled, not cached") {
        f.open("m");
        f.closeAll();
        auto saved = f.save(f.model, {f.open("m", O_RDONLY)}, {f.open("d")}, f.token);
        REQUIRE(saved.has_value());
        CHECK(f.runsCorrectly(**saved, f.model));
        f.closeAll();
        expectGeneralFailure(f.load({f.open("m")}, {f.open("d")}, f.token));
    }
    SECTION("a write-only file on load") {
        REQUIRE(f.save(f.model, {f.open("m")}, {f.open("d")}, f.token).has_value());
        f.closeAll();
        expectGeneralFailure(f.load({f.open("m", O_WRONLY)}, {f.open("d")}, f.token));
        expectGeneralFailure(f.load({f.open("m")}, {f.open("d", O_WRONLY)}, f.token));
    }
}

TEST_CASE("caching security: another model's security-sensitive cache is refused", "[caching]") {
    Fixture f;
    REQUIRE(f.save(f.model, {f.open("m")}, {f.open("d")}, f.token).has_value());
    hal::CacheToken otherToken = f.token;
    otherToken[0] ^= 0xff;
    REQUIRE(f.save(f.other, {f.open("m2")}, {f.open("d2")}, otherToken).has_value());
    f.closeAll();
    f.write("m", f.read("m2"));
    expectGeneralFailure(f.load({f.open("m")}, {f.open("d")}, f.token));
}

TEST_CASE("caching security: a corrupted model cache (one bit flipped) is refused", "[caching]") {
    Fixture f;
    REQUIRE(f.save(f.model, {f.open("m")}, {f.open("d")}, f.token).has_value());
    f.closeAll();
    const auto original = f.read("m");
    REQUIRE(!original.empty());
    for (uint32_t seed = 0; seed < 10; ++seed) {
        std::mt19937 rng(seed);
        auto bytes = original;
        const size_t bit = rng() % (bytes.size() * 8);
        bytes[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
        f.write("m", bytes);
        expectGeneralFailure(f.load({f.open("m")}, {f.open("d")}, f.token));
        f.closeAll();
    }
}

TEST_CASE("caching security: a model cache of the wrong length is refused", "[caching]") {
    Fixture f;
    REQUIRE(f.save(f.model, {f.open("m")}, {f.open("d")}, f.token).has_value());
    f.closeAll();
    const auto original = f.read("m");
    std::mt19937 rng(7);
    for (int i = 0; i < 10; ++i) {
        auto bytes = original;
        const size_t extra = 1 + rng() % 256;
        for (size_t k = 0; k < extra; ++k) bytes.push_back(static_cast<uint8_t>(rng()));
        f.write("m", bytes);
        expectGeneralFailure(f.load({f.open("m")}, {f.open("d")}, f.token));
        f.closeAll();
    }
}

TEST_CASE("caching security: a corrupted or extended data cache never crashes", "[caching]") {
    Fixture f;
    REQUIRE(f.save(f.model, {f.open("m")}, {f.open("d")}, f.token).has_value());
    f.closeAll();
    const auto original = f.read("d");
    std::mt19937 rng(11);
    for (int i = 0; i < 20; ++i) {
        auto bytes = original;
        if (i % 2 == 0 && !bytes.empty()) {
            bytes[rng() % bytes.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
        } else {
            for (size_t k = 0, n = 1 + rng() % 256; k < n; ++k) bytes.push_back(static_cast<uint8_t>(rng()));
        }
        f.write("d", bytes);
        auto loaded = f.load({f.open("m")}, {f.open("d")}, f.token);
        // The prepared model is null if and only if the status is an error.
        if (loaded.has_value()) {
            REQUIRE(*loaded != nullptr);
        } else {
            CHECK(loaded.error().status == hal::ErrorStatus::GENERAL_FAILURE);
        }
        f.closeAll();
    }
}

TEST_CASE("caching security: a wrong token (one bit flipped) is refused", "[caching]") {
    Fixture f;
    REQUIRE(f.save(f.model, {f.open("m")}, {f.open("d")}, f.token).has_value());
    f.closeAll();
    for (size_t bit = 0; bit < 8 * f.token.size(); bit += 37) {
        hal::CacheToken wrong = f.token;
        wrong[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
        expectGeneralFailure(f.load({f.open("m")}, {f.open("d")}, wrong));
        f.closeAll();
    }
}

namespace {
// Another thread keeps overwriting the cache files with the other model's cache while the main
// thread saves or loads: the prepare may fail but never crashes nor gives wrong results.
void toctou(bool duringLoad) {
    Fixture f;
    hal::CacheToken otherToken = f.token;
    otherToken[31] ^= 1;
    REQUIRE(f.save(f.other, {f.open("m2")}, {f.open("d2")}, otherToken).has_value());
    REQUIRE(f.save(f.model, {f.open("m")}, {f.open("d")}, f.token).has_value());
    f.closeAll();
    const auto otherModel = f.read("m2"), otherData = f.read("d2");
    for (int iteration = 0; iteration < 100; ++iteration) {
        std::atomic<bool> stop{false};
        std::thread writer([&] {
            while (!stop.load()) {
                f.write("m", otherModel);
                f.write("d", otherData);
            }
        });
        int m = ::open((f.dir / "m").c_str(), O_RDWR | O_CLOEXEC),
            d = ::open((f.dir / "d").c_str(), O_RDWR | O_CLOEXEC);
        Result<std::shared_ptr<hal::IPreparedModel>> prepared =
            duringLoad ? f.load({m}, {d}, f.token) : f.save(f.model, {m}, {d}, f.token);
        stop.store(true);
        writer.join();
        ::close(m);
        ::close(d);
        if (prepared.has_value()) REQUIRE(f.runsCorrectly(**prepared, f.model));
        if (!duringLoad) {
            // Whatever the files hold now, loading them is either refused or correct.
            int m2 = ::open((f.dir / "m").c_str(), O_RDWR | O_CLOEXEC),
                d2 = ::open((f.dir / "d").c_str(), O_RDWR | O_CLOEXEC);
            auto loaded = f.load({m2}, {d2}, f.token);
            ::close(m2);
            ::close(d2);
            if (loaded.has_value()) REQUIRE(f.runsCorrectly(**loaded, f.model));
        }
    }
}
}  // namespace

TEST_CASE("caching security: TOCTOU on save", "[caching]") {
    toctou(false);
}
TEST_CASE("caching security: TOCTOU on load", "[caching]") {
    toctou(true);
}

TEST_CASE("caching engine: a driver-managed cache directory serves repeated compilations", "[caching]") {
    fs::path dir = fs::temp_directory_path() / ("npu-cachedir-" + std::to_string(getpid()));
    fs::remove_all(dir);
    auto tc = vector("V1_0.jsonl.gz", "conv_quant8_large");
    for (int round = 0; round < 2; ++round) {
        auto loop = fw::host::startLoopbackFirmware();
        REQUIRE(loop.has_value());
        shim::ShimOptions options;
        options.cacheStateDirectory = (dir / "state").string();
        options.cacheDirectory = (dir / "compilations").string();
        auto device = shim::createNpuDevice(std::move(loop->hostEnd), options);
        REQUIRE(device.has_value());
        auto prepared = (*device)->prepareModel(tc.model);
        REQUIRE(prepared.has_value());
        auto request = framework::makeRequest(tc);
        REQUIRE(request.has_value());
        auto r = (*prepared)->executeSynchronously(request->request, hal::MeasureTiming::NO, std::nullopt,
                                                   std::nullopt);
        REQUIRE(r.has_value());
        CHECK_FALSE(
            framework::compareOutputs(tc, framework::readOutputs(*request), r->outputShapes).has_value());
        size_t files = 0;
        for (const auto& e : fs::recursive_directory_iterator(dir / "compilations"))
            files += e.is_regular_file() ? 1 : 0;
        CHECK(files >= 2);  // one entry: a model-cache and a data-cache file
    }
    fs::remove_all(dir);
}
