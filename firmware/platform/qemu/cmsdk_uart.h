#pragma once
// Driver of the Arm CMSDK APB UART: blocking transmit, interrupt-driven receive into a ring.
// The ring is single-producer (the RX interrupt) single-consumer (the main loop), so it needs
// no lock: head is written only by the interrupt, tail only by the consumer. When the ring is
// full the interrupt leaves the byte in the UART and pauses: the UART then refuses further
// bytes, QEMU stops reading its socket and the sender blocks (back-pressure, nothing dropped);
// read() resumes once there is room.

#include <cstddef>
#include <cstdint>

namespace npu::fw::qemu {

class CmsdkUart {
public:
    // `ring` (a power of two bytes) receives what arrives while the consumer is busy.
    CmsdkUart(uintptr_t base, uint8_t* ring, uint32_t ringBytes)
        : base_(base), ring_(ring), mask_(ringBytes - 1) {}

    // Enables TX, RX and (if rxInterrupt) the RX interrupt; the caller enables the NVIC line.
    void init(bool rxInterrupt);
    void write(const uint8_t* data, size_t length);
    void writeString(const char* text);
    // Moves up to `capacity` received bytes into `out`; returns how many.
    size_t read(uint8_t* out, size_t capacity);
    bool readable() const { return head_ != tail_ || paused_; }
    // The RX interrupt handler: drains the data register into the ring.
    void onRxInterrupt();

    uint32_t overruns() const { return overruns_; }
    uint32_t rxInterrupts() const { return rxInterrupts_; }
    uint32_t rxBytes() const { return rxBytes_; }
    uint32_t rxPauses() const { return rxPauses_; }  // times the ring was full (back-pressure began)

private:
    void drainRx();
    volatile uint32_t& reg(uint32_t offset) const {
        return *reinterpret_cast<volatile uint32_t*>(base_ + offset);
    }

    uintptr_t base_;
    uint8_t* ring_;
    uint32_t mask_;
    volatile uint32_t head_ = 0;      // next byte the interrupt writes
    volatile uint32_t tail_ = 0;      // next byte the consumer reads
    volatile uint32_t overruns_ = 0;  // the UART's own overruns (bytes lost before the interrupt ran)
    volatile uint32_t rxInterrupts_ = 0;
    volatile uint32_t rxBytes_ = 0;
    volatile uint32_t rxPauses_ = 0;
    volatile bool paused_ = false;  // ring full: RX interrupt off until read() makes room
};

}  // namespace npu::fw::qemu
