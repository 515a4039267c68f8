// Every execution mode, QoS and memory domains on the CPU reference device: the same suite the
// NPU runs (tests/unit/hal/execution_suite.h).
#include <catch2/catch.hpp>

#include "../hal/execution_suite.h"
#include "npu/ref/reference_device.h"

using namespace npu;
using namespace npu::hal::test;

TEST_CASE("reference: asynchronous execution reports through its callback", "[reference][execution]") {
    ref::ReferenceDevice device;
    checkAsyncExecution(device);
}

TEST_CASE("reference: fenced execution", "[reference][execution]") {
    ref::ReferenceDevice device;
    checkFencedExecution(device);
}

TEST_CASE("reference: burst tokens, bad tokens and double release", "[reference][execution]") {
    ref::ReferenceDevice device;
    checkBurst(device);
}

TEST_CASE("reference: reusable execution", "[reference][execution]") {
    ref::ReferenceDevice device;
    checkReusableExecution(device);
}

TEST_CASE("reference: QualityOfService deadlines NOW, UNLIMITED, SHORT on prepare and execute",
          "[reference][execution]") {
    ref::ReferenceDevice device;
    checkQualityOfService(device);
}

TEST_CASE("reference: OUTPUT_INSUFFICIENT_SIZE shapes and timing", "[reference][execution]") {
    ref::ReferenceDevice device;
    checkShapesAndTiming(device);
}

TEST_CASE("reference: MemoryDomain allocation validation", "[reference][memory-domain]") {
    ref::ReferenceDevice device, other;
    checkAllocateValidation(device, other);
}

TEST_CASE("reference: MemoryDomain copies with shared memory and mappable files",
          "[reference][memory-domain]") {
    ref::ReferenceDevice device;
    checkBufferCopies(device);
}

TEST_CASE("reference: MemoryDomain execution with device memory", "[reference][memory-domain]") {
    ref::ReferenceDevice device, other;
    checkExecutionWithDeviceMemory(device, other);
}

TEST_CASE("reference: MemoryDomain concurrent reads and writes", "[reference][memory-domain]") {
    ref::ReferenceDevice device;
    checkConcurrentBufferAccess(device);
}

TEST_CASE("reference: MemoryDomain dynamic shapes", "[reference][memory-domain]") {
    ref::ReferenceDevice device;
    checkDynamicBuffer(device);
}
