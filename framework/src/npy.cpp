#include "npu/framework/npy.h"

#include <fstream>

namespace npu::framework {
std::string npyDescrOf(hal::OperandType type) {
    using T = hal::OperandType;
    switch (type) {
        case T::FLOAT32:
        case T::TENSOR_FLOAT32:
            return "<f4";
        case T::FLOAT16:
        case T::TENSOR_FLOAT16:
            return "<f2";
        case T::INT32:
        case T::TENSOR_INT32:
            return "<i4";
        case T::UINT32:
            return "<u4";
        case T::BOOL:
        case T::TENSOR_BOOL8:
            return "|b1";
        case T::TENSOR_QUANT8_ASYMM:
            return "|u1";
        case T::TENSOR_QUANT8_ASYMM_SIGNED:
        case T::TENSOR_QUANT8_SYMM:
        case T::TENSOR_QUANT8_SYMM_PER_CHANNEL:
            return "|i1";
        case T::TENSOR_QUANT16_SYMM:
            return "<i2";
        case T::TENSOR_QUANT16_ASYMM:
            return "<u2";
        default:
            return {};
    }
}

Result<std::string> encodeNpy(hal::OperandType type, const std::vector<uint32_t>& dims,
                              const std::vector<uint8_t>& bytes) {
    const std::string descr = npyDescrOf(type);
    if (descr.empty())
        return invalidArgument(std::string("no .npy dtype for ") + std::string(hal::toString(type)));
    uint64_t elements = 1;
    std::string shape;
    for (uint32_t d : dims) {
        elements *= d;
        shape += std::to_string(d) + ", ";
    }
    if (dims.size() > 1)
        shape.resize(shape.size() - 2);  // "(2, 3)"; one dimension keeps "(4,)"
    else if (dims.size() == 1)
        shape.pop_back();
    const uint64_t itemBytes = static_cast<uint64_t>(std::stoi(descr.substr(2)));
    if (elements * itemBytes != bytes.size()) {
        return invalidArgument("the tensor has " + std::to_string(bytes.size()) + " bytes, its shape needs " +
                               std::to_string(elements * itemBytes));
    }
    std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + shape + "), }";
    const size_t prefix = 10;  // magic (6), version (2), header length (2)
    header.append((64 - (prefix + header.size() + 1) % 64) % 64, ' ');
    header += '\n';
    std::string out = "\x93NUMPY";
    out += '\x01';
    out += '\x00';
    out += static_cast<char>(header.size() & 0xff);
    out += static_cast<char>(header.size() >> 8);
    out += header;
    out.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    return out;
}

Status writeNpyFile(const std::string& path, hal::OperandType type, const std::vector<uint32_t>& dims,
                    const std::vector<uint8_t>& bytes) {
    auto encoded = encodeNpy(type, dims, bytes);
    if (!encoded) return invalidArgument(path + ": " + encoded.error().message);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(encoded->data(), static_cast<std::streamsize>(encoded->size()));
    out.close();
    if (!out) return invalidArgument(path + ": cannot write the file");
    return {};
}

}  // namespace npu::framework
