// Fuzz target: a hostile or broken firmware peer (hostile_firmware.h) answers the driver: wrong
// call ids, requests instead of responses, fragments that never end, huge or lying lengths, bad
// CRCs, error frames, replies that do not parse, a DRAM fd that is too small, unsealed, a pipe or
// /dev/zero, windows that overflow. The driver (shim and RpcClient) must turn each into an error
// with a message: no crash, no hang, no unbounded allocation.
#include "fuzz_target.h"
#include "hostile_firmware.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    npu::fuzz::exerciseDriver(npu::fuzz::makeHostileFirmware(data, size));
    return 0;
}
