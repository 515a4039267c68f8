#include "command_processor.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>

namespace npu::sim {

using isa::ErrorCode;
using isa::Opcode;
using isa::Queue;

namespace {

isa::Command readCommand(const uint8_t* p) {
    isa::Command c;
    if constexpr (std::endian::native == std::endian::little) {
        static_assert(sizeof(c.w) == isa::kCommandBytes);
        std::memcpy(c.w, p, isa::kCommandBytes);
        return c;
    }
    for (uint32_t i = 0; i < isa::kCommandWords; ++i) {  // little endian whatever the host is
        c.w[i] = p[4 * i] | (uint32_t{p[4 * i + 1]} << 8) | (uint32_t{p[4 * i + 2]} << 16) |
                 (uint32_t{p[4 * i + 3]} << 24);
    }
    return c;
}

size_t qi(Queue q) {
    return static_cast<size_t>(q);
}

}  // namespace

CommandProcessor::CommandProcessor(DeviceState& s) : s_(s), dma_(s), mac_(s), vector_(s) {}

void CommandProcessor::reset() {
    tokens_ = {};
    vector_.reset();
    // Time keeps running across a reset; only the PMU view of it is zeroed (by the device).
    dispatch_ = now_;
    unitFree_.fill(now_);
}

bool CommandProcessor::queueConfigOk() const {
    return s_.cmdqSize != 0 && s_.cmdqSize % isa::kCommandBytes == 0 &&
           s_.cmdqBase % isa::kCommandBytes == 0 && inRange(s_.cmdqBase, s_.cmdqSize, s_.dramSize) &&
           s_.cmdqTail < s_.cmdqSize && s_.cmdqTail % isa::kCommandBytes == 0 && s_.cmdqHead < s_.cmdqSize;
}

namespace {

uint64_t hostNs() {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count());
}

}  // namespace

void CommandProcessor::process() {
    const uint64_t start = profiling_ ? hostNs() : 0;
    processQueue();
    if (profiling_) stats_.hostProcessNs += hostNs() - start;
}

void CommandProcessor::processQueue() {
    if (s_.hasError() || s_.hung) return;  // a fault or a hang sticks until CTRL.SOFT_RESET
    dispatch_ = now_;
    unitFree_.fill(now_);
    if ((s_.ctrl & isa::kCtrlEnable) == 0) return fail(ErrorCode::kNotEnabled, s_.cmdqHead);
    if (!queueConfigOk()) return fail(ErrorCode::kBadQueueConfig, s_.cmdqHead);
    s_.status = isa::kStatusBusy;
    while (s_.cmdqHead != s_.cmdqTail) {
        const uint32_t offset = s_.cmdqHead;
        const isa::Command c = readCommand(s_.dram + s_.cmdqBase + offset);
        s_.cmdqHead = (s_.cmdqHead + isa::kCommandBytes) % s_.cmdqSize;
        ++s_.commandsSinceReset;
        if (s_.faults.hangAtCommand != 0 && s_.commandsSinceReset == s_.faults.hangAtCommand) {
            // The injected hang: the command never completes, so no IRQ, and STATUS stays BUSY.
            s_.hung = true;
            s_.cmdqHead = offset;
            return;
        }
        const Step step = execute(c, offset);
        if (s_.faults.sramFlipAfterCommand != 0 && s_.commandsSinceReset == s_.faults.sramFlipAfterCommand &&
            s_.faults.sramFlipAddress < s_.scratchpad.size()) {
            s_.scratchpad[s_.faults.sramFlipAddress] ^=
                static_cast<uint8_t>(1u << (s_.faults.sramFlipBit & 7));
            if (s_.faults.sramEcc) return fail(ErrorCode::kSramEcc, offset);
        }
        if (step == Step::kFault) return;
        if (!s_.pmu.frozen()) ++s_.pmu.commands;
        if (step == Step::kStop) {
            settle();
            s_.status = isa::kStatusIdle | isa::kStatusHalted;
            s_.irqStatus |= isa::kIrqDone;
            return;
        }
    }
    settle();
    s_.status = isa::kStatusIdle;
    s_.irqStatus |= isa::kIrqDone;
}

void CommandProcessor::fail(ErrorCode e, uint32_t offset) {
    settle();
    s_.errorCode = static_cast<uint32_t>(e);
    s_.errorOffset = offset;
    s_.status = isa::kStatusError | isa::kStatusHalted;
    s_.irqStatus |= isa::kIrqError;
}

void CommandProcessor::settle() {
    uint64_t end = std::max(dispatch_, now_);
    for (uint64_t t : unitFree_) end = std::max(end, t);
    if (!s_.pmu.frozen()) s_.pmu.cycles += end - now_;
    now_ = end;
}

// A unit starts a command when the front end has decoded it and the unit finished its previous
// one; waiting for tokens has already moved unitFree_ (see token()).
void CommandProcessor::runOn(Queue q, const UnitResult& r) {
    const uint64_t start = std::max(dispatch_, unitFree_[qi(q)]);
    unitFree_[qi(q)] = start + r.cycles;
    uint64_t* busy = q == Queue::kLoad      ? &stats_.loadBusyCycles
                     : q == Queue::kCompute ? &stats_.computeBusyCycles
                                            : &stats_.storeBusyCycles;
    *busy += r.cycles;
    if (!s_.pmu.frozen()) {
        (q == Queue::kLoad      ? s_.pmu.loadActive
         : q == Queue::kCompute ? s_.pmu.computeActive
                                : s_.pmu.storeActive) += r.cycles;
        s_.pmu.dmaTransactions += r.dmaTransactions;
        s_.pmu.macs += r.macs;
        s_.pmu.dmaReadBytes += r.bytesRead;
        s_.pmu.dmaWriteBytes += r.bytesWritten;
    }
}

