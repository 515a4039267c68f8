// FunctionFS: descriptors, ep0 events and AIO endpoint transfers (see functionfs.h).
#include "functionfs.h"

#include <endian.h>
#include <fcntl.h>
#include <linux/usb/ch9.h>
#include <linux/usb/functionfs.h>
#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "npu/protocol/usb_transport.h"

namespace npu::fw::usb {
namespace {

using proto::Error;

constexpr std::chrono::milliseconds kOpenSessionWait{2000};  // the serving loop must be ready by then
constexpr std::chrono::milliseconds kCancelWait{1000};

long ioSetup(unsigned n, aio_context_t* ctx) {
    return syscall(__NR_io_setup, n, ctx);
}
long ioDestroy(aio_context_t ctx) {
    return syscall(__NR_io_destroy, ctx);
}
long ioSubmit(aio_context_t ctx, long n, iocb** cbs) {
    return syscall(__NR_io_submit, ctx, n, cbs);
}
long ioCancel(aio_context_t ctx, iocb* cb, io_event* ev) {
    return syscall(__NR_io_cancel, ctx, cb, ev);
}
long ioGetEvents(aio_context_t ctx, long min, long max, io_event* ev, timespec* ts) {
    return syscall(__NR_io_getevents, ctx, min, max, ev, ts);
}

std::string errnoText(const std::string& what, int err) {
    return what + ": " + std::strerror(err);
}

// The vendor interface: bulk OUT (requests), bulk IN (replies), bulk IN (events). FunctionFS
// renumbers the endpoint addresses; the host reads them from the descriptors.
struct __attribute__((packed)) InterfaceDescriptors {
    usb_interface_descriptor intf;
    usb_endpoint_descriptor_no_audio out, in, event;
};
struct __attribute__((packed)) Descriptors {
    usb_functionfs_descs_head_v2 header;
    __le32 fsCount;
    __le32 hsCount;
    InterfaceDescriptors fs, hs;
};
struct __attribute__((packed)) Strings {
    usb_functionfs_strings_head header;
    __le16 language;
    char interfaceName[sizeof "NPU vendor interface"];
};

usb_endpoint_descriptor_no_audio endpoint(uint8_t address, uint16_t maxPacket) {
    usb_endpoint_descriptor_no_audio e{};
    e.bLength = sizeof e;
    e.bDescriptorType = USB_DT_ENDPOINT;
    e.bEndpointAddress = address;
    e.bmAttributes = USB_ENDPOINT_XFER_BULK;
    e.wMaxPacketSize = htole16(maxPacket);
    return e;
}

InterfaceDescriptors interfaceDescriptors(uint16_t maxPacket) {
    InterfaceDescriptors d{};
    d.intf.bLength = sizeof d.intf;
    d.intf.bDescriptorType = USB_DT_INTERFACE;
    d.intf.bNumEndpoints = 3;
    d.intf.bInterfaceClass = proto::kNpuUsbInterfaceClass;
    d.intf.bInterfaceSubClass = proto::kNpuUsbInterfaceSubclass;
    d.intf.bInterfaceProtocol = proto::kNpuUsbInterfaceProtocol;
    d.intf.iInterface = 1;
    d.out = endpoint(1 | USB_DIR_OUT, maxPacket);
    d.in = endpoint(2 | USB_DIR_IN, maxPacket);
    d.event = endpoint(3 | USB_DIR_IN, maxPacket);
    return d;
}

proto::Result<void> writeDescriptors(int ep0) {
    Descriptors d{};
    d.header.magic = htole32(FUNCTIONFS_DESCRIPTORS_MAGIC_V2);
    d.header.flags = htole32(FUNCTIONFS_HAS_FS_DESC | FUNCTIONFS_HAS_HS_DESC);
    d.header.length = htole32(sizeof d);
    d.fsCount = htole32(4);
    d.hsCount = htole32(4);
    d.fs = interfaceDescriptors(64);
    d.hs = interfaceDescriptors(512);
    if (::write(ep0, &d, sizeof d) != static_cast<ssize_t>(sizeof d)) {
        return proto::fail(Error::Kind::kIo, errnoText("write descriptors to ep0", errno));
    }
    Strings s{};
    s.header.magic = htole32(FUNCTIONFS_STRINGS_MAGIC);
    s.header.length = htole32(sizeof s);
    s.header.str_count = htole32(1);
    s.header.lang_count = htole32(1);
    s.language = htole16(0x0409);
    std::memcpy(s.interfaceName, "NPU vendor interface", sizeof s.interfaceName);
    if (::write(ep0, &s, sizeof s) != static_cast<ssize_t>(sizeof s)) {
        return proto::fail(Error::Kind::kIo, errnoText("write strings to ep0", errno));
    }
    return {};
}

}  // namespace

AioEndpoint::~AioEndpoint() {
    cancel();
    if (context_ != 0) ioDestroy(context_);
    if (fd_ >= 0) ::close(fd_);
}

proto::Result<void> AioEndpoint::open(const std::string& path, int flags) {
    path_ = path;
    fd_ = ::open(path.c_str(), flags | O_CLOEXEC);
    if (fd_ < 0) return proto::fail(Error::Kind::kIo, errnoText("open " + path, errno));
    if (ioSetup(2 * kDepth, &context_) != 0)
        return proto::fail(Error::Kind::kIo, errnoText("io_setup for " + path, errno));
    return {};
}

proto::Result<AioEndpoint::Slot*> AioEndpoint::freeSlot() {
    if (abandoned_) {
        (void)collect(std::chrono::milliseconds(0));  // came back since?
        while (count_ > 0 && oldest().done) popOldest();
        if (count_ > 0)
            return proto::fail(Error::Kind::kIo, path_ + ": a cancelled transfer has not come back");
        abandoned_ = false;
    }
    if (count_ == kDepth) {
        return proto::fail(Error::Kind::kIo,
                           path_ + ": " + std::to_string(kDepth) + " transfers are already in flight");
    }
    size_t index = 0;
    while (slots_[index].busy) ++index;
    Slot& slot = slots_[index];
    slot.cb = iocb{};
    slot.cb.aio_fildes = static_cast<uint32_t>(fd_);
    return &slot;
}

proto::Result<void> AioEndpoint::enqueue(Slot& slot) {
    iocb* list[1] = {&slot.cb};
    if (ioSubmit(context_, 1, list) != 1) {
        const int err = errno;
        const auto kind = err == ESHUTDOWN || err == ENODEV ? Error::Kind::kDisconnected : Error::Kind::kIo;
        return proto::fail(kind, errnoText(path_ + ": io_submit", err));
    }
    slot.busy = true;
    slot.done = false;
    order_[count_++] = static_cast<size_t>(&slot - slots_);
    return {};
}

proto::Result<void> AioEndpoint::submit(void* data, size_t length, bool write) {
    auto slot = freeSlot();
    if (!slot) return std::unexpected(slot.error());
    Slot& s = **slot;
    s.cb.aio_lio_opcode = write ? IOCB_CMD_PWRITE : IOCB_CMD_PREAD;
    s.cb.aio_buf = reinterpret_cast<uint64_t>(data);
    s.cb.aio_nbytes = length;
    s.data = data;
    s.length = length;
    return enqueue(s);
}

proto::Result<void> AioEndpoint::submitGather(const void* head, size_t headLength, const void* body,
                                              size_t bodyLength) {
    auto slot = freeSlot();
    if (!slot) return std::unexpected(slot.error());
    Slot& s = **slot;
    s.parts[0] = iovec{const_cast<void*>(head), headLength};
    s.parts[1] = iovec{const_cast<void*>(body), bodyLength};
    s.cb.aio_lio_opcode = IOCB_CMD_PWRITEV;
    s.cb.aio_buf = reinterpret_cast<uint64_t>(s.parts);
    s.cb.aio_nbytes = 2;  // iovec count
    s.data = const_cast<void*>(head);
    s.length = headLength + bodyLength;
    return enqueue(s);
}

proto::Result<void> AioEndpoint::collect(std::chrono::milliseconds timeout) {
    timespec ts{static_cast<time_t>(timeout.count() / 1000),
                static_cast<long>(timeout.count() % 1000) * 1'000'000};
    io_event events[kDepth];
    long n;
    do {
        n = ioGetEvents(context_, 1, static_cast<long>(kDepth), events, &ts);
    } while (n < 0 && errno == EINTR);
    if (n < 0) return proto::fail(Error::Kind::kIo, errnoText(path_ + ": io_getevents", errno));
    for (long i = 0; i < n; ++i) {
        for (Slot& slot : slots_) {
            if (slot.busy && events[i].obj == reinterpret_cast<uint64_t>(&slot.cb)) {
                slot.done = true;
                slot.res = static_cast<int64_t>(events[i].res);
            }
        }
    }
    return {};
}

void AioEndpoint::popOldest() {
    oldest().busy = false;
    for (size_t i = 1; i < count_; ++i) order_[i - 1] = order_[i];
    --count_;
}

proto::Result<size_t> AioEndpoint::wait(std::chrono::milliseconds timeout, void** data, size_t* asked) {
    if (count_ == 0) return proto::fail(Error::Kind::kIo, path_ + ": no transfer in flight");
    if (asked != nullptr) *asked = oldest().length;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!oldest().done) {
        const auto left =
            std::max(std::chrono::milliseconds(0), std::chrono::duration_cast<std::chrono::milliseconds>(
                                                       deadline - std::chrono::steady_clock::now()));
        if (auto r = collect(left); !r) return std::unexpected(r.error());
        if (!oldest().done && std::chrono::steady_clock::now() >= deadline) {
            return proto::fail(Error::Kind::kTimeout,
                               path_ + ": nothing within " + std::to_string(timeout.count()) + " ms");
        }
    }
    const int64_t res = oldest().res;
    if (data != nullptr) *data = oldest().data;
    popOldest();
    if (res >= 0) return static_cast<size_t>(res);
    const int err = static_cast<int>(-res);
    const bool gone = err == ESHUTDOWN || err == ECONNRESET || err == ENODEV || err == EPIPE;
    return proto::fail(gone ? Error::Kind::kDisconnected : Error::Kind::kIo, errnoText(path_, err));
}

