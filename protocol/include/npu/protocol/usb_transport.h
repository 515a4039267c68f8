#pragma once
// The NPU over USB (docs/usb.md), host side: a libusb-1.0 transport over the device's vendor
// interface (bulk OUT for requests, bulk IN for replies, a second bulk IN for asynchronous
// events). Nothing is shared with the device: Transport::sharesMemory() is false, so the shim
// moves host-window bytes with WINDOW_WRITE / WINDOW_READ calls in chunks.
//
// The identifiers below are shared with the device side (firmware/platform/usb_gadget).

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "npu/protocol/transport.h"

namespace npu::proto {

// pid.codes' vendor id with its test product id: fine for a simulator and a lab; a shipping
// device must get its own product id.
inline constexpr uint16_t kNpuUsbVendorId = 0x1209;
inline constexpr uint16_t kNpuUsbProductId = 0x0001;
inline constexpr uint8_t kNpuUsbInterfaceClass = 0xFF;     // vendor specific
inline constexpr uint8_t kNpuUsbInterfaceSubclass = 0x4E;  // 'N'
inline constexpr uint8_t kNpuUsbInterfaceProtocol = 0x01;  // frames of docs/protocol.md
// Vendor control request (host -> interface, no data): end whatever session the device is
// serving (the firmware resets, queued bytes are dropped) and start a fresh one. The device
// acknowledges the status stage only when the new session is ready for frames.
inline constexpr uint8_t kNpuUsbRequestOpenSession = 0x01;
// Vendor control request (host -> interface, no data): like OPEN_SESSION, but the session echoes
// every bulk OUT transfer back on bulk IN, unframed: the raw USB floor `npu bench rpc` compares
// the RPC figures with.
inline constexpr uint8_t kNpuUsbRequestOpenEcho = 0x02;
// DeviceEvent.kind values.
inline constexpr uint32_t kNpuUsbEventSessionOpened = 1;

struct UsbDeviceId {
    uint16_t vendor = kNpuUsbVendorId;
    uint16_t product = kNpuUsbProductId;
    std::string serial;  // empty: any
};

// "VID:PID[:SERIAL]" with hexadecimal ids (e.g. "1209:0001:NPUSIM0001"); empty text: defaults.
Result<UsbDeviceId> parseUsbDeviceId(std::string_view text);
std::string formatUsbDeviceId(const UsbDeviceId& id);

struct UsbEndpoints {
    uint8_t interfaceNumber = 0;
    uint8_t bulkOut = 0;
    uint8_t bulkIn = 0;
    uint8_t eventIn = 0;
    uint16_t maxPacket = 0;  // of the bulk OUT endpoint (512 at high speed)
};

struct UsbDeviceInfo {
    UsbDeviceId id;
    uint8_t bus = 0;
    uint8_t address = 0;
    std::string speed;  // "high", "full", ...
    std::string manufacturer;
    std::string product;
    uint16_t bcdDevice = 0;
    UsbEndpoints endpoints;
    std::string error;  // why the strings or endpoints could not be read (empty: read)
};

// Every device with the NPU's vendor interface matching `filter` (vendor, product, and the
// serial when given). Errors only when libusb itself cannot start.
Result<std::vector<UsbDeviceInfo>> listUsbDevices(const UsbDeviceId& filter = {});

struct UsbOptions {
    std::chrono::milliseconds openTimeout{3000};    // the OPEN_SESSION control request
    std::chrono::milliseconds writeTimeout{10000};  // a bulk OUT transfer the device does not take
};

// Opens the device, claims its vendor interface (a device claimed by another process fails
// kResourceExhausted with "busy"), opens a session and keeps reads pending on both IN
// endpoints. A vanished device (unplugged, gadget unbound) makes every later call fail
// kDisconnected promptly.
Result<std::unique_ptr<Transport>> openUsb(const UsbDeviceId& id, const UsbOptions& options = {});

// Counters of a transport made by openUsb (zeros for any other transport).
struct UsbTransportStats {
    uint64_t eventsReceived = 0;
    uint64_t lastSession = 0;
    uint64_t bytesOut = 0;
    uint64_t bytesIn = 0;
};
UsbTransportStats usbTransportStats(const Transport& transport);

}  // namespace npu::proto
