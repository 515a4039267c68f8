// Finding NPU devices on the USB: VID:PID[:SERIAL] parsing, descriptor walking, listing.
#include <libusb.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "npu/protocol/usb_transport.h"
#include "usb_descriptors.h"

namespace npu::proto {
namespace {

struct ConfigDeleter {
    void operator()(libusb_config_descriptor* c) const { libusb_free_config_descriptor(c); }
};
using ConfigPtr = std::unique_ptr<libusb_config_descriptor, ConfigDeleter>;

bool parseHex16(std::string_view text, uint16_t* out) {
    if (text.empty() || text.size() > 4) return false;
    uint32_t v = 0;
    for (char c : text) {
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0) return false;
        v = v * 16 + static_cast<uint32_t>(d);
    }
    *out = static_cast<uint16_t>(v);
    return true;
}

const char* speedName(int speed) {
    switch (speed) {
        case LIBUSB_SPEED_LOW:
            return "low (1.5 Mbit/s)";
        case LIBUSB_SPEED_FULL:
            return "full (12 Mbit/s)";
        case LIBUSB_SPEED_HIGH:
            return "high (480 Mbit/s)";
        case LIBUSB_SPEED_SUPER:
            return "super (5 Gbit/s)";
        case LIBUSB_SPEED_SUPER_PLUS:
            return "super+ (10 Gbit/s)";
        default:
            return "unknown";
    }
}

std::string stringDescriptor(libusb_device_handle* handle, uint8_t index) {
    if (index == 0) return {};
    unsigned char text[256];
    const int n = libusb_get_string_descriptor_ascii(handle, index, text, sizeof text);
    return n > 0 ? std::string(reinterpret_cast<char*>(text), static_cast<size_t>(n)) : std::string();
}

// The vendor interface's endpoints in descriptor order: bulk OUT, bulk IN, bulk IN (events).
std::string endpointsOf(const libusb_interface_descriptor& alt, UsbEndpoints* out) {
    int ins = 0;
    bool haveOut = false;
    for (int e = 0; e < alt.bNumEndpoints; ++e) {
        const libusb_endpoint_descriptor& ep = alt.endpoint[e];
        if ((ep.bmAttributes & LIBUSB_TRANSFER_TYPE_MASK) != LIBUSB_TRANSFER_TYPE_BULK) continue;
        if ((ep.bEndpointAddress & LIBUSB_ENDPOINT_DIR_MASK) == LIBUSB_ENDPOINT_OUT) {
            if (!haveOut) {
                out->bulkOut = ep.bEndpointAddress;
                out->maxPacket = ep.wMaxPacketSize;
                haveOut = true;
            }
        } else if (ins == 0) {
            out->bulkIn = ep.bEndpointAddress;
            ++ins;
        } else if (ins == 1) {
            out->eventIn = ep.bEndpointAddress;
            ++ins;
        }
    }
    if (!haveOut || ins < 2) {
        return "the vendor interface has " + std::string(haveOut ? "a" : "no") + " bulk OUT and " +
               std::to_string(ins) + " bulk IN endpoints; the NPU needs one OUT and two IN";
    }
    out->interfaceNumber = alt.bInterfaceNumber;
    return {};
}

}  // namespace

std::string findNpuEndpoints(libusb_device* device, UsbEndpoints* out) {
    libusb_config_descriptor* raw = nullptr;
    const int r = libusb_get_active_config_descriptor(device, &raw);
    if (r != 0) return std::string("cannot read the active configuration: ") + libusb_error_name(r);
    ConfigPtr config(raw);
    for (int i = 0; i < config->bNumInterfaces; ++i) {
        const libusb_interface& itf = config->interface[i];
        for (int a = 0; a < itf.num_altsetting; ++a) {
            const libusb_interface_descriptor& alt = itf.altsetting[a];
            if (alt.bInterfaceClass == kNpuUsbInterfaceClass &&
                alt.bInterfaceSubClass == kNpuUsbInterfaceSubclass &&
                alt.bInterfaceProtocol == kNpuUsbInterfaceProtocol) {
                return endpointsOf(alt, out);
            }
        }
    }
    return "no interface of class ff/4e/01 (the NPU's vendor interface) among " +
           std::to_string(config->bNumInterfaces);
}