bool AioEndpoint::cancel() {
    if (count_ == 0) return true;
    for (size_t i = 0; i < count_ && !abandoned_; ++i) {
        Slot& slot = slots_[order_[i]];
        io_event ev{};
        if (!slot.done &&
            ioCancel(context_, &slot.cb, &ev) == 0) {  // completed by the cancel (older kernels)
            slot.done = true;
            slot.res = static_cast<int64_t>(ev.res);
        }
    }
    // Newer kernels deliver cancelled transfers as events.
    const auto deadline = std::chrono::steady_clock::now() + kCancelWait;
    auto allDone = [&] {
        for (size_t i = 0; i < count_; ++i)
            if (!slots_[order_[i]].done) return false;
        return true;
    };
    while (!allDone() && std::chrono::steady_clock::now() < deadline) {
        if (!collect(std::chrono::milliseconds(50))) break;
    }
    if (allDone()) {
        while (count_ > 0) popOldest();
        abandoned_ = false;
        return true;
    }
    abandoned_ = true;
    std::fprintf(stderr, "npu-usb-gadget: %s: a cancelled transfer did not come back within %lld ms\n",
                 path_.c_str(), static_cast<long long>(kCancelWait.count()));
    return false;
}

namespace {
std::atomic<uint64_t> gAbandoned{0};
}  // namespace

