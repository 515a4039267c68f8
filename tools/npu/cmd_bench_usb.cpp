// npu bench rpc --transport usb: the RPC channel over USB (docs/usb.md) against a raw libusb bulk
// echo of the same device, measured in the same run.
// The raw echo and the RPC figures are measured alternately in five rounds, each keeping its
// best (iterations / 5 round trips per latency figure and round).
//   bare_usb_us     median round trip of 64 bytes: synchronous libusb bulk OUT, then bulk IN, the
//                   device echoing (its OPEN_ECHO session)
//   bare_usb_mb_s   bulk rate of the same echo with transfers of the shim's window chunk (what one
//                   WINDOW_WRITE or WINDOW_READ carries): 2 x chunk moved per transfer echoed / the
//                   time; the better of two ways of echoing, measured one after the other:
//   bare_usb_sync_mb_s       one synchronous transfer at a time (OUT, then IN)
//   bare_usb_pipelined_mb_s  kWindowDepth asynchronous transfers in flight each way, as the
//                   window calls have (the usb transport keeps several transfers in flight, so
//                   the one-at-a-time echo alone would not be the link's floor)
//   ping_usb_us     median Ping through RpcClient over the usb transport
//   exec_usb_us     median one-ADD execution through the shim (inputs and outputs travel as
//                   WINDOW_WRITE / WINDOW_READ calls, so this is four round trips)
//   usb_out_mb_s    host window -> device with WINDOW_WRITE calls of one chunk each, two in
//                   flight as the shim sends them
//   usb_in_mb_s     device -> host window with WINDOW_READ calls of one chunk each, likewise
// The raw echo and the window calls move the same transfer sizes and both check every byte that
// comes back (each transfer is stamped with its number, so stale data fails). Both warm up before
// they are timed (one echo round; kWindowDepth + 1 window calls each way), so neither pays for
// first-touched memory (a page fault per 4 KiB, ~30 ms per MiB under TCG) in its figure.
//   *_cpu_ms_per_mb  the machine's CPU time (all CPUs, from /proc/stat) per MB moved during each
//                   throughput figure: the work per byte each path costs, which decides the
//                   ratio when the CPUs rather than the link are the limit (the VM's emulated CPUs)
#include <fmt/format.h>
#include <libusb.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <deque>
#include <fstream>
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