bool matchesId(libusb_device* device, const UsbDeviceId& id) {
    libusb_device_descriptor d{};
    if (libusb_get_device_descriptor(device, &d) != 0) return false;
    if (d.idVendor != id.vendor || d.idProduct != id.product) return false;
    if (id.serial.empty()) return true;
    libusb_device_handle* handle = nullptr;
    if (libusb_open(device, &handle) != 0) return false;
    const bool same = stringDescriptor(handle, d.iSerialNumber) == id.serial;
    libusb_close(handle);
    return same;
}

Result<UsbDeviceId> parseUsbDeviceId(std::string_view text) {
    UsbDeviceId id;
    if (text.empty()) return id;
    const size_t c1 = text.find(':');
    const size_t c2 = c1 == std::string_view::npos ? c1 : text.find(':', c1 + 1);
    const std::string_view vid = text.substr(0, c1);
    const std::string_view pid =
        c1 == std::string_view::npos ? std::string_view() : text.substr(c1 + 1, c2 - c1 - 1);
    if (c1 == std::string_view::npos || !parseHex16(vid, &id.vendor) || !parseHex16(pid, &id.product)) {
        return fail(Error::Kind::kInvalidArgument,
                    "USB device '" + std::string(text) +
                        "': expected VID:PID[:SERIAL] with hexadecimal ids, e.g. 1209:0001");
    }
    if (c2 != std::string_view::npos) id.serial = std::string(text.substr(c2 + 1));
    return id;
}

std::string formatUsbDeviceId(const UsbDeviceId& id) {
    char b[16];
    std::snprintf(b, sizeof b, "%04x:%04x", id.vendor, id.product);
    return id.serial.empty() ? std::string(b) : std::string(b) + ":" + id.serial;
}

Result<std::vector<UsbDeviceInfo>> listUsbDevices(const UsbDeviceId& filter) {
    libusb_context* context = nullptr;
    if (int r = libusb_init(&context); r != 0) {
        return fail(Error::Kind::kIo, std::string("libusb_init: ") + libusb_error_name(r));
    }
    std::vector<UsbDeviceInfo> found;
    libusb_device** list = nullptr;
    const ssize_t count = libusb_get_device_list(context, &list);
    for (ssize_t i = 0; i < count; ++i) {
        libusb_device* dev = list[i];
        libusb_device_descriptor d{};
        if (libusb_get_device_descriptor(dev, &d) != 0) continue;
        if (d.idVendor != filter.vendor || d.idProduct != filter.product) continue;
        UsbDeviceInfo info;
        info.id = {d.idVendor, d.idProduct, {}};
        info.bus = libusb_get_bus_number(dev);
        info.address = libusb_get_device_address(dev);
        info.speed = speedName(libusb_get_device_speed(dev));
        info.bcdDevice = d.bcdDevice;
        info.error = findNpuEndpoints(dev, &info.endpoints);
        libusb_device_handle* handle = nullptr;
        if (int r = libusb_open(dev, &handle); r == 0) {
            info.manufacturer = stringDescriptor(handle, d.iManufacturer);
            info.product = stringDescriptor(handle, d.iProduct);
            info.id.serial = stringDescriptor(handle, d.iSerialNumber);
            libusb_close(handle);
        } else if (info.error.empty()) {
            info.error = std::string("cannot open it to read its strings: ") + libusb_error_name(r);
        }
        if (!filter.serial.empty() && info.id.serial != filter.serial) continue;
        found.push_back(std::move(info));
    }
    if (count >= 0) libusb_free_device_list(list, 1);
    libusb_exit(context);
    return found;
}

}  // namespace npu::proto