void keepAbandoned(std::vector<uint8_t>&& buffer, const std::string& endpoint) {
    // Moving a vector keeps its storage: the kernel's pointer stays valid, and it is never freed.
    new std::vector<uint8_t>(std::move(buffer));
    const uint64_t n = ++gAbandoned;
    std::fprintf(stderr, "npu-usb-gadget: %s: kept a read buffer the kernel may still write (%llu so far)\n",
                 endpoint.c_str(), static_cast<unsigned long long>(n));
}

proto::Result<std::unique_ptr<FunctionFs>> FunctionFs::open(const std::string& mount) {
    std::unique_ptr<FunctionFs> f(new FunctionFs());
    f->mount_ = mount;
    f->ep0_ = ::open((mount + "/ep0").c_str(), O_RDWR | O_CLOEXEC);
    if (f->ep0_ < 0) return proto::fail(Error::Kind::kIo, errnoText("open " + mount + "/ep0", errno));
    if (auto r = writeDescriptors(f->ep0_); !r) return std::unexpected(r.error());
    // ep1..ep3 exist once the descriptors are accepted, in descriptor order.
    if (auto r = f->out_.open(mount + "/ep1", O_RDWR); !r) return std::unexpected(r.error());
    if (auto r = f->in_.open(mount + "/ep2", O_RDWR); !r) return std::unexpected(r.error());
    if (auto r = f->event_.open(mount + "/ep3", O_RDWR); !r) return std::unexpected(r.error());
    f->ep0Thread_ = std::thread([p = f.get()] { p->ep0Loop(); });
    return f;
}

