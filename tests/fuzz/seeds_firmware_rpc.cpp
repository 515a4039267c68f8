// Seeds of fuzz_firmware_rpc: scripts a host would send — the handshake, queries, a CONV_2D and
// an ADD compiled, executed, fetched as blobs, reloaded from those blobs and executed again,
// fragmented requests, cancel, reset, and bad frames. Built with libprotobuf (the host codec).
#include <cstring>
#include <functional>
#include <utility>

#include "firmware_session.h"
#include "fuzz_target.h"
#include "npu.pb.h"

namespace npu::fuzz {
namespace {

constexpr uint64_t kWindow = kSessionFirmwareBytes;

void frame(std::vector<uint8_t>& s, proto::Method method, const google::protobuf::Message& m,
           uint16_t flags = 0) {
    appendRecord(s, kRecordFrame, static_cast<uint8_t>(method), flags, m.SerializeAsString());
}

void windowWrite(std::vector<uint8_t>& s, uint32_t offset, const void* data, size_t n) {
    std::string bytes(4 + n, '\0');
    bytes[0] = char(offset);
    bytes[1] = char(offset >> 8);
    bytes[2] = char(offset >> 16);
    bytes[3] = char(offset >> 24);
    std::memcpy(bytes.data() + 4, data, n);
    appendRecord(s, kRecordWindowWrite, 0, 0, bytes);
}

proto::Operand* operand(proto::Subgraph* g, uint32_t type, std::initializer_list<uint32_t> dims, float scale,
                        int zp, uint32_t lifetime) {
    proto::Operand* o = g->add_operands();
    o->set_type(type);
    for (uint32_t d : dims) o->add_dimensions(d);
    o->set_scale(scale);
    o->set_zero_point(zp);
    o->set_lifetime(lifetime);
    return o;
}

// Where a seed model's constants go: staged in the window (their addresses sent), or inside the
// message (Operand.value, CONSTANT_COPY: how the host sends values of at most 128 bytes).
enum class Constants { kStaged, kInside };

// A constant staged at window offset `at`, or inside the message.
void constant(std::vector<uint8_t>& s, proto::Operand* o, uint32_t at, const void* data, size_t n,
              Constants where = Constants::kStaged) {
    if (where == Constants::kInside) {
        o->set_lifetime(3);
        o->set_value(data, n);
        return;
    }
    windowWrite(s, at, data, n);
    o->set_data_addr(kWindow + at);
    o->set_data_length(static_cast<uint32_t>(n));
}

// CONV_2D 1x4x4x2 (uint8 or int8) -> 1x3x3x3, 2x2 filter, VALID, RELU; constants at 0..255.
proto::Model convModel(std::vector<uint8_t>& s, bool int8, Constants where = Constants::kStaged) {
    const uint32_t t = int8 ? 14 : 5;
    const int zp = int8 ? -128 : 0;
    proto::Model m;
    proto::Subgraph* g = m.mutable_main();
    operand(g, t, {1, 4, 4, 2}, 0.5f, zp + 3, 1);
    uint8_t filter[24];
    for (int i = 0; i < 24; ++i) filter[i] = uint8_t(i * 7 + 1);
    constant(s, operand(g, t, {3, 2, 2, 2}, 0.25f, zp + 5, 4), 0, filter, sizeof filter, where);
    const int32_t bias[3] = {100, -50, 7};
    constant(s, operand(g, 4, {3}, 0.125f, 0, 4), 64, bias, sizeof bias, where);
    const int32_t scalars[4] = {2, 1, 1, 1};  // VALID, stride 1, 1, RELU
    for (int i = 0; i < 4; ++i) constant(s, operand(g, 1, {}, 0, 0, 3), 128 + 4 * i, &scalars[i], 4, where);
    operand(g, t, {1, 3, 3, 3}, 2.0f, zp + 10, 2);
    proto::Operation* op = g->add_operations();
    op->set_type(3);
    for (uint32_t i = 0; i < 7; ++i) op->add_inputs(i);
    op->add_outputs(7);
    g->add_input_indexes(0);
    g->add_output_indexes(7);
    return m;
}

// ADD of two 2x3 uint8 inputs with broadcasting of a 1x3 constant; constants at 256..
proto::Model addModel(std::vector<uint8_t>& s, Constants where = Constants::kStaged) {
    proto::Model m;
    proto::Subgraph* g = m.mutable_main();
    operand(g, 5, {2, 3}, 0.1f, 4, 1);
    const uint8_t b[3] = {9, 200, 30};
    constant(s, operand(g, 5, {1, 3}, 0.2f, 1, 4), 256, b, 3, where);
    const int32_t act = 0;
    constant(s, operand(g, 1, {}, 0, 0, 3), 320, &act, 4, where);
    operand(g, 5, {2, 3}, 0.3f, 2, 2);
    proto::Operation* op = g->add_operations();
    op->set_type(0);
    op->add_inputs(0);
    op->add_inputs(1);
    op->add_inputs(2);
    op->add_outputs(3);
    g->add_input_indexes(0);
    g->add_output_indexes(3);
    return m;
}

void hello(std::vector<uint8_t>& s) {
    proto::HelloRequest h;
    h.set_major(1);
    h.set_host_version("fuzz seed");
    frame(s, proto::METHOD_HELLO, h);
}

void prepare(std::vector<uint8_t>& s, const proto::Model& m) {
    proto::PrepareModelRequest r;
    *r.mutable_model() = m;
    frame(s, proto::METHOD_PREPARE_MODEL, r);
}

// Executes `handle` with an input of `inBytes` at window 4096 and an output at 8192.
void execute(std::vector<uint8_t>& s, uint32_t handle, uint32_t inBytes, uint32_t outBytes) {
    std::vector<uint8_t> input(inBytes);
    for (uint32_t i = 0; i < inBytes; ++i) input[i] = uint8_t(i * 13 + 2);
    windowWrite(s, 4096, input.data(), input.size());
    proto::ExecuteRequest e;
    e.set_model_handle(handle);
    e.set_measure_timing(true);
    proto::Argument* in = e.add_inputs();
    in->set_addr(kWindow + 4096);
    in->set_length(inBytes);
    proto::Argument* out = e.add_outputs();
    out->set_addr(kWindow + 8192);
    out->set_length(outBytes);
    frame(s, proto::METHOD_EXECUTE, e);
}

// The operand of addModel to change and how, for each way a hostile client may send a value:
// a length against the type and dimensions, a value for an input, both a value and an address,
// a value over the limit. firmware_session_test checks that these four are refused, naming the
// operand.
std::vector<std::pair<int, std::function<void(proto::Operand*)>>> hostileValues() {
    return {
        {1, [](proto::Operand* o) { o->set_value("abcdefg"); }},
        {0, [](proto::Operand* o) { o->set_value(std::string(12, 'i')); }},
        {2,
         [](proto::Operand* o) {
             o->set_data_addr(kWindow + 320);
             o->set_data_length(4);
         }},
        {1,
         [](proto::Operand* o) {
             o->set_dimensions(1, 300);
             o->set_value(std::string(300, 'o'));
         }},
    };
}

// The handle the last PrepareModel / PrepareFromCache of `script` returns: handles depend on
// the blob store's history (autotuning trials use slots too), so the seeds ask the firmware.
uint32_t lastHandle(const std::vector<uint8_t>& script) {
    uint32_t handle = 0;
    runFirmwareSession(script.data(), script.size(), [&](const SessionReply& r) {
        proto::PrepareModelReply reply;
        if ((r.method == proto::METHOD_PREPARE_MODEL || r.method == proto::METHOD_PREPARE_FROM_CACHE) &&
            reply.ParseFromString(r.payload)) {
            handle = reply.model_handle();
        }
    });
    return handle;
}

}  // namespace

std::vector<std::vector<uint8_t>> seeds() {
    std::vector<std::vector<uint8_t>> all;
    {  // handshake and queries
        std::vector<uint8_t> s;
        hello(s);
        frame(s, proto::METHOD_GET_CAPABILITIES, proto::GetCapabilitiesRequest());
        proto::PingRequest p;
        p.set_nonce(42);
        frame(s, proto::METHOD_PING, p);
        frame(s, proto::METHOD_GET_COUNTERS, proto::GetCountersRequest());
        proto::GetSupportedOperationsRequest q;
        *q.mutable_model() = convModel(s, false);
        frame(s, proto::METHOD_GET_SUPPORTED_OPERATIONS, q);
        all.push_back(s);
    }
    for (bool int8 : {false, true}) {  // compile, run, fetch the blob, reload it, run, release
        std::vector<uint8_t> s;
        hello(s);
        prepare(s, convModel(s, int8));
        const uint32_t handle = lastHandle(s);
        execute(s, handle, 32, 27);
        proto::FetchBlobRequest f;
        f.set_model_handle(handle);
        f.set_model_blob_addr(kWindow + (1u << 16));
        f.set_model_blob_capacity(1u << 16);
        f.set_data_blob_addr(kWindow + (2u << 16));
        f.set_data_blob_capacity(1u << 16);
        frame(s, proto::METHOD_FETCH_BLOB, f);
        // The blob's sizes are what this firmware produced: run the script to learn them, then
        // load the fetched blob back (a second handle) and execute it.
        proto::FetchBlobReply fetched;
        runFirmwareSession(s.data(), s.size(), [&](const SessionReply& r) {
            if (r.method == proto::METHOD_FETCH_BLOB) fetched.ParseFromString(r.payload);
        });
        proto::PrepareFromCacheRequest c;
        c.set_model_blob_addr(f.model_blob_addr());
        c.set_model_blob_bytes(fetched.model_blob_bytes());
        c.set_data_blob_addr(f.data_blob_addr());
        c.set_data_blob_bytes(fetched.data_blob_bytes());
        frame(s, proto::METHOD_PREPARE_FROM_CACHE, c);
        execute(s, lastHandle(s), 32, 27);
        all.push_back(s);
    }
    {  // ADD, release, a second prepare reusing the slot
        std::vector<uint8_t> s;
        hello(s);
        proto::Model m = addModel(s);
        prepare(s, m);
        const uint32_t handle = lastHandle(s);
        execute(s, handle, 6, 6);
        proto::ReleaseModelRequest r;
        r.set_model_handle(handle);
        frame(s, proto::METHOD_RELEASE_MODEL, r);
        prepare(s, m);
        all.push_back(s);
    }
    {  // constants inside the message: CONV_2D and ADD compiled and executed without window writes
        std::vector<uint8_t> s;
        hello(s);
        proto::GetSupportedOperationsRequest q;
        *q.mutable_model() = convModel(s, true, Constants::kInside);
        frame(s, proto::METHOD_GET_SUPPORTED_OPERATIONS, q);
        prepare(s, convModel(s, true, Constants::kInside));
        execute(s, lastHandle(s), 32, 27);
        prepare(s, addModel(s, Constants::kInside));
        execute(s, lastHandle(s), 6, 6);
        all.push_back(s);
    }
    {  // hostile values inside the message, each refused (INVALID_ARGUMENT), then a good model runs
        std::vector<uint8_t> s;
        hello(s);
        const proto::Model good = addModel(s, Constants::kInside);
        for (const auto& [index, mutate] : hostileValues()) {
            proto::Model m = good;
            mutate(m.mutable_main()->mutable_operands(index));
            prepare(s, m);
        }
        prepare(s, good);
        execute(s, lastHandle(s), 6, 6);
        all.push_back(s);
    }
    {  // a request in three MORE fragments, a cancel, a reset, an unknown method, bad framing
        std::vector<uint8_t> s;
        proto::PrepareModelRequest r;
        *r.mutable_model() = convModel(s, false);
        const std::string bytes = r.SerializeAsString();
        const size_t third = bytes.size() / 3;
        appendRecord(s, kRecordFrame, proto::METHOD_PREPARE_MODEL, 4, bytes.substr(0, third));
        appendRecord(s, kRecordFrame, proto::METHOD_PREPARE_MODEL, 4, bytes.substr(third, third));
        appendRecord(s, kRecordFrame, proto::METHOD_PREPARE_MODEL, 0, bytes.substr(2 * third));
        proto::CancelRequest c;
        c.set_target_call_id(1);
        frame(s, proto::METHOD_CANCEL, c);
        frame(s, proto::METHOD_RESET, proto::ResetRequest());
        appendRecord(s, kRecordFrame, 77, 0, "\x08\x01");
        appendRecord(s, kRecordRaw, 0, 0, std::string("NPU1garbage\x4e\x50\x55\x31", 15));
        appendRecord(s, kRecordDisconnect, 0, 0, "");
        hello(s);
        all.push_back(s);
    }
    return all;
}

}  // namespace npu::fuzz
