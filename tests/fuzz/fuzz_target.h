#pragma once
// The contract of every fuzz target in tests/fuzz (README.md there):
// - LLVMFuzzerTestOneInput(data, size) feeds one input to the code under test. It returns 0 and
//   never crashes, hangs or aborts on any input; an invariant it checks that does not hold traps
//   (npu::fuzz::require), which libFuzzer and the regression test both report as a failure.
// - seeds() returns the valid inputs the target starts from. The regression test (GCC build,
//   every CI run) replays them and thousands of deterministic mutations of them; scripts/fuzz.sh
//   writes them as the libFuzzer corpus (NPU_FUZZ_WRITE_SEEDS=DIR) and runs the clang build.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <source_location>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace npu::fuzz {

std::vector<std::vector<uint8_t>> seeds();

// A broken invariant: say where, then stop so the fuzzer keeps the input (never an exception,
// never abort()). The location matters: an optimizer folds every trap of a function into one.
inline void require(bool condition, std::source_location where = std::source_location::current()) {
    if (condition) return;
    std::fprintf(stderr, "fuzz invariant broken at %s:%u\n", where.file_name(), unsigned(where.line()));
    __builtin_trap();
}

// Reads little-endian fields off the front of a fuzz input; past the end it yields zeros.
class InputReader {
public:
    InputReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
    bool empty() const { return pos_ >= size_; }
    size_t remaining() const { return pos_ < size_ ? size_ - pos_ : 0; }
    uint8_t u8() { return pos_ < size_ ? data_[pos_++] : 0; }
    uint16_t u16() { return uint16_t(u8() | (uint16_t(u8()) << 8)); }
    uint32_t u32() { return uint32_t(u16()) | (uint32_t(u16()) << 16); }
    // Up to n bytes (fewer at the end of the input).
    const uint8_t* bytes(size_t n, size_t* got) {
        *got = n < remaining() ? n : remaining();
        const uint8_t* p = data_ + (pos_ < size_ ? pos_ : size_);
        pos_ += *got;
        return p;
    }

private:
    const uint8_t* data_;
    size_t size_;
    size_t pos_ = 0;
};

}  // namespace npu::fuzz
