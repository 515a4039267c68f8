// Host tensors: .pb (onnx.TensorProto) and .npy files, type names, the backend-test comparison.
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "npu/framework/onnx_import.h"
#include "onnx_builder.h"

namespace npu::framework {

Result<std::string> onnx_import::readFileBytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return invalidArgument(path + ": cannot open");
    std::ostringstream buffer;
    buffer << in.rdbuf();
    if (!in.good() && !in.eof()) return invalidArgument(path + ": read error");
    return buffer.str();
}

namespace {

using TP = onnx::TensorProto;

// The importer's sizes, plus FLOAT16, which test files may hold though no operation takes it.
size_t elementBytes(int32_t type) {
    return type == TP::FLOAT16 ? 2 : onnx_import::onnxElementSize(type);
}

// NumPy's .npy v1-v3: magic, version, header length, a Python dict literal, then the data.
std::optional<int32_t> npyType(const std::string& descr) {
    static const std::pair<const char*, int32_t> kTypes[] = {
        {"<f4", TP::FLOAT},  {"<f8", TP::DOUBLE}, {"<i4", TP::INT32}, {"<i8", TP::INT64},
        {"|u1", TP::UINT8},  {"|i1", TP::INT8},   {"|b1", TP::BOOL},  {"<i2", TP::INT16},
        {"<u2", TP::UINT16}, {"<f2", TP::FLOAT16}};
    for (const auto& [name, type] : kTypes) {
        if (descr == name) return type;
    }
    return std::nullopt;
}

std::string dictValue(const std::string& header, const std::string& key) {
    const size_t k = header.find("'" + key + "'");
    if (k == std::string::npos) return {};
    size_t p = header.find(':', k);
    if (p == std::string::npos) return {};
    ++p;
    while (p < header.size() && header[p] == ' ') ++p;
    if (p >= header.size()) return {};
    const char open = header[p];
    const char close = open == '(' ? ')' : open == '\'' ? '\'' : ',';
    const size_t end = header.find(close, p + 1);
    if (end == std::string::npos) return {};
    return header.substr(open == '\'' || open == '(' ? p + 1 : p,
                         end - (open == '\'' || open == '(' ? p + 1 : p));
}

Result<OnnxTensor> parseNpy(const std::string& bytes, const std::string& where) {
    if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0)
        return invalidArgument(where + ": not a .npy file");
    const int major = static_cast<uint8_t>(bytes[6]);
    size_t headerLen = 0, start = 0;
    if (major == 1) {
        headerLen = static_cast<uint8_t>(bytes[8]) | static_cast<uint8_t>(bytes[9]) << 8;
        start = 10;
    } else if (bytes.size() >= 12 && (major == 2 || major == 3)) {
        uint32_t len;
        std::memcpy(&len, bytes.data() + 8, 4);
        headerLen = len;
        start = 12;
    } else {
        return invalidArgument(where + ": .npy version " + std::to_string(major) + " is not known");
    }
    if (start + headerLen > bytes.size())
        return invalidArgument(where + ": .npy header runs past the end of the file");
    const std::string header = bytes.substr(start, headerLen);
    OnnxTensor t;
    const auto type = npyType(dictValue(header, "descr"));
    if (!type)
        return invalidArgument(where + ": .npy dtype '" + dictValue(header, "descr") + "' is not taken");
    if (dictValue(header, "fortran_order").starts_with("True"))
        return invalidArgument(where + ": Fortran-order .npy is not taken");
    t.elementType = *type;
    std::stringstream shape(dictValue(header, "shape"));
    std::string item;
    while (std::getline(shape, item, ',')) {
        if (item.find_first_not_of(' ') == std::string::npos) continue;
        char* end = nullptr;
        const long long d = std::strtoll(item.c_str(), &end, 10);
        if (d < 0 || d > (1LL << 31)) return invalidArgument(where + ": .npy dimension '" + item + "'");
        t.dims.push_back(d);
    }
    const size_t need = t.elementCount() * elementBytes(t.elementType);
    if (bytes.size() - start - headerLen != need) {
        return invalidArgument(where + ": .npy data has " + std::to_string(bytes.size() - start - headerLen) +
                               " bytes, the shape needs " + std::to_string(need));
    }
    t.data.assign(bytes.begin() + static_cast<long>(start + headerLen), bytes.end());
    return t;
}

double elementAsDouble(const OnnxTensor& t, size_t i) {
    const uint8_t* p = t.data.data() + i * elementBytes(t.elementType);
    auto load = [p]<typename T>(T) {
        T v;
        std::memcpy(&v, p, sizeof v);
        return static_cast<double>(v);
    };
    switch (t.elementType) {
        case TP::FLOAT:
            return load(float{});
        case TP::DOUBLE:
            return load(double{});
        case TP::INT32:
            return load(int32_t{});
        case TP::UINT32:
            return load(uint32_t{});
        case TP::INT64:
            return load(int64_t{});
        case TP::UINT64:
            return load(uint64_t{});
        case TP::INT16:
            return load(int16_t{});
        case TP::UINT16:
            return load(uint16_t{});
        case TP::INT8:
            return load(int8_t{});
        case TP::FLOAT16:
            return static_cast<double>(
                static_cast<float>(std::bit_cast<_Float16>(uint16_t(p[0] | p[1] << 8))));
        default:
            return load(uint8_t{});
    }
}

}  // namespace

