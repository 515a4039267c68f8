// The USB transport (docs/usb.md): libusb-1.0 asynchronous bulk transfers. There is no event
// thread: a caller waiting for its transfer runs libusb's event handling itself (libusb lets
// several threads do so; one handles, the others wait for their completion flag), so a reply
// wakes its reader directly, with no thread hop. Every wait has its own deadline.
//
// Bulk OUT: write() copies the frame into a free transfer buffer (writeRoom() lets RpcClient
// serialise it there instead), submits it and returns; up to kOutDepth frames are on their way
// at once, so the next frame is prepared while the last one is on the wire. A transfer that
// fails or times out later breaks the transport (part of a frame may have gone), which the next
// read() or write() reports.
// Bulk IN: kInDepth reads are queued and read() hands out a completed read's bytes straight from
// its buffer (peekRead() shows them where they lie: RpcClient decodes replies there), resubmitting
// it when drained; a read is always pending (replies never wait for a reader): if every buffer
// holds unread bytes, the oldest one's are moved aside first (not while the reader holds them).
// Transfer buffers come from usbfs (libusb_dev_mem_alloc: the kernel moves data in place
// instead of copying it) where the kernel gives them, else from the heap.
#include "npu/protocol/usb_transport.h"

#include <libusb.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <deque>
#include <mutex>
#include <span>

#include "npu.pb.h"
#include "npu/protocol/frame.h"
#include "npu/protocol/vlog.h"
#include "usb_descriptors.h"

namespace npu::proto {
namespace {

constexpr size_t kInTransferBytes = (1u << 20) + 4096;  // one whole frame of the largest payload
constexpr size_t kEventTransferBytes = 4096;
// Bulk IN reads queued: one may be held by the reader decoding a reply where it lies
// (peekRead), one hold the next reply, and one is still pending for the reply after it.
constexpr size_t kInDepth = 3;
constexpr size_t kOutDepth = 3;                         // bulk OUT transfers in flight
constexpr std::chrono::milliseconds kCancelWait{1000};  // a cancelled transfer must complete by then

using Clock = std::chrono::steady_clock;

class UsbTransport;

struct TransferSlot {
    UsbTransport* owner = nullptr;
    libusb_transfer* transfer = nullptr;
    uint8_t* data = nullptr;  // devMem or heap's storage
    size_t size = 0;
    uint8_t* devMem = nullptr;  // from libusb_dev_mem_alloc (devMemSize bytes), or null
    size_t devMemSize = 0;
    std::vector<uint8_t> heap;
    size_t length = 0;    // bytes of the transfer in flight
    bool busy = false;    // submitted and not yet completed
    bool staged = false;  // handed out by writeRoom(), not yet committed
};

class UsbTransport final : public Transport {
public:
    static Result<std::unique_ptr<Transport>> open(const UsbDeviceId& id, const UsbOptions& options);
    ~UsbTransport() override;

