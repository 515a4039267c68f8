// npu info --transport usb: the NPU devices on the USB (see cmd_info_usb.h).
#include "cmd_info_usb.h"

#include <fmt/format.h>

#include <chrono>

#include "npu.pb.h"
#include "npu/protocol/rpc_client.h"
#include "npu/protocol/usb_transport.h"
#include "npu/shim/npu_device.h"

namespace npu::tools {
namespace {

// The firmware's own answer: a handshake on a session of its own.
nlohmann::json firmwareOf(const proto::UsbDeviceId& id) {
    auto transport = proto::openUsb(id);
    if (!transport) return {{"error", transport.error().message}};
    auto rpc = proto::RpcClient::create(std::move(*transport));
    if (!rpc) return {{"error", rpc.error().message}};
    proto::HelloRequest hello;
    hello.set_major(shim::kProtocolMajor);
    hello.set_minor(shim::kProtocolMinor);
    hello.set_host_version(std::string("npu info ") + shim::kShimVersion);
    proto::HelloReply reply;
    auto r = (*rpc)->call(proto::METHOD_HELLO, hello, reply, std::chrono::milliseconds(5000));
    if (!r) return {{"error", r.error().message}};
    return {{"version", reply.firmware_version()},
            {"protocol", fmt::format("{}.{}", reply.major(), reply.minor())},
            {"hw_id", reply.hw_id()},
            {"max_payload_bytes", reply.max_payload_bytes()},
            {"host_window_bytes", reply.host_window_bytes()}};
}

}  // namespace

nlohmann::json usbDeviceList(const std::string& usbDevice) {
    auto filter = proto::parseUsbDeviceId(usbDevice);
    if (!filter) return {{"error", filter.error().message}};
    auto devices = proto::listUsbDevices(*filter);
    if (!devices) return {{"error", devices.error().message}};
    nlohmann::json list = nlohmann::json::array();
    for (const proto::UsbDeviceInfo& d : *devices) {
        nlohmann::json j = {{"id", proto::formatUsbDeviceId(d.id)},
                            {"bus", d.bus},
                            {"address", d.address},
                            {"speed", d.speed},
                            {"manufacturer", d.manufacturer},
                            {"product", d.product},
                            {"bcd_device", fmt::format("{:x}.{:02x}", d.bcdDevice >> 8, d.bcdDevice & 0xff)},
                            {"interface", d.endpoints.interfaceNumber},
                            {"bulk_out", fmt::format("0x{:02x}", d.endpoints.bulkOut)},
                            {"bulk_in", fmt::format("0x{:02x}", d.endpoints.bulkIn)},
                            {"event_in", fmt::format("0x{:02x}", d.endpoints.eventIn)},
                            {"max_packet", d.endpoints.maxPacket}};
        if (!d.error.empty()) {
            j["error"] = d.error;
        } else {
            j["firmware"] = firmwareOf(d.id);
        }
        list.push_back(std::move(j));
    }
    return list;
}

void printUsbDeviceList(const nlohmann::json& devices) {
    if (!devices.is_array()) {
        fmt::print("usb        cannot list devices: {}\n", devices.value("error", std::string("?")));
        return;
    }
    fmt::print("usb        {} NPU device(s)\n", devices.size());
    for (const auto& d : devices) {
        fmt::print("  {} bus {} address {}, {} speed, \"{}\" by \"{}\", bcdDevice {}\n",
                   d["id"].get<std::string>(), d["bus"].get<int>(), d["address"].get<int>(),
                   d["speed"].get<std::string>(), d["product"].get<std::string>(),
                   d["manufacturer"].get<std::string>(), d["bcd_device"].get<std::string>());
        fmt::print("    interface {}: bulk OUT {}, bulk IN {}, event IN {}, {}-byte packets\n",
                   d["interface"].get<int>(), d["bulk_out"].get<std::string>(),
                   d["bulk_in"].get<std::string>(), d["event_in"].get<std::string>(),
                   d["max_packet"].get<int>());
        if (d.contains("error")) {
            fmt::print("    error: {}\n", d["error"].get<std::string>());
        } else if (d["firmware"].contains("error")) {
            fmt::print("    firmware: {}\n", d["firmware"]["error"].get<std::string>());
        } else {
            fmt::print("    firmware {} (protocol {}), max payload {} bytes\n",
                       d["firmware"]["version"].get<std::string>(),
                       d["firmware"]["protocol"].get<std::string>(),
                       d["firmware"]["max_payload_bytes"].get<uint32_t>());
        }
    }
}

}  // namespace npu::tools
