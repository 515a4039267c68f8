// Wire compatibility of the two code generators: every message of npu.proto, filled with
// non-default values in every field, goes libprotobuf -> bytes -> nanopb and nanopb -> bytes ->
// libprotobuf, and must come back equal. The nanopb side is walked generically with its field
// iterator and matched to libprotobuf's reflection by field number, so a field that one side
// drops or mistypes fails here.
#include <google/protobuf/util/message_differencer.h>
#include <pb_common.h>
#include <pb_decode.h>
#include <pb_encode.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "npu.npb.h"
#include "npu.pb.h"

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

namespace {

#define NANOPB(T) \
    { "npu.proto." #T, &npu_proto_##T##_msg }
const std::map<std::string, const pb_msgdesc_t*> kNanopb = {
    NANOPB(Status),
    NANOPB(ErrorReply),
    NANOPB(HelloRequest),
    NANOPB(HelloReply),
    NANOPB(PerformanceInfo),
    NANOPB(OperandPerformance),
    NANOPB(HardwareConfig),
    NANOPB(GetCapabilitiesRequest),
    NANOPB(CapabilitiesReply),
    NANOPB(Operand),
    NANOPB(Operation),
    NANOPB(Subgraph),
    NANOPB(Model),
    NANOPB(GetSupportedOperationsRequest),
    NANOPB(SupportedOperationsReply),
    NANOPB(UnsupportedOperation),
    NANOPB(PrepareModelRequest),
    NANOPB(PrepareModelReply),
    NANOPB(FetchBlobRequest),
    NANOPB(FetchBlobReply),
    NANOPB(PrepareFromCacheRequest),
    NANOPB(ReleaseModelRequest),
    NANOPB(ReleaseModelReply),
    NANOPB(Argument),
    NANOPB(ExecuteRequest),
    NANOPB(OutputShape),
    NANOPB(OperationProfile),
    NANOPB(ExecuteReply),
    NANOPB(CancelRequest),
    NANOPB(CancelReply),
    NANOPB(BufferRole),
    NANOPB(AllocateBufferRequest),
    NANOPB(AllocateBufferReply),
    NANOPB(ReleaseBufferRequest),
    NANOPB(ReleaseBufferReply),
    NANOPB(BufferCopyRequest),
    NANOPB(BufferCopyReply),
    NANOPB(PingRequest),
    NANOPB(PingReply),
    NANOPB(ResetRequest),
    NANOPB(ResetReply),
    NANOPB(InjectFaultsRequest),
    NANOPB(InjectFaultsReply),
    NANOPB(Counter),
    NANOPB(GetCountersRequest),
    NANOPB(CountersReply),
    NANOPB(WindowWriteRequest),
    NANOPB(WindowWriteReply),
    NANOPB(WindowReadRequest),
    NANOPB(WindowReadReply),
    NANOPB(DeviceEvent),
    NANOPB(MapPoolRequest),
    NANOPB(MapPoolReply),
    NANOPB(UnmapPoolRequest),
    NANOPB(UnmapPoolReply),
    NANOPB(ProgressEvent),
    NANOPB(OpenBurstChannelRequest),
    NANOPB(OpenBurstChannelReply),
};
#undef NANOPB

// Room for the largest nanopb struct (ExecuteReply/ExecuteRequest are ~10-20 KiB).
constexpr size_t kStructBytes = 128 * 1024;
static_assert(sizeof(npu_proto_ExecuteReply) < kStructBytes &&
              sizeof(npu_proto_ExecuteRequest) < kStructBytes);

struct StructBuffer {
    std::vector<std::max_align_t> storage =
        std::vector<std::max_align_t>(kStructBytes / sizeof(std::max_align_t));
    void* data() { return storage.data(); }
};

// ---- filling every field with a distinct non-default value -----------------------------------
void fill(Message* m, uint32_t& seed) {
    const auto* d = m->GetDescriptor();
    const Reflection* r = m->GetReflection();
    for (int i = 0; i < d->field_count(); ++i) {
        const FieldDescriptor* f = d->field(i);
        const int n = f->is_repeated() ? 3 : 1;
        for (int k = 0; k < n; ++k) {
            const uint32_t v = ++seed;
            switch (f->cpp_type()) {
                case FieldDescriptor::CPPTYPE_UINT32:
                    f->is_repeated() ? r->AddUInt32(m, f, 1000 + v) : r->SetUInt32(m, f, 1000 + v);
                    break;
                case FieldDescriptor::CPPTYPE_UINT64: {
                    uint64_t x = 0x100000000ull * v + 7;  // needs more than 32 bits
                    f->is_repeated() ? r->AddUInt64(m, f, x) : r->SetUInt64(m, f, x);
                    break;
                }
                case FieldDescriptor::CPPTYPE_INT32:
                    f->is_repeated() ? r->AddInt32(m, f, -int32_t(v)) : r->SetInt32(m, f, -int32_t(v));
                    break;
                case FieldDescriptor::CPPTYPE_FLOAT:
                    f->is_repeated() ? r->AddFloat(m, f, 0.25f * float(v) + 0.5f)
                                     : r->SetFloat(m, f, 0.25f * float(v) + 0.5f);
                    break;
                case FieldDescriptor::CPPTYPE_BOOL:
                    // Alternate in lists so that order matters; singular bools must be true.
                    f->is_repeated() ? r->AddBool(m, f, k != 1) : r->SetBool(m, f, true);
                    break;
                case FieldDescriptor::CPPTYPE_STRING: {
                    std::string s = f->name() + "-" + std::to_string(v);
                    f->is_repeated() ? r->AddString(m, f, s) : r->SetString(m, f, s);
                    break;
                }
                case FieldDescriptor::CPPTYPE_MESSAGE:
                    fill(f->is_repeated() ? r->AddMessage(m, f) : r->MutableMessage(m, f), seed);
                    break;
                default:
                    FAIL("npu.proto uses a field type this test does not know: " << f->full_name());
            }
        }
    }
}

// ---- nanopb struct -> libprotobuf message (static fields) -------------------------------------
void attachDecodeCallbacks(const pb_msgdesc_t* desc, void* s, Message* m);
void fromNanopb(const pb_msgdesc_t* desc, const void* s, Message* m);

void setFromNanopb(Message* m, const FieldDescriptor* f, const pb_field_iter_t& it, const void* p) {
    const Reflection* r = m->GetReflection();
    const bool rep = f->is_repeated();
    switch (f->cpp_type()) {
        case FieldDescriptor::CPPTYPE_UINT32: {
            uint32_t v = *static_cast<const uint32_t*>(p);
            rep ? r->AddUInt32(m, f, v) : r->SetUInt32(m, f, v);
            break;
        }
        case FieldDescriptor::CPPTYPE_UINT64: {
            uint64_t v = *static_cast<const uint64_t*>(p);
            rep ? r->AddUInt64(m, f, v) : r->SetUInt64(m, f, v);
            break;
        }
        case FieldDescriptor::CPPTYPE_INT32: {
            int32_t v = *static_cast<const int32_t*>(p);
            rep ? r->AddInt32(m, f, v) : r->SetInt32(m, f, v);
            break;
        }
        case FieldDescriptor::CPPTYPE_FLOAT: {
            float v = *static_cast<const float*>(p);
            rep ? r->AddFloat(m, f, v) : r->SetFloat(m, f, v);
            break;
        }
        case FieldDescriptor::CPPTYPE_BOOL: {
            bool v = *static_cast<const bool*>(p);
            rep ? r->AddBool(m, f, v) : r->SetBool(m, f, v);
            break;
        }
        case FieldDescriptor::CPPTYPE_STRING: {
            std::string v(static_cast<const char*>(p), strnlen(static_cast<const char*>(p), it.data_size));
            rep ? r->AddString(m, f, v) : r->SetString(m, f, v);
            break;
        }
        case FieldDescriptor::CPPTYPE_MESSAGE:
            fromNanopb(it.submsg_desc, p, rep ? r->AddMessage(m, f) : r->MutableMessage(m, f));
            break;
        default:
            FAIL("unhandled type " << f->full_name());
    }
}

void fromNanopb(const pb_msgdesc_t* desc, const void* s, Message* m) {
    pb_field_iter_t it;
    if (!pb_field_iter_begin_const(&it, desc, s)) return;
    do {
        const FieldDescriptor* f = m->GetDescriptor()->FindFieldByNumber(it.tag);
        REQUIRE(f != nullptr);
        if (PB_ATYPE(it.type) == PB_ATYPE_CALLBACK) continue;  // filled by the decode callbacks
        if (PB_HTYPE(it.type) == PB_HTYPE_REPEATED) {
            const pb_size_t count = *static_cast<const pb_size_t*>(it.pSize);
            for (pb_size_t i = 0; i < count; ++i) {
                setFromNanopb(m, f, it, static_cast<const char*>(it.pData) + size_t(i) * it.data_size);
            }
        } else if (it.pSize != nullptr && PB_HTYPE(it.type) == PB_HTYPE_OPTIONAL) {
            if (*static_cast<const bool*>(it.pSize)) setFromNanopb(m, f, it, it.pData);
        } else {
            setFromNanopb(m, f, it, it.pData);
        }
    } while (pb_field_iter_next(&it));
}

// Decodes one element of a callback field into the libprotobuf message bound to it.
bool decodeCallback(pb_istream_t* stream, const pb_field_t* field, void** arg) {
    Message* m = static_cast<Message*>(*arg);
    const FieldDescriptor* f = m->GetDescriptor()->FindFieldByNumber(field->tag);
    const Reflection* r = m->GetReflection();
    if (f != nullptr && !f->is_repeated() && f->type() == FieldDescriptor::TYPE_BYTES) {
        std::string bytes(stream->bytes_left, '\0');  // a singular bytes callback (WINDOW_WRITE data)
        if (!pb_read(stream, reinterpret_cast<pb_byte_t*>(bytes.data()), bytes.size())) return false;
        r->SetString(m, f, bytes);
        return true;
    }
    if (f == nullptr || !f->is_repeated()) return false;
    switch (f->cpp_type()) {
        case FieldDescriptor::CPPTYPE_UINT32: {
            uint32_t v;
            if (!pb_decode_varint32(stream, &v)) return false;
            r->AddUInt32(m, f, v);
            return true;
        }
        case FieldDescriptor::CPPTYPE_FLOAT: {
            float v;
            if (!pb_decode_fixed32(stream, &v)) return false;
            r->AddFloat(m, f, v);
            return true;
        }
        case FieldDescriptor::CPPTYPE_BOOL: {
            bool v;
            if (!pb_decode_bool(stream, &v)) return false;
            r->AddBool(m, f, v);
            return true;
        }
        case FieldDescriptor::CPPTYPE_MESSAGE: {
            Message* child = r->AddMessage(m, f);
            StructBuffer buf;
            attachDecodeCallbacks(field->submsg_desc, buf.data(), child);
            if (!pb_decode(stream, field->submsg_desc, buf.data())) return false;
            fromNanopb(field->submsg_desc, buf.data(), child);
            return true;
        }
        default:
            return false;
    }
}

// Binds every callback field (also inside static submessages) to the libprotobuf message.
void attachDecodeCallbacks(const pb_msgdesc_t* desc, void* s, Message* m) {
    pb_field_iter_t it;
    if (!pb_field_iter_begin(&it, desc, s)) return;
    do {
        const FieldDescriptor* f = m->GetDescriptor()->FindFieldByNumber(it.tag);
        if (PB_ATYPE(it.type) == PB_ATYPE_CALLBACK) {
            auto* cb = static_cast<pb_callback_t*>(it.pData);
            cb->funcs.decode = decodeCallback;
            cb->arg = m;
        } else if (PB_LTYPE_IS_SUBMSG(it.type) && PB_HTYPE(it.type) != PB_HTYPE_REPEATED) {
            attachDecodeCallbacks(it.submsg_desc, it.pData, m->GetReflection()->MutableMessage(m, f));
        }
    } while (pb_field_iter_next(&it));
}

// ---- libprotobuf message -> nanopb struct ------------------------------------------------------
void toNanopb(const Message& m, const pb_msgdesc_t* desc, void* s);

struct EncodeArg {
    const Message* message;
};
std::deque<EncodeArg> encodeArgs;  // stable addresses for callback args during one encode

bool encodeCallback(pb_ostream_t* stream, const pb_field_t* field, void* const* arg) {
    const Message& m = *static_cast<const EncodeArg*>(*arg)->message;
    const FieldDescriptor* f = m.GetDescriptor()->FindFieldByNumber(field->tag);
    const Reflection* r = m.GetReflection();
    if (f != nullptr && !f->is_repeated() && f->type() == FieldDescriptor::TYPE_BYTES) {
        if (!r->HasField(m, f)) return true;
        const std::string bytes = r->GetString(m, f);
        return pb_encode_tag_for_field(stream, field) &&
               pb_encode_string(stream, reinterpret_cast<const pb_byte_t*>(bytes.data()), bytes.size());
    }
    if (f == nullptr || !f->is_repeated()) return false;
    for (int i = 0; i < r->FieldSize(m, f); ++i) {
        if (!pb_encode_tag_for_field(stream, field)) return false;
        bool ok = false;
        switch (f->cpp_type()) {
            case FieldDescriptor::CPPTYPE_UINT32:
                ok = pb_encode_varint(stream, r->GetRepeatedUInt32(m, f, i));
                break;
            case FieldDescriptor::CPPTYPE_BOOL:
                ok = pb_encode_varint(stream, r->GetRepeatedBool(m, f, i));
                break;
            case FieldDescriptor::CPPTYPE_FLOAT: {
                float v = r->GetRepeatedFloat(m, f, i);
                ok = pb_encode_fixed32(stream, &v);
                break;
            }
            case FieldDescriptor::CPPTYPE_MESSAGE: {
                StructBuffer buf;
                toNanopb(r->GetRepeatedMessage(m, f, i), field->submsg_desc, buf.data());
                ok = pb_encode_submessage(stream, field->submsg_desc, buf.data());
                break;
            }
            default:
                ok = false;
        }
        if (!ok) return false;
    }
    return true;
}

void setNanopb(const Message& m, const FieldDescriptor* f, int index, const pb_field_iter_t& it, void* p) {
    const Reflection* r = m.GetReflection();
    const bool rep = f->is_repeated();
    switch (f->cpp_type()) {
        case FieldDescriptor::CPPTYPE_UINT32:
            *static_cast<uint32_t*>(p) = rep ? r->GetRepeatedUInt32(m, f, index) : r->GetUInt32(m, f);
            break;
        case FieldDescriptor::CPPTYPE_UINT64:
            *static_cast<uint64_t*>(p) = rep ? r->GetRepeatedUInt64(m, f, index) : r->GetUInt64(m, f);
            break;
        case FieldDescriptor::CPPTYPE_INT32:
            *static_cast<int32_t*>(p) = rep ? r->GetRepeatedInt32(m, f, index) : r->GetInt32(m, f);
            break;
        case FieldDescriptor::CPPTYPE_FLOAT:
            *static_cast<float*>(p) = rep ? r->GetRepeatedFloat(m, f, index) : r->GetFloat(m, f);
            break;
        case FieldDescriptor::CPPTYPE_BOOL:
            *static_cast<bool*>(p) = rep ? r->GetRepeatedBool(m, f, index) : r->GetBool(m, f);
            break;
        case FieldDescriptor::CPPTYPE_STRING: {
            std::string v = rep ? r->GetRepeatedString(m, f, index) : r->GetString(m, f);
            REQUIRE(v.size() < it.data_size);  // npu.options max_size
            std::memcpy(p, v.c_str(), v.size() + 1);
            break;
        }
        case FieldDescriptor::CPPTYPE_MESSAGE:
            toNanopb(rep ? r->GetRepeatedMessage(m, f, index) : r->GetMessage(m, f), it.submsg_desc, p);
            break;
        default:
            FAIL("unhandled type " << f->full_name());
    }
}

void toNanopb(const Message& m, const pb_msgdesc_t* desc, void* s) {
    pb_field_iter_t it;
    if (!pb_field_iter_begin(&it, desc, s)) return;
    const Reflection* r = m.GetReflection();
    do {
        const FieldDescriptor* f = m.GetDescriptor()->FindFieldByNumber(it.tag);
        REQUIRE(f != nullptr);
        if (PB_ATYPE(it.type) == PB_ATYPE_CALLBACK) {
            encodeArgs.push_back({&m});
            auto* cb = static_cast<pb_callback_t*>(it.pData);
            cb->funcs.encode = encodeCallback;
            cb->arg = &encodeArgs.back();
        } else if (PB_HTYPE(it.type) == PB_HTYPE_REPEATED) {
            const int n = r->FieldSize(m, f);
            REQUIRE(size_t(n) <= it.array_size);  // npu.options max_count
            *static_cast<pb_size_t*>(it.pSize) = static_cast<pb_size_t>(n);
            for (int i = 0; i < n; ++i)
                setNanopb(m, f, i, it, static_cast<char*>(it.pData) + size_t(i) * it.data_size);
        } else if (it.pSize != nullptr && PB_HTYPE(it.type) == PB_HTYPE_OPTIONAL) {
            *static_cast<bool*>(it.pSize) = r->HasField(m, f);
            if (r->HasField(m, f)) setNanopb(m, f, 0, it, it.pData);
        } else {
            setNanopb(m, f, 0, it, it.pData);
        }
    } while (pb_field_iter_next(&it));
}

size_t nanopbFieldCount(const pb_msgdesc_t* desc) {
    StructBuffer buf;
    pb_field_iter_t it;
    size_t n = 0;
    if (!pb_field_iter_begin(&it, desc, buf.data())) return 0;
    do ++n;
    while (pb_field_iter_next(&it));
    return n;
}

}  // namespace

TEST_CASE("every message of npu.proto has a nanopb descriptor with the same fields") {
    const auto* file = npu::proto::Status::descriptor()->file();
    REQUIRE(size_t(file->message_type_count()) == kNanopb.size());
    for (int i = 0; i < file->message_type_count(); ++i) {
        const auto* d = file->message_type(i);
        INFO(d->full_name());
        auto it = kNanopb.find(d->full_name());
        REQUIRE(it != kNanopb.end());
        CHECK(nanopbFieldCount(it->second) == size_t(d->field_count()));
    }
}

TEST_CASE("every message round-trips libprotobuf <-> nanopb in both directions") {
    const auto* file = npu::proto::Status::descriptor()->file();
    google::protobuf::MessageFactory* factory = google::protobuf::MessageFactory::generated_factory();
    for (int i = 0; i < file->message_type_count(); ++i) {
        const auto* d = file->message_type(i);
        const pb_msgdesc_t* desc = kNanopb.at(d->full_name());
        INFO(d->full_name());
        std::unique_ptr<Message> original(factory->GetPrototype(d)->New());
        uint32_t seed = 0;
        fill(original.get(), seed);
        std::string diff;
        google::protobuf::util::MessageDifferencer differ;
        differ.ReportDifferencesToString(&diff);

        // libprotobuf encode -> nanopb decode -> compare
        {
            std::string bytes = original->SerializeAsString();
            std::unique_ptr<Message> decoded(original->New());
            StructBuffer buf;
            attachDecodeCallbacks(desc, buf.data(), decoded.get());
            pb_istream_t in =
                pb_istream_from_buffer(reinterpret_cast<const pb_byte_t*>(bytes.data()), bytes.size());
            INFO("nanopb decode: " << (pb_decode(&in, desc, buf.data()) ? "ok" : PB_GET_ERROR(&in)));
            REQUIRE(in.bytes_left == 0);
            fromNanopb(desc, buf.data(), decoded.get());
            diff.clear();
            CHECK(differ.Compare(*original, *decoded));
            INFO(diff);
            CHECK(diff.empty());
        }
        // nanopb encode -> libprotobuf decode -> compare
        {
            StructBuffer buf;
            encodeArgs.clear();
            toNanopb(*original, desc, buf.data());
            std::vector<pb_byte_t> bytes(1 << 20);
            pb_ostream_t out = pb_ostream_from_buffer(bytes.data(), bytes.size());
            bool encoded = pb_encode(&out, desc, buf.data());
            INFO("nanopb encode: " << (encoded ? "ok" : PB_GET_ERROR(&out)));
            REQUIRE(encoded);
            std::unique_ptr<Message> decoded(original->New());
            REQUIRE(decoded->ParseFromArray(bytes.data(), int(out.bytes_written)));
            diff.clear();
            CHECK(differ.Compare(*original, *decoded));
            INFO(diff);
            CHECK(diff.empty());
        }
    }
}

TEST_CASE("a model with several operands and operations survives both codecs") {
    npu::proto::PrepareModelRequest request;
    uint32_t seed = 0;
    fill(&request, seed);
    REQUIRE(request.model().main().operands_size() == 3);
    REQUIRE(request.model().main().operations_size() == 3);
    REQUIRE(request.model().referenced_size() == 3);
    REQUIRE(request.model().main().operands(1).channel_scales_size() == 3);

    std::string bytes = request.SerializeAsString();
    npu::proto::PrepareModelRequest back;
    StructBuffer buf;
    attachDecodeCallbacks(&npu_proto_PrepareModelRequest_msg, buf.data(), &back);
    pb_istream_t in = pb_istream_from_buffer(reinterpret_cast<const pb_byte_t*>(bytes.data()), bytes.size());
    REQUIRE(pb_decode(&in, &npu_proto_PrepareModelRequest_msg, buf.data()));
    fromNanopb(&npu_proto_PrepareModelRequest_msg, buf.data(), &back);
    REQUIRE(back.model().main().operations(2).inputs(1) == request.model().main().operations(2).inputs(1));
    REQUIRE(back.model().main().operands(2).zero_point() == request.model().main().operands(2).zero_point());
    REQUIRE(back.model().main().operands(2).zero_point() < 0);
}

TEST_CASE("nanopb refuses values beyond npu.options bounds instead of overflowing") {
    npu::proto::Argument arg;
    for (int i = 0; i < 7; ++i) arg.add_dimensions(uint32_t(i + 1));  // rank 7 > kMaxRank
    std::string bytes = arg.SerializeAsString();
    npu_proto_Argument wire = npu_proto_Argument_init_zero;
    pb_istream_t in = pb_istream_from_buffer(reinterpret_cast<const pb_byte_t*>(bytes.data()), bytes.size());
    REQUIRE_FALSE(pb_decode(&in, npu_proto_Argument_fields, &wire));
    REQUIRE(std::string(PB_GET_ERROR(&in)) == "array overflow");

    npu::proto::Status status;
    status.set_message(std::string(500, 'm'));  // > max_size 192
    bytes = status.SerializeAsString();
    npu_proto_Status ws = npu_proto_Status_init_zero;
    in = pb_istream_from_buffer(reinterpret_cast<const pb_byte_t*>(bytes.data()), bytes.size());
    REQUIRE_FALSE(pb_decode(&in, npu_proto_Status_fields, &ws));
}

TEST_CASE("CONSTANT_COPY values (Operand.value, any bytes) survive both codecs", "[protocol]") {
    npu::proto::PrepareModelRequest request;
    auto* g = request.mutable_model()->mutable_main();
    std::string all(256, '\0');
    for (int i = 0; i < 256; ++i) all[size_t(i)] = char(i);  // NULs and high bytes included
    for (const std::string& v : {std::string(4, '\0'), all, std::string("\x80\x01", 2)}) {
        auto* o = g->add_operands();
        o->set_type(5);
        o->add_dimensions(uint32_t(v.size()));
        o->set_lifetime(3);
        o->set_value(v);
    }
    g->add_operands()->set_data_addr(0x8000000);  // one without a value in between
    g->mutable_operands(3)->set_data_length(4);
    g->add_operands()->set_value("z");
    google::protobuf::util::MessageDifferencer differ;
    std::string diff;
    differ.ReportDifferencesToString(&diff);

    // libprotobuf -> nanopb
    const std::string bytes = request.SerializeAsString();
    npu::proto::PrepareModelRequest back;
    {
        StructBuffer buf;
        attachDecodeCallbacks(&npu_proto_PrepareModelRequest_msg, buf.data(), &back);
        pb_istream_t in =
            pb_istream_from_buffer(reinterpret_cast<const pb_byte_t*>(bytes.data()), bytes.size());
        REQUIRE(pb_decode(&in, &npu_proto_PrepareModelRequest_msg, buf.data()));
        fromNanopb(&npu_proto_PrepareModelRequest_msg, buf.data(), &back);
    }
    CHECK(differ.Compare(request, back));
    INFO(diff);
    CHECK(back.model().main().operands(1).value() == all);
    CHECK(back.model().main().operands(3).value().empty());

    // nanopb -> libprotobuf
    StructBuffer buf;
    encodeArgs.clear();
    toNanopb(request, &npu_proto_PrepareModelRequest_msg, buf.data());
    std::vector<pb_byte_t> out(1 << 16);
    pb_ostream_t os = pb_ostream_from_buffer(out.data(), out.size());
    REQUIRE(pb_encode(&os, &npu_proto_PrepareModelRequest_msg, buf.data()));
    npu::proto::PrepareModelRequest parsed;
    REQUIRE(parsed.ParseFromArray(out.data(), int(os.bytes_written)));
    diff.clear();
    CHECK(differ.Compare(request, parsed));
    INFO(diff);
}