ErrorCode CommandProcessor::token(const isa::Command& c, bool push) {
    const uint32_t from = c.w[isa::token::kFrom], to = c.w[isa::token::kTo];
    if (isa::flagsOf(c) != 0 || from >= isa::kQueueCount || to >= isa::kQueueCount || from == to) {
        return ErrorCode::kBadParameter;
    }
    TokenQueue& tq = tokens_[from * isa::kQueueCount + to];
    const uint32_t depth = std::min(s_.config.tokenQueueDepth, kMaxTokens);
    if (push) {
        if (tq.count >= depth) return ErrorCode::kTokenOverflow;
        // The token is ready when everything `from` has been given so far is done.
        tq.readyAt[(tq.head + tq.count) % kMaxTokens] = std::max(dispatch_, unitFree_[from]);
        ++tq.count;
        return ErrorCode::kNone;
    }
    if (tq.count == 0) return ErrorCode::kTokenUnderflow;
    const uint64_t ready = tq.readyAt[tq.head];
    tq.head = (tq.head + 1) % kMaxTokens;
    --tq.count;
    const uint64_t wouldStart = std::max(dispatch_, unitFree_[to]);
    if (ready > wouldStart) {
        if (!s_.pmu.frozen()) {
            s_.pmu.stallCycles += ready - wouldStart;
            // Waiting for a DMA queue is a memory stall; waiting for compute is a dependency.
            if (from != static_cast<uint32_t>(Queue::kCompute)) s_.pmu.stallDmaCycles += ready - wouldStart;
        }
        unitFree_[to] = ready;
    }
    return ErrorCode::kNone;
}

namespace {

// Commands the command processor carries out itself, without a unit.
bool isControl(Opcode op) {
    return op == Opcode::kPush || op == Opcode::kPop || op == Opcode::kFence || op == Opcode::kNop ||
           op == Opcode::kIrq || op == Opcode::kStop;
}

}  // namespace

CommandProcessor::Step CommandProcessor::execute(const isa::Command& c, uint32_t offset) {
    const Opcode op = isa::opcodeOf(c);
    if (isa::reservedOf(c) != 0 || !isa::isKnownOpcode(op)) {
        fail(ErrorCode::kBadOpcode, offset);
        return Step::kFault;
    }
    dispatch_ += s_.config.decodeCycles;
    if (isControl(op)) return control(c, op, offset);
    Queue q = Queue::kCompute;
    const uint64_t unitStart = profiling_ ? hostNs() : 0;
    const UnitResult r = runUnit(c, op, &q);
    if (profiling_) stats_.hostArithmeticNs += hostNs() - unitStart;
    if (r.error != ErrorCode::kNone) {
        fail(r.error, offset);
        return Step::kFault;
    }
    runOn(q, r);
    return Step::kContinue;
}

CommandProcessor::Step CommandProcessor::control(const isa::Command& c, Opcode op, uint32_t offset) {
    switch (op) {
        case Opcode::kPush:
        case Opcode::kPop: {
            const ErrorCode e = token(c, op == Opcode::kPush);
            if (e == ErrorCode::kNone) return Step::kContinue;
            fail(e, offset);
            return Step::kFault;
        }
        case Opcode::kFence: {
            uint64_t t = dispatch_;
            for (uint64_t u : unitFree_) t = std::max(t, u);
            dispatch_ = t;
            unitFree_.fill(t);
            return Step::kContinue;
        }
        case Opcode::kIrq:
            s_.irqStatus |= isa::kIrqCommand;
            return Step::kContinue;
        case Opcode::kStop:
            return Step::kStop;
        default:  // NOP
            return Step::kContinue;
    }
}

// The command on its unit; *q is the queue whose time it takes.
UnitResult CommandProcessor::runUnit(const isa::Command& c, Opcode op, Queue* q) {
    switch (op) {
        case Opcode::kDmaLoad:
        case Opcode::kDmaStore: {
            *q = op == Opcode::kDmaLoad ? Queue::kLoad : Queue::kStore;
            if (s_.faults.dmaErrorAtTransfer != 0 && ++s_.dmaSinceReset == s_.faults.dmaErrorAtTransfer) {
                return fault(ErrorCode::kDmaError);
            }
            UnitResult r = op == Opcode::kDmaLoad ? dma_.load(c) : dma_.store(c);
            r.dmaTransactions = 1;
            return r;
        }
        case Opcode::kDwConv:
            return mac_.dwconv(c);
        case Opcode::kVecOp:
            return vector_.vecOp(c);
        case Opcode::kPool:
            return vector_.pool(c);
        case Opcode::kSoftmax:
            return vector_.softmax(c);
        case Opcode::kResize:
            return vector_.resize(c);
        case Opcode::kMean:
            return vector_.mean(c);
        case Opcode::kConvert:
            return vector_.convert(c);
        case Opcode::kGemm:
            return mac_.gemm(c);
        case Opcode::kConv:
            return mac_.conv(c);
        case Opcode::kVecParams:
            return vector_.setParams(c);
        case Opcode::kRequant:
            return vector_.requant(c);
        case Opcode::kAdd:
            return vector_.add(c);
        default:  // control commands never get here; kInvalid is not a known opcode
            return UnitResult{};
    }
}

}  // namespace npu::sim