    Result<void> write(std::span<const uint8_t> bytes, std::span<const int> fds) override;
    Result<size_t> read(std::span<uint8_t> buffer, std::vector<UniqueFd>* fds,
                        std::chrono::milliseconds timeout) override;
    Result<uint8_t*> writeRoom(size_t length) override;
    Result<void> commitWrite(size_t length) override;
    bool readsInPlace() const override { return true; }
    Result<std::span<const uint8_t>> peekRead(std::chrono::milliseconds timeout) override;
    void consumeRead(size_t n) override;
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
    void drainOut();
    bool anyBusy(std::span<const TransferSlot> slots) const;
    void reserve(TransferSlot& slot, size_t bytes);
    void freeBuffers();
    Result<void> submit(TransferSlot& slot, uint8_t endpoint, size_t length, libusb_transfer_cb_fn callback,
                        uint32_t flags, unsigned timeoutMs = 0);
    void resubmitIn(TransferSlot& slot);
    void keepReadingLocked();
    // Waits (pumping events) up to `timeout` until received bytes are there or the transport
    // broke; false: neither.
    bool waitForInputLocked(std::unique_lock<std::mutex>& lock, std::chrono::milliseconds timeout);
    std::span<const uint8_t> unreadLocked() const;  // the oldest received bytes not yet read
    void dropLocked(size_t n);                      // ... of which n are read now
    size_t takeLocked(std::span<uint8_t> buffer);
    // A bulk OUT slot that is neither in flight nor staged, waiting up to the write timeout.
    Result<TransferSlot*> freeOutLocked(std::unique_lock<std::mutex>& lock, size_t bytes);
    Result<void> submitOutLocked(TransferSlot& slot, size_t length);
    std::array<TransferSlot*, kInDepth + kOutDepth + 1> allSlots() {
        std::array<TransferSlot*, kInDepth + kOutDepth + 1> all{};
        size_t i = 0;
        for (TransferSlot& s : in_) all[i++] = &s;
        for (TransferSlot& s : out_) all[i++] = &s;
        all[i] = &event_;
        return all;
    }
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
    TransferSlot in_[kInDepth], out_[kOutDepth], event_;
    std::deque<TransferSlot*> ready_;  // completed bulk IN reads not yet read out, oldest first
    size_t readyPos_ = 0;              // bytes of ready_.front() already read
    std::vector<uint8_t> spilled_;     // bytes ahead of ready_, moved aside to free a read buffer
    size_t spilledPos_ = 0;
    bool viewHeld_ = false;  // peekRead()'s bytes are in use: nothing received moves until consumeRead()
    int inArrived_ = 0;      // completion flags for pump(), set by the callbacks
    int outFreed_ = 0;
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
    drainOut();
    shutdown();
    cancelAll();
    for (TransferSlot* s : allSlots()) {
        // A slot still busy here means libusb never completed it: leak it rather than free
        // memory the kernel may still write.
        if (s->transfer != nullptr && !s->busy) libusb_free_transfer(s->transfer);
    }
    freeBuffers();
    if (claimed_) libusb_release_interface(handle_, endpoints_.interfaceNumber);
    if (handle_ != nullptr) libusb_close(handle_);
    if (context_ != nullptr) libusb_exit(context_);
}

bool UsbTransport::anyBusy(std::span<const TransferSlot> slots) const {
    std::lock_guard lock(mutex_);
    return std::any_of(slots.begin(), slots.end(), [](const TransferSlot& s) { return s.busy; });
}

// Frames handed to write() are still on their way: give them a bounded time to leave, as a
// socket's close() lets queued bytes go.
void UsbTransport::drainOut() {
    if (context_ == nullptr) return;
    const auto deadline = Clock::now() + kCancelWait;
    while (anyBusy(out_) && Clock::now() < deadline) {
        timeval tv{0, 20'000};
        libusb_handle_events_timeout_completed(context_, &tv, nullptr);
    }
}

// Cancels every transfer in flight and handles events until libusb has given them all back
// (bounded: a transfer never completed is leaked by the destructor, never freed under the kernel).
void UsbTransport::cancelAll() {
    if (context_ == nullptr) return;
    auto busy = [&] {
        std::lock_guard lock(mutex_);
        const auto slots = allSlots();
        return std::any_of(slots.begin(), slots.end(), [](const TransferSlot* s) { return s->busy; });
    };
    {
        std::lock_guard lock(mutex_);
        for (TransferSlot* s : allSlots()) {
            if (s->busy) libusb_cancel_transfer(s->transfer);
        }
    }
    const auto deadline = Clock::now() + kCancelWait;
    while (busy() && Clock::now() < deadline) {
        timeval tv{0, 20'000};
        libusb_handle_events_timeout_completed(context_, &tv, nullptr);
    }
}

// Gives `slot` room for `bytes`: its usbfs buffer when large enough, else heap memory.
void UsbTransport::reserve(TransferSlot& slot, size_t bytes) {
    if (slot.devMem != nullptr && slot.devMemSize >= bytes) {
        slot.data = slot.devMem;
        slot.size = slot.devMemSize;
        return;
    }
    if (slot.heap.size() < bytes) slot.heap.resize(bytes);
    slot.data = slot.heap.data();
    slot.size = slot.heap.size();
}

// After every transfer completed or was given up (a busy slot keeps its memory).
void UsbTransport::freeBuffers() {
    for (TransferSlot* s : allSlots()) {
        if (s->devMem != nullptr && !s->busy) libusb_dev_mem_free(handle_, s->devMem, s->devMemSize);
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
                                  libusb_transfer_cb_fn callback, uint32_t flags, unsigned timeoutMs) {
    if (slot.transfer == nullptr) {
        slot.transfer = libusb_alloc_transfer(0);
        if (slot.transfer == nullptr)
            return fail(Error::Kind::kResourceExhausted, description_ + ": libusb_alloc_transfer failed");
    }
    slot.owner = this;
    slot.length = length;
    libusb_fill_bulk_transfer(slot.transfer, handle_, endpoint, slot.data, static_cast<int>(length), callback,
                              &slot, timeoutMs);
    slot.transfer->flags = static_cast<uint8_t>(flags);
    const int r = libusb_submit_transfer(slot.transfer);
    if (r != 0) {
        const auto kind = r == LIBUSB_ERROR_NO_DEVICE ? Error::Kind::kDisconnected : Error::Kind::kIo;
        return fail(kind, description_ + ": " + usbError("submit transfer", r));
    }
    slot.busy = true;
    return {};
}

void UsbTransport::resubmitIn(TransferSlot& slot) {
    if (broken_) return;
    if (auto r = submit(slot, endpoints_.bulkIn, slot.size, &onIn, 0); !r)
        failLocked(r.error().kind, "cannot resubmit a bulk IN read: " + r.error().message);
}

// Keeps a bulk IN read pending: when every read buffer holds bytes not yet read out, the oldest
// one's move aside (a copy the reader is normally quick enough to avoid).
void UsbTransport::keepReadingLocked() {
    // While the reader holds a view of the received bytes they stay put: its consumeRead() comes
    // back here (it is busy with the bytes, not gone, so the device waits only that long).
    if (broken_ || ready_.empty() || viewHeld_) return;
    if (std::any_of(std::begin(in_), std::end(in_), [](const TransferSlot& s) { return s.busy; })) return;
    TransferSlot& oldest = *ready_.front();
    if (spilledPos_ > 0) {
        spilled_.erase(spilled_.begin(), spilled_.begin() + static_cast<std::ptrdiff_t>(spilledPos_));
        spilledPos_ = 0;
    }
    spilled_.insert(spilled_.end(), oldest.data + readyPos_,
                    oldest.data + static_cast<size_t>(oldest.transfer->actual_length));
    ready_.pop_front();
    readyPos_ = 0;
    resubmitIn(oldest);
}

void LIBUSB_CALL UsbTransport::onIn(libusb_transfer* transfer) {
    auto* slot = static_cast<TransferSlot*>(transfer->user_data);
    UsbTransport* self = slot->owner;
    std::lock_guard lock(self->mutex_);
    slot->busy = false;
    if (transfer->status == LIBUSB_TRANSFER_COMPLETED) {
        self->stats_.bytesIn += static_cast<uint64_t>(transfer->actual_length);
        if (transfer->actual_length == 0) {  // a zero-length packet on its own
            self->resubmitIn(*slot);
            return;
        }
        self->ready_.push_back(slot);
        self->inArrived_ = 1;
        self->keepReadingLocked();
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
        if (!self->broken_) (void)self->submit(*slot, self->endpoints_.eventIn, slot->size, &onEvent, 0);
    }
    // Errors surface on the bulk IN endpoint; the event endpoint only stops listening.
}

void LIBUSB_CALL UsbTransport::onOut(libusb_transfer* transfer) {
    auto* slot = static_cast<TransferSlot*>(transfer->user_data);
    UsbTransport* self = slot->owner;
    std::lock_guard lock(self->mutex_);
    slot->busy = false;
    self->outFreed_ = 1;
    const auto actual = static_cast<size_t>(transfer->actual_length);
    const std::string bytes = std::to_string(slot->length) + " bytes";
    if (transfer->status == LIBUSB_TRANSFER_TIMED_OUT) {
        self->failLocked(Error::Kind::kIo, "the device did not take " + bytes + " on bulk OUT within " +
                                               std::to_string(transfer->timeout) + " ms");
    } else if (transfer->status != LIBUSB_TRANSFER_COMPLETED) {
        self->failLocked(kindOfStatus(transfer->status),
                         "bulk OUT of " + bytes + ": " + transferStatusName(transfer->status));
    } else if (actual != slot->length) {
        self->failLocked(Error::Kind::kIo, "bulk OUT sent " + std::to_string(actual) + " of " + bytes);
    } else {
        self->stats_.bytesOut += actual;
    }
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

Result<TransferSlot*> UsbTransport::freeOutLocked(std::unique_lock<std::mutex>& lock, size_t bytes) {
    const auto deadline = Clock::now() + writeTimeout_;
    for (;;) {
        if (broken_) return std::unexpected(brokenError_);
        auto free = std::find_if(std::begin(out_), std::end(out_),
                                 [](const TransferSlot& s) { return !s.busy && !s.staged; });
        if (free != std::end(out_)) return &*free;
        outFreed_ = 0;
        lock.unlock();
        const bool freed = pump(&outFreed_, deadline);
        lock.lock();
        if (!freed) {
            // Nothing of this frame has gone: the stream is intact (the transfers ahead of it
            // time out on their own and break the transport).
            return fail(Error::Kind::kTimeout, description_ + ": the device did not take the " +
                                                   std::to_string(kOutDepth) + " frames ahead of " +
                                                   std::to_string(bytes) + " bytes on bulk OUT within " +
                                                   std::to_string(writeTimeout_.count()) + " ms");
        }
    }
}

// The frame is built in the transfer buffer it is sent from (RpcClient serialises into it).
Result<uint8_t*> UsbTransport::writeRoom(size_t length) {
    std::unique_lock lock(mutex_);
    auto slot = freeOutLocked(lock, length);
    if (!slot) return std::unexpected(slot.error());
    reserve(**slot, length);
    (*slot)->staged = true;
    return (*slot)->data;
}

Result<void> UsbTransport::commitWrite(size_t length) {
    std::lock_guard lock(mutex_);
    auto staged =
        std::find_if(std::begin(out_), std::end(out_), [](const TransferSlot& s) { return s.staged; });
    if (staged == std::end(out_) || length > staged->size) {
        return fail(Error::Kind::kInvalidArgument, description_ + ": commitWrite of " +
                                                       std::to_string(length) +
                                                       " bytes without writeRoom room for them");
    }
    staged->staged = false;
    return submitOutLocked(*staged, length);
}

// A transfer that is a multiple of the packet size ends with a zero-length packet, so the
// device's read completes at the frame's end instead of waiting for more.
Result<void> UsbTransport::submitOutLocked(TransferSlot& slot, size_t length) {
    if (broken_) return std::unexpected(brokenError_);
    return submit(slot, endpoints_.bulkOut, length, &onOut, LIBUSB_TRANSFER_ADD_ZERO_PACKET,
                  static_cast<unsigned>(writeTimeout_.count()));
}

Result<void> UsbTransport::write(std::span<const uint8_t> bytes, std::span<const int> fds) {
    if (!fds.empty()) {
        return fail(Error::Kind::kInvalidArgument, description_ + ": USB cannot pass file descriptors (" +
                                                       std::to_string(fds.size()) + " given)");
    }
    std::unique_lock lock(mutex_);  // one step, so writes from several threads cannot mix
    auto slot = freeOutLocked(lock, bytes.size());
    if (!slot) return std::unexpected(slot.error());
    reserve(**slot, bytes.size());
    std::memcpy((*slot)->data, bytes.data(), bytes.size());
    return submitOutLocked(**slot, bytes.size());
}

std::span<const uint8_t> UsbTransport::unreadLocked() const {
    if (spilledPos_ < spilled_.size()) return {spilled_.data() + spilledPos_, spilled_.size() - spilledPos_};
    if (ready_.empty()) return {};
    const TransferSlot& slot = *ready_.front();
    return {slot.data + readyPos_, static_cast<size_t>(slot.transfer->actual_length) - readyPos_};
}

// The first n unread bytes are read: first those moved aside, then the oldest completed read's,
// which is resubmitted once drained.
void UsbTransport::dropLocked(size_t n) {
    if (spilledPos_ < spilled_.size()) {
        spilledPos_ += std::min(n, spilled_.size() - spilledPos_);
        if (spilledPos_ == spilled_.size()) {
            spilled_.clear();
            spilledPos_ = 0;
        }
        return;
    }
    if (ready_.empty()) return;
    TransferSlot& slot = *ready_.front();
    const auto length = static_cast<size_t>(slot.transfer->actual_length);
    readyPos_ = std::min(length, readyPos_ + n);
    if (readyPos_ == length) {
        ready_.pop_front();
        readyPos_ = 0;
        resubmitIn(slot);
    }
}

size_t UsbTransport::takeLocked(std::span<uint8_t> buffer) {
    const std::span<const uint8_t> unread = unreadLocked();
    const size_t n = std::min(buffer.size(), unread.size());
    if (n > 0) std::memcpy(buffer.data(), unread.data(), n);
    dropLocked(n);
    return n;
}

bool UsbTransport::waitForInputLocked(std::unique_lock<std::mutex>& lock, std::chrono::milliseconds timeout) {
    if (spilledPos_ == spilled_.size() && ready_.empty() && !broken_) {
        inArrived_ = 0;
        lock.unlock();
        pump(&inArrived_, Clock::now() + timeout);
        lock.lock();
    }
    return !unreadLocked().empty() || broken_;
}

Result<size_t> UsbTransport::read(std::span<uint8_t> buffer, std::vector<UniqueFd>*,
                                  std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    waitForInputLocked(lock, timeout);
    if (const size_t n = takeLocked(buffer); n > 0) return n;
    if (broken_) return std::unexpected(brokenError_);
    return fail(Error::Kind::kTimeout,
                description_ + ": no data within " + std::to_string(timeout.count()) + " ms");
}

// A reply is handed to the reader where the transfer put it (usbfs memory): no copy.
Result<std::span<const uint8_t>> UsbTransport::peekRead(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    waitForInputLocked(lock, timeout);
    if (const auto unread = unreadLocked(); !unread.empty()) {
        viewHeld_ = true;
        return unread;
    }
    if (broken_) return std::unexpected(brokenError_);
    return fail(Error::Kind::kTimeout,
                description_ + ": no data within " + std::to_string(timeout.count()) + " ms");
}

void UsbTransport::consumeRead(size_t n) {
    std::lock_guard lock(mutex_);
    viewHeld_ = false;
    dropLocked(n);
    keepReadingLocked();
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
    // usbfs buffers where the kernel gives them (the data moves in place), else heap memory.
    for (TransferSlot* s : allSlots()) {
        if (s == &event_) continue;
        s->devMem = libusb_dev_mem_alloc(handle_, kInTransferBytes);
        if (s->devMem != nullptr) s->devMemSize = kInTransferBytes;
        reserve(*s, kInTransferBytes);
    }
    reserve(event_, kEventTransferBytes);
    vlog("protocol", "%s: transfer buffers from %s", description_.c_str(),
         in_[0].devMem != nullptr ? "usbfs (zero-copy)" : "the heap");
    std::lock_guard lock(mutex_);
    for (TransferSlot& s : in_) {
        if (auto r = submit(s, endpoints_.bulkIn, s.size, &onIn, 0); !r) return r;
    }
    return submit(event_, endpoints_.eventIn, event_.size, &onEvent, 0);
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