size_t OnnxTensor::elementCount() const {
    size_t n = 1;
    for (int64_t d : dims) n *= static_cast<size_t>(d);
    return n;
}

std::string onnxTypeName(int32_t elementType) {
    if (TP::DataType_IsValid(elementType)) return TP::DataType_Name(static_cast<TP::DataType>(elementType));
    return "type " + std::to_string(elementType);
}

std::optional<hal::OperandType> halTypeOfOnnx(int32_t elementType) {
    if (elementType == TP::FLOAT) return hal::OperandType::TENSOR_FLOAT32;
    if (elementType == TP::INT32) return hal::OperandType::TENSOR_INT32;
    if (elementType == TP::UINT8) return hal::OperandType::TENSOR_QUANT8_ASYMM;
    if (elementType == TP::INT8) return hal::OperandType::TENSOR_QUANT8_ASYMM_SIGNED;
    return std::nullopt;
}

int32_t onnxTypeOfHal(hal::OperandType type) {
    switch (type) {
        case hal::OperandType::TENSOR_INT32:
            return TP::INT32;
        case hal::OperandType::TENSOR_QUANT8_ASYMM:
            return TP::UINT8;
        case hal::OperandType::TENSOR_QUANT8_ASYMM_SIGNED:
            return TP::INT8;
        default:
            return TP::FLOAT;
    }
}

Result<OnnxTensor> parseOnnxTensorProto(std::string_view bytes, const std::string& where) {
    TP proto;
    if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
        !proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
        return invalidArgument(where + ": not a serialized onnx.TensorProto");
    }
    OnnxTensor t;
    t.name = proto.name();
    t.elementType = proto.data_type();
    t.dims.assign(proto.dims().begin(), proto.dims().end());
    for (int64_t d : t.dims) {
        if (d < 0) return invalidArgument(where + ": negative dimension " + std::to_string(d));
    }
    const size_t size = elementBytes(t.elementType);
    if (size == 0)
        return fail(kOnnxUnsupported,
                    where + ": element type " + onnxTypeName(t.elementType) + " is not taken");
    if (proto.has_raw_data()) {
        if (proto.raw_data().size() != t.elementCount() * size) {
            return invalidArgument(where + ": raw_data has " + std::to_string(proto.raw_data().size()) +
                                   " bytes, the shape needs " + std::to_string(t.elementCount() * size));
        }
        t.data.assign(proto.raw_data().begin(), proto.raw_data().end());
        return t;
    }
    if (t.elementType == TP::FLOAT16)
        return fail(kOnnxUnsupported, where + ": typed FLOAT16 data is not taken");
    auto host = NPU_TRY(onnx_import::hostTensorFromProto(proto, where));
    t.data.resize(host.count() * size);
    for (size_t i = 0; i < host.count(); ++i) {
        const double v = host.values[i];
        uint8_t* p = t.data.data() + i * size;
        auto store = [p]<typename T>(T x) { std::memcpy(p, &x, sizeof x); };
        switch (t.elementType) {
            case TP::FLOAT:
                store(static_cast<float>(v));
                break;
            case TP::DOUBLE:
                store(v);
                break;
            case TP::INT32:
                store(static_cast<int32_t>(v));
                break;
            case TP::UINT32:
                store(static_cast<uint32_t>(v));
                break;
            case TP::INT64:
                store(static_cast<int64_t>(v));
                break;
            case TP::UINT64:
                store(static_cast<uint64_t>(v));
                break;
            case TP::INT16:
                store(static_cast<int16_t>(v));
                break;
            case TP::UINT16:
                store(static_cast<uint16_t>(v));
                break;
            case TP::INT8:
                store(static_cast<int8_t>(v));
                break;
            default:
                store(static_cast<uint8_t>(v));
                break;
        }
    }
    return t;
}

Result<OnnxTensor> loadOnnxTensorFile(const std::string& path) {
    const std::string bytes = NPU_TRY(onnx_import::readFileBytes(path));
    if (path.ends_with(".npy")) return parseNpy(bytes, path);
    return parseOnnxTensorProto(bytes, path);
}

std::string compareOnnxTensors(const OnnxTensor& expected, const OnnxTensor& actual, double rtol,
                               double atol) {
    if (expected.dims != actual.dims) {
        std::string e, a;
        for (auto d : expected.dims) e += std::to_string(d) + " ";
        for (auto d : actual.dims) a += std::to_string(d) + " ";
        return "shape [" + a + "], expected [" + e + "]";
    }
    if (expected.elementType != actual.elementType) {
        return "type " + onnxTypeName(actual.elementType) + ", expected " +
               onnxTypeName(expected.elementType);
    }
    if (expected.data.size() != actual.data.size() || elementBytes(expected.elementType) == 0) {
        return std::to_string(actual.data.size()) + " bytes, expected " +
               std::to_string(expected.data.size());
    }
    for (size_t i = 0; i < expected.elementCount(); ++i) {
        const double x = elementAsDouble(expected, i), a = elementAsDouble(actual, i);
        if (std::isnan(x) && std::isnan(a)) continue;
        if (std::isinf(x) && x == a) continue;
        const double limit = atol + rtol * std::fabs(x);
        if (!(std::fabs(a - x) <= limit)) {
            return "element " + std::to_string(i) + ": got " + std::to_string(a) + ", expected " +
                   std::to_string(x) + " (tolerance " + std::to_string(limit) + ")";
        }
    }
    return {};
}

}  // namespace npu::framework
