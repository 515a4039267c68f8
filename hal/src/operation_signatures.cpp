// The signature table of the NN HAL 1.3 operations and the matcher that checks an operation
// against it. The table follows the NNAPI operation definitions (NeuralNetworks.h / types.hal
// of HAL 1.3) and the per-operation validation of the Android 11 runtime: a row per variant,
// with every HAL version's form of the operation (e.g. CONV_2D without layout, with layout,
// with layout and dilation).
#include "operation_signatures.h"

#include <algorithm>
#include <array>
#include <initializer_list>
#include <optional>

namespace npu::hal {
namespace {

using OT = OperandType;
using Op = OperationType;

// ---- Slots --------------------------------------------------------------------------------

constexpr Slot fixed(OT type) {
    return Slot{SlotKind::Fixed, type, {}};
}

constexpr Slot kT{SlotKind::Tensor};
constexpr Slot kFloat{SlotKind::FloatParam};
constexpr Slot kElem{SlotKind::ElementScalar};
constexpr Slot kBias{SlotKind::Bias};
constexpr Slot kBox{SlotKind::Box};
constexpr Slot kAnchor{SlotKind::Anchor};
constexpr Slot kFilter{SlotKind::Filter};
constexpr Slot kInt = fixed(OT::INT32);
constexpr Slot kBool = fixed(OT::BOOL);
constexpr Slot kF32 = fixed(OT::FLOAT32);
constexpr Slot kTensorInt = fixed(OT::TENSOR_INT32);
constexpr Slot kTensorBool = fixed(OT::TENSOR_BOOL8);
constexpr Slot kQ8Asymm = fixed(OT::TENSOR_QUANT8_ASYMM);
constexpr Slot kQ8Signed = fixed(OT::TENSOR_QUANT8_ASYMM_SIGNED);
constexpr Slot kQ8Symm = fixed(OT::TENSOR_QUANT8_SYMM);
constexpr Slot kQ16Symm = fixed(OT::TENSOR_QUANT16_SYMM);

constexpr OT kCastTypes[] = {OT::TENSOR_FLOAT16, OT::TENSOR_FLOAT32, OT::TENSOR_INT32,
                             OT::TENSOR_QUANT8_ASYMM};
constexpr OT kFloatTensors[] = {OT::TENSOR_FLOAT16, OT::TENSOR_FLOAT32};
constexpr OT kQuant8Outputs[] = {OT::TENSOR_QUANT8_ASYMM, OT::TENSOR_QUANT8_ASYMM_SIGNED};
constexpr OT kAnyLookupInput[] = {OT::TENSOR_FLOAT16, OT::TENSOR_FLOAT32, OT::TENSOR_INT32,
                                  OT::TENSOR_QUANT8_ASYMM};
constexpr Slot kCastTarget{SlotKind::AnyOf, OT::INT32, kCastTypes};
constexpr Slot kAnyFloatTensor{SlotKind::AnyOf, OT::INT32, kFloatTensors};
constexpr Slot kAnyQuant8{SlotKind::AnyOf, OT::INT32, kQuant8Outputs};
constexpr Slot kLookupInput{SlotKind::AnyOf, OT::INT32, kAnyLookupInput};

// ---- The sets T ranges over -----------------------------------------------------------------

const std::vector<OT> kF{OT::TENSOR_FLOAT32, OT::TENSOR_FLOAT16};
const std::vector<OT> kFQ{OT::TENSOR_FLOAT32, OT::TENSOR_FLOAT16, OT::TENSOR_QUANT8_ASYMM,
                          OT::TENSOR_QUANT8_ASYMM_SIGNED};
const std::vector<OT> kFI{OT::TENSOR_FLOAT32, OT::TENSOR_FLOAT16, OT::TENSOR_INT32};
const std::vector<OT> kFIQ{OT::TENSOR_FLOAT32, OT::TENSOR_FLOAT16, OT::TENSOR_INT32, OT::TENSOR_QUANT8_ASYMM,
                           OT::TENSOR_QUANT8_ASYMM_SIGNED};
const std::vector<OT> kQ{OT::TENSOR_QUANT8_ASYMM, OT::TENSOR_QUANT8_ASYMM_SIGNED};
const std::vector<OT> kCompare{OT::TENSOR_FLOAT32,
                               OT::TENSOR_FLOAT16,
                               OT::TENSOR_INT32,
                               OT::TENSOR_QUANT8_ASYMM,
                               OT::TENSOR_QUANT8_ASYMM_SIGNED,
                               OT::TENSOR_BOOL8};
const std::vector<OT> kCastConvertible{OT::TENSOR_FLOAT16, OT::TENSOR_FLOAT32, OT::TENSOR_INT32,
                                       OT::TENSOR_QUANT8_ASYMM};
const std::vector<OT> kBool8{OT::TENSOR_BOOL8};
const std::vector<OT> kCastIdentity{OT::TENSOR_BOOL8, OT::TENSOR_QUANT16_ASYMM, OT::TENSOR_QUANT16_SYMM,
                                    OT::TENSOR_QUANT8_ASYMM_SIGNED, OT::TENSOR_QUANT8_SYMM};
const std::vector<OT> kDequantizeInputs{OT::TENSOR_QUANT8_ASYMM, OT::TENSOR_QUANT8_ASYMM_SIGNED,
                                        OT::TENSOR_QUANT8_SYMM, OT::TENSOR_QUANT8_SYMM_PER_CHANNEL};
const std::vector<OT> kAllTensors{OT::TENSOR_FLOAT32,
                                  OT::TENSOR_FLOAT16,
                                  OT::TENSOR_INT32,
                                  OT::TENSOR_QUANT8_ASYMM,
                                  OT::TENSOR_QUANT8_ASYMM_SIGNED,
                                  OT::TENSOR_QUANT8_SYMM,
                                  OT::TENSOR_QUANT8_SYMM_PER_CHANNEL,
                                  OT::TENSOR_QUANT16_ASYMM,
                                  OT::TENSOR_QUANT16_SYMM,
                                  OT::TENSOR_BOOL8};
const std::vector<OT> kHashtableValues{OT::TENSOR_FLOAT32, OT::TENSOR_INT32, OT::TENSOR_QUANT8_ASYMM};
const std::vector<OT> kNoT{};

using Slots = std::vector<Slot>;

Slots operator+(Slots a, const Slots& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}
Slots repeat(Slot slot, size_t n) {
    return Slots(n, slot);
}

// Builds the table with one readable line per row: row(...) then optional modifiers.
class TableBuilder {
public:
    TableBuilder& row(Op type, const std::vector<OT>& tensorTypes, std::vector<Slot> inputs,
                      std::vector<Slot> outputs) {
        SignatureRow r;
        r.type = type;
        r.tensorTypes = tensorTypes;
        r.inputs = std::move(inputs);
        r.outputs = std::move(outputs);
        rows_.push_back(std::move(r));
        return *this;
    }
    TableBuilder& inputCounts(std::initializer_list<uint32_t> counts) {
        rows_.back().inputCounts = counts;
        return *this;
    }
    TableBuilder& outputCounts(std::initializer_list<uint32_t> counts) {
        rows_.back().outputCounts = counts;
        return *this;
    }
    TableBuilder& variant(std::string_view name) {
        rows_.back().variant = name;
        return *this;
    }
    TableBuilder& variadic(Variadic v) {
        rows_.back().variadic = v;
        return *this;
    }
    TableBuilder& filterChannelDim(int32_t dim) {
        rows_.back().filterChannelDim = dim;
        return *this;
    }
    TableBuilder& rank(uint8_t input, uint8_t rank, bool exact) {
        rows_.back().ranks.push_back({input, rank, exact});
        return *this;
    }
    // Input 0 (and input 1 for two-operand elementwise operations) has rank <= 4.
    TableBuilder& upToRank4(uint8_t inputs = 1) {
        for (uint8_t i = 0; i < inputs; ++i) rank(i, 4, false);
        return *this;
    }
    std::vector<SignatureRow> take() { return std::move(rows_); }

private:
    std::vector<SignatureRow> rows_;
};

// long-function: a data table, one row per operation type; splitting it would scatter the table.
std::vector<SignatureRow> buildTable() {
    TableBuilder t;
    const auto I = kInt;
    const auto B = kBool;
    const auto T = kT;
    const auto S = kFloat;

    // Elementwise arithmetic: input0, input1, fused activation.
    t.row(Op::ADD, kFIQ, {T, T, I}, {T}).upToRank4(2);
    t.row(Op::MUL, kFIQ, {T, T, I}, {T}).upToRank4(2);
    t.row(Op::SUB, kFIQ, {T, T, I}, {T}).upToRank4(2);
    t.row(Op::DIV, kFI, {T, T, I}, {T}).upToRank4(2);

    // Pooling: explicit = 4 paddings, 2 strides, 2 filter sizes, activation [, NCHW layout];
    // implicit = padding scheme, 2 strides, 2 filter sizes, activation [, layout].
    for (Op pool : {Op::AVERAGE_POOL_2D, Op::MAX_POOL_2D, Op::L2_POOL_2D}) {
        const auto& types = pool == Op::L2_POOL_2D ? kF : kFQ;
        t.row(pool, types, Slots{T} + repeat(I, 9) + Slots{B}, {T})
            .inputCounts({10, 11})
            .variant("explicit padding");
        t.row(pool, types, Slots{T} + repeat(I, 6) + Slots{B}, {T})
            .inputCounts({7, 8})
            .variant("implicit padding");
    }

    // Convolutions: input, filter, bias, padding..., strides, [groups / multiplier,] activation,
    // layout, dilations. A quantized filter may be per-channel (channelDim fixed per operation).
    t.row(Op::CONV_2D, kFQ, Slots{T, kFilter, kBias} + repeat(I, 7) + Slots{B, I, I}, {T})
        .inputCounts({10, 11, 13})
        .variant("explicit padding")
        .filterChannelDim(0)
        .rank(0, 4, true)
        .rank(1, 4, true);
    t.row(Op::CONV_2D, kFQ, Slots{T, kFilter, kBias} + repeat(I, 4) + Slots{B, I, I}, {T})
        .inputCounts({7, 8, 10})
        .variant("implicit padding")
        .filterChannelDim(0)
        .rank(0, 4, true)
        .rank(1, 4, true);
    t.row(Op::DEPTHWISE_CONV_2D, kFQ, Slots{T, kFilter, kBias} + repeat(I, 8) + Slots{B, I, I}, {T})
        .inputCounts({11, 12, 14})
        .variant("explicit padding")
        .filterChannelDim(3)
        .rank(0, 4, true)
        .rank(1, 4, true);
    t.row(Op::DEPTHWISE_CONV_2D, kFQ, Slots{T, kFilter, kBias} + repeat(I, 5) + Slots{B, I, I}, {T})
        .inputCounts({8, 9, 11})
        .variant("implicit padding")
        .filterChannelDim(3)
        .rank(0, 4, true)
        .rank(1, 4, true);
    t.row(Op::GROUPED_CONV_2D, kFQ, Slots{T, kFilter, kBias} + repeat(I, 8) + Slots{B}, {T})
        .variant("explicit padding")
        .filterChannelDim(0);
    t.row(Op::GROUPED_CONV_2D, kFQ, Slots{T, kFilter, kBias} + repeat(I, 5) + Slots{B}, {T})
        .variant("implicit padding")
        .filterChannelDim(0);
    t.row(Op::TRANSPOSE_CONV_2D, kFQ, Slots{T, kFilter, kBias} + repeat(I, 7) + Slots{B}, {T})
        .variant("explicit padding")
        .filterChannelDim(0);
    t.row(Op::TRANSPOSE_CONV_2D, kFQ, {T, kFilter, kBias, kTensorInt, I, I, I, I, B}, {T})
        .variant("implicit padding")
        .filterChannelDim(0);
    t.row(Op::FULLY_CONNECTED, kFQ, {T, T, kBias, I}, {T});

    // Shape and data movement.
    t.row(Op::CONCATENATION, kFQ, {T, I}, {T}).variadic(Variadic::LeadingInputs).upToRank4();
    t.row(Op::DEPTH_TO_SPACE, kFQ, {T, I, B}, {T}).inputCounts({2, 3});
    t.row(Op::SPACE_TO_DEPTH, kFQ, {T, I, B}, {T}).inputCounts({2, 3});
    t.row(Op::BATCH_TO_SPACE_ND, kFQ, {T, kTensorInt, B}, {T}).inputCounts({2, 3});
    t.row(Op::SPACE_TO_BATCH_ND, kFQ, {T, kTensorInt, kTensorInt, B}, {T}).inputCounts({3, 4});
    t.row(Op::RESHAPE, kFQ, {T, kTensorInt}, {T}).upToRank4();
    // The second input of SQUEEZE and TRANSPOSE is optional as a value (NO_VALUE), not as an
    // input: both always have 2 inputs (VTS removeOperationInputTest removes it and expects a
    // rejection).
    t.row(Op::SQUEEZE, kFQ, {T, kTensorInt}, {T});
    t.row(Op::TRANSPOSE, kFQ, {T, kTensorInt}, {T});
    t.row(Op::STRIDED_SLICE, kFQ, {T, kTensorInt, kTensorInt, kTensorInt, I, I, I}, {T});
    t.row(Op::PAD, kFQ, {T, kTensorInt}, {T}).upToRank4();
    t.row(Op::PAD_V2, kFQ, {T, kTensorInt, kElem}, {T}).upToRank4();
    t.row(Op::EXPAND_DIMS, kFIQ, {T, I}, {T});
    t.row(Op::GATHER, kFIQ, {T, I, kTensorInt}, {T});
    t.row(Op::SLICE, kFIQ, {T, kTensorInt, kTensorInt}, {T});
    t.row(Op::SPLIT, kFIQ, {T, I, I}, {T}).variadic(Variadic::TrailingOutputs);
    t.row(Op::TILE, kFIQ, {T, kTensorInt}, {T});
    t.row(Op::CHANNEL_SHUFFLE, kFQ, {T, I, I}, {T});
    t.row(Op::FILL, kFI, {kTensorInt, kElem}, {T});
    t.row(Op::RANK, kAllTensors, {T}, {I});
    t.row(Op::EMBEDDING_LOOKUP, kFIQ, {kTensorInt, T}, {T});
    t.row(Op::HASHTABLE_LOOKUP, kHashtableValues, {kTensorInt, kTensorInt, T}, {T, kQ8Asymm});

    // Casts and (de)quantization.
    t.row(Op::CAST, kCastConvertible, {T}, {kCastTarget}).variant("converting");
    t.row(Op::CAST, kCastIdentity, {T}, {T}).variant("identity");
    t.row(Op::DEQUANTIZE, kDequantizeInputs, {T}, {kAnyFloatTensor});
    t.row(Op::QUANTIZE, kF, {T}, {kAnyQuant8});

    // Unary elementwise.
    for (Op op : {Op::RELU, Op::RELU1, Op::RELU6, Op::LOGISTIC, Op::TANH, Op::HARD_SWISH})
        t.row(op, kFQ, {T}, {T});
    for (Op op : {Op::EXP, Op::LOG, Op::RSQRT, Op::SIN, Op::SQRT, Op::FLOOR}) t.row(op, kF, {T}, {T});
    t.row(Op::ABS, kFI, {T}, {T});
    t.row(Op::NEG, kFI, {T}, {T});
    t.row(Op::ELU, kF, {T, S}, {T});
    t.row(Op::LOGICAL_NOT, kBool8, {T}, {T});

    // Binary elementwise.
    for (Op op : {Op::EQUAL, Op::NOT_EQUAL, Op::GREATER, Op::GREATER_EQUAL, Op::LESS, Op::LESS_EQUAL})
        t.row(op, kCompare, {T, T}, {kTensorBool});
    t.row(Op::LOGICAL_AND, kBool8, {T, T}, {T});
    t.row(Op::LOGICAL_OR, kBool8, {T, T}, {T});
    t.row(Op::MAXIMUM, kFIQ, {T, T}, {T});
    t.row(Op::MINIMUM, kFIQ, {T, T}, {T});
    t.row(Op::POW, kF, {T, T}, {T});
    t.row(Op::PRELU, kFQ, {T, T}, {T});
    t.row(Op::SELECT, kFIQ, {kTensorBool, T, T}, {T});

    // Normalization and softmax.
    t.row(Op::SOFTMAX, kFQ, {T, S, I}, {T}).inputCounts({2, 3});
    t.row(Op::LOG_SOFTMAX, kF, {T, S, I}, {T});
    t.row(Op::L2_NORMALIZATION, kFQ, {T, I}, {T}).inputCounts({1, 2});
    t.row(Op::LOCAL_RESPONSE_NORMALIZATION, kF, {T, I, S, S, S, I}, {T}).inputCounts({5, 6});
    t.row(Op::INSTANCE_NORMALIZATION, kF, {T, S, S, S, B}, {T});

    // Reductions.
    t.row(Op::MEAN, kFQ, {T, kTensorInt, I}, {T}).upToRank4();
    t.row(Op::REDUCE_ALL, kBool8, {T, kTensorInt, B}, {T});
    t.row(Op::REDUCE_ANY, kBool8, {T, kTensorInt, B}, {T});
    t.row(Op::REDUCE_MAX, kFQ, {T, kTensorInt, B}, {T});
    t.row(Op::REDUCE_MIN, kFQ, {T, kTensorInt, B}, {T});
    t.row(Op::REDUCE_PROD, kF, {T, kTensorInt, B}, {T});
    t.row(Op::REDUCE_SUM, kF, {T, kTensorInt, B}, {T});
    t.row(Op::ARGMAX, kFIQ, {T, I}, {kTensorInt});
    t.row(Op::ARGMIN, kFIQ, {T, I}, {kTensorInt});
    t.row(Op::TOPK_V2, kFIQ, {T, I}, {T, kTensorInt});

    // Resizing: output size as INT32 or scale as float, [layout, align_corners, half_pixel_centers].
    t.row(Op::RESIZE_BILINEAR, kFQ, {T, I, I, B, B, B}, {T}).inputCounts({3, 4, 5, 6}).variant("by size");
    t.row(Op::RESIZE_BILINEAR, kFQ, {T, S, S, B, B, B}, {T}).inputCounts({3, 4, 5, 6}).variant("by scale");
    t.row(Op::RESIZE_NEAREST_NEIGHBOR, kFQ, {T, I, I, B, B, B}, {T})
        .inputCounts({4, 5, 6})
        .variant("by size");
    t.row(Op::RESIZE_NEAREST_NEIGHBOR, kFQ, {T, S, S, B, B, B}, {T})
        .inputCounts({4, 5, 6})
        .variant("by scale");

    // Detection and regions of interest.
    t.row(Op::AXIS_ALIGNED_BBOX_TRANSFORM, kFQ, {kBox, T, kTensorInt, kBox}, {kBox});
    t.row(Op::BOX_WITH_NMS_LIMIT, kFQ, {T, kBox, kTensorInt, S, I, I, S, S, S},
          {T, kBox, kTensorInt, kTensorInt});
    t.row(Op::GENERATE_PROPOSALS, kFQ, {T, T, kAnchor, kBox, S, S, I, I, S, S, B}, {T, kBox, kTensorInt});
    t.row(Op::HEATMAP_MAX_KEYPOINT, kFQ, {T, kBox, B}, {T, kBox});
    t.row(Op::ROI_ALIGN, kFQ, {T, kBox, kTensorInt, I, I, S, S, I, I, B}, {T});
    t.row(Op::ROI_POOLING, kFQ, {T, kBox, kTensorInt, I, I, S, S, B}, {T});
    t.row(Op::DETECTION_POSTPROCESSING, kF, {T, T, T, S, S, S, S, B, I, I, I, S, S, B},
          {T, T, kTensorInt, kTensorInt});

    // Lookup, hashing, sampling.
    t.row(Op::LSH_PROJECTION, kF, {T, kLookupInput, T, I}, {kTensorInt});
    t.row(Op::RANDOM_MULTINOMIAL, kF, {T, I, kTensorInt}, {kTensorInt});

    // Recurrent networks.
    t.row(Op::RNN, kF, {T, T, T, T, T, I}, {T, T});
    t.row(Op::SVDF, kF, {T, T, T, T, T, I, I}, {T, T});
    t.row(Op::UNIDIRECTIONAL_SEQUENCE_RNN, kF, {T, T, T, T, T, I, I}, {T, T}).outputCounts({1, 2});
    // input, fw {weights, recurrent weights, bias, hidden state}, bw {same}, aux input,
    // fw aux weights, bw aux weights, activation, time major, merge outputs.
    t.row(Op::BIDIRECTIONAL_SEQUENCE_RNN, kF, repeat(T, 12) + Slots{I, B, B}, repeat(T, 4))
        .outputCounts({1, 2, 3, 4});
    // 20 tensors, activation, cell clip, projection clip [, 4 layer-normalization weights].
    t.row(Op::LSTM, kF, repeat(T, 20) + Slots{I, S, S} + repeat(T, 4), repeat(T, 4)).inputCounts({23, 27});
    t.row(Op::UNIDIRECTIONAL_SEQUENCE_LSTM, kF, repeat(T, 20) + Slots{I, S, S, B} + repeat(T, 4),
          repeat(T, 3))
        .inputCounts({24, 28})
        .outputCounts({1, 3});
    // 48 tensors, activation, cell clip, projection clip, merge outputs, time major,
    // 8 aux / layer-normalization tensors; outputs fw [, bw] [, 4 states].
    t.row(Op::BIDIRECTIONAL_SEQUENCE_LSTM, kF, repeat(T, 48) + Slots{I, S, S, B, B} + repeat(T, 8),
          repeat(T, 6))
        .outputCounts({1, 2, 5, 6});
    t.row(Op::QUANTIZED_16BIT_LSTM, kNoT,
          repeat(kQ8Asymm, 9) + repeat(kTensorInt, 4) + Slots{kQ16Symm, kQ8Asymm}, {kQ16Symm, kQ8Asymm});
    // input; 4 input and 4 recurrent weights; 3 peephole weights; 4 gate biases; projection
    // weights and bias; output and cell state; 4 layer-normalization weights; cell and
    // projection clip; 4 intermediate scales; hidden state zero point and scale.
    t.row(Op::QUANTIZED_LSTM, kNoT,
          Slots{kQ8Signed} + repeat(kQ8Symm, 8) + repeat(kQ16Symm, 3) + repeat(kTensorInt, 4) +
              Slots{kQ8Symm, kTensorInt, kQ8Signed, kQ16Symm} + repeat(kQ16Symm, 4) + repeat(kF32, 6) +
              Slots{I, kF32},
          {kQ8Signed, kQ16Symm, kQ8Signed});
    return t.take();
}

bool isFloatTensor(OT t) {
    return t == OT::TENSOR_FLOAT32 || t == OT::TENSOR_FLOAT16;
}

// The types a slot accepts for a given T; at most 4.
struct Accepted {
    std::array<OT, 4> types{};
    size_t count = 0;
    std::span<const OT> anyOf;
    void add(OT t) { types[count++] = t; }
    bool contains(OT t) const {
        if (!anyOf.empty()) return std::ranges::find(anyOf, t) != anyOf.end();
        return std::find(types.begin(), types.begin() + count, t) != types.begin() + count;
    }
    std::string describe() const {
        std::span<const OT> list = anyOf.empty() ? std::span<const OT>(types.data(), count) : anyOf;
        if (list.size() == 1) return std::string(toString(list[0]));
        std::string s = "one of {";
        for (size_t i = 0; i < list.size(); ++i) {
            if (i) s += ", ";
            s += toString(list[i]);
        }
        return s + "}";
    }
};

Accepted accepted(const Slot& slot, OT t) {
    Accepted a;
    switch (slot.kind) {
        case SlotKind::Fixed:
            a.add(slot.fixed);
            break;
        case SlotKind::Tensor:
            a.add(t);
            break;
        case SlotKind::FloatParam:
            a.add(t == OT::TENSOR_FLOAT16 ? OT::FLOAT16 : OT::FLOAT32);
            break;
        case SlotKind::ElementScalar:
            a.add(t == OT::TENSOR_FLOAT16 ? OT::FLOAT16 : t == OT::TENSOR_FLOAT32 ? OT::FLOAT32 : OT::INT32);
            break;
        case SlotKind::Bias:
            a.add(isFloatTensor(t) ? t : OT::TENSOR_INT32);
            break;
        case SlotKind::Box:
            a.add(isFloatTensor(t) ? t : OT::TENSOR_QUANT16_ASYMM);
            break;
        case SlotKind::Anchor:
            a.add(isFloatTensor(t) ? t : OT::TENSOR_QUANT16_SYMM);
            break;
        case SlotKind::Filter:
            a.add(t);
            if (!isFloatTensor(t)) a.add(OT::TENSOR_QUANT8_SYMM_PER_CHANNEL);
            break;
        case SlotKind::AnyOf:
            a.anyOf = slot.anyOf;
            break;
    }
    return a;
}

bool countAllowed(const std::vector<uint32_t>& counts, size_t listed, size_t n) {
    if (counts.empty()) return n == listed;
    return std::ranges::find(counts, n) != counts.end();
}

// The slot that describes operand position `i` of an operation with `n` operands, or nullptr when
// the row does not allow `n`.
const Slot* inputSlot(const SignatureRow& row, size_t i, size_t n) {
    if (row.variadic == Variadic::LeadingInputs) {
        const size_t tail = row.inputs.size() - 1;  // slots after the repeated one
        if (n < row.inputs.size()) return nullptr;
        const size_t repeated = n - tail;
        return i < repeated ? &row.inputs[0] : &row.inputs[1 + (i - repeated)];
    }
    if (!countAllowed(row.inputCounts, row.inputs.size(), n)) return nullptr;
    return &row.inputs[i];
}

const Slot* outputSlot(const SignatureRow& row, size_t i, size_t n) {
    if (row.variadic == Variadic::TrailingOutputs) return n >= 1 ? &row.outputs[0] : nullptr;
    if (!countAllowed(row.outputCounts, row.outputs.size(), n)) return nullptr;
    return &row.outputs[i];
}

bool inputCountFits(const SignatureRow& row, size_t n) {
    return n > 0 && inputSlot(row, 0, n) != nullptr;
}
bool outputCountFits(const SignatureRow& row, size_t n) {
    return n > 0 && outputSlot(row, 0, n) != nullptr;
}

std::string countsText(const SignatureRow& row, bool inputs) {
    if (inputs && row.variadic == Variadic::LeadingInputs)
        return std::to_string(row.inputs.size()) + " or more";
    if (!inputs && row.variadic == Variadic::TrailingOutputs) return "1 or more";
    const auto& counts = inputs ? row.inputCounts : row.outputCounts;
    const size_t listed = inputs ? row.inputs.size() : row.outputs.size();
    if (counts.empty()) return std::to_string(listed);
    std::string s;
    for (size_t i = 0; i < counts.size(); ++i) {
        if (i) s += i + 1 == counts.size() ? " or " : ", ";
        s += std::to_string(counts[i]);
    }
    return s;
}

std::string joinUnique(std::vector<std::string> parts) {
    std::vector<std::string> unique;
    for (auto& p : parts)
        if (std::ranges::find(unique, p) == unique.end()) unique.push_back(std::move(p));
    std::string s;
    for (size_t i = 0; i < unique.size(); ++i) {
        if (i) s += "; ";
        s += unique[i];
    }
    return s;
}

// Where a (row, T) candidate first disagreed with the operation. The message is only built for
// the closest candidate, and only when no candidate matched.
enum class MismatchKind : uint8_t { None, InputType, OutputType, ChannelDim, Rank };

struct Attempt {
    MismatchKind kind = MismatchKind::None;
    size_t matched = 0;  // operands (inputs, then outputs) that matched before the mismatch
    size_t position = 0;
    const SignatureRow* row = nullptr;
    OT t = OT::TENSOR_FLOAT32;
    const RankRule* rank = nullptr;
};

Attempt tryRow(const SignatureRow& row, OT t, const Operation& op, const std::vector<Operand>& operands) {
    Attempt a{.row = &row, .t = t};
    const size_t nIn = op.inputs.size();
    const size_t nOut = op.outputs.size();
    for (size_t i = 0; i < nIn; ++i, ++a.matched) {
        if (!accepted(*inputSlot(row, i, nIn), t).contains(operands[op.inputs[i]].type)) {
            a.kind = MismatchKind::InputType;
            a.position = i;
            return a;
        }
    }
    for (size_t i = 0; i < nOut; ++i, ++a.matched) {
        if (!accepted(*outputSlot(row, i, nOut), t).contains(operands[op.outputs[i]].type)) {
            a.kind = MismatchKind::OutputType;
            a.position = i;
            return a;
        }
    }
    if (row.filterChannelDim >= 0 && nIn > 1) {
        const Operand& filter = operands[op.inputs[1]];
        if (filter.type == OT::TENSOR_QUANT8_SYMM_PER_CHANNEL && filter.channelQuant &&
            filter.channelQuant->channelDim != static_cast<uint32_t>(row.filterChannelDim)) {
            a.kind = MismatchKind::ChannelDim;
            return a;
        }
    }
    for (const RankRule& rule : row.ranks) {
        if (rule.input >= nIn) continue;
        const size_t rank = operands[op.inputs[rule.input]].dimensions.size();
        if (rank == 0) continue;  // unknown rank: checked once the shape is known
        if (rule.exact ? rank != rule.rank : rank > rule.rank) {
            a.kind = MismatchKind::Rank;
            a.rank = &rule;
            return a;
        }
    }
    return a;
}

std::string describe(const Attempt& a, const Operation& op, const std::vector<Operand>& operands) {
    const SignatureRow& row = *a.row;
    const std::string variant = row.variant.empty() ? "" : " (" + std::string(row.variant) + ")";
    const size_t nIn = op.inputs.size();
    const size_t nOut = op.outputs.size();
    switch (a.kind) {
        case MismatchKind::InputType:
        case MismatchKind::OutputType: {
            const bool input = a.kind == MismatchKind::InputType;
            const uint32_t index = input ? op.inputs[a.position] : op.outputs[a.position];
            const Slot& slot = input ? *inputSlot(row, a.position, nIn) : *outputSlot(row, a.position, nOut);
            return std::string(input ? "input " : "output ") + std::to_string(a.position) + " (operand " +
                   std::to_string(index) + ") has type " + std::string(toString(operands[index].type)) +
                   ", expected " + accepted(slot, a.t).describe() + variant;
        }
        case MismatchKind::ChannelDim:
            return "input 1 (operand " + std::to_string(op.inputs[1]) +
                   ") is a per-channel filter with channelDim " +
                   std::to_string(operands[op.inputs[1]].channelQuant->channelDim) + ", expected " +
                   std::to_string(row.filterChannelDim) + variant;
        case MismatchKind::Rank: {
            const uint32_t index = op.inputs[a.rank->input];
            return "input " + std::to_string(a.rank->input) + " (operand " + std::to_string(index) +
                   ") has rank " + std::to_string(operands[index].dimensions.size()) + ", expected " +
                   (a.rank->exact ? "" : "at most ") + std::to_string(a.rank->rank) + variant;
        }
        case MismatchKind::None:
            break;
    }
    return {};
}

}  // namespace

const std::vector<SignatureRow>& signatureTable() {
    static const std::vector<SignatureRow> table = buildTable();
    return table;
}

std::span<const SignatureRow* const> signaturesOf(OperationType type) {
    static const auto index = [] {
        std::array<std::vector<const SignatureRow*>, kOperationTypeLast + 1> byType;
        for (const auto& row : signatureTable()) byType[static_cast<size_t>(row.type)].push_back(&row);
        return byType;
    }();
    const auto i = static_cast<int32_t>(type);
    if (i < 0 || i > kOperationTypeLast) return {};
    return index[static_cast<size_t>(i)];
}

Status validateOperationSignature(const Operation& operation, const std::vector<Operand>& operands) {
    const auto rows = signaturesOf(operation.type);
    if (rows.empty()) return invalidArgument("no signature is known for this operation type");
    const size_t nIn = operation.inputs.size();
    const size_t nOut = operation.outputs.size();

    // Counts first: an operation whose input or output count fits no variant gets a count message.
    bool anyInputFit = false;
    bool anyBothFit = false;
    for (const SignatureRow* row : rows) {
        const bool in = inputCountFits(*row, nIn);
        anyInputFit |= in;
        anyBothFit |= in && outputCountFits(*row, nOut);
    }
    if (!anyInputFit) {
        std::vector<std::string> counts;
        for (const SignatureRow* row : rows) counts.push_back(countsText(*row, true));
        return invalidArgument("has " + std::to_string(nIn) + " inputs, expected " + joinUnique(counts));
    }
    if (!anyBothFit) {
        std::vector<std::string> counts;
        for (const SignatureRow* row : rows)
            if (inputCountFits(*row, nIn)) counts.push_back(countsText(*row, false));
        return invalidArgument("has " + std::to_string(nOut) + " outputs, expected " + joinUnique(counts) +
                               " with " + std::to_string(nIn) + " inputs");
    }

    // Types: the operation is valid if any (row, T) accepts it. Otherwise report the candidate
    // that matched the longest prefix of operands (the closest variant).
    Attempt best;
    bool haveBest = false;
    for (const SignatureRow* row : rows) {
        if (!inputCountFits(*row, nIn) || !outputCountFits(*row, nOut)) continue;
        const size_t instances = row->tensorTypes.empty() ? 1 : row->tensorTypes.size();
        for (size_t k = 0; k < instances; ++k) {
            const OT t = row->tensorTypes.empty() ? OT::TENSOR_FLOAT32 : row->tensorTypes[k];
            const Attempt a = tryRow(*row, t, operation, operands);
            if (a.kind == MismatchKind::None) return {};
            if (!haveBest || a.matched > best.matched) {
                best = a;
                haveBest = true;
            }
        }
    }
    return invalidArgument(describe(best, operation, operands));
}

ConcreteSignature exampleSignature(const SignatureRow& row) {
    const OT t = row.tensorTypes.empty() ? OT::TENSOR_FLOAT32 : row.tensorTypes.front();
    auto first = [t](const Slot& slot) {
        const Accepted a = accepted(slot, t);
        return a.anyOf.empty() ? a.types[0] : a.anyOf.front();
    };
    ConcreteSignature sig;
    size_t nIn = row.inputs.size();
    if (!row.inputCounts.empty()) nIn = *std::ranges::max_element(row.inputCounts);
    if (row.variadic == Variadic::LeadingInputs) nIn = row.inputs.size() + 1;
    for (size_t i = 0; i < nIn; ++i) sig.inputs.push_back(first(*inputSlot(row, i, nIn)));
    size_t nOut = row.outputs.size();
    if (!row.outputCounts.empty()) nOut = *std::ranges::max_element(row.outputCounts);
    if (row.variadic == Variadic::TrailingOutputs) nOut = 2;
    for (size_t i = 0; i < nOut; ++i) sig.outputs.push_back(first(*outputSlot(row, i, nOut)));
    return sig;
}

}  // namespace npu::hal
