// Fuzz target: blob images (the model cache a client or an attacker may hand in) into the
// firmware's validator and loader (firmware/core/src/blob_validator.cpp, blob_store), and what
// loads, executed on the simulated NPU. Findings (traps):
//  - validateBlob and Runtime::loadBlob disagree (a blob the validator refuses is held);
//  - with kStrictCommands, a loaded blob makes the NPU fault (bad parameter, SRAM out of
//    range...): a bad command reached the hardware model (see kStrictCommands below);
//  - executing it touches the host window outside its outputs, or leaves the firmware unable to
//    run another model (a victim model, loaded first, must give the same bytes after every input);
//  - releasing it leaves a blob held.
#include <cstring>

#include "blob_loader_harness.h"
#include "blob_validator.h"
#include "fuzz_target.h"

namespace {

using namespace npu;
using namespace npu::fuzz;

constexpr uint8_t kCanary = 0xA5;
// Whether a command the NPU faults on is a finding. The validator checks the blob's structure,
// its opcodes and every DMA's DRAM extent (what keeps a blob inside its memory), not yet each
// command's SRAM / accumulator ranges and parameters: those reach the NPU, which faults, and the
// firmware resets it (docs/reliability.md, "Fuzzing"). Until it does, a fault is not a finding.
constexpr bool kStrictCommands = false;
constexpr uint32_t kMaxIoBytes = 256u << 10;

struct Io {
    std::vector<fw::IoArg> inputs, outputs;
};

// Inputs and outputs as the blob describes them, in the host window past the victim's, each
// output followed by a gap; the whole area starts as canary bytes.
Io stageIo(BlobHarness& h, const fw::BlobView& view, uint64_t* end) {
    Io io;
    uint64_t at = h.scratchWindow();
    std::memset(h.dram() + at, kCanary, BlobHarness::kScratchWindowBytes);
    const uint64_t limit = at + BlobHarness::kScratchWindowBytes;
    for (uint32_t i = 0; i < view.numInputs() + view.numOutputs(); ++i) {
        fw::IoArg a;
        const uint32_t bytes = std::min(view.io(i).bytes, kMaxIoBytes);
        if (at + bytes + 64 > limit) break;
        a.addr = at;
        a.length = bytes;
        if (i < view.numInputs()) {
            for (uint32_t k = 0; k < bytes; ++k) h.dram()[at + k] = uint8_t(k * 29 + i + 1);
            io.inputs.push_back(a);
        } else {
            io.outputs.push_back(a);
        }
        at = (at + bytes + 64 + 63) / 64 * 64;
    }
    *end = limit;
    return io;
}

// Whether the window area is unchanged outside the outputs (staged in ascending order).
bool unchangedOutsideOutputs(BlobHarness& h, const Io& io, const std::vector<uint8_t>& before, uint64_t end) {
    const uint64_t base = h.scratchWindow();
    uint64_t at = base;
    auto same = [&](uint64_t from, uint64_t to) {
        return to <= from || std::memcmp(h.dram() + from, before.data() + (from - base), to - from) == 0;
    };
    for (const auto& o : io.outputs) {
        if (!same(at, o.addr)) return false;
        at = o.addr + o.length;
    }
    return same(at, end);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    BlobHarness& h = BlobHarness::instance();
    fw::BlobView view;
    const bool valid = fw::validateBlob(data, size, h.limits(), &view).ok();
    fw::BlobInfo info;
    const fw::FwStatus loaded = h.runtime().loadBlob(data, size, &info);
    require(!loaded.ok() || valid);             // the loader validates exactly as the validator
    require(loaded.ok() || loaded.message[0]);  // a refusal says why
    if (!loaded.ok()) {
        require(h.runtime().loadedModels() == 1);
        return 0;
    }
    uint64_t end = 0;
    const Io io = stageIo(h, view, &end);
    static std::vector<uint8_t> before;  // kept: a fresh 2 MiB per input costs page faults
    before.assign(h.dram() + h.scratchWindow(), h.dram() + end);
    fw::ExecResult result;
    const fw::FwStatus ran = h.runtime().execute(info.handle, io.inputs.data(), uint32_t(io.inputs.size()),
                                                 io.outputs.data(), uint32_t(io.outputs.size()), &result);
    require(ran.ok() || ran.message[0]);
    if (kStrictCommands) require(std::strstr(ran.message, "NPU fault") == nullptr);
    require(unchangedOutsideOutputs(h, io, before, end));
    require(h.runtime().release(info.handle).ok());
    require(h.runtime().loadedModels() == 1);
    require(h.victimStillRuns());
    return 0;
}
