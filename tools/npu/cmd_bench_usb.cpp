// npu bench rpc --transport usb: the RPC channel over USB (docs/usb.md) against a raw libusb bulk
// echo of the same device, measured in the same run.
// The raw echo and the RPC figures are measured alternately in five rounds, each keeping its
// best (iterations / 5 round trips per latency figure and round).
//   bare_usb_us     median round trip of 64 bytes: synchronous libusb bulk OUT, then bulk IN, the
//                   device echoing (its OPEN_ECHO session)
//   bare_usb_mb_s   bulk rate of the same echo with transfers of the shim's window chunk (what one
//                   WINDOW_WRITE or WINDOW_READ carries): 2 x chunk moved per round trip / its time
//   ping_usb_us     median Ping through RpcClient over the usb transport
//   exec_usb_us     median one-ADD execution through the shim (inputs and outputs travel as
//                   WINDOW_WRITE / WINDOW_READ calls, so this is four round trips)
//   usb_out_mb_s    host window -> device with WINDOW_WRITE calls of one chunk each, two in
//                   flight as the shim sends them
//   usb_in_mb_s     device -> host window with WINDOW_READ calls of one chunk each, likewise
// The raw echo and the window calls move the same transfer sizes and both check every byte that
// comes back (each transfer is stamped with its number, so stale data fails).
#include <fmt/format.h>
#include <libusb.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "commands.h"
#include "npu.pb.h"
#include "npu/framework/cts_loader.h"
#include "npu/hal/model_builder.h"
#include "npu/protocol/rpc_client.h"
#include "npu/protocol/usb_transport.h"
#include "npu/shim/npu_device.h"
#include "rpc_timing.h"

