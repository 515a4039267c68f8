// Fuzz target: the firmware's RPC surface — frames, fragment reassembly, the bounded queue,
// nanopb decoding of every request, the model decoder, the compiler, the blob store and cache
// loading, and execution on the simulated NPU — driven as a host would (firmware_session.h).
#include "firmware_session.h"
#include "fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    npu::fuzz::runFirmwareSession(data, size);
    return 0;
}
