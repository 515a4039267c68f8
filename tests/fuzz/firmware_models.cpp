#include "firmware_models.h"

#include <cstring>

namespace npu::fuzz {
namespace {

constexpr uint32_t kInt32Tensor = 4, kUint8Tensor = 5;
constexpr uint32_t kInput = 1, kOutput = 2;
constexpr uint32_t kAdd = 0, kConv = 3;

// Stages constants at consecutive 64-byte aligned addresses from `addr`, and gives each model
// input deterministic data and each output its size.
class Stager {
public:
    Stager(FirmwareModel& m, uint8_t* dram, uint64_t addr) : m_(m) {
        m_.builder.stage = [dram, next = addr](const void* data, size_t n) mutable {
            const uint64_t at = next;
            std::memcpy(dram + at, data, n);
            next = (next + n + 63) / 64 * 64;
            return at;
        };
    }
    uint32_t tensor(uint32_t type, std::initializer_list<uint32_t> dims, float scale, int32_t zp,
                    uint32_t lifetime) {
        uint32_t bytes = 1;
        for (uint32_t v : dims) bytes *= v;
        if (lifetime == kInput) {
            const uint32_t index = m_.builder.modelInput(type, dims, scale, zp);
            std::vector<uint8_t> data(bytes);
            for (uint32_t i = 0; i < bytes; ++i) data[i] = uint8_t(i * 37 + index * 11 + 3);
            m_.inputData.push_back(std::move(data));
            return index;
        }
        m_.outputBytes.push_back(bytes);
        return m_.builder.modelOutput(type, dims, scale, zp);
    }
    uint32_t constant(uint32_t type, std::initializer_list<uint32_t> dims, float scale, int32_t zp,
                      const void* data, uint32_t n) {
        return m_.builder.constant(type, dims, scale, zp, data, n);
    }
    uint32_t i32(int32_t v) { return m_.builder.i32(v); }
    void op(uint32_t type, std::vector<uint32_t> in, std::vector<uint32_t> out) {
        m_.builder.op(type, std::move(in), std::move(out));
    }

private:
    FirmwareModel& m_;
};

}  // namespace

FirmwareModel addModel(uint8_t* dram, uint64_t constantsAddr) {
    FirmwareModel m;
    Stager s(m, dram, constantsAddr);
    const uint32_t a = s.tensor(kUint8Tensor, {1, 4}, 0.5f, 3, kInput);
    const uint32_t b = s.tensor(kUint8Tensor, {1, 4}, 0.25f, 9, kInput);
    const uint32_t act = s.i32(0);
    const uint32_t y = s.tensor(kUint8Tensor, {1, 4}, 1.0f, 2, kOutput);
    s.op(kAdd, {a, b, act}, {y});
    return m;
}

FirmwareModel convModel(uint8_t* dram, uint64_t constantsAddr) {
    FirmwareModel m;
    Stager s(m, dram, constantsAddr);
    const uint32_t x = s.tensor(kUint8Tensor, {1, 6, 5, 3}, 0.05f, 7, kInput);
    uint8_t filter[4 * 3 * 3 * 3];
    for (uint32_t i = 0; i < sizeof filter; ++i) filter[i] = uint8_t(i * 53 + 17);
    const uint32_t f = s.constant(kUint8Tensor, {4, 3, 3, 3}, 0.02f, 120, filter, sizeof filter);
    const int32_t bias[4] = {1500, -700, 20, -2000};
    const uint32_t b = s.constant(kInt32Tensor, {4}, 0.001f, 0, bias, sizeof bias);
    const uint32_t y = s.tensor(kUint8Tensor, {1, 6, 5, 4}, 0.1f, 5, kOutput);
    s.op(kConv, {x, f, b, s.i32(1), s.i32(1), s.i32(1), s.i32(1)}, {y});  // SAME, stride 1x1, RELU
    return m;
}

fw::FwStatus prepareAndRun(fw::Runtime& runtime, fw::Arena& scratch, uint8_t* dram, uint64_t ioAddr,
                           FirmwareModel& model, std::vector<std::vector<uint8_t>>* outputs) {
    const fw::ModelDesc desc = model.desc();
    fw::BlobInfo info;
    fw::FwStatus st = runtime.prepare(desc, scratch, &info, false);
    if (!st.ok()) return st;
    std::vector<fw::IoArg> in(model.inputData.size()), out(model.outputBytes.size());
    uint64_t at = ioAddr;
    for (size_t i = 0; i < in.size(); ++i) {
        std::memcpy(dram + at, model.inputData[i].data(), model.inputData[i].size());
        in[i].addr = at;
        in[i].length = uint32_t(model.inputData[i].size());
        at = (at + in[i].length + 63) / 64 * 64;
    }
    for (size_t i = 0; i < out.size(); ++i) {
        out[i].addr = at;
        out[i].length = model.outputBytes[i];
        at = (at + out[i].length + 63) / 64 * 64;
    }
    fw::ExecResult result;
    st = runtime.execute(info.handle, in.data(), uint32_t(in.size()), out.data(), uint32_t(out.size()),
                         &result);
    outputs->clear();
    for (const auto& o : out) outputs->emplace_back(dram + o.addr, dram + o.addr + o.length);
    const fw::FwStatus released = runtime.release(info.handle);
    return st.ok() ? released : st;
}

}  // namespace npu::fuzz