// CPU time spent so far by all CPUs, in ms (/proc/stat: everything but idle and iowait), or -1.
double busyMs() {
    std::ifstream stat("/proc/stat");
    std::string cpu;
    double user, nice, system, idle, iowait, irq, softirq;
    if (!(stat >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq) || cpu != "cpu")
        return -1;
    return (user + nice + system + irq + softirq) * 1000.0 / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// Times a throughput figure: MB/s of `bytes` moved by `run` (false: failed), and the CPU ms per MB.
struct Rate {
    double mbs = -1, cpuMsPerMb = -1;
};
template <class Run>
Rate timeRate(double bytes, Run run) {
    const double cpu0 = busyMs();
    const auto t0 = Clock::now();
    if (!run()) return {};
    const double elapsed = seconds(t0), cpu1 = busyMs();
    return {bytes / 1e6 / elapsed, cpu0 < 0 || cpu1 < 0 ? -1.0 : (cpu1 - cpu0) / (bytes / 1e6)};
}

// The raw floor: plain synchronous libusb on the device's echo session.
struct BareFigures {
    double us = -1, mbs = -1, cpu = -1, syncMbs = -1, pipelinedMbs = -1;
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

// The echo with kWindowDepth transfers of `unit` bytes in flight each way (libusb's asynchronous
// API, every transfer with a timeout): the link without a turnaround between transfers, as the usb
// transport and the window calls use it. Transfer i is stamped i and checked when it comes back.
class PipelinedEcho {
public:
    PipelinedEcho(libusb_context* ctx, libusb_device_handle* h, const proto::UsbEndpoints& ep, size_t unit)
        : ctx_(ctx), h_(h), ep_(ep), unit_(unit), expected_(unit, 0x33) {
        for (Slot* s : slots()) s->buf.assign(unit, 0x33);
    }
    ~PipelinedEcho() {
        for (Slot* s : slots()) {
            if (s->busy) libusb_cancel_transfer(s->t);
        }
        for (Slot* s : slots()) {
            if (!waitFor(*s, Clock::now() + std::chrono::milliseconds(1000))) continue;  // leaked
            if (s->t != nullptr) libusb_free_transfer(s->t);
        }
    }
    PipelinedEcho(const PipelinedEcho&) = delete;
    PipelinedEcho& operator=(const PipelinedEcho&) = delete;

    // Echoes transfers [first, first + count); the error, or empty.
    std::string run(int first, int count) {
        const int depth = std::min<int>(static_cast<int>(kWindowDepth), count);
        for (int k = 0; k < depth; ++k) {
            if (std::string e = start(first + k); !e.empty()) return e;
        }
        for (int i = first; i < first + count; ++i) {
            if (std::string e = finish(i); !e.empty()) return e;
            if (i + depth < first + count) {
                if (std::string e = start(i + depth); !e.empty()) return e;
            }
        }
        return {};
    }

private:
    struct Slot {
        libusb_transfer* t = nullptr;
        std::vector<uint8_t> buf;
        bool busy = false;
    };
    std::array<Slot*, 2 * kWindowDepth> slots() {
        std::array<Slot*, 2 * kWindowDepth> all{};
        for (size_t k = 0; k < kWindowDepth; ++k) {
            all[k] = &out_[k];
            all[kWindowDepth + k] = &in_[k];
        }
        return all;
    }
    static void LIBUSB_CALL completed(libusb_transfer* t) { static_cast<Slot*>(t->user_data)->busy = false; }
    bool waitFor(Slot& s, Clock::time_point deadline) {
        while (s.busy && Clock::now() < deadline) {
            timeval tv{0, 100'000};
            libusb_handle_events_timeout_completed(ctx_, &tv, nullptr);
        }
        return !s.busy;
    }
    std::string submit(Slot& s, uint8_t endpoint, int n) {
        if (s.t == nullptr && (s.t = libusb_alloc_transfer(0)) == nullptr)
            return "libusb_alloc_transfer failed";
        libusb_fill_bulk_transfer(s.t, h_, endpoint, s.buf.data(), static_cast<int>(unit_), &completed, &s,
                                  kTimeoutMs);
        if (libusb_submit_transfer(s.t) != 0) return "cannot submit echo transfer " + std::to_string(n);
        s.busy = true;
        return {};
    }
    std::string start(int n) {
        Slot& out = out_[static_cast<size_t>(n) % kWindowDepth];
        stamp(out.buf.data(), static_cast<uint64_t>(n));
        if (std::string e = submit(out, ep_.bulkOut, n); !e.empty()) return e;
        return submit(in_[static_cast<size_t>(n) % kWindowDepth], ep_.bulkIn, n);
    }
    // Transfer n went out whole and came back unchanged.
    std::string finish(int n) {
        const auto deadline = Clock::now() + std::chrono::milliseconds(kTimeoutMs);
        Slot& out = out_[static_cast<size_t>(n) % kWindowDepth];
        Slot& in = in_[static_cast<size_t>(n) % kWindowDepth];
        const std::string what = "bulk echo " + std::to_string(n) + " of " + std::to_string(unit_) + " bytes";
        if (!waitFor(out, deadline) || !waitFor(in, deadline)) return what + " timed out";
        const auto whole = [&](const Slot& s) {
            return s.t->status == LIBUSB_TRANSFER_COMPLETED &&
                   static_cast<size_t>(s.t->actual_length) == unit_;
        };
        if (!whole(out) || !whole(in)) return what + " failed";
        stamp(expected_.data(), static_cast<uint64_t>(n));
        if (in.buf != expected_) return what + " came back changed";
        return {};
    }

    libusb_context* ctx_;
    libusb_device_handle* h_;
    proto::UsbEndpoints ep_;
    size_t unit_;
    std::vector<uint8_t> expected_;
    Slot out_[kWindowDepth], in_[kWindowDepth];
};

BareFigures measureBare(libusb_context* ctx, libusb_device_handle* h, const proto::UsbEndpoints& ep,
                        int iterations, size_t unit) {
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
    auto rounds = [&](int first, int count) {
        for (int i = first; i < first + count; ++i) {
            stamp(out.data(), static_cast<uint64_t>(i));
            if (!bulkExact(h, ep.bulkOut, out.data(), length) ||
                !readAll(h, ep.bulkIn, back.data(), length)) {
                f.error = "bulk echo of " + std::to_string(unit) + " bytes failed (round " +
                          std::to_string(i) + ")";
                return false;
            }
            if (back != out) {
                f.error = "bulk echo of " + std::to_string(unit) + " bytes came back changed (round " +
                          std::to_string(i) + ")";
                return false;
            }
        }
        return true;
    };
    const double bytes = 2.0 * kBulkRounds * static_cast<double>(unit);
    if (!rounds(0, 1)) return f;  // warm-up
    const Rate sync = timeRate(bytes, [&] { return rounds(1, kBulkRounds); });
    if (sync.mbs < 0) return f;
    PipelinedEcho echo(ctx, h, ep, unit);
    if (f.error = echo.run(0, static_cast<int>(kWindowDepth)); !f.error.empty()) return f;  // warm-up
    const Rate r = timeRate(bytes, [&] {
        f.error = echo.run(static_cast<int>(kWindowDepth), kBulkRounds);
        return f.error.empty();
    });
    // The raw figure is the better of the two ways: the floor is never the weaker echo.
    const Rate& better = r.mbs >= sync.mbs ? r : sync;
    f.syncMbs = sync.mbs;
    f.pipelinedMbs = r.mbs;
    f.mbs = better.mbs;
    f.cpu = better.cpuMsPerMb;
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
        f = measureBare(ctx, h, d.endpoints, iterations, unit);
        libusb_release_interface(h, d.endpoints.interfaceNumber);
    }
    if (h != nullptr) libusb_close(h);
    libusb_exit(ctx);
    return f;
}

struct RpcFigures {
    double pingUs = -1, outMbs = -1, inMbs = -1, outCpu = -1, inCpu = -1;
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
// kWindowDepth calls in flight, the messages reused and the written data sent from where it lies
// (proto::BytesField), as the shim sends them; every read is
// checked against the last write. kWindowDepth + 1 calls each way warm up first (untimed).
void measureWindow(proto::RpcClient& rpc, uint64_t addr, RpcFigures& f) {
    constexpr int kWarmup = static_cast<int>(kWindowDepth) + 1;
    std::string data(f.chunk, '\x33');
    proto::WindowWriteRequest w;
    w.set_addr(addr);
    proto::WindowWriteReply wrote[kWindowDepth];
    auto writes = [&](int calls) {
        f.error = pipelined(
            rpc, calls,
            [&](int i) {
                stamp(reinterpret_cast<uint8_t*>(data.data()), static_cast<uint64_t>(i));
                // As the shim sends it: the data from where it lies, straight into the frame.
                const proto::BytesField field{proto::WindowWriteRequest::kDataFieldNumber,
                                              {reinterpret_cast<const uint8_t*>(data.data()), data.size()}};
                return rpc.start(proto::METHOD_WINDOW_WRITE, w, wrote[i % kWindowDepth], {}, field);
            },
            [&](int i) {
                return wrote[i % kWindowDepth].status().code() == 0 ? "" : "WINDOW_WRITE refused";
            });
        return f.error.empty();
    };
    const double bytes = double(kBulkRounds) * static_cast<double>(f.chunk);
    if (!writes(kWarmup)) return;
    const Rate out = timeRate(bytes, [&] { return writes(kBulkRounds); });
    if (out.mbs < 0) return;
    proto::WindowReadRequest r;
    r.set_addr(addr);
    r.set_length(static_cast<uint32_t>(f.chunk));
    proto::WindowReadReply read[kWindowDepth];
    auto reads = [&](int calls) {
        f.error = pipelined(
            rpc, calls,
            [&](int i) { return rpc.start(proto::METHOD_WINDOW_READ, r, read[i % kWindowDepth]); },
            [&](int i) {
                return read[i % kWindowDepth].data() == data
                           ? std::string()
                           : "WINDOW_READ " + std::to_string(i) + " returned other bytes than were written";
            });
        return f.error.empty();
    };
    if (!reads(kWarmup)) return;
    const Rate in = timeRate(bytes, [&] { return reads(kBulkRounds); });
    if (in.mbs < 0) return;
    f.outMbs = out.mbs;
    f.outCpu = out.cpuMsPerMb;
    f.inMbs = in.mbs;
    f.inCpu = in.cpuMsPerMb;
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
    std::vector<double> pingRatio, outRatio, inRatio, bareCpu, outCpu, inCpu;
    const int perRound = std::max(10, iterations / kRounds);
    for (int round = 0; round < kRounds; ++round) {
        const RpcFigures r = measureRpc(*id, perRound);
        const BareFigures b = bareEcho(*id, perRound, r.chunk > 0 ? r.chunk : kDefaultChunk);
        if (!b.error.empty()) bare.error = b.error;
        if (!r.error.empty()) rpc.error = r.error;
        rpc.chunk = r.chunk;
        bare.us = best(bare.us, b.us, false);
        bare.mbs = best(bare.mbs, b.mbs, true);
        bare.syncMbs = best(bare.syncMbs, b.syncMbs, true);
        bare.pipelinedMbs = best(bare.pipelinedMbs, b.pipelinedMbs, true);
        rpc.pingUs = best(rpc.pingUs, r.pingUs, false);
        rpc.outMbs = best(rpc.outMbs, r.outMbs, true);
        rpc.inMbs = best(rpc.inMbs, r.inMbs, true);
        if (b.us > 0 && r.pingUs > 0) pingRatio.push_back(r.pingUs / b.us);
        if (b.mbs > 0 && r.outMbs > 0) outRatio.push_back(r.outMbs / b.mbs);
        if (b.mbs > 0 && r.inMbs > 0) inRatio.push_back(r.inMbs / b.mbs);
        if (b.cpu >= 0) bareCpu.push_back(b.cpu);
        if (r.outCpu >= 0) outCpu.push_back(r.outCpu);
        if (r.inCpu >= 0) inCpu.push_back(r.inCpu);
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
        j["bare_usb_cpu_ms_per_mb"] = median(bareCpu);
        j["bare_usb_sync_mb_s"] = bare.syncMbs;
        j["bare_usb_pipelined_mb_s"] = bare.pipelinedMbs;
        j["usb_out_cpu_ms_per_mb"] = median(outCpu);
        j["usb_in_cpu_ms_per_mb"] = median(inCpu);
        fmt::print("{}\n", j.dump(2));
    } else {
        fmt::print("USB device {}, {} iterations per latency figure\n", proto::formatUsbDeviceId(*id),
                   iterations);
        for (const auto& [key, value] : figures) fmt::print("  {:<14} {:>10.2f}\n", key, value);
        fmt::print("  ping_usb / bare_usb = {:.2f} (target <= 1.5; median of the rounds' ratios)\n",
                   median(pingRatio));
        fmt::print("  usb_out / bare = {:.2f}, usb_in / bare = {:.2f} (target >= 0.8)\n", median(outRatio),
                   median(inRatio));
        fmt::print("  CPU ms per MB (all CPUs): bare {:.1f}, usb_out {:.1f}, usb_in {:.1f}\n",
                   median(bareCpu), median(outCpu), median(inCpu));
    }
    if (!bare.error.empty()) fmt::print(stderr, "npu bench rpc: raw echo: {}\n", bare.error);
    if (!rpc.error.empty()) fmt::print(stderr, "npu bench rpc: window calls: {}\n", rpc.error);
    if (!ok) fmt::print(stderr, "npu bench rpc: some figures could not be measured (-1 / null)\n");
    return ok ? 0 : 1;
}

}  // namespace npu::tools
