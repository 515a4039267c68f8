// VID:PID[:SERIAL] parsing of the usb transport (docs/usb.md); opening devices is tested in the
// USB test VM (tests/usb).
#include <catch2/catch.hpp>

#include "npu/protocol/usb_transport.h"

using npu::proto::formatUsbDeviceId;
using npu::proto::parseUsbDeviceId;

TEST_CASE("USB device ids parse as VID:PID[:SERIAL] in hex", "[usb]") {
    auto d = parseUsbDeviceId("");
    REQUIRE(d.has_value());
    CHECK(d->vendor == npu::proto::kNpuUsbVendorId);
    CHECK(d->product == npu::proto::kNpuUsbProductId);
    CHECK(d->serial.empty());

    auto a = parseUsbDeviceId("18d1:9302");
    REQUIRE(a.has_value());
    CHECK(a->vendor == 0x18d1);
    CHECK(a->product == 0x9302);
    CHECK(formatUsbDeviceId(*a) == "18d1:9302");

    auto s = parseUsbDeviceId("1209:0001:NPU:7");  // a serial may hold colons
    REQUIRE(s.has_value());
    CHECK(s->serial == "NPU:7");
    CHECK(formatUsbDeviceId(*s) == "1209:0001:NPU:7");

    for (const char* bad : {"1209", "1209:", ":0001", "12g9:0001", "12345:0001", "1209:0001x"}) {
        INFO(bad);
        auto r = parseUsbDeviceId(bad);
        REQUIRE_FALSE(r.has_value());
        CHECK(r.error().kind == npu::proto::Error::Kind::kInvalidArgument);
        CHECK(r.error().message.find(std::string("'") + bad + "'") != std::string::npos);
    }
}
