// The USB transport (docs/usb.md): libusb-1.0 asynchronous bulk transfers. There is no event
// thread: a caller waiting for its transfer runs libusb's event handling itself (libusb lets
// several threads do so; one handles, the others wait for their completion flag), so a reply
// wakes its reader directly, with no thread hop. Every wait has its own deadline. A read is
// always pending on the bulk IN endpoint (replies never wait for a reader) and another on the
// event endpoint.
#include "npu/protocol/usb_transport.h"

#include <libusb.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>

#include "npu.pb.h"
#include "npu/protocol/frame.h"
#include "npu/protocol/vlog.h"
#include "usb_descriptors.h"

namespace npu::proto {
namespace {

constexpr size_t kInTransferBytes = (1u << 20) + 4096;  // one whole frame of the largest payload
constexpr size_t kEventTransferBytes = 4096;
constexpr std::chrono::milliseconds kCancelWait{1000};  // a cancelled transfer must complete by then

using Clock = std::chrono::steady_clock;

class UsbTransport;

struct TransferSlot {
    UsbTransport* owner = nullptr;
    libusb_transfer* transfer = nullptr;
    std::vector<uint8_t> buffer;
    bool busy = false;  // submitted and not yet completed
};

class UsbTransport final : public Transport {
public:
    static Result<std::unique_ptr<Transport>> open(const UsbDeviceId& id, const UsbOptions& options);
    ~UsbTransport() override;

    Result<void> write(std::span<const uint8_t> bytes, std::span<const int> fds) override;
    Result<size_t> read(std::span<uint8_t> buffer, std::vector<UniqueFd>* fds,
                        std::chrono::milliseconds timeout) override;
    void shutdown() override;
    std::string describe() const override { return description_; }
    bool sharesMemory() const override { return false; }

    UsbTransportStats stats() const {
        std::lock_guard lock(mutex_);
        return stats_;
    }

private:
    UsbTransport() = default;
    Result<void> claim(libusb_device* device, const UsbDeviceId& id, const UsbOptions& options);
    Result<void> openSession(std::chrono::milliseconds timeout);
    Result<void> start();
    // Handles libusb events on this thread until *flag is set, the transport breaks or
    // `deadline` passes (false then).
    bool pump(const int* flag, Clock::time_point deadline);
    void cancelAll();
    Result<void> submit(TransferSlot& slot, uint8_t endpoint, size_t length, libusb_transfer_cb_fn callback,
                        uint32_t flags);
    static void LIBUSB_CALL onIn(libusb_transfer* transfer);
    static void LIBUSB_CALL onEvent(libusb_transfer* transfer);
    static void LIBUSB_CALL onOut(libusb_transfer* transfer);
    void failLocked(Error::Kind kind, std::string reason);
    void handleEventFrame(const uint8_t* data, size_t length);

    libusb_context* context_ = nullptr;
    libusb_device_handle* handle_ = nullptr;
    UsbEndpoints endpoints_;
    bool claimed_ = false;
    std::string description_;
    std::chrono::milliseconds writeTimeout_{10000};

