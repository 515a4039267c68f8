// The firmware fuzz seeds do what they say: every PrepareModel, PrepareFromCache and Execute in
// them succeeds, so mutations start from deep inside the firmware, not at its first check; the
// hostile values inside the message (one seed) are refused, each naming its operand.
#include "firmware_session.h"

#include <catch2/catch.hpp>

#include "fuzz_target.h"
#include "npu.pb.h"
#include "npu/protocol/frame.h"

using namespace npu;

TEST_CASE("firmware fuzz seeds prepare, reload from the fetched blob and execute", "[fuzz]") {
    const auto seeds = fuzz::seeds();
    int prepared = 0, fromCache = 0, executed = 0, refused = 0;
    for (const auto& s : seeds) {
        fuzz::runFirmwareSession(s.data(), s.size(), [&](const fuzz::SessionReply& r) {
            INFO("method " << int(r.method) << " flags " << r.flags);
            if (r.method == proto::METHOD_PREPARE_MODEL || r.method == proto::METHOD_PREPARE_FROM_CACHE) {
                REQUIRE((r.flags & proto::kFlagError) == 0);
                proto::PrepareModelReply reply;
                REQUIRE(reply.ParseFromString(r.payload));
                INFO(reply.status().message());
                // The seeds' hostile values inside the message: refused, naming the operand.
                if (reply.status().message().find("model.main.operands[") != std::string::npos) {
                    CHECK(reply.status().code() == 4);  // INVALID_ARGUMENT
                    ++refused;
                    return;
                }
                CHECK(reply.status().code() == 0);
                ++(r.method == proto::METHOD_PREPARE_MODEL ? prepared : fromCache);
            } else if (r.method == proto::METHOD_EXECUTE) {
                REQUIRE((r.flags & proto::kFlagError) == 0);
                proto::ExecuteReply reply;
                REQUIRE(reply.ParseFromString(r.payload));
                INFO(reply.status().message());
                CHECK(reply.status().code() == 0);
                CHECK(reply.device_cycles() > 0);
                ++executed;
            }
        });
    }
    CHECK(prepared >= 7);
    CHECK(fromCache == 2);
    CHECK(executed == 8);
    CHECK(refused == 4);
}
