#include "cmsdk_uart.h"

namespace npu::fw::qemu {

namespace {
constexpr uint32_t kData = 0x00;
constexpr uint32_t kState = 0x04;
constexpr uint32_t kCtrl = 0x08;
constexpr uint32_t kIntStatus = 0x0C;  // read: pending; write 1: clear
constexpr uint32_t kBaudDiv = 0x10;

constexpr uint32_t kStateTxFull = 1u << 0;
constexpr uint32_t kStateRxFull = 1u << 1;
constexpr uint32_t kStateRxOverrun = 1u << 3;
constexpr uint32_t kCtrlTxEnable = 1u << 0;
constexpr uint32_t kCtrlRxEnable = 1u << 1;
constexpr uint32_t kCtrlRxInterrupt = 1u << 3;
constexpr uint32_t kIntRx = 1u << 1;
constexpr uint32_t kIntRxOverrun = 1u << 3;
constexpr uint32_t kMinBaudDiv = 16;  // the smallest divider the UART accepts
}  // namespace

void CmsdkUart::init(bool rxInterrupt) {
    reg(kCtrl) = 0;
    reg(kBaudDiv) = kMinBaudDiv;
    reg(kIntStatus) = kIntRx | kIntRxOverrun | 0x5u;
    reg(kCtrl) = kCtrlTxEnable | kCtrlRxEnable | (rxInterrupt ? kCtrlRxInterrupt : 0u);
}

void CmsdkUart::write(const uint8_t* data, size_t length) {
    for (size_t i = 0; i < length; ++i) {
        while ((reg(kState) & kStateTxFull) != 0) {
        }
        reg(kData) = data[i];
    }
}

void CmsdkUart::writeString(const char* text) {
    size_t n = 0;
    while (text[n] != '\0') ++n;
    write(reinterpret_cast<const uint8_t*>(text), n);
}

void CmsdkUart::onRxInterrupt() {
    rxInterrupts_ = rxInterrupts_ + 1;
    drainRx();
}

void CmsdkUart::drainRx() {
    // Clear first, then drain: a byte that arrives after the drain raises the line again.
    reg(kIntStatus) = kIntRx | kIntRxOverrun;
    if ((reg(kState) & kStateRxOverrun) != 0) {
        reg(kState) = kStateRxOverrun;  // write 1 to clear
        overruns_ = overruns_ + 1;
    }
    while ((reg(kState) & kStateRxFull) != 0) {
        const uint32_t head = head_;
        if (head - tail_ > mask_) {
            paused_ = true;
            rxPauses_ = rxPauses_ + 1;
            reg(kCtrl) = reg(kCtrl) & ~kCtrlRxInterrupt;
            return;
        }
        ring_[head & mask_] = static_cast<uint8_t>(reg(kData));
        head_ = head + 1;
        rxBytes_ = rxBytes_ + 1;
    }
}

size_t CmsdkUart::read(uint8_t* out, size_t capacity) {
    size_t n = 0;
    uint32_t tail = tail_;
    const uint32_t head = head_;
    while (n < capacity && tail != head) out[n++] = ring_[tail++ & mask_];
    tail_ = tail;
    if (paused_) {
        // With interrupts masked nothing races with this drain; a byte that arrived while the
        // RX interrupt was off raised no interrupt, so look at RXFULL once more after enabling.
        __asm volatile("cpsid i" ::: "memory");
        paused_ = false;
        drainRx();
        if (!paused_) {
            reg(kCtrl) = reg(kCtrl) | kCtrlRxInterrupt;
            drainRx();
        }
        __asm volatile("cpsie i" ::: "memory");
    }
    return n;
}

}  // namespace npu::fw::qemu