namespace npu::tools {
namespace {

using Clock = std::chrono::steady_clock;
constexpr unsigned kTimeoutMs = 5000;
constexpr int kBulkRounds = 12;     // transfers of one chunk per throughput figure and round
constexpr size_t kWindowDepth = 2;  // window calls in flight, as the shim (Connection::kWindowDepth)

double seconds(Clock::time_point since) {
    return std::chrono::duration<double>(Clock::now() - since).count();
}

// The raw floor: plain synchronous libusb on the device's echo session.
struct BareFigures {
    double us = -1, mbs = -1;
    std::string error;
};

bool bulkExact(libusb_device_handle* h, uint8_t ep, uint8_t* data, int length) {
    int done = 0;
    return libusb_bulk_transfer(h, ep, data, length, &done, kTimeoutMs) == 0 && done == length;
}

// Reads exactly `length` bytes: the echo comes back in the device's read-sized pieces, each
// ended by a short or zero-length packet.
bool readAll(libusb_device_handle* h, uint8_t ep, uint8_t* data, int length) {
    int got = 0;
    const auto end = Clock::now() + std::chrono::milliseconds(kTimeoutMs);
    while (got < length && Clock::now() < end) {
        int done = 0;
        if (libusb_bulk_transfer(h, ep, data + got, length - got, &done, kTimeoutMs) != 0) return false;
        got += done;
    }
    return got == length;
}

// Stamps `data` with transfer number `n` (its first 8 bytes) so a stale copy cannot pass a check.
void stamp(uint8_t* data, uint64_t n) {
    std::memcpy(data, &n, sizeof n);
}

BareFigures measureBare(libusb_device_handle* h, const proto::UsbEndpoints& ep, int iterations, size_t unit) {
    BareFigures f;
    const auto type = static_cast<uint8_t>(static_cast<int>(LIBUSB_REQUEST_TYPE_VENDOR) |
                                           static_cast<int>(LIBUSB_RECIPIENT_INTERFACE));  // OUT
    if (libusb_control_transfer(h, type, proto::kNpuUsbRequestOpenEcho, 0, ep.interfaceNumber, nullptr, 0,
                                kTimeoutMs) != 0) {
        f.error = "the device refused OPEN_ECHO";
        return f;
    }
    std::vector<uint8_t> small(64, 0x5a), out(unit, 0x33), back(unit);
    f.us = medianUs(iterations, [&] {
        return bulkExact(h, ep.bulkOut, small.data(), 64) && readAll(h, ep.bulkIn, small.data(), 64);
    });
    // One transfer of `unit` bytes each way at a time, as a window call moves one chunk; the
    // device echoes what one read took (a whole transfer) and waits for the host to read it.
    const int length = static_cast<int>(unit);
    const auto t0 = Clock::now();
    for (int i = 0; i < kBulkRounds; ++i) {
        stamp(out.data(), static_cast<uint64_t>(i));
        if (!bulkExact(h, ep.bulkOut, out.data(), length) || !readAll(h, ep.bulkIn, back.data(), length)) {
            f.error =
                "bulk echo of " + std::to_string(unit) + " bytes failed (round " + std::to_string(i) + ")";
            return f;
        }
        if (back != out) {
            f.error = "bulk echo of " + std::to_string(unit) + " bytes came back changed (round " +
                      std::to_string(i) + ")";
            return f;
        }
    }
    f.mbs = 2.0 * kBulkRounds * static_cast<double>(unit) / 1e6 / seconds(t0);
    return f;
}

BareFigures bareEcho(const proto::UsbDeviceId& id, int iterations, size_t unit) {
    BareFigures f;
    auto devices = proto::listUsbDevices(id);
    if (!devices || devices->empty() || !devices->front().error.empty()) {
        f.error = "no device " + proto::formatUsbDeviceId(id);
        return f;
    }
    const proto::UsbDeviceInfo& d = devices->front();
    libusb_context* ctx = nullptr;
    if (libusb_init(&ctx) != 0) {
        f.error = "libusb_init failed";
        return f;
    }
    libusb_device_handle* h = libusb_open_device_with_vid_pid(ctx, id.vendor, id.product);
    if (h == nullptr || libusb_claim_interface(h, d.endpoints.interfaceNumber) != 0) {
        f.error = "cannot open and claim " + proto::formatUsbDeviceId(id);
    } else {
        f = measureBare(h, d.endpoints, iterations, unit);
        libusb_release_interface(h, d.endpoints.interfaceNumber);
    }
    if (h != nullptr) libusb_close(h);
    libusb_exit(ctx);
    return f;
}

struct RpcFigures {
    double pingUs = -1, outMbs = -1, inMbs = -1;
    size_t chunk = 0;  // window bytes per call, as the shim sends them
    std::string error;
};

// `calls` calls with kWindowDepth in flight, as the shim's Connection::pipeline sends window
// chunks: start(i) sends call i with reply slot i % kWindowDepth, check(i) looks at its reply.
template <class Start, class Check>
std::string pipelined(proto::RpcClient& rpc, int calls, Start start, Check check) {
    std::deque<proto::RpcClient::InFlight> inFlight;
    int finished = 0;
    auto finishOne = [&]() -> std::string {
        auto r = rpc.finish(inFlight.front(), std::chrono::milliseconds(kTimeoutMs));
        inFlight.pop_front();
        return r ? check(finished++) : r.error().message;
    };
    for (int i = 0; i < calls; ++i) {
        if (inFlight.size() == kWindowDepth) {
            if (std::string e = finishOne(); !e.empty()) return e;
        }
        auto started = start(i);
        if (!started) return started.error().message;
        inFlight.push_back(std::move(*started));
    }
    while (!inFlight.empty()) {
        if (std::string e = finishOne(); !e.empty()) return e;
    }
    return {};
}

// WINDOW_WRITE then WINDOW_READ of kBulkRounds chunks each at the start of the host window, with
// kWindowDepth calls in flight and the messages reused, as the shim sends them; every read is
// checked against the last write.
void measureWindow(proto::RpcClient& rpc, uint64_t addr, RpcFigures& f) {
    std::string data(f.chunk, '\x33');
    proto::WindowWriteRequest w;
    w.set_addr(addr);
    proto::WindowWriteReply wrote[kWindowDepth];
    auto t0 = Clock::now();
    f.error = pipelined(
        rpc, kBulkRounds,
        [&](int i) {
            stamp(reinterpret_cast<uint8_t*>(data.data()), static_cast<uint64_t>(i));
            w.mutable_data()->assign(data);
            return rpc.start(proto::METHOD_WINDOW_WRITE, w, wrote[i % kWindowDepth]);
        },
        [&](int i) { return wrote[i % kWindowDepth].status().code() == 0 ? "" : "WINDOW_WRITE refused"; });
    if (!f.error.empty()) return;
    f.outMbs = double(kBulkRounds) * static_cast<double>(f.chunk) / 1e6 / seconds(t0);
    proto::WindowReadRequest r;
    r.set_addr(addr);
    r.set_length(static_cast<uint32_t>(f.chunk));
    proto::WindowReadReply read[kWindowDepth];
    t0 = Clock::now();
    f.error = pipelined(
        rpc, kBulkRounds,
        [&](int i) { return rpc.start(proto::METHOD_WINDOW_READ, r, read[i % kWindowDepth]); },
        [&](int i) {
            return read[i % kWindowDepth].data() == data
                       ? std::string()
                       : "WINDOW_READ " + std::to_string(i) + " returned other bytes than were written";
        });
    if (!f.error.empty()) return;
    f.inMbs = double(kBulkRounds) * static_cast<double>(f.chunk) / 1e6 / seconds(t0);
}

RpcFigures measureRpc(const proto::UsbDeviceId& id, int iterations) {
    RpcFigures f;
    auto transport = proto::openUsb(id);
    if (!transport) {
        f.error = transport.error().message;
        return f;
    }
    auto rpc = proto::RpcClient::create(std::move(*transport));
    if (!rpc) {
        f.error = rpc.error().message;
        return f;
    }
    proto::HelloRequest hello;
    hello.set_major(shim::kProtocolMajor);
    proto::HelloReply helloReply;
    if (auto r = (*rpc)->call(proto::METHOD_HELLO, hello, helloReply, std::chrono::milliseconds(kTimeoutMs));
        !r) {
        f.error = r.error().message;
        return f;
    }
    uint64_t nonce = 0;
    f.pingUs = medianUs(iterations, [&] {
        proto::PingRequest request;
        request.set_nonce(++nonce);
        proto::PingReply reply;
        return (*rpc)
            ->call(proto::METHOD_PING, request, reply, std::chrono::milliseconds(kTimeoutMs))
            .has_value();
    });
    f.chunk = helloReply.max_payload_bytes() - 256;  // as the shim sends them (Connection)
    measureWindow(**rpc, helloReply.host_window_addr(), f);
    return f;
}

double execUsb(const proto::UsbDeviceId& id, int iterations) {
    auto transport = proto::openUsb(id);
    if (!transport) return -1.0;
    return execUs(std::move(*transport), iterations);
}

constexpr int kRounds = 5;
constexpr size_t kDefaultChunk = (1u << 20) - 256;  // the shim's chunk with the default max payload

// The median of `v` (0 when empty).
double median(std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    return v.size() % 2 == 1 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// The better of two figures (-1 = not measured): the larger rate or the smaller time.
double best(double a, double b, bool larger) {
    if (a < 0) return b;
    if (b < 0) return a;
    return larger ? std::max(a, b) : std::min(a, b);
}

}  // namespace

int cmdBenchRpcUsb(bool json, int iterations, const std::string& usbDevice) {
    auto id = proto::parseUsbDeviceId(usbDevice);
    if (!id) {
        fmt::print(stderr, "npu bench rpc: --usb-device: {}\n", id.error().message);
        return 2;
    }
    // The raw echo and the RPC figures alternate over five rounds and each keeps its best, so a
    // change of load on the machine (the VM is emulated) does not favour whichever ran first.
    // The ratios are the medians of each round's ratio (figures measured back to back), which a
    // load that changes between rounds disturbs less than best over best.
    BareFigures bare;
    RpcFigures rpc;
    std::vector<double> pingRatio, outRatio, inRatio;
    const int perRound = std::max(10, iterations / kRounds);
    for (int round = 0; round < kRounds; ++round) {
        const RpcFigures r = measureRpc(*id, perRound);
        const BareFigures b = bareEcho(*id, perRound, r.chunk > 0 ? r.chunk : kDefaultChunk);
        if (!b.error.empty()) bare.error = b.error;
        if (!r.error.empty()) rpc.error = r.error;
        rpc.chunk = r.chunk;
        bare.us = best(bare.us, b.us, false);
        bare.mbs = best(bare.mbs, b.mbs, true);
        rpc.pingUs = best(rpc.pingUs, r.pingUs, false);
        rpc.outMbs = best(rpc.outMbs, r.outMbs, true);
        rpc.inMbs = best(rpc.inMbs, r.inMbs, true);
        if (b.us > 0 && r.pingUs > 0) pingRatio.push_back(r.pingUs / b.us);
        if (b.mbs > 0 && r.outMbs > 0) outRatio.push_back(r.outMbs / b.mbs);
        if (b.mbs > 0 && r.inMbs > 0) inRatio.push_back(r.inMbs / b.mbs);
    }
    const double exec = execUsb(*id, iterations);
    const std::pair<const char*, double> figures[] = {
        {"ping_usb_us", rpc.pingUs},  {"exec_usb_us", exec},      {"bare_usb_us", bare.us},
        {"usb_out_mb_s", rpc.outMbs}, {"usb_in_mb_s", rpc.inMbs}, {"bare_usb_mb_s", bare.mbs}};
    const bool ok =
        std::all_of(std::begin(figures), std::end(figures), [](const auto& f) { return f.second >= 0; });
    if (json) {
        nlohmann::json j;
        for (const auto& [key, value] : figures)
            j[key] = value < 0 ? nlohmann::json(nullptr) : nlohmann::json(value);
        j["iterations"] = iterations;
        j["bulk_transfer_bytes"] = rpc.chunk;
        j["device"] = proto::formatUsbDeviceId(*id);
        j["ping_usb_over_bare"] = median(pingRatio);
        j["usb_out_over_bare"] = median(outRatio);
        j["usb_in_over_bare"] = median(inRatio);
        fmt::print("{}\n", j.dump(2));
    } else {
        fmt::print("USB device {}, {} iterations per latency figure\n", proto::formatUsbDeviceId(*id),
                   iterations);
        for (const auto& [key, value] : figures) fmt::print("  {:<14} {:>10.2f}\n", key, value);
        fmt::print("  ping_usb / bare_usb = {:.2f} (target <= 1.5; median of the rounds' ratios)\n",
                   median(pingRatio));
        fmt::print("  usb_out / bare = {:.2f}, usb_in / bare = {:.2f} (target >= 0.8)\n", median(outRatio),
                   median(inRatio));
    }
    if (!bare.error.empty()) fmt::print(stderr, "npu bench rpc: raw echo: {}\n", bare.error);
    if (!rpc.error.empty()) fmt::print(stderr, "npu bench rpc: window calls: {}\n", rpc.error);
    if (!ok) fmt::print(stderr, "npu bench rpc: some figures could not be measured (-1 / null)\n");
    return ok ? 0 : 1;
}

}  // namespace npu::tools