    mutable std::mutex mutex_;
    std::vector<uint8_t> received_;  // reply bytes not yet read, from receivedPos_ on
    size_t receivedPos_ = 0;
    TransferSlot in_, event_, out_;
    int inArrived_ = 0;  // completion flags for pump(), set by the callbacks
    int outDone_ = 0;
    int outStatus_ = LIBUSB_TRANSFER_COMPLETED;
    size_t outActual_ = 0;
    bool broken_ = false;  // the device vanished or the transport was shut down
    Error brokenError_;
    UsbTransportStats stats_;
};

std::string usbError(const char* what, int code) {
    return std::string(what) + ": " + libusb_error_name(code) + " (" +
           libusb_strerror(static_cast<libusb_error>(code)) + ")";
}

// A vanished device shows as NO_DEVICE, or as a plain transfer error when its URBs are killed
// before libusb notices the removal (the gadget unbound): either way the link is gone.
Error::Kind kindOfStatus(int status) {
    switch (status) {
        case LIBUSB_TRANSFER_NO_DEVICE:
        case LIBUSB_TRANSFER_CANCELLED:
        case LIBUSB_TRANSFER_ERROR:
            return Error::Kind::kDisconnected;
        default:
            return Error::Kind::kIo;
    }
}

const char* transferStatusName(int status) {
    switch (status) {
        case LIBUSB_TRANSFER_COMPLETED:
            return "completed";
        case LIBUSB_TRANSFER_ERROR:
            return "transfer error";
        case LIBUSB_TRANSFER_TIMED_OUT:
            return "timed out";
        case LIBUSB_TRANSFER_CANCELLED:
            return "cancelled";
        case LIBUSB_TRANSFER_STALL:
            return "endpoint stalled";
        case LIBUSB_TRANSFER_NO_DEVICE:
            return "device gone (unplugged)";
        case LIBUSB_TRANSFER_OVERFLOW:
            return "overflow (the device sent more than asked)";
        default:
            return "unknown status";
    }
}

UsbTransport::~UsbTransport() {
    shutdown();
    cancelAll();
    for (TransferSlot* s : {&in_, &event_, &out_}) {
        // A slot still busy here means libusb never completed it: leak it rather than free
        // memory the kernel may still write.
        if (s->transfer != nullptr && !s->busy) libusb_free_transfer(s->transfer);
    }
    if (claimed_) libusb_release_interface(handle_, endpoints_.interfaceNumber);
    if (handle_ != nullptr) libusb_close(handle_);
    if (context_ != nullptr) libusb_exit(context_);
}

// Cancels every transfer in flight and handles events until libusb has given them all back
// (bounded: a transfer never completed is leaked by the destructor, never freed under the kernel).
void UsbTransport::cancelAll() {
    if (context_ == nullptr) return;
    auto anyBusy = [&] {
        std::lock_guard lock(mutex_);
        return in_.busy || event_.busy || out_.busy;
    };
    {
        std::lock_guard lock(mutex_);
        for (TransferSlot* s : {&in_, &event_, &out_}) {
            if (s->busy) libusb_cancel_transfer(s->transfer);
        }
    }
    const auto deadline = Clock::now() + kCancelWait;
    while (anyBusy() && Clock::now() < deadline) {
        timeval tv{0, 20'000};
        libusb_handle_events_timeout_completed(context_, &tv, nullptr);
    }
}

void UsbTransport::shutdown() {
    {
        std::lock_guard lock(mutex_);
        if (broken_) return;
        failLocked(Error::Kind::kDisconnected, "shut down");
    }
    if (context_ != nullptr) libusb_interrupt_event_handler(context_);  // wakes a pumping thread
}

void UsbTransport::failLocked(Error::Kind kind, std::string reason) {
    if (broken_) return;
    broken_ = true;
    brokenError_ = Error{kind, description_ + ": " + reason};
}

bool UsbTransport::pump(const int* flag, Clock::time_point deadline) {
    for (;;) {
        {
            std::lock_guard lock(mutex_);
            if (*flag != 0 || broken_) return true;
        }
        const auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline - Clock::now());
        if (left.count() <= 0) return false;
        const int64_t us = std::min<int64_t>(left.count(), 100'000);
        timeval tv{static_cast<time_t>(us / 1'000'000), static_cast<suseconds_t>(us % 1'000'000)};
        const int r = libusb_handle_events_timeout_completed(context_, &tv, const_cast<int*>(flag));
        if (r != 0 && r != LIBUSB_ERROR_INTERRUPTED && r != LIBUSB_ERROR_TIMEOUT) {
            std::lock_guard lock(mutex_);
            failLocked(Error::Kind::kIo, usbError("libusb event handling", r));
            return true;
        }
    }
}

Result<void> UsbTransport::submit(TransferSlot& slot, uint8_t endpoint, size_t length,
                                  libusb_transfer_cb_fn callback, uint32_t flags) {
    if (slot.transfer == nullptr) {
        slot.transfer = libusb_alloc_transfer(0);
        if (slot.transfer == nullptr)
            return fail(Error::Kind::kResourceExhausted, description_ + ": libusb_alloc_transfer failed");
    }
    slot.owner = this;
    libusb_fill_bulk_transfer(slot.transfer, handle_, endpoint, slot.buffer.data(), static_cast<int>(length),
                              callback, &slot, 0);
    slot.transfer->flags = static_cast<uint8_t>(flags);
    const int r = libusb_submit_transfer(slot.transfer);
    if (r != 0) {
        const auto kind = r == LIBUSB_ERROR_NO_DEVICE ? Error::Kind::kDisconnected : Error::Kind::kIo;
        return fail(kind, description_ + ": " + usbError("submit transfer", r));
    }
    slot.busy = true;
    return {};
}

void LIBUSB_CALL UsbTransport::onIn(libusb_transfer* transfer) {
    auto* slot = static_cast<TransferSlot*>(transfer->user_data);
    UsbTransport* self = slot->owner;
    std::lock_guard lock(self->mutex_);
    slot->busy = false;
    if (transfer->status == LIBUSB_TRANSFER_COMPLETED) {
        if (self->receivedPos_ > 0) {
            // Drop what read() has taken. With calls in flight a reply can come before the
            // previous one is read out, so the vector is not always emptied by read(); without
            // this it would grow by every byte received.
            self->received_.erase(self->received_.begin(),
                                  self->received_.begin() + static_cast<std::ptrdiff_t>(self->receivedPos_));
            self->receivedPos_ = 0;
        }
        self->received_.insert(self->received_.end(), transfer->buffer,
                               transfer->buffer + transfer->actual_length);
        self->inArrived_ = 1;
        self->stats_.bytesIn += static_cast<uint64_t>(transfer->actual_length);
        if (!self->broken_) {
            if (auto r = self->submit(*slot, self->endpoints_.bulkIn, slot->buffer.size(), &onIn, 0); !r) {
                self->failLocked(r.error().kind, "cannot resubmit the bulk IN read: " + r.error().message);
            }
        }
    } else {
        self->failLocked(kindOfStatus(transfer->status),
                         std::string("bulk IN: ") + transferStatusName(transfer->status));
        self->inArrived_ = 1;
    }
}

void LIBUSB_CALL UsbTransport::onEvent(libusb_transfer* transfer) {
    auto* slot = static_cast<TransferSlot*>(transfer->user_data);
    UsbTransport* self = slot->owner;
    std::lock_guard lock(self->mutex_);
    slot->busy = false;
    if (transfer->status == LIBUSB_TRANSFER_COMPLETED) {
        self->handleEventFrame(transfer->buffer, static_cast<size_t>(transfer->actual_length));
        if (!self->broken_)
            (void)self->submit(*slot, self->endpoints_.eventIn, slot->buffer.size(), &onEvent, 0);
    }
    // Errors surface on the bulk IN endpoint; the event endpoint only stops listening.
}

void LIBUSB_CALL UsbTransport::onOut(libusb_transfer* transfer) {
    auto* slot = static_cast<TransferSlot*>(transfer->user_data);
    UsbTransport* self = slot->owner;
    std::lock_guard lock(self->mutex_);
    slot->busy = false;
    self->outStatus_ = transfer->status;
    self->outActual_ = static_cast<size_t>(transfer->actual_length);
    if (transfer->status == LIBUSB_TRANSFER_NO_DEVICE) {
        self->failLocked(Error::Kind::kDisconnected, "bulk OUT: device gone (unplugged)");
    }
    self->outDone_ = 1;
}

// One event transfer carries whole frames (the device writes each as one transfer).
void UsbTransport::handleEventFrame(const uint8_t* data, size_t length) {
    FrameHeader h;
    if (length < kFrameHeaderSize || !parseFrameHeader(data, &h) || h.length != length - kFrameHeaderSize ||
        frameCrc(data, data + kFrameHeaderSize, h.length) != h.crc || h.type != METHOD_DEVICE_EVENT) {
        logError("protocol", "%s: dropped a malformed event (%zu bytes)", description_.c_str(), length);
        return;
    }
    DeviceEvent event;
    if (!event.ParseFromArray(data + kFrameHeaderSize, static_cast<int>(h.length))) {
        logError("protocol", "%s: dropped an undecodable event", description_.c_str());
        return;
    }
    ++stats_.eventsReceived;
    if (event.kind() == kNpuUsbEventSessionOpened) stats_.lastSession = event.session();
    vlog("protocol", "%s: device event %u session %llu: %s", description_.c_str(), event.kind(),
         static_cast<unsigned long long>(event.session()), event.message().c_str());
}

Result<void> UsbTransport::write(std::span<const uint8_t> bytes, std::span<const int> fds) {
    if (!fds.empty()) {
        return fail(Error::Kind::kInvalidArgument, description_ + ": USB cannot pass file descriptors (" +
                                                       std::to_string(fds.size()) + " given)");
    }
    std::unique_lock lock(mutex_);
    if (broken_) return std::unexpected(brokenError_);
    out_.buffer.assign(bytes.begin(), bytes.end());
    outDone_ = 0;
    // A transfer that is a multiple of the packet size ends with a zero-length packet, so the
    // device's read completes at the frame's end instead of waiting for more.
    if (auto r = submit(out_, endpoints_.bulkOut, bytes.size(), &onOut, LIBUSB_TRANSFER_ADD_ZERO_PACKET); !r)
        return r;
    lock.unlock();
    const bool done = pump(&outDone_, Clock::now() + writeTimeout_) && outDone_ != 0;
    if (!done) {
        lock.lock();
        const bool busy = out_.busy;
        if (busy) libusb_cancel_transfer(out_.transfer);
        lock.unlock();
        if (busy) pump(&outDone_, Clock::now() + kCancelWait);
        lock.lock();
        if (broken_) return std::unexpected(brokenError_);
        return fail(Error::Kind::kTimeout, description_ + ": the device did not take " +
                                               std::to_string(bytes.size()) + " bytes on bulk OUT within " +
                                               std::to_string(writeTimeout_.count()) + " ms");
    }
    lock.lock();
    if (outStatus_ != LIBUSB_TRANSFER_COMPLETED) {
        if (broken_) return std::unexpected(brokenError_);
        return fail(kindOfStatus(outStatus_), description_ + ": bulk OUT: " + transferStatusName(outStatus_));
    }
    if (outActual_ != bytes.size()) {
        return fail(Error::Kind::kIo, description_ + ": bulk OUT sent " + std::to_string(outActual_) +
                                          " of " + std::to_string(bytes.size()) + " bytes");
    }
    stats_.bytesOut += bytes.size();
    return {};
}

Result<size_t> UsbTransport::read(std::span<uint8_t> buffer, std::vector<UniqueFd>*,
                                  std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    if (receivedPos_ == received_.size() && !broken_) {
        inArrived_ = 0;
        lock.unlock();
        pump(&inArrived_, Clock::now() + timeout);
        lock.lock();
    }
    if (receivedPos_ < received_.size()) {
        const size_t n = std::min(buffer.size(), received_.size() - receivedPos_);
        std::memcpy(buffer.data(), received_.data() + receivedPos_, n);
        receivedPos_ += n;
        if (receivedPos_ == received_.size()) {
            received_.clear();
            receivedPos_ = 0;
        }
        return n;
    }
    if (broken_) return std::unexpected(brokenError_);
    return fail(Error::Kind::kTimeout,
                description_ + ": no data within " + std::to_string(timeout.count()) + " ms");
}

Result<void> UsbTransport::claim(libusb_device* device, const UsbDeviceId& id, const UsbOptions& options) {
    writeTimeout_ = options.writeTimeout;
    const std::string where = "USB device " + formatUsbDeviceId(id) + " (bus " +
                              std::to_string(libusb_get_bus_number(device)) + " address " +
                              std::to_string(libusb_get_device_address(device)) + ")";
    description_ = "usb:" + formatUsbDeviceId(id);
    if (std::string e = findNpuEndpoints(device, &endpoints_); !e.empty())
        return fail(Error::Kind::kIo, where + ": " + e);
    int r = libusb_open(device, &handle_);
    if (r != 0) {
        const auto kind = r == LIBUSB_ERROR_NO_DEVICE ? Error::Kind::kDisconnected : Error::Kind::kIo;
        return fail(kind, where + ": " + usbError("open", r));
    }
    (void)libusb_set_auto_detach_kernel_driver(handle_, 1);
    r = libusb_claim_interface(handle_, endpoints_.interfaceNumber);
    if (r == LIBUSB_ERROR_BUSY) {
        return fail(Error::Kind::kResourceExhausted,
                    where + " is busy: interface " + std::to_string(endpoints_.interfaceNumber) +
                        " is claimed by another process (one host process per device)");
    }
    if (r != 0) {
        const auto kind = r == LIBUSB_ERROR_NO_DEVICE ? Error::Kind::kDisconnected : Error::Kind::kIo;
        return fail(kind, where + ": " + usbError("claim interface", r));
    }
    claimed_ = true;
    return {};
}

Result<void> UsbTransport::openSession(std::chrono::milliseconds timeout) {
    const auto type = static_cast<uint8_t>(static_cast<int>(LIBUSB_ENDPOINT_OUT) |
                                           static_cast<int>(LIBUSB_REQUEST_TYPE_VENDOR) |
                                           static_cast<int>(LIBUSB_RECIPIENT_INTERFACE));
    const int r =
        libusb_control_transfer(handle_, type, kNpuUsbRequestOpenSession, 0, endpoints_.interfaceNumber,
                                nullptr, 0, static_cast<unsigned>(timeout.count()));
    if (r == 0) return {};
    if (r == LIBUSB_ERROR_NO_DEVICE)
        return fail(Error::Kind::kDisconnected, description_ + ": " + usbError("open session", r));
    if (r == LIBUSB_ERROR_TIMEOUT) {
        return fail(Error::Kind::kTimeout, description_ + ": the device did not open a session within " +
                                               std::to_string(timeout.count()) + " ms");
    }
    return fail(Error::Kind::kIo, description_ + ": " + usbError("open session (vendor request 0x01)", r));
}

Result<void> UsbTransport::start() {
    in_.buffer.resize(kInTransferBytes);
    event_.buffer.resize(kEventTransferBytes);
    {
        std::lock_guard lock(mutex_);
        if (auto r = submit(in_, endpoints_.bulkIn, in_.buffer.size(), &onIn, 0); !r) return r;
        if (auto r = submit(event_, endpoints_.eventIn, event_.buffer.size(), &onEvent, 0); !r) return r;
    }
    return {};
}

Result<std::unique_ptr<Transport>> UsbTransport::open(const UsbDeviceId& id, const UsbOptions& options) {
    std::unique_ptr<UsbTransport> t(new UsbTransport());
    int r = libusb_init(&t->context_);
    if (r != 0) {
        t->context_ = nullptr;
        return fail(Error::Kind::kIo, usbError("libusb_init", r));
    }
    libusb_device** list = nullptr;
    const ssize_t count = libusb_get_device_list(t->context_, &list);
    if (count < 0) return fail(Error::Kind::kIo, usbError("list USB devices", static_cast<int>(count)));
    libusb_device* found = nullptr;
    for (ssize_t i = 0; i < count && found == nullptr; ++i) {
        if (matchesId(list[i], id)) found = list[i];
    }
    Result<void> claimed = found != nullptr ? t->claim(found, id, options)
                                            : fail(Error::Kind::kDisconnected,
                                                   "no USB device " + formatUsbDeviceId(id) +
                                                       " with the NPU's vendor interface (" +
                                                       std::to_string(count) + " USB devices present)");
    libusb_free_device_list(list, 1);
    if (!claimed) return std::unexpected(claimed.error());
    if (auto s = t->openSession(options.openTimeout); !s) return std::unexpected(s.error());
    if (auto s = t->start(); !s) return std::unexpected(s.error());
    return std::unique_ptr<Transport>(std::move(t));
}

}  // namespace

Result<std::unique_ptr<Transport>> openUsb(const UsbDeviceId& id, const UsbOptions& options) {
    return UsbTransport::open(id, options);
}

UsbTransportStats usbTransportStats(const Transport& transport) {
    if (const auto* usb = dynamic_cast<const UsbTransport*>(&transport)) return usb->stats();
    return {};
}

}  // namespace npu::proto