FunctionFs::~FunctionFs() {
    stop_.store(true);
    if (ep0Thread_.joinable()) ep0Thread_.join();
    out_.cancel();
    in_.cancel();
    event_.cancel();
    if (ep0_ >= 0) ::close(ep0_);
}

void FunctionFs::ep0Loop() {
    usb_functionfs_event events[8];
    while (!stop_.load()) {
        pollfd p{ep0_, POLLIN, 0};
        if (::poll(&p, 1, 100) <= 0) continue;
        const ssize_t n = ::read(ep0_, events, sizeof events);
        if (n <= 0) continue;
        for (size_t i = 0; i < static_cast<size_t>(n) / sizeof events[0]; ++i) {
            const usb_functionfs_event& e = events[i];
            std::unique_lock lock(state_.mutex);
            switch (e.type) {
                case FUNCTIONFS_ENABLE:
                    state_.enabled = true;
                    break;
                case FUNCTIONFS_DISABLE:
                case FUNCTIONFS_UNBIND:
                    state_.enabled = false;
                    break;
                case FUNCTIONFS_SETUP:
                    lock.unlock();
                    handleSetup(reinterpret_cast<const uint8_t*>(&e.u.setup));
                    lock.lock();
                    break;
                default:
                    break;
            }
            std::fprintf(stderr, "npu-usb-gadget: ep0 event %u (enabled %d)\n", e.type,
                         state_.enabled ? 1 : 0);
            state_.changed.notify_all();
        }
    }
}

// OPEN_SESSION / OPEN_ECHO: the serving loop ends the current session and starts a fresh one; the status
// stage is acknowledged only then, so the host's first frame meets a ready device. Any other
// request is stalled.
void FunctionFs::handleSetup(const uint8_t* raw) {
    usb_ctrlrequest setup;
    std::memcpy(&setup, raw, sizeof setup);
    const bool vendorInterface = (setup.bRequestType & USB_TYPE_MASK) == USB_TYPE_VENDOR &&
                                 (setup.bRequestType & USB_RECIP_MASK) == USB_RECIP_INTERFACE;
    const bool in = (setup.bRequestType & USB_DIR_IN) != 0;
    const bool open =
        setup.bRequest == proto::kNpuUsbRequestOpenSession || setup.bRequest == proto::kNpuUsbRequestOpenEcho;
    bool ok = vendorInterface && !in && open && le16toh(setup.wLength) == 0;
    if (ok) {
        std::unique_lock lock(state_.mutex);
        const uint64_t request = ++state_.openRequests;
        state_.echoRequested = setup.bRequest == proto::kNpuUsbRequestOpenEcho;
        state_.changed.notify_all();
        ok =
            state_.changed.wait_for(lock, kOpenSessionWait, [&] { return state_.openedRequests >= request; });
        if (!ok)
            std::fprintf(stderr, "npu-usb-gadget: no session ready within %lld ms; stalling OPEN_SESSION\n",
                         static_cast<long long>(kOpenSessionWait.count()));
    }
    // Acknowledge a host-to-device request by reading, stall it by writing (FunctionFS).
    const ssize_t r =
        ok ? ::read(ep0_, nullptr, 0) : (in ? ::read(ep0_, nullptr, 0) : ::write(ep0_, nullptr, 0));
    (void)r;
}

}  // namespace npu::fw::usb
